"""The database restarted or stopped under a running stack (gunicorn, worker.py, redis-server) on a private
PostgreSQL cluster of the test's own (harness/pgcluster.py), not the database under test: these run once, on
the SQLite pass. The API answers 503 database_unavailable while the database is away (never a 500) and works
again afterwards with no restart; pooled connections are checked before use, so a restart costs no request;
every chain goes on; no process exits."""

from __future__ import annotations

import time
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from harness.pgcluster import POSTGRES_BIN, PgServer
from harness.servers import wait_for
from harness.stack import Stack, parse_instant

needs_postgres = pytest.mark.skipif(POSTGRES_BIN is None, reason="PostgreSQL's server binaries are not installed")


def test_a_database_that_cannot_give_a_connection_is_a_503_not_a_500(tmp_path: Path) -> None:
    """Every connection of the pool taken (a pool timeout, as when the database is slow to hand them back):
    the API answers 503 database_unavailable in its error shape."""
    import fakeredis

    from harness.tokens import token_for_app
    from recur_server import create_app
    from recur_server.infra.extensions import db
    from recur_server.services.schema import ensure_schema

    app = create_app({"TESTING": True, "DATABASE_URL": f"sqlite:///{tmp_path / 'one.db'}", "REDIS_URL": "redis://x",
                      "SQLALCHEMY_ENGINE_OPTIONS": {"pool_size": 1, "max_overflow": 0, "pool_timeout": 0.2}})
    app.extensions["recur.redis"] = fakeredis.FakeRedis()
    ensure_schema(app)
    token = token_for_app(app)
    with app.app_context():
        held = db.engine.connect()  # the pool's only connection
        try:
            response = app.test_client().get("/api/v1/schedules/", headers={"Authorization": f"Bearer {token}"})
        finally:
            held.close()
        assert (response.status_code, response.get_json()["code"]) == (503, "database_unavailable")
        db.engine.dispose()


def _chains(stack: Stack, count: int) -> list[str]:
    stack.start_worker()
    stack.wait_workers_ready()
    workflow = stack.api.ok("POST", "/api/v1/workflows/", {"name": "noop", "task": "builtin.noop"})
    ids = [stack.api.ok("POST", "/api/v1/schedules/", {"name": f"s{i}", "workflow_id": workflow["id"],
                                                       "interval_seconds": 1})["id"] for i in range(count)]
    wait_for(lambda: all(len(stack.api.runs(i)) >= 2 for i in ids), 30, interval=0.3, what="every chain to run")
    return ids


def _latest_start(stack: Stack, ids: list[str]) -> datetime:
    return max(parse_instant(r["started_at"]) for i in ids for r in stack.api.runs(i) if r["started_at"])


def _all_ran_after(stack: Stack, ids: list[str], instant: datetime) -> bool:
    return all(any(r["status"] == "succeeded" and r["started_at"] and parse_instant(r["started_at"]) > instant
                   for r in stack.api.runs(i)) for i in ids)


def _alive(stack: Stack) -> bool:
    return stack.web.alive() and all(worker.alive() for worker in stack.workers)


@pytest.mark.integration
@needs_postgres
def test_a_postgresql_restart_costs_no_request_and_every_chain_goes_on(pg_stack: Stack, postgres: PgServer) -> None:
    stack = pg_stack
    ids = _chains(stack, 5)
    workflow_id = stack.api.ok("GET", f"/api/v1/schedules/{ids[0]}/")["workflow_id"]
    postgres.restart()  # pg_ctl restart -m fast: every pooled connection of every process is now dead
    restarted = time.monotonic()
    answers: list[tuple[int, Any]] = []
    for i in range(8):  # spread over gunicorn's processes and threads: reads, and a create that writes
        answers.append(stack.api.call("GET", "/api/v1/schedules/"))
        answers.append(stack.api.call("POST", "/api/v1/schedules/", {
            "name": f"after{i}", "workflow_id": workflow_id, "interval_seconds": 60}))
    assert [status for status, _ in answers if status >= 300] == [], [a for a in answers if a[0] >= 300]
    restarted_at = _latest_start(stack, ids)
    wait_for(lambda: _all_ran_after(stack, ids, restarted_at), 15, interval=0.3,
             what="every chain to run after the restart")
    print(f"{len(answers)} calls after the restart, none failed; every chain ran again "
          f"{time.monotonic() - restarted:.1f} s after it")
    assert _alive(stack)


@pytest.mark.integration
@needs_postgres
def test_a_stopped_database_is_a_prompt_503_then_the_stack_recovers_alone(pg_stack: Stack,
                                                                         postgres: PgServer) -> None:
    stack = pg_stack
    ids = _chains(stack, 3)
    workflow_id = stack.api.ok("GET", f"/api/v1/schedules/{ids[0]}/")["workflow_id"]
    postgres.stop()
    stopped = time.monotonic()
    slowest = 0.0
    while time.monotonic() - stopped < 5:  # five seconds down: every answer a 503 naming the database
        for method, body in (("GET", None), ("POST", {"name": "down", "workflow_id": workflow_id,
                                                      "interval_seconds": 60})):
            sent = time.monotonic()
            status, payload = stack.api.call(method, "/api/v1/schedules/", body)
            slowest = max(slowest, time.monotonic() - sent)
            assert (status, payload["code"]) == (503, "database_unavailable"), (method, status, payload)
    print(f"slowest answer while the database was down: {slowest:.2f} s")
    assert slowest < 5, slowest  # a bound on a hang, not a speed figure: a stuck request would take minutes
    postgres.start()
    started = time.monotonic()
    restarted_at = _latest_start_when_up(stack, ids)
    wait_for(lambda: _all_ran_after(stack, ids, restarted_at), 15, interval=0.3,
             what="every chain to run after the database came back")
    print(f"every chain ran again {time.monotonic() - started:.1f} s after the database started")
    assert stack.api.call("POST", "/api/v1/schedules/", {"name": "up", "workflow_id": workflow_id,
                                                          "interval_seconds": 60})[0] == 201
    assert _alive(stack)


def _latest_start_when_up(stack: Stack, ids: list[str]) -> datetime:
    def answer() -> datetime | None:
        try:
            return _latest_start(stack, ids)
        except AssertionError:  # a 503 while the first connections are made
            return None

    found: datetime = wait_for(answer, 15, interval=0.2, what="the API to answer after the database came back")
    return found
