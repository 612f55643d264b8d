"""Timeouts hold, and whatever a task raises is a failed run of that task, in both kinds of RQ worker:
in-process RQ workers on fakeredis and a real redis-server, and worker.py processes."""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from flask import current_app
from sqlalchemy import select

from harness.chain_driver import fresh, make_schedule, next_due, run_due, runs_of, scheduled_ids
from harness.servers import Process, RedisServer, print_logs_if_failed, start_worker, wait_for
from recur_server.chain.ids import link_id
from recur_server.chain.mover import Mover
from recur_server.chain.redis_links import HEADS_KEY
from recur_server.infra import clock
from recur_server.infra.extensions import db, get_queue, get_redis
from recur_server.models import Run, RunStatus
from recur_server.workers.worker import RecurWorker


def test_a_task_that_catches_its_timeout_and_returns_is_timed_out(chain_app, fake_clock, tmp_path):
    interruptions = tmp_path / "interruptions"
    schedule = make_schedule(fake_clock.now, task="tests.ignore_timeout", interval_seconds=5, timeout_seconds=1,
                             max_retries=1, trigger_payload={"then": "return", "path": str(interruptions)})
    fake_clock.set(next_due(chain_app))
    run_due(chain_app, fake_clock.now)
    [run] = runs_of(schedule.id)
    assert (run.status, run.error) == (RunStatus.TIMED_OUT.value, "timed out after 1s")
    assert len(interruptions.read_text().splitlines()) == 1  # it was interrupted, and returned


def test_rqs_job_timeout_still_holds_after_recurs_own(chain_app, fake_clock, tmp_path):
    """Recur's timer must not disarm RQ's: a task that ignores Recur's timeout is interrupted again by RQ's
    job timeout (here 2 s: the link's head says so, and so the job hash the mover makes, as RQ reads it)."""
    interruptions = tmp_path / "interruptions"
    schedule = make_schedule(fake_clock.now, task="tests.ignore_timeout", interval_seconds=5, timeout_seconds=1,
                             max_retries=1, trigger_payload={"swallow": 1, "sleep": 8, "path": str(interruptions)})
    redis = get_redis(chain_app)
    head = redis.hget(HEADS_KEY, schedule.id).decode().split("\n")  # repeat:retry, revision, timeout, ...
    redis.hset(HEADS_KEY, schedule.id, "\n".join([*head[:2], "2", *head[3:]]))
    fake_clock.set(next_due(chain_app))
    run_due(chain_app, fake_clock.now)
    [run] = runs_of(schedule.id)
    assert interruptions.read_text().splitlines()[1:] == ["JobTimeoutException"]  # RQ's, second
    assert (run.status, run.error) == (RunStatus.TIMED_OUT.value, "timed out after 1s")


RAISED = ["KeyboardInterrupt", "SystemExit", "GeneratorExit", "TaskBaseError"]


@pytest.mark.parametrize("raised", RAISED)
def test_a_base_exception_is_a_failed_run_in_the_simple_worker(chain_app, fake_clock, raised):
    raising = make_schedule(fake_clock.now, task="tests.raise_base", interval_seconds=5, max_retries=1,
                            trigger_payload={"raise": raised, "message": "stop here"})
    quiet = make_schedule(fake_clock.now, interval_seconds=5)
    fake_clock.advance(seconds=5)
    run_due(chain_app, fake_clock.now)  # both links, one after the other, in one SimpleWorker
    _assert_failed_and_worker_went_on(raising.id, quiet.id, raised)


@pytest.mark.parametrize("raised", RAISED)
def test_a_base_exception_is_a_failed_run_in_the_forking_worker(real_app, raised):
    now = clock.utcnow()
    # Five seconds apart: a tick claimed more than one interval late is caught up (a `missed` row beside the
    # run), which a forking worker slowed by a loaded machine did once with ticks one second apart (a CI run
    # of the PostgreSQL pass: two rows where one was expected). The link waits for its time, then runs.
    raising = make_schedule(now, task="tests.raise_base", interval_seconds=5, max_retries=1,
                            trigger_payload={"raise": raised, "message": "stop here"})
    # One tick only: with a second a second later, a burst slowed by a loaded machine could take that one too.
    quiet = make_schedule(now, after_seconds=1)
    assert Mover(get_redis(real_app), get_queue(real_app)).move_due(now + timedelta(seconds=6)) == 2
    RecurWorker([get_queue(real_app)], connection=get_redis(real_app)).work(burst=True, with_scheduler=False)
    _assert_failed_and_worker_went_on(raising.id, quiet.id, raised)


def _assert_failed_and_worker_went_on(raising_id: str, quiet_id: str, raised: str) -> None:
    [run] = runs_of(raising_id)
    assert (run.status, run.error) == (RunStatus.FAILED.value, f"{raised}: stop here")
    assert [r.status for r in runs_of(quiet_id)] == [RunStatus.SUCCEEDED.value]
    after = fresh(raising_id)
    assert (after.status, after.current_retry, after.running_run_id) == ("active", 1, None)
    assert link_id(raising_id, 0, 1) in scheduled_ids(current_app)


