"""Hosts whose wall clocks disagree, with real processes: every decision is made on the cluster clock.

Each process's wall clock is shifted with libfaketime (the one PyPI's `libfaketime` package ships, with
monotonic time left alone, as on a real host whose clock is off): a worker 4 s behind, a worker 4 s
ahead (both in-process workers, see below), and a web 4 s behind. Fifty interval schedules at 1-5 s then
run for a while, and no tick may be lost, no run may start before its nominal time by the cluster clock
(Redis TIME), and no link may be dropped. RECUR_SKEW_SECONDS sets how long (60 s is the full proof; the
default is shorter); RECUR_SKEW_SHIFT how far the clocks are off (4 s).
"""

from __future__ import annotations

import os
import signal
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from redis import Redis

from harness.faketime import faketime_env
from harness.servers import Process, RedisServer, start_worker, wait_for
from harness.stack import parse_instant, serve_api
from harness.tick_grid import covered_ticks, lost_ticks, off_grid
from recur_server.workers.background import RECONCILE_LOCK

pytestmark = pytest.mark.integration

SCHEDULES = 50
SKEW = int(os.environ.get("RECUR_SKEW_SHIFT", "4"))  # seconds each shifted host's wall clock is off
STAMPS = "test:began"  # where the task records when it really began, by the cluster clock


def cluster_now(redis: Redis) -> datetime:
    seconds, micros = redis.time()
    return datetime.fromtimestamp(seconds + micros / 1e6, UTC)


@dataclass
class Tally:
    expected: int = 0
    lost: int = 0
    early: list[float] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def tally(schedule: dict[str, Any], runs: list[dict[str, Any]], created: tuple[datetime, datetime],
          until: datetime, began: dict[datetime, datetime]) -> Tally:
    """Compare the runs of one interval schedule with its grid of nominal times, up to `until`."""
    out = Tally()
    interval = timedelta(seconds=schedule["interval_seconds"])
    first = parse_instant(schedule["next_run_at"])  # as planned at creation: one interval after "now"
    slack = timedelta(milliseconds=100)
    if not created[0] - slack <= first - interval <= created[1] + slack:
        out.problems.append(f"first tick {first} planned from a 'now' outside its creation {created}")
    slots = [first + interval * k for k in range(10_000) if first + interval * k <= until]
    out.expected = len(slots)
    ran = covered_ticks(runs, interval)  # a run's own tick, or each tick a policy's row stands for
    out.lost = sum(1 for slot in slots if slot not in ran)
    # A tick not run is a row of its own (a reason, ticks, no repeat number), not a link. On a loaded machine
    # a 1 s schedule's link may start more than a tick late, and its catch-up policy (skip) then records the
    # ticks it passed over as missed (one row for `ticks` of them): every tick of the grid is still accounted
    # for, each once and none off the grid, and the chain's links still follow one another.
    for problem in lost_ticks(ran, interval):
        out.problems.append(f"tick {problem} has no row")
    for problem in off_grid(ran, interval):
        out.problems.append(f"tick {problem} is off the schedule's grid")
    own = [parse_instant(r["scheduled_for"]) for r in runs if not r["retry_number"]]
    if len(own) != len(set(own)):
        out.problems.append("a tick has two rows")
    links = sorted((r for r in runs if r["reason"] is None), key=lambda r: (r["repeat_number"], r["retry_number"]))
    for before, after in zip(links, links[1:], strict=False):
        if parse_instant(after["scheduled_for"]) < parse_instant(before["scheduled_for"]):
            out.problems.append(f"link n{after['repeat_number']} is for a tick before n{before['repeat_number']}'s")
    in_window = [tick for tick in ran if tick <= until]
    if abs(len(in_window) - len(slots)) > 1:
        out.problems.append(f"{len(in_window)} ticks accounted for in a window of {len(slots)} ticks")
    for run in runs:
        # Early by the cluster clock: when the task itself began (it reads Redis TIME), or the start recorded.
        nominal, recorded = parse_instant(run["scheduled_for"]), parse_instant(run["started_at"])
        start = min(recorded, began.get(nominal, recorded))
        lead = (nominal - start).total_seconds()
        if lead > 0:
            out.early.append(lead)
    return out


@pytest.fixture
def skewed(tmp_path: Path, redis_server: RedisServer, database_url: str) -> Iterator[dict[str, Any]]:
    behind, ahead = faketime_env(f"-{SKEW}s"), faketime_env(f"+{SKEW}s")
    redis = Redis.from_url(redis_server.url)
    redis.flushall()
    # Leases of 10 s, not 3: on a loaded machine (four test passes on two cores) a worker starved of the CPU
    # for 3 s lets a 3 s lease lapse between committing a run and handing off its successor, and the
    # reconciler then re-creates that link, as it should: the likeliest cause of the one repair a CI run
    # counted here. What this test proves is the clock; lapsed leases have tests of their own. A repair
    # now prints the reconciler's lines.
    env = {"DATABASE_URL": database_url, "REDIS_URL": redis_server.url, "RECUR_RECONCILE_SECONDS": "1",
           "RECUR_LEASE_SECONDS": "10", "RECUR_TASK_MODULES": "harness.jobs", MARK: uuid.uuid4().hex}
    web, api = serve_api({**env, **behind}, tmp_path / "web.log")
    processes: list[Process] = [web]
    try:
        # In-process workers (--simple) by default: under libfaketime a forking worker loses work horses,
        # which hang at birth in the library's pthread_cond_init wrapper (its own rwlock, held by another
        # thread of the worker at the fork, is never released in the child). RECUR_SKEW_WORKERS=fork,simple
        # runs the first (behind) as a forking worker all the same.
        modes = os.environ.get("RECUR_SKEW_WORKERS", "simple,simple").split(",")
        for name, shift, mode in (("behind", behind, modes[0]), ("ahead", ahead, modes[-1])):
            extra = ["--simple"] if mode == "simple" else []
            processes.append(start_worker({**env, **shift}, tmp_path / f"worker-{name}.log", *extra, slots=1))
        for process in processes[1:]:
            wait_for(lambda p=process: "Listening on" in p.output(), 60, what="a worker to start")
        yield {"api": api, "redis": redis, "processes": processes}
    finally:
        for process in processes:
            process.stop()
        _kill_marked(env[MARK])


