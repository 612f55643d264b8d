"""A Recur process holds Python's collector while it imports the server and makes its app (recur.starting), and
turns it back on once started, with what the start made frozen out of its passes: a web process (gunicorn's
hooks) and a worker (a real `worker.py --burst` on the session's redis-server)."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from harness.servers import RedisServer
from recur.starting import started, starting
from recur_server.notify import watch
from recur_server.processes import gunicorn_conf

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def collector() -> Iterator[None]:
    """The test process's collector as it was, whatever the test did to it."""
    was = gc.isenabled()
    yield
    gc.unfreeze()
    if was:
        gc.enable()


def test_starting_holds_the_collector_and_started_turns_it_on_with_the_start_frozen(collector, tmp_path,
                                                                                   monkeypatch) -> None:
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    starting()
    assert not gc.isenabled()
    started()
    assert gc.isenabled() and gc.get_freeze_count() > 0


def test_a_web_process_holds_the_collector_from_its_fork_to_its_start(collector, tmp_path, monkeypatch) -> None:
    # starting() sets the host's metrics directory when none is set: set here, it goes with the test (left
    # set, it made every later /metrics scrape of this test process read the checkout's files).
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    begun: list[object] = []
    monkeypatch.setattr(watch, "start_thread", begun.append)  # the watch thread itself: tests/test_notify_e2e.py
    gunicorn_conf.post_fork(None, None)
    assert not gc.isenabled()
    gunicorn_conf.post_worker_init(SimpleNamespace(wsgi="the app"))
    assert begun == ["the app"] and gc.isenabled() and gc.get_freeze_count() > 0


def test_a_worker_runs_with_the_collector_on_once_started(redis_server: RedisServer, database_url: str,
                                                          tmp_path: Path) -> None:
    script = ("import gc, sys\n"
              "sys.argv = ['worker.py', '--burst']\n"
              "from recur.worker import run\n"
              "run()\n"
              "print('collector', gc.isenabled(), gc.get_freeze_count() > 0)\n")
    env = {**os.environ, "REDIS_URL": redis_server.url, "DATABASE_URL": database_url,
           "PROMETHEUS_MULTIPROC_DIR": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == "collector True True"