# Real worker.py processes: a task that never gives up its timeout.

@pytest.fixture
def worker_env(real_app, redis_server: RedisServer, database_url: str) -> dict[str, str]:
    return {
        "DATABASE_URL": database_url, "REDIS_URL": redis_server.url, "RECUR_TASK_MODULES": "harness.jobs",
        "RECUR_RECONCILE_SECONDS": "1", "RECUR_LEASE_SECONDS": "2", "RECUR_TIMEOUT_GRACE_SECONDS": "1",
    }


@pytest.fixture
def workers(request: pytest.FixtureRequest, worker_env: dict[str, str], tmp_path: Path) -> Iterator[list[Process]]:
    started: list[Process] = []
    yield started
    for process in started:
        _shut_down(process)
    print_logs_if_failed(request.node, [process.log_path for process in started])


def _shut_down(process: Process) -> None:
    """RQ's warm shutdown, then its cold one (which takes a work horse down with the worker: a horse has a
    process group of its own, so killing the worker alone would leave a stuck one running), then SIGKILL."""
    for _ in range(2):
        if process.alive():
            process.popen.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.popen.wait(5)
    process.stop(timeout=5)


def _stuck_schedule() -> str:
    """One tick whose first attempt ignores its 1 s timeout for ever and whose retry succeeds."""
    schedule = make_schedule(clock.utcnow(), task="tests.ignore_timeout", interval_seconds=1, total_repeats=1,
                             timeout_seconds=1, max_retries=1)
    return schedule.id


def _done(schedule_id: str) -> bool:
    status = fresh(schedule_id).status
    db.session.rollback()  # hold no transaction (on SQLite, the write lock) while the workers work
    return status == "done"


def _attempts(schedule_id: str) -> list[tuple[int, str, str | None]]:
    """(retry, status, error) of each run, read without keeping a transaction (or ORM objects whose
    next attribute read would open one)."""
    rows = db.session.execute(select(Run.retry_number, Run.status, Run.error)  # not rows of ticks not run
                              .where((Run.schedule_id == schedule_id) & Run.reason.is_(None))
                              .order_by(Run.retry_number)).all()
    db.session.rollback()
    return [(retry, status, error) for retry, status, error in rows]


def _first_attempt_ended(schedule_id: str) -> bool:
    return any(retry == 0 and status != "running" for retry, status, _ in _attempts(schedule_id))


def test_the_forking_worker_kills_a_task_that_ignores_its_timeout(workers, worker_env, tmp_path):
    workers.append(start_worker(worker_env, tmp_path / "worker.log", slots=1))
    schedule_id = _stuck_schedule()
    wait_for(lambda: _first_attempt_ended(schedule_id), 30, interval=0.2, what="the first attempt to end")
    wait_for(lambda: _done(schedule_id), 20, interval=0.2, what="the retry to succeed")
    assert _attempts(schedule_id) == [
        (0, "timed_out", "timed out after 1s; the task did not stop, so its work process was killed"),
        (1, "succeeded", None),
    ]


def test_the_simple_worker_writes_off_a_task_that_ignores_its_timeout(workers, worker_env, tmp_path):
    """An in-process task cannot be killed: its lease is not renewed past the run's deadline, so a
    reconciler writes the run off and another worker runs the retry."""
    for name in ("stuck", "free"):
        workers.append(start_worker(worker_env, tmp_path / f"{name}.log", "--simple", slots=1))
    schedule_id = _stuck_schedule()
    wait_for(lambda: _first_attempt_ended(schedule_id), 30, interval=0.2, what="the first attempt to end")
    wait_for(lambda: _done(schedule_id), 20, interval=0.2, what="the retry to succeed")
    first, second = _attempts(schedule_id)
    assert (first[:2], second) == ((0, "timed_out"), (1, "succeeded", None))
    assert (first[2] or "").startswith("timed out after 1s; no outcome by its deadline")
    for process in workers:  # one of them is still in the stuck task: only SIGKILL ends it (simple workers
        process.kill()  # have no work horse to leave behind); the warm and cold shutdowns would wait 15 s


def test_a_link_run_outside_the_main_thread_times_out_too(chain_app, fake_clock):
    """No signals outside the main thread: there the timeout is raised in the task's thread by a timer (at
    its next Python instruction: here when its sleep, a single C call, returns)."""
    import threading

    from recur_server.chain import link

    schedule = make_schedule(fake_clock.now, task="builtin.sleep", interval_seconds=5, timeout_seconds=1,
                             max_retries=1, trigger_payload={"seconds": 2})
    nominal = fake_clock.set(next_due(chain_app))
    outcome: list[str] = []

    def run() -> None:
        with chain_app.app_context():
            outcome.append(link.run_link(schedule.id, 0, 0, 0, nominal.isoformat()))

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(30)
    assert outcome == [RunStatus.TIMED_OUT.value]
    [run_row] = runs_of(schedule.id)
    assert (run_row.status, run_row.error) == (RunStatus.TIMED_OUT.value, "timed out after 1s")
