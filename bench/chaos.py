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
(SIGSTOP of redis-server), each STALL_SECONDS (bench.chaos_faults) long in a full run.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

from redis import Redis
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from bench.chaos_check import check, verdict
from bench.chaos_faults import Fault, Postgres, inject_faults
from harness.servers import ROOT, Process, RedisServer, free_port, start_web, start_worker, wait_for
from harness.tokens import token_for_env
from recur_server.chain.link_lookup import IN_HAND_GRACE_SECONDS
from recur_server.infra.clock import HOST_SKEW_ALLOWANCE_SECONDS


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
        inject_faults(chaos, duration, rng, db_faults)
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
        report = check(engine, Redis.from_url(redis.url), kinds, chaos.faults, settle, ended_at, execution_log,
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
