"""PostgreSQL failover: DATABASE_URL in libpq's multi-host form (translated for SQLAlchemy in
recur_server/infra/config.py),
and a real primary with a synchronous streaming standby: gunicorn and two worker.py processes on the multi-host
URL run 50 one-second chains; the primary is SIGKILLed mid-run and the standby promoted (`pg_ctl promote`).
The model is tests/test_sentinel.py's Redis failover, with the same assertions."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import pytest
from sqlalchemy import create_engine

from harness.pgcluster import POSTGRES_BIN, PrimaryStandby
from harness.servers import RedisServer, start_worker, wait_for
from harness.stack import Api, parse_instant, serve_api
from recur_server.infra.config import sqlalchemy_url

needs_postgres = pytest.mark.skipif(POSTGRES_BIN is None, reason="PostgreSQL's server binaries are not installed")


@pytest.mark.parametrize(("given", "expected"), [
    ("postgresql://recur@h1:5432,h2:5433/recur?target_session_attrs=read-write",
     "postgresql+psycopg://recur@/recur?host=h1,h2&port=5432,5433&target_session_attrs=read-write"),
    ("postgres://u:p%40ss@h1,h2/db", "postgresql+psycopg://u:p%40ss@/db?host=h1,h2"),
    ("postgresql://u@[::1]:5432,h2/db?connect_timeout=3",
     "postgresql+psycopg://u@/db?host=::1,h2&port=5432,&connect_timeout=3"),
    ("postgresql://u@h1/db", "postgresql+psycopg://u@h1/db"),  # one host: as before
    ("postgresql+psycopg://u@h1:1,h2:2/db", "postgresql+psycopg://u@/db?host=h1,h2&port=1,2"),
    ("sqlite:////tmp/x.db", "sqlite:////tmp/x.db"),
])
def test_a_multi_host_url_becomes_the_form_sqlalchemy_reads(given: str, expected: str) -> None:
    assert sqlalchemy_url(given) == expected


def test_the_translated_url_reaches_libpq_with_every_host_in_order() -> None:
    engine = create_engine(sqlalchemy_url("postgresql://recur:pw@h1:5432,h2:5433/recur"
                                          "?target_session_attrs=read-write"))
    _, params = engine.dialect.create_connect_args(engine.url)
    assert (params["host"], params["port"], params["dbname"], params["user"], params["password"],
            params["target_session_attrs"]) == ("h1,h2", "5432,5433", "recur", "recur", "pw", "read-write")


@pytest.mark.parametrize(("given", "named"), [
    ("postgresql://u@h1,,h2/db", "empty host"),
    ("postgresql://u@h1:x,h2/db", "port must be a number"),
    ("postgresql://u@h1,h2/db?host=h3", "one form"),
])
def test_a_malformed_host_list_is_refused_naming_what_is_wrong(given: str, named: str) -> None:
    with pytest.raises(ValueError, match=named):
        sqlalchemy_url(given)


@pytest.mark.integration
@needs_postgres
def test_worker_chains_survive_a_postgresql_failover(tmp_path: Path) -> None:
    """Real worker.py processes and the API on the multi-host URL; the primary is SIGKILLed mid-run and the
    standby promoted. Every chain runs again within 30 s of the promotion, every schedule stays active, no
    (schedule, repeat) was claimed twice, no body ran twice, and every process is still running."""

    pair = PrimaryStandby()
    redis = RedisServer(tmp_path)
    log = tmp_path / "executions.log"
    env = {"DATABASE_URL": pair.url, "REDIS_URL": redis.url, "RECUR_RECONCILE_SECONDS": "1",
           "RECUR_LEASE_SECONDS": "3", "RECUR_EXECUTION_LOG": str(log)}
    processes = []
    try:
        web, api = serve_api(env, tmp_path / "web.log")
        processes.append(web)
        processes += [start_worker(env, tmp_path / f"worker{i}.log", slots=1) for i in range(2)]
        workflow = api.ok("POST", "/api/v1/workflows/", {"name": "noop", "task": "builtin.noop"})
        ids = [api.ok("POST", "/api/v1/schedules/", {"name": f"s{i}", "workflow_id": workflow["id"],
                                                     "interval_seconds": 1})["id"] for i in range(50)]
        wait_for(lambda: all(len(api.runs(i)) >= 2 for i in ids), 60, interval=0.3, what="every chain to run")
        promoted = pair.fail_over()
        promoted_at = wait_for(lambda: _last_start(api, ids), 30, interval=0.3, what="the API on the new primary")

        def all_ran_again() -> bool:
            return all(any(r["started_at"] and parse_instant(r["started_at"]) > promoted_at
                           and r["status"] == "succeeded" for r in api.runs(i)) for i in ids)

        wait_for(all_ran_again, 30, interval=0.5, what="every chain to run again after the promotion")
        print(f"every chain ran again {time.monotonic() - promoted:.1f} s after the promotion")
        runs = [r for i in ids for r in api.runs(i)]
        attempts = Counter((r["schedule_id"], r["repeat_number"], r["retry_number"]) for r in runs
                           if r["repeat_number"] is not None)
        assert not {key: n for key, n in attempts.items() if n > 1}  # no attempt claimed twice
        # A tick's body started more than once only where an attempt of it was written off (its worker
        # seemed lost): the at-least-once case the README names. A write-off is counted and reported.
        written_off = {(r["schedule_id"], str(r["repeat_number"])) for r in runs
                       if (r["error"] or "").startswith("worker_lost")}
        executions = Counter(tuple(line.split()[:2]) for line in log.read_text().splitlines())
        twice = {key: n for key, n in executions.items() if n > 1}
        print(f"{len(written_off)} attempts written off; ticks whose body started twice: {twice}")
        assert not set(twice) - written_off, (twice, written_off)
        for schedule_id in ids:
            assert api.ok("GET", f"/api/v1/schedules/{schedule_id}/")["status"] == "active"
        assert all(process.alive() for process in processes)  # no process quit when its database went away
    finally:
        for process in processes:
            process.stop()
        for name in ("web.log", "worker0.log", "worker1.log"):
            path = tmp_path / name
            if path.exists():
                print(f"----- {name}\n" + "\n".join(path.read_text(errors="replace").splitlines()[-30:]))
        print("----- standby\n" + pair.standby.log_tail())
        redis.stop()
        pair.destroy()


def _last_start(api: Api, ids: list[str]) -> object:
    """The latest start the API reports once it answers from the new primary (None while it cannot)."""

    try:
        starts = [parse_instant(r["started_at"]) for i in ids for r in api.runs(i) if r["started_at"]]
    except (AssertionError, OSError):
        return None
    return max(starts)
