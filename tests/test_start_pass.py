"""A worker's startup pass holds up none of its links: a real worker.py whose startup reconcile pass the test holds
open (a sweep of every schedule takes a minute at a million) runs the links already due in Redis meanwhile, on the
stack's gunicorn, redis-server and database; and `rq worker`'s startup pass sweeps only when the cluster has not
swept lately, as worker.py's does."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from redis import Redis

from harness.servers import Process, wait_for
from harness.stack import Stack
from recur_server.chain.leases import EPOCH_KEY
from recur_server.workers.background import SWEPT_KEY

pytestmark = pytest.mark.integration

# worker.py, one slot, with every reconcile pass of its processes held until the file RECUR_TEST_RELEASE names
# exists (60 s at most): the pass reads the database and writes nothing until then.
HELD_WORKER = """
import os, sys, time
from pathlib import Path
from recur.starting import starting
starting()
from recur_server.workers import background
real, release = background.reconcile, Path(os.environ["RECUR_TEST_RELEASE"])
def held(*args, **kwargs):
    give_up = time.monotonic() + 60
    while not release.exists() and time.monotonic() < give_up:
        time.sleep(0.05)
    return real(*args, **kwargs)
background.reconcile = held
sys.argv = ["worker.py", "--concurrency", "1"]
from recur_server.processes.worker import main
main()
"""


def test_a_worker_runs_due_links_while_its_startup_pass_is_going(stack: Stack, tmp_path: Path) -> None:
    workflow = stack.api.ok("POST", "/api/v1/workflows/", {"name": "noop", "task": "builtin.noop"})
    schedule = stack.api.ok("POST", "/api/v1/schedules/", {
        "name": "every second", "workflow_id": workflow["id"], "interval_seconds": 1})  # its link is in Redis
    release = tmp_path / "release"
    worker = Process([sys.executable, "-c", HELD_WORKER], {**stack.env, "RECUR_TEST_RELEASE": str(release)},
                     tmp_path / "worker0.log")
    stack.workers.append(worker)  # stopped with the stack
    try:
        wait_for(lambda: any(r["status"] == "succeeded" for r in stack.api.runs(schedule["id"])), 30,
                 interval=0.3, what="a run while the worker's startup pass is held")
        assert "startup recovery" not in worker.output()  # the pass was still going
    finally:
        release.touch()
    wait_for(lambda: "startup recovery: {" in worker.output(), 30, what="the startup pass to end")
    assert worker.alive()


def test_rq_workers_startup_pass_sweeps_only_when_the_cluster_has_not_lately(stack: Stack) -> None:
    redis = Redis.from_url(stack.env["REDIS_URL"])
    redis.set(EPOCH_KEY, "2026-12-02T00:00:00+00:00")  # Redis has not lost its data
    redis.set(SWEPT_KEY, "1", px=60_000)  # and a sweep ended a moment ago
    worker = Process([sys.executable, "-m", "rq.cli", "worker", "-w", "rq_worker.Worker", "--url",
                      stack.env["REDIS_URL"], "--burst", "recur"], stack.env, stack.tmp_path / "rq-worker.log")
    stack.workers.append(worker)
    wait_for(lambda: not worker.alive(), 90, what="rq worker to drain the queue and exit")
    assert "startup recovery: {'sweep': False" in worker.output()
