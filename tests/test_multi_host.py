"""Recur on three hosts (network namespaces on a bridge, harness/netns.py): this test's own namespace is the
data host, with Redis and PostgreSQL; two app hosts each run a web process and a worker installed from the
wheel, one of them with its clock 4 s ahead. With 200 schedules running, host A is cut off the network
for 30 s (its runs are written off and retried on host B, its links re-created), comes back, and its
worker is then stopped for good (host B carries every schedule).

Then: every schedule's chain is alive (each ran on host B after host A's worker stopped), every tick on its
grid has a row (run, or recorded as not run by a policy: none lost), no tick's last attempt failed, at
least one attempt was written off (host A was cut off with a task running), and no task body started twice
but after a written-off attempt (the bodies' own log). The repair times are printed: how
late the ticks due while host A was away started, how many attempts were written off, the ticks recorded
as not run and by which policy.

Runs on the PostgreSQL pass (the hosts share a database server), where network namespaces can be made."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Collection
from datetime import UTC, datetime, timedelta
from pathlib import Path
from statistics import quantiles
from typing import Any

import pytest

from bench.executions import Attempt, Outcome, classify, parse
from harness import netns
from harness.faketime import faketime_env
from harness.pgcluster import POSTGRES_BIN, server_on
from harness.servers import LOOPBACK_EGRESS, Process, free_port, wait_for
from harness.stack import Api, parse_instant
from harness.tick_grid import covered_ticks, lost_ticks
from harness.wheel import installed_wheel, run_checked

pytestmark = [pytest.mark.integration, pytest.mark.database]

SCHEDULES = 200
SKEW_MARGIN = timedelta(seconds=5)  # host B's runs are stamped by its clock, 4 s ahead
INTERVAL = 2
SLEEPERS, SLEEP_SECONDS, SLEEP_INTERVAL = 6, 4, 12  # six of them sleep 4 s every 12 s
CUT_SECONDS = 30
STEADY_SECONDS = 10
CHAIN_WAIT_SECONDS = 120  # the longest wait, after host A's worker stopped, for a run of every schedule


def _ran_since(api: Api, schedule_id: str, since: datetime) -> bool:
    """Whether the schedule's newest runs include one started since `since` (host B's clock allowed for)."""
    items = api.ok("GET", f"/api/v1/schedules/{schedule_id}/runs/?limit=3")["items"]
    return any(run["started_at"] and parse_instant(run["started_at"]) >= since - SKEW_MARGIN for run in items)


def _print_logs(logs: list[Path], names: Collection[str] = ()) -> None:
    """Each log's last lines, and first its lines that name any of `names` (a schedule's, its runs' IDs)."""
    for path in logs:
        text = path.read_text(errors="replace") if path.exists() else ""
        named = [line for line in text.splitlines() if any(name in line for name in names)][-80:]
        print(f"----- {path.parent.name}/{path.name}\n" + "".join(line + "\n" for line in named)
              + "...\n" + text[-2500:])


def _wait(seconds: float) -> None:
    end = time.monotonic() + seconds
    wait_for(lambda: time.monotonic() >= end, seconds + 5, interval=0.5)


