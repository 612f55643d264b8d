"""Chaos test: many replicas, workers SIGKILLed at random, Redis flushed, restarted and stalled, and (on
PostgreSQL) the database restarted and stalled; then the promises are checked against the run history.

    python -m bench.chaos                    # 200 schedules, 3 minutes of faults, PostgreSQL when installed
    python -m bench.chaos --quick            # 40 schedules, 30 s of faults (what CI runs)
    python -m bench.chaos --db sqlite

It starts its own redis-server (AOF on, as the README recommends), its own database (a throwaway
PostgreSQL cluster via scripts/pg-throwaway, or a SQLite file), two gunicorn web servers and three
`worker.py` processes, all on loopback. It exits non-zero if any promise is broken.

Executions are counted outside the database and Redis (which it flushes): the workers append a line to
an execution log (RECUR_EXECUTION_LOG) as each task body starts, and another as each body succeeds;
bench.executions sorts every tick whose body started more than once by why, and finds every success the
runs table recorded as something else (see there); the runs table only proves one claim per attempt.

The database and Redis faults (`--no-db-faults` leaves them out): a PostgreSQL restart (pg_ctl restart -m
fast), a stall of the database (SIGSTOP of every server process, then SIGCONT) and a stall of Redis
(SIGSTOP of redis-server), each STALL_SECONDS long in a full run.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any, cast

from redis import Redis
from sqlalchemy import create_engine, text
from sqlalchemy.engine import Engine, make_url

from app.chain.link_lookup import IN_HAND_GRACE_SECONDS
from app.infra.clock import HOST_SKEW_ALLOWANCE_SECONDS
from bench import executions, procfs
from harness.servers import ROOT, Process, RedisServer, free_port, start_web, start_worker, wait_for
from harness.tokens import token_for_env

STALL_SECONDS = 10.0


@dataclass
class Fault:
    kind: str
    at: float  # epoch seconds
    until: float | None = None  # when a fault that lasts (a stall) ended


@dataclass
class Postgres:
    """The throwaway PostgreSQL cluster the run uses, to restart and stall."""

    data: Path

    def _as_owner(self, *argv: str) -> None:
        binaries = sorted(Path("/usr/lib/postgresql").glob("*/bin"))[-1]
        command = [str(binaries / argv[0]), *argv[1:]]
        if os.getuid() == 0:
            command = ["runuser", "-u", "postgres", "--", *command]
        # No pipes: a postmaster that pg_ctl starts would hold them open, and the run would wait for ever.
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def restart(self) -> None:
        self._as_owner("pg_ctl", "-D", str(self.data), "-l", str(self.data.parent / "server.log"), "restart",
                       "-m", "fast", "-w", "-t", "60")

    def processes(self) -> set[int]:
        return procfs.with_descendants(int((self.data / "postmaster.pid").read_text().split()[0]))

    def stall(self, seconds: float) -> None:
        pids = self.processes()
        for pid in pids:
            _signal(pid, signal.SIGSTOP)
        try:
            time.sleep(seconds)
        finally:
            for pid in pids:
                _signal(pid, signal.SIGCONT)


def _signal(pid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signum)


def _group_pids(pgid: int) -> set[int]:
    """Every process a killed worker takes down or orphans, read before it is killed: its process group,
    and its descendants (a work process may lead a process group of its own)."""
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if int(procfs.stat(int(entry.name))[2]) == pgid:
                    found.add(int(entry.name))
            except (OSError, IndexError, ValueError):
                continue
    return found | procfs.with_descendants(pgid)


@dataclass
class Chaos:
    workdir: Path
    env: dict[str, str]
    redis: RedisServer
    webs: list[tuple[int, Process]] = field(default_factory=list)
    workers: list[Process] = field(default_factory=list)
    faults: list[Fault] = field(default_factory=list)
    restarts: int = 0
    worker_args: tuple[str, ...] = ()
    token: str = ""
    postgres: Postgres | None = None
    killed_pids: set[int] = field(default_factory=set)

    def api(self, method: str, path: str, body: Any = None) -> Any:
        port = random.choice(self.webs)[0]
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data, method=method,
                                         headers={"Content-Type": "application/json",
                                                  "Authorization": f"Bearer {self.token}"})
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read() or b"null")

    def start_worker(self) -> Process:
        self.restarts += 1
        worker = start_worker(self.env, self.workdir / f"worker-{self.restarts:03d}.log", *self.worker_args,
                              new_session=True)
        return worker


def _database(kind: str, workdir: Path) -> tuple[str, Any, Postgres | None]:
    """Returns (DATABASE_URL, cleanup, the PostgreSQL cluster if any)."""
    if kind == "sqlite":
        return f"sqlite:///{workdir / 'chaos.db'}", lambda: None, None
    pgdir = Path(tempfile.mkdtemp(prefix="recur-chaos-pg."))
    server = subprocess.run([str(ROOT / "scripts" / "pg-throwaway"), "start", str(pgdir)], check=True,
                            capture_output=True, text=True).stdout.strip()
    admin = create_engine(make_url(server).set(drivername="postgresql+psycopg"), isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text("CREATE DATABASE chaos"))
    admin.dispose()
    url = make_url(server).set(database="chaos").render_as_string(hide_password=False)

    def cleanup() -> None:
        subprocess.run([str(ROOT / "scripts" / "pg-throwaway"), "stop", str(pgdir)], check=False)

    return url, cleanup, Postgres(pgdir / "data")


def _create_schedules(chaos: Chaos, count: int) -> dict[str, str]:
    """Returns {schedule id: kind}: mostly no-ops, some flaky, some that always time out."""
    workflows = {
        task: chaos.api("POST", "/api/v1/workflows/", {"name": task, "task": task})["id"]
        for task in ("builtin.noop", "builtin.flaky", "builtin.sleep")
    }
    kinds: dict[str, str] = {}
    for index in range(count):
        body: dict[str, Any] = {"name": f"chaos-{index}", "interval_seconds": 1 + index % 2}
        if index % 10 == 3:
            body.update(workflow_id=workflows["builtin.flaky"], trigger_payload={"failures": 1}, max_retries=5)
            kind = "flaky"
        elif index % 20 == 7:
            body.update(workflow_id=workflows["builtin.sleep"], trigger_payload={"seconds": 3}, timeout_seconds=1,
                        max_retries=1000)
            kind = "timeout"
        else:
            body.update(workflow_id=workflows["builtin.noop"])
            kind = "noop"
        kinds[chaos.api("POST", "/api/v1/schedules/", body)["id"]] = kind
    return kinds


def _inject_faults(chaos: Chaos, duration: float, rng: random.Random, db_faults: bool) -> None:
    """Kills every 3-8 s; one of each other fault at its point of the run, one at a time (a stall blocks
    this loop for its length, so no kill lands during one)."""
    start = time.time()
    stall = min(STALL_SECONDS, duration / 10)
    once: list[tuple[float, str]] = [(0.35, "FLUSHALL"), (0.7, "redis restart")]
    if db_faults:
        once.append((0.85, "redis stall"))
        if chaos.postgres is not None:
            once += [(0.2, "postgres restart"), (0.5, "postgres stall")]
    pending = sorted((start + duration * share, kind) for share, kind in once)
    next_kill = start + rng.uniform(3, 8)
    while time.time() < start + duration:
        now = time.time()
        if now >= next_kill:
            victim = rng.randrange(len(chaos.workers))
            chaos.killed_pids |= _group_pids(chaos.workers[victim].pid)
            chaos.workers[victim].kill(whole_group=True)
            chaos.faults.append(Fault("kill -9 worker", time.time()))
            chaos.workers[victim] = chaos.start_worker()
            next_kill = time.time() + rng.uniform(3, 8)
        if pending and now >= pending[0][0]:
            _, kind = pending.pop(0)
            fault = Fault(kind, time.time())
            chaos.faults.append(fault)
            if kind == "FLUSHALL":
                Redis.from_url(chaos.redis.url).flushall()
            elif kind == "redis restart":
                chaos.redis.restart(down_seconds=1.0)
            elif kind == "redis stall":
                _signal(chaos.redis.pid, signal.SIGSTOP)
                try:
                    time.sleep(stall)
                finally:
                    _signal(chaos.redis.pid, signal.SIGCONT)
            elif kind == "postgres restart":
                assert chaos.postgres is not None
                chaos.postgres.restart()
            elif kind == "postgres stall":
                assert chaos.postgres is not None
                chaos.postgres.stall(stall)
            fault.until = time.time()
            print(f"{kind} at +{fault.at - start:.0f}s, {fault.until - fault.at:.1f}s", flush=True)
        time.sleep(0.1)


def _percentile(values: list[float], pct: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(pct / 100 * (len(ordered) - 1))))]


def _epoch(instant: Any) -> float:
    if isinstance(instant, str):  # SQLite hands raw SQL back as text
        instant = datetime.fromisoformat(instant)
    return float(instant.replace(tzinfo=UTC).timestamp())


def _check(engine: Engine, redis: Redis, kinds: dict[str, str], faults: list[Fault], pass_seconds: float,
           ended_at: float, execution_log: Path, killed_pids: set[int]) -> dict[str, Any]:
    with engine.connect() as conn:
        rows = conn.execute(text(
            "SELECT schedule_id, repeat_number, retry_number, status, error, finished_at FROM runs")).all()
        attempts = {(row[0], row[1], row[2]): (row[3], row[4]) for row in rows}
        write_offs = [_epoch(row[5]) for row in rows
                      if row[5] is not None and executions.written_off((row[3], row[4]))]
        duplicates = conn.execute(text(
            "SELECT schedule_id, repeat_number, retry_number, count(*) FROM runs "
            "WHERE status IN ('succeeded', 'failed', 'timed_out') "
            "GROUP BY schedule_id, repeat_number, retry_number HAVING count(*) > 1")).all()
        schedules = conn.execute(text(
            "SELECT id, status, interval_seconds, run_count, error_count, current_repeat, current_retry, "
            "running_run_id FROM scheduled_jobs")).all()
        counts = {
            (row[0], row[1]): row[2]
            for row in conn.execute(text("SELECT schedule_id, status, count(*) FROM runs GROUP BY 1, 2")).all()
        }
        starts: dict[str, list[float]] = {}
        for schedule_id, started_at in conn.execute(text("SELECT schedule_id, started_at FROM runs")).all():
            starts.setdefault(schedule_id, []).append(_epoch(started_at))

    links = cast(list[bytes], redis.zrange("rq:scheduled:recur", 0, -1) + redis.lrange("rq:queue:recur", 0, -1))
    pending = {m.decode().rsplit("-n", 1)[0][len("sched-"):] for m in links}
    stalled = []
    mismatched = []
    for row in schedules:
        schedule_id, status, interval = row[0], row[1], row[2]
        succeeded = counts.get((schedule_id, "succeeded"), 0)
        failed = counts.get((schedule_id, "failed"), 0) + counts.get((schedule_id, "timed_out"), 0)
        if (row[3], row[4]) != (succeeded, failed):
            mismatched.append((schedule_id, row[3], row[4], succeeded, failed))
        if status != "active":
            continue
        window = 3 * interval + pass_seconds
        recent = any(t > ended_at - window for t in starts.get(schedule_id, []))
        if schedule_id not in pending and row[7] is None and not recent:
            stalled.append(schedule_id)

    repair: list[float] = []
    by_kind: dict[str, list[float]] = {}
    for fault in faults:
        over = fault.until or fault.at  # a stall or restart is repaired from its end
        for schedule_id, kind in kinds.items():
            if kind == "timeout":
                continue  # in backoff for up to 10 intervals by design; not a repair figure
            later = [t for t in starts.get(schedule_id, []) if t > over]
            if later:
                repair.append(min(later) - over)
                by_kind.setdefault(fault.kind, []).append(min(later) - over)
    # Each write-off is put down to the latest fault before it, if that fault was over at most 30 s earlier.
    offs_by_kind: Counter[str] = Counter()
    for at in write_offs:
        before = [f for f in faults if f.at <= at]
        latest = max(before, key=lambda f: f.at) if before else None
        offs_by_kind[latest.kind if latest is not None and at - (latest.until or latest.at) <= 30 else "none"] += 1
    successes_path = Path(str(execution_log) + ".ok")
    successes = executions.successes_recorded_otherwise(
        executions.parse(successes_path.read_text().splitlines()) if successes_path.exists() else [], attempts,
        killed_pids)
    return {
        "schedules": len(schedules),
        "statuses": dict(Counter(row[1] for row in schedules)),
        "runs": sum(counts.values()),
        "runs_by_status": {status: sum(v for (_, s), v in counts.items() if s == status)
                           for status in {s for (_, s) in counts}},
        # From the execution log: (a) restarted_after_write_off, (b) unexplained (must be 0).
        "executions": executions.classify(executions.parse(execution_log.read_text().splitlines()), attempts)
        if execution_log.exists() else {"body_starts": 0},
        "runs_claimed_not_skipped": sum(1 for status, _ in attempts.values() if status != "skipped"),
        # Two runs of one (schedule, repeat, retry) in the runs table: 0 by its unique index whatever happens.
        "runs_table_duplicate_attempts": len(duplicates),
        "stalled_active_schedules": len(stalled),
        "counter_mismatches": len(mismatched),
        "faults": dict(Counter(f.kind for f in faults)),
        "repair_seconds": _summary(repair),
        # Per fault kind: the repair time from the fault's end, and the runs written off after it.
        "by_fault": {kind: {"repair_seconds": _summary(by_kind.get(kind, [])), "written_off": offs_by_kind[kind]}
                     for kind in sorted({f.kind for f in faults})},
        "written_off_with_no_fault_before": offs_by_kind["none"],
        # Bodies that succeeded (logged before their outcome is committed) recorded as anything else: only a
        # SIGKILL of the process that ran one explains it; any other must be 0.
        "successes": successes,
        "examples": {"duplicates": [list(map(str, d)) for d in duplicates[:5]], "stalled": stalled[:5],
                     "mismatched": [list(map(str, m)) for m in mismatched[:5]]},
    }


def _summary(values: list[float]) -> dict[str, float]:
    return {"p50": round(_percentile(values, 50), 2), "p99": round(_percentile(values, 99), 2),
            "max": round(max(values, default=0.0), 2), "samples": len(values)}


def run(schedules: int, duration: float, db_kind: str, seed: int, reconcile_seconds: float,
        worker_mode: str = "simple", db_faults: bool = True) -> dict[str, Any]:
    rng = random.Random(seed)
    workdir = Path(tempfile.mkdtemp(prefix="recur-chaos."))
    database_url, cleanup_db, postgres = _database(db_kind, workdir)
    redis = RedisServer(workdir, appendonly=True)
    execution_log = workdir / "executions.log"
    env = {"DATABASE_URL": database_url, "REDIS_URL": redis.url,
           "RECUR_RECONCILE_SECONDS": str(reconcile_seconds), "RECUR_EXECUTION_LOG": str(execution_log)}
    chaos = Chaos(workdir, env, redis, worker_args=("--simple",) if worker_mode == "simple" else (),
                  postgres=postgres)
    try:
        chaos.token = token_for_env(env)
        for index in range(2):
            port = free_port()
            chaos.webs.append((port, start_web(env, port, workdir / f"web{index}.log")))
        for port, _ in chaos.webs:
            wait_for(partial(_answers, port), 60, what=f"web server on {port}")
        chaos.workers = [chaos.start_worker() for _ in range(3)]
        started = time.time()
        kinds = _create_schedules(chaos, schedules)
        print(f"created {len(kinds)} schedules in {time.time() - started:.1f}s; faults for {duration:.0f}s",
              flush=True)
        _inject_faults(chaos, duration, rng, db_faults)
        # Every chain must have run again this long after the faults stop: the slowest repair promised is of
        # a link that a killed worker had taken and not claimed, missing only IN_HAND_GRACE_SECONDS (plus the
        # host-skew allowance) after it was taken, and found by the next pass; then a lease and two ticks.
        settle = reconcile_seconds + IN_HAND_GRACE_SECONDS + HOST_SKEW_ALLOWANCE_SECONDS + 6.0 + 3.0
        print(f"faults stopped; settling {settle:.0f}s", flush=True)
        time.sleep(settle)
        ended_at = time.time()
        # Quiesce before reading: a warm stop lets each running link finish and hand off its successor,
        # so the database and Redis are read in a state that is not moving.
        for process in chaos.workers:
            process.popen.terminate()
        for process in chaos.workers:
            process.stop(timeout=60)
        engine = create_engine(make_url(database_url).set(
            drivername="postgresql+psycopg" if db_kind == "postgres" else "sqlite"))
        report = _check(engine, Redis.from_url(redis.url), kinds, chaos.faults, settle, ended_at, execution_log,
                        chaos.killed_pids)
        engine.dispose()
        report.update(database=db_kind, duration_seconds=duration, reconcile_seconds=reconcile_seconds,
                      worker_mode=worker_mode, db_faults=db_faults,
                      worker_starts=chaos.restarts, at=datetime.now(UTC).isoformat(timespec="seconds"),
                      execution_log=str(execution_log))
        return report
    finally:
        for process in chaos.workers:
            process.kill(whole_group=True)
        for _, web in chaos.webs:
            web.stop()
        redis.stop()
        cleanup_db()


def _answers(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/health/", timeout=2) as response:
            return bool(response.status == 200)
    except (OSError, urllib.error.URLError):
        return False


def verdict(report: dict[str, Any], max_repair_p99: float) -> list[str]:
    broken = []
    runs = report["executions"]
    if not runs["body_starts"]:
        broken.append("the execution log recorded no task body start")
    if runs.get("unexplained"):
        broken.append(f"{runs['unexplained']} ticks' bodies started more often than at-least-once allows")
    if runs.get("runs_without_a_logged_start"):
        broken.append(f"{runs['runs_without_a_logged_start']} runs ran with no start in the execution log")
    if report["runs_table_duplicate_attempts"]:
        broken.append(f"{report['runs_table_duplicate_attempts']} attempts were claimed twice")
    if report["stalled_active_schedules"]:
        broken.append(f"{report['stalled_active_schedules']} active schedules lost their chain")
    if report["counter_mismatches"]:
        broken.append(f"{report['counter_mismatches']} schedules' counters disagree with their run history")
    if report["successes"]["recorded_otherwise"]:
        broken.append(f"{report['successes']['recorded_otherwise']} bodies that succeeded were recorded otherwise")
    if report["repair_seconds"]["p99"] > max_repair_p99:
        broken.append(f"repair time p99 {report['repair_seconds']['p99']}s > {max_repair_p99}s")
    return broken


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="40 schedules, 30 s of faults")
    parser.add_argument("--schedules", type=int, default=None)
    parser.add_argument("--duration", type=float, default=None, help="seconds of faults")
    parser.add_argument("--db", choices=["postgres", "sqlite", "auto"], default="auto")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--reconcile-seconds", type=float, default=5.0)
    parser.add_argument("--workers", choices=["simple", "default"], default="simple",
                        help="worker.py --simple (the default here, as in the committed full runs) or worker.py "
                             "as the Procfile runs it (its slots, each task in a persistent work process)")
    parser.add_argument("--no-db-faults", action="store_true",
                        help="leave out the database restart and stall and the Redis stall")
    parser.add_argument("--json", type=Path, default=None, help="also write the report here")
    args = parser.parse_args(argv)
    schedules = args.schedules or (40 if args.quick else 200)
    duration = args.duration or (30.0 if args.quick else 180.0)
    db_kind = args.db
    if db_kind == "auto":
        db_kind = "postgres" if list(Path("/usr/lib/postgresql").glob("*/bin/initdb")) else "sqlite"
    seed = args.seed if args.seed is not None else int(time.time())
    print(f"chaos: {schedules} schedules, {duration:.0f}s of faults, {db_kind}, seed {seed}", flush=True)
    report = run(schedules, duration, db_kind, seed, args.reconcile_seconds, args.workers, not args.no_db_faults)
    report["seed"] = seed
    broken = verdict(report, max_repair_p99=30.0)
    report["verdict"] = "pass" if not broken else "FAIL: " + "; ".join(broken)
    print(json.dumps(report, indent=2))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    return 0 if not broken else 1


if __name__ == "__main__":
    sys.exit(main())
