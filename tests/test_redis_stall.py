"""A Redis that accepts connections but never answers (redis-server SIGSTOPped): every Redis call of Recur has a
deadline. The clients connect_redis makes give up within the timeout (no retry multiplies it); under a
running stack the API answers 503 redis_unavailable within 3 s, and when Redis answers again (SIGCONT) every
chain resumes within one reconcile period, nothing lost, no process restarted. The workers' blocking dequeue
has its own, longer bound (RQ's), on a connection of its own."""

from __future__ import annotations

import os
import signal
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from redis import Redis
from redis.exceptions import RedisError
from redis.retry import Retry

from bench import procfs
from harness.servers import RedisServer, Tls, print_logs_if_failed, wait_for
from harness.stack import Stack, parse_instant
from recur_server.infra.extensions import connect_redis

# How long a call may take before the caller hears that Redis does not answer: the README's promise of a
# quick 503. A correctness bound (without a deadline the call waited for ever, or 15 s), not a speed figure.
ANSWER_WITHIN_SECONDS = 3.0
# How long Redis stalls in the lease test: longer than the stack's 3 s lease, so that by Redis's clock every
# lease lapsed during it.
LEASE_OUTLIVING_STALL_SECONDS = 5.0


@contextmanager
def stalled(server: RedisServer) -> Iterator[None]:
    os.kill(server.pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(server.pid, signal.SIGCONT)


def _seconds_to_fail(client: Redis) -> float:
    started = time.monotonic()
    with pytest.raises(RedisError):
        client.ping()
    return time.monotonic() - started


def _tries(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """From now on, how many times each operation of redis-py's clients is tried (its Retry runs every try: a
    command's send and read, a connect), by the operation's code."""
    tried: Counter[str] = Counter()
    call_with_retry = Retry.call_with_retry

    def counting(self: Retry, do: Callable[[], Any], *args: Any, **kwargs: Any) -> Any:
        def counted() -> Any:
            tried[do.__qualname__] += 1
            return do()

        return call_with_retry(self, counted, *args, **kwargs)

    monkeypatch.setattr(Retry, "call_with_retry", counting)
    return tried


@pytest.mark.parametrize("transport", ["plain", "tls"])
def test_a_client_gives_up_on_a_redis_that_does_not_answer(tmp_path: Path, transport: str,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    server = RedisServer(tmp_path, tls=Tls(tmp_path) if transport == "tls" else None)
    try:
        warm = connect_redis(server.url, timeout=1.0)
        assert warm.ping()
        with stalled(server):
            fresh = connect_redis(server.url, timeout=1.0)
            counter, waited, tried = _tries(monkeypatch), [], []
            for client in (warm, fresh):
                before = Counter(counter)
                waited.append(_seconds_to_fail(client))
                tried.append(counter - before)
        # One timeout each, not three: each operation tried once (counted, not timed: on a loaded machine one
        # 1 s timeout once took 3.36 s); and a deadline at all (without one, a call waits 15 s or for ever).
        assert all(t and max(t.values()) == 1 for t in tried), tried
        assert max(waited) < 10, waited
        assert warm.ping() and fresh.ping()  # the same clients work again once it answers
    finally:
        server.stop()


def test_the_default_deadline_answers_within_the_promised_bound(tmp_path: Path) -> None:
    server = RedisServer(tmp_path)
    try:
        client = connect_redis(server.url)
        assert client.ping()
        with stalled(server):
            waited = _seconds_to_fail(client)
        assert waited < ANSWER_WITHIN_SECONDS, waited
    finally:
        server.stop()


@pytest.fixture
def stall_stack(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Stack, RedisServer]]:
    """gunicorn and worker.py on a redis-server of the test's own (it is stopped), on a SQLite file: this
    test is about Redis, so it runs once, on the SQLite pass."""
    server = RedisServer(tmp_path)
    stack = Stack(tmp_path, server, f"sqlite:///{tmp_path / 'recur.db'}")
    yield stack, server
    os.kill(server.pid, signal.SIGCONT)
    stack.stop()
    server.stop()
    print_logs_if_failed(request.node, tmp_path.glob("*.log"))


@pytest.mark.integration
def test_a_stalled_redis_is_a_prompt_503_and_every_chain_resumes_after_it(
        stall_stack: tuple[Stack, RedisServer], tmp_path: Path) -> None:
    stack, server = stall_stack
    stack.env["RECUR_EXECUTION_LOG"] = str(tmp_path / "executions.log")
    for _ in range(2):
        stack.start_worker()
    stack.wait_workers_ready()
    api = stack.api
    workflow = api.ok("POST", "/api/v1/workflows/", {"name": "noop", "task": "builtin.noop"})
    ids = [api.ok("POST", "/api/v1/schedules/", {"name": f"s{i}", "workflow_id": workflow["id"],
                                                 "interval_seconds": 1})["id"] for i in range(10)]
    wait_for(lambda: all(len(api.runs(i)) >= 2 for i in ids), 30, interval=0.3, what="every chain to run")
    with stalled(server):
        stopped = time.monotonic()
        answers = []
        while time.monotonic() - stopped < 8:  # eight seconds of a Redis that never answers
            sent = time.monotonic()
            status, payload = api.call("POST", "/api/v1/schedules/", {
                "name": "during", "workflow_id": workflow["id"], "interval_seconds": 1})
            answers.append((status, payload["code"], time.monotonic() - sent))
    print("creates during the stall (status, code, seconds): "
          + ", ".join(f"({s}, {c}, {t:.2f})" for s, c, t in answers))
    assert {(s, c) for s, c, _ in answers} == {(503, "redis_unavailable")}
    assert max(t for _, _, t in answers) < ANSWER_WITHIN_SECONDS
    resumed = time.monotonic()
    latest = max(parse_instant(r["started_at"]) for i in ids for r in api.runs(i) if r["started_at"])

    def all_ran_again() -> bool:
        return all(any(r["status"] == "succeeded" and r["started_at"] and parse_instant(r["started_at"]) > latest
                       for r in api.runs(i)) for i in ids)

    wait_for(all_ran_again, 15, interval=0.3, what="every chain to run again after the stall")
    print(f"every chain ran again {time.monotonic() - resumed:.1f} s after SIGCONT")
    for schedule_id in ids:
        assert api.ok("GET", f"/api/v1/schedules/{schedule_id}/")["status"] == "active"
    runs = [r for i in ids for r in api.runs(i)]
    written_off = {(r["schedule_id"], str(r["repeat_number"])) for r in runs
                   if (r["error"] or "").startswith("worker_lost")}
    executions = Counter(tuple(line.split()[:2]) for line in (tmp_path / "executions.log").read_text().splitlines())
    twice = {key for key, n in executions.items() if n > 1}
    print(f"{len(written_off)} attempts written off; ticks whose body started twice: {sorted(twice)}")
    assert not twice - written_off, (twice, written_off)
    assert stack.web.alive() and all(worker.alive() for worker in stack.workers)
    for worker in stack.workers:  # the dequeue waited; it did not spin on timeouts
        assert worker.output().count("could not connect to Redis") <= 3, worker.output()[-3000:]


@pytest.mark.integration
def test_a_run_whose_lease_lapsed_only_because_redis_stalled_is_not_written_off(
        stall_stack: tuple[Stack, RedisServer], tmp_path: Path) -> None:
    """Redis stalls longer than a lease (3 s here): by its own clock every lease lapsed, though every holder is
    alive and renews as soon as it can. The first pass after the stall must not take the missing leases for
    dead workers. Here the holder's renewal comes after that pass (the worker is held up with Redis, as a
    renewal stuck in its socket timeout would be): before the fix the pass wrote the live run off as
    worker_lost, and its body, still running, ended as a failure."""
    from recur_server import create_app
    from recur_server.workers.background import reconcile_once

    stack, server = stall_stack
    worker = stack.start_worker()
    stack.wait_workers_ready()
    api = stack.api
    workflow = api.ok("POST", "/api/v1/workflows/", {"name": "sleep", "task": "builtin.sleep"})
    schedule_id = api.ok("POST", "/api/v1/schedules/", {
        "name": "long", "workflow_id": workflow["id"], "interval_seconds": 3600, "max_retries": 0,
        "trigger_payload": {"seconds": 12}, "timeout_seconds": 120})["id"]
    api.ok("POST", f"/api/v1/schedules/{schedule_id}/trigger/", {})
    wait_for(lambda: any(r["status"] == "running" for r in api.runs(schedule_id)), 30, interval=0.2,
             what="the run to start")
    held_up = procfs.with_descendants(worker.pid)  # a pool worker's work processes lead groups of their own
    for pid in held_up:
        os.kill(pid, signal.SIGSTOP)
    try:
        with stalled(server):
            time.sleep(LEASE_OUTLIVING_STALL_SECONDS)
        app = create_app({"DATABASE_URL": stack.env["DATABASE_URL"], "REDIS_URL": server.url,
                          "RECUR_LEASE_SECONDS": 3.0})
        report = reconcile_once(app)
    finally:
        for pid in held_up:
            os.kill(pid, signal.SIGCONT)
    assert report is not None and report["runs_written_off"] == 0, report
    wait_for(lambda: any(r["status"] == "succeeded" for r in api.runs(schedule_id)), 30, interval=0.3,
             what="the run to succeed")
    assert not [r for r in api.runs(schedule_id) if r["status"] not in ("succeeded", "running")]