def test_two_app_hosts_carry_each_others_schedules_through_a_cut_a_skewed_clock_and_a_lost_worker(
        tmp_path: Path) -> None:
    if not os.environ.get("RECUR_TEST_POSTGRES"):
        pytest.skip("the hosts share a PostgreSQL server: this runs on the PostgreSQL pass")
    if POSTGRES_BIN is None or not netns.available():
        pytest.skip("needs PostgreSQL's server binaries, root and ip (network namespaces)")
    skew = faketime_env("+4s")
    bin_dir = installed_wheel(tmp_path)
    hosts = netns.Hosts(2)
    database = server_on(hosts.data_address, f"{hosts.subnet}.0/24")
    redis_port = free_port()
    redis = subprocess.Popen(["redis-server", "--port", str(redis_port), "--bind", f"127.0.0.1 {hosts.data_address}",
                              "--save", "", "--appendonly", "no", "--protected-mode", "no", "--dir", str(tmp_path)],
                             stdout=subprocess.DEVNULL)
    ip_dir = os.path.dirname(shutil.which("ip") or "/usr/sbin/ip")
    env = {**LOOPBACK_EGRESS, "PATH": f"{bin_dir}:{ip_dir}:/usr/bin:/bin",
           "DATABASE_URL": f"postgresql://recur@{hosts.data_address}:{database.port}/postgres",
           "REDIS_URL": f"redis://{hosts.data_address}:{redis_port}/0", "RECUR_RECONCILE_SECONDS": "1",
           "RECUR_EXECUTION_LOG": str(tmp_path / "executions.log")}
    processes: list[Process] = []
    logs: list[Path] = []
    try:
        wait_for(lambda: subprocess.run(["redis-cli", "-p", str(redis_port), "ping"], capture_output=True)
                 .stdout.strip() == b"PONG", 10, what="redis-server")
        run_checked([str(bin_dir / "recur"), "manage", "db", "upgrade"], cwd=tmp_path, env=env)
        token = run_checked([str(bin_dir / "recur"), "manage", "owners", "bootstrap"], cwd=tmp_path,
                            env=env).strip().splitlines()[-1]
        apis = []
        for i, shift in enumerate(({}, skew)):  # host A, host B (4 s ahead)
            home = tmp_path / f"host{i}"
            home.mkdir()
            port = free_port()
            logs += [home / "web.log", home / "worker.log"]
            # A clock-shifted worker runs its tasks in itself: libfaketime's locks hang forked work processes.
            worker_mode = ["--simple"] if shift else []
            processes.append(Process([*hosts.prefix(i), str(bin_dir / "recur"), "server", "--bind",
                                      f"{hosts.address(i)}:{port}", "--workers", "1"], {**env, **shift}, logs[-2],
                                     cwd=home))
            processes.append(Process([*hosts.prefix(i), str(bin_dir / "recur"), "worker", "--concurrency", "4",
                                      *worker_mode], {**env, **shift}, logs[-1], cwd=home))
            apis.append(Api(f"http://{hosts.address(i)}:{port}", token))
        for api in apis:
            wait_for(api.answers, 60, what="each host's web process")
        wait_for(lambda: sum(apis[1].ok("GET", "/api/v1/health/")["workers"].values()) == 2, 60,
                 what="both hosts' workers")
        noop = apis[0].ok("POST", "/api/v1/workflows/", {"name": "noop", "task": "builtin.noop"})
        sleep = apis[0].ok("POST", "/api/v1/workflows/", {"name": "sleep", "task": "builtin.sleep"})
        intervals = {}
        for i in range(SCHEDULES):  # every SLEEPERS-th sleeps: host A is cut off with some of those running
            slow = i % (SCHEDULES // SLEEPERS) == 0
            body = {"name": f"s{i}", "workflow_id": (sleep if slow else noop)["id"], "catch_up": "all",
                    "interval_seconds": SLEEP_INTERVAL if slow else INTERVAL}
            if slow:  # a tick that comes while the last still sleeps (host A away) waits for it: none is lost
                body |= {"trigger_payload": {"seconds": SLEEP_SECONDS}, "overlap": "buffer_all"}
            intervals[apis[i % 2].ok("POST", "/api/v1/schedules/", body)["id"]] = body["interval_seconds"]
        ids = list(intervals)
        sleepers = [i for i, seconds in intervals.items() if seconds == SLEEP_INTERVAL]
        _wait(STEADY_SECONDS)
        on_a = f"recur-{socket.gethostname()}-{processes[1].pid}-"  # host A's worker's slots

        def sleeping_on_a() -> bool:
            return any(run["status"] == "running" and (run.get("worker") or "").startswith(on_a)
                       for i in sleepers for run in apis[1].ok("GET", f"/api/v1/schedules/{i}/runs/?limit=2")["items"])

        wait_for(sleeping_on_a, 60, interval=0.2, what="a task sleeping on host A")
        cut_at = datetime.now(UTC)
        hosts.cut(0)
        _wait(CUT_SECONDS)
        hosts.restore(0)
        restored_at = datetime.now(UTC)
        _wait(STEADY_SECONDS)
        processes[1].stop(timeout=60)  # host A's worker, for good
        a_stopped_at = datetime.now(UTC)
        _wait(SLEEP_INTERVAL + 3)  # a tick of every schedule, host B's alone
        # On a loaded machine a chain can be further behind than that (a tick written off during the cut is
        # retried an interval after the write-off): wait for a run of each since host A's worker stopped. A
        # lost chain still fails: the reconciler puts a missing link back within a pass (1 s here).
        waiting = set(ids)

        def every_chain_ran() -> bool:
            waiting.difference_update([i for i in sorted(waiting) if _ran_since(apis[1], i, a_stopped_at)])
            return not waiting

        with contextlib.suppress(AssertionError):
            wait_for(every_chain_ran, CHAIN_WAIT_SECONDS, interval=2, what="a run of every schedule on host B")
        for process in processes[3:]:
            process.stop(timeout=60)  # host B's worker: every run ended
        runs = {schedule_id: apis[1].runs(schedule_id) for schedule_id in ids}
    except BaseException:
        _print_logs(logs)
        raise
    finally:
        for process in processes:
            process.stop()
        redis.terminate()
        redis.wait(10)
        database.destroy()
        hosts.destroy()

    outcomes: dict[Attempt, Outcome] = {}
    problems: list[str] = []
    late_in_cut: list[float] = []
    not_run: dict[str, int] = {}
    for schedule_id, items in runs.items():
        interval = timedelta(seconds=intervals[schedule_id])
        last: dict[int, dict[str, Any]] = {}
        for run in sorted(items, key=lambda r: (r["repeat_number"] or 0, r["retry_number"] or 0)):
            if run["reason"] is not None:  # ticks not run, by a policy: one row for the gap
                not_run[run["reason"]] = not_run.get(run["reason"], 0) + run["ticks"]
                continue
            outcomes[schedule_id, run["repeat_number"], run["retry_number"]] = (run["status"], run.get("error"))
            last[run["repeat_number"]] = run
        lost = lost_ticks(covered_ticks(items, interval), interval)
        if lost:
            problems.append(f"{schedule_id}: {len(lost)} ticks with no row, the first {lost[0]}")
        if not any(r["started_at"] and parse_instant(r["started_at"]) >= a_stopped_at - SKEW_MARGIN for r in items):
            problems.append(f"{schedule_id}: no run since host A's worker stopped: its chain is lost")
        ended_badly = [(n, r["status"], r.get("error")) for n, r in last.items()
                       if r["status"] not in ("succeeded", "skipped")]
        if ended_badly:
            problems.append(f"{schedule_id}: ticks whose last attempt did not succeed: {ended_badly}")
        for run in last.values():
            due = parse_instant(run["scheduled_for"])
            if cut_at <= due <= restored_at and run["started_at"]:
                late_in_cut.append((parse_instant(run["started_at"]) - due).total_seconds())
    starts = classify(parse((tmp_path / "executions.log").read_text().splitlines()), outcomes)
    lateness = quantiles(late_in_cut, n=20) if len(late_in_cut) > 1 else late_in_cut
    print(f"multi-host: {len(outcomes)} attempts; ticks due while host A was cut off ({CUT_SECONDS} s): "
          f"{len(late_in_cut)}, started late by p50 {lateness[9] if len(lateness) > 9 else lateness} s, "
          f"p95 {lateness[-1] if lateness else None} s, max {max(late_in_cut, default=None)} s; "
          f"written off {starts['written_off_attempts']}, restarted after a write-off "
          f"{starts['restarted_after_write_off']}; ticks not run, by reason: {not_run}")
    if problems:
        named = {problem.split(":")[0] for problem in problems}
        _print_logs(logs, named | {run["id"] for i in named for run in runs.get(i, [])})
    assert problems == [], problems[:5]
    assert starts["unexplained"] == 0, starts
    assert starts["written_off_attempts"] >= 1, starts  # host A held running tasks when it was cut off
