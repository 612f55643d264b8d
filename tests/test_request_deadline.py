"""No request holds a web process indefinitely (RECUR_REQUEST_DEADLINE_SECONDS, recur_server.serving): real gunicorn
with Recur's worker and configuration, serving harness.slow_wsgi (Recur's app plus two slow routes)."""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.servers import Process, RedisServer, serve_web
from recur_server.serving import Deadlines

pytestmark = pytest.mark.integration


def _get(base: str, path: str, timeout: float = 30) -> tuple[int, dict]:  # type: ignore[type-arg]
    try:
        with urllib.request.urlopen(base + path, timeout=timeout) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


@pytest.fixture
def web(tmp_path: Path, redis_server: RedisServer, database_url: str) -> Iterator[tuple[Process, str]]:
    env = {"DATABASE_URL": database_url, "REDIS_URL": redis_server.url, "RECUR_REQUEST_DEADLINE_SECONDS": "2"}

    def answers(port: int) -> bool:
        try:
            return _get(f"http://127.0.0.1:{port}", "/api/v1/health/", timeout=2)[0] == 200
        except OSError:
            return False

    process, port = serve_web(env, tmp_path / "web.log", answers, app="harness.slow_wsgi:app")
    yield process, f"http://127.0.0.1:{port}"
    process.stop()


def test_a_request_past_its_deadline_is_stopped_and_the_process_answers_the_next(web) -> None:
    process, base = web
    started = time.monotonic()
    status, body = _get(base, "/test/spin/?seconds=60")
    took = time.monotonic() - started
    assert (status, body["code"]) == (503, "request_timeout"), body
    assert took < 30, took  # stopped, not run to its end (a bound on correctness, not a speed target)
    assert _get(base, "/api/v1/health/")[0] == 200
    assert "request past its deadline of 2 s" in process.output()


def test_a_request_no_exception_reaches_ends_its_process_and_gunicorn_starts_another(web) -> None:
    process, base = web
    outcome: list[object] = []

    def stuck() -> None:
        try:
            outcome.append(_get(base, "/test/sleep/?seconds=120", timeout=60))
        except (OSError, ValueError) as exc:  # the connection ends with its process
            outcome.append(exc)

    thread = threading.Thread(target=stuck)
    thread.start()
    thread.join(60)
    assert outcome and not isinstance(outcome[0], tuple), outcome  # no answer after 120 s of sleep: cut off
    assert "ending this web process" in process.output()
    for _ in range(4):  # both of gunicorn's workers answer: the ended one was replaced
        assert _get(base, "/api/v1/health/")[0] == 200
    assert process.alive()


def _request(deadlines: Deadlines, body, caught: list[BaseException], entered: threading.Event,  # type: ignore[no-untyped-def]
             seconds: float | None = None) -> threading.Thread:
    def run() -> None:
        deadlines.begin("GET /x", seconds)
        entered.set()
        try:
            body()
        except BaseException as exc:  # noqa: BLE001 - what the watchdog raised
            caught.append(exc)
        finally:
            deadlines.end()

    thread = threading.Thread(target=run)
    thread.start()
    entered.wait(5)
    return thread


def _spin(seconds: float) -> None:
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        pass


def test_the_watchdog_stops_a_request_past_its_deadline_once_and_ends_the_process_after_the_grace() -> None:
    """Its decisions against literal times: within the deadline nothing; past it RequestDeadline, raised
    once; past the grace, for a request still in C code, the process ends."""
    ended: list[bool] = []
    deadlines = Deadlines(2.0, on_stuck=lambda: ended.append(True))
    caught: list[BaseException] = []
    thread = _request(deadlines, lambda: _spin(10), caught, threading.Event())
    now = time.monotonic()
    deadlines.look(now + 1)
    time.sleep(0.2)
    assert not caught and not ended
    deadlines.look(now + 3)
    thread.join(5)
    assert [type(e).__name__ for e in caught] == ["RequestDeadline"] and not ended

    caught.clear()
    thread = _request(deadlines, lambda: time.sleep(1.5), caught, threading.Event())  # in C: no exception lands
    now = time.monotonic()
    deadlines.look(now + 3)
    deadlines.look(now + 4)
    assert not ended  # within the grace
    deadlines.look(now + 3 + 5.1)
    assert ended == [True]
    thread.join(5)
    assert [type(e).__name__ for e in caught] == ["RequestDeadline"]  # raised once the sleep returned


def test_a_request_given_a_longer_deadline_is_held_to_that_one() -> None:
    """An apply's (RECUR_APPLY_DEADLINE_SECONDS: it may carry 100,000 changes) instead of every request's."""
    ended: list[bool] = []
    deadlines = Deadlines(2.0, on_stuck=lambda: ended.append(True))
    caught: list[BaseException] = []
    thread = _request(deadlines, lambda: _spin(10), caught, threading.Event(), seconds=60.0)
    now = time.monotonic()
    deadlines.look(now + 30)
    time.sleep(0.2)
    assert not caught and not ended  # past every request's 2 s, within its own 60
    deadlines.look(now + 61)
    thread.join(5)
    assert [type(e).__name__ for e in caught] == ["RequestDeadline"] and not ended