# Set in the environment of every process this test starts (children inherit it): whatever is left of
# them at the end is found by it, and only by it.
MARK = "RECUR_SKEW_TEST_RUN"


def _kill_marked(value: str) -> None:
    needle = f"{MARK}={value}".encode()
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if needle in (proc / "environ").read_bytes().split(b"\0"):
                os.kill(int(proc.name), signal.SIGKILL)
        except (OSError, ProcessLookupError):
            pass


def _tally_all(api: Any, redis: Redis, schedules: list[tuple[dict[str, Any], tuple[datetime, datetime]]],
               until: datetime) -> Tally:
    began: dict[str, dict[datetime, datetime]] = {}
    for entry in redis.lrange(STAMPS, 0, -1):
        schedule_id, scheduled_for, at = entry.decode().split()
        began.setdefault(schedule_id, {})[parse_instant(scheduled_for)] = datetime.fromtimestamp(float(at), UTC)
    totals = Tally()
    for schedule, created in schedules:
        one = tally(schedule, api.runs(schedule["id"]), created, until, began.get(schedule["id"], {}))
        totals.expected += one.expected
        totals.lost += one.lost
        totals.early += one.early
        totals.problems += [f"{schedule['name']} every {schedule['interval_seconds']}s: {p}" for p in one.problems]
    return totals


def test_two_workers_four_seconds_apart_lose_no_tick_start_nothing_early_drop_no_link(skewed):
    api, redis, processes = skewed["api"], skewed["redis"], skewed["processes"]
    observed_seconds = float(os.environ.get("RECUR_SKEW_SECONDS", "20"))  # the period the tally covers
    workflow = api.ok("POST", "/api/v1/workflows/", {"name": "stamp", "task": "tests.cluster_stamp"})
    schedules = []
    # No reconcile pass while the schedules are created: a pass between a creation's commit and its
    # hand-off would re-create that link (harmless, but counted; the API's commit-then-enqueue race is
    # not what this test is about). The lock is what a pass of another process would hold; it is set again
    # before each creation, so that fifty creations on a loaded machine cannot outlast it.
    for i in range(SCHEDULES):
        redis.set(RECONCILE_LOCK, "test: creating schedules", px=60_000)
        before = cluster_now(redis)
        schedule = api.ok("POST", "/api/v1/schedules/", {
            "name": f"s{i}", "workflow_id": workflow["id"], "interval_seconds": 1 + i % 5,
            "trigger_payload": {"key": STAMPS}})
        schedules.append((schedule, (before, cluster_now(redis))))
    redis.delete(RECONCILE_LOCK)
    time.sleep(observed_seconds)
    until = cluster_now(redis) - timedelta(seconds=1)  # a tick due in the last second may not have started yet

    # A tick due just before `until` whose run a loaded machine starts late is not lost: the tally is taken
    # again, for up to 30 s, until every tick of the window is accounted for (a lost one never is).
    deadline = time.monotonic() + 30
    totals = _tally_all(api, redis, schedules, until)
    while totals.lost and time.monotonic() < deadline:
        time.sleep(1)
        totals = _tally_all(api, redis, schedules, until)
    stats = {k.decode(): v.decode() for k, v in redis.hgetall("recur:stats").items()}
    lines = [line for p in processes for line in p.output().splitlines()]
    dropped = [line for line in lines if "left to its pending copy" in line]  # what a drop logged before
    arrived_early = [line for line in lines if "early by the cluster clock" in line]
    summary = (f"{totals.lost} of {totals.expected} ticks lost; {len(totals.early)} runs started early "
               f"(up to {max(totals.early, default=0):.1f}s); {len(dropped)} links dropped as early; "
               f"links repaired {stats.get('links_repaired')}, runs written off {stats.get('runs_written_off')}")
    print(summary)
    assert totals.lost == 0, summary
    assert totals.early == [], summary
    assert dropped == [], summary
    assert arrived_early == [], arrived_early[:5]  # moved on the cluster clock, no link arrives early
    repairs = [line for line in lines if "recovery:" in line]
    assert stats.get("links_repaired") == "0" and stats.get("runs_written_off") == "0", (summary, repairs[:5])
    assert totals.problems == [], totals.problems[:20]
