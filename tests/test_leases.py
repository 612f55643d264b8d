"""Leases belong to their holder: only the run whose token a lease key holds renews or releases it (each
test on fakeredis and a real redis-server). The renewer thread is kept out of the way with a long lease;
the tests renew by hand, as its wake-ups would."""

from __future__ import annotations

import logging

import pytest

from harness.chain_driver import fresh, make_schedule, next_due, runs_of
from recur_server.chain.finish import finish_run
from recur_server.chain.leases import Lease, lease_key
from recur_server.chain.run import Prepared, complete, prepare
from recur_server.infra import clock
from recur_server.infra.extensions import db, get_redis
from recur_server.models import RunStatus
from recur_server.services import schedules
from recur_server.services.reconcile import reconcile

LONG_LEASE = 600


def test_a_written_off_run_that_is_still_alive_leaves_the_live_runs_lease_alone(chain_app, fake_clock):
    chain_app.config["RECUR_LEASE_SECONDS"] = LONG_LEASE
    redis = get_redis(chain_app)
    schedule = make_schedule(fake_clock.now, interval_seconds=10)
    reconcile(fake_clock.now)  # Redis is known to hold its data from here on
    due = fake_clock.set(next_due(chain_app))
    stalled = prepare(schedule.id, 0, 0, 0, due, "stalled-worker")
    assert isinstance(stalled, Prepared)
    key = lease_key(schedule.id)
    redis.delete(key)  # its worker stalled for longer than the lease: the key expired
    fake_clock.advance(seconds=LONG_LEASE + 1)
    assert reconcile(fake_clock.now).runs_written_off == [stalled.claim.run_id]
    retry_at = fresh(schedule.id).next_run_at
    db.session.rollback()
    live = prepare(schedule.id, 0, 0, 1, fake_clock.set(retry_at), "live-worker")
    assert isinstance(live, Prepared)
    assert redis.get(key) == live.claim.run_id.encode()

    # The stalled worker wakes up: its renewal, then its completion, leave the live run's lease alone.
    stalled.lease.renew_if_held()
    assert redis.get(key) == live.claim.run_id.encode()
    assert complete(stalled, RunStatus.SUCCEEDED, None) == "succeeded"
    assert redis.get(key) == live.claim.run_id.encode()
    fake_clock.advance(seconds=LONG_LEASE + 1)
    assert reconcile(fake_clock.now).runs_written_off == []  # the live run is not written off

    complete(live, RunStatus.SUCCEEDED, None)
    runs = [r for r in runs_of(schedule.id) if r.repeat_number is not None]  # not the ticks skipped meanwhile
    assert [(r.retry_number, r.status) for r in runs] == [(0, "failed"), (1, "succeeded")]
    assert runs[0].error.startswith("worker_lost")
    assert not redis.exists(key)


def test_a_live_run_re_creates_its_vanished_lease_until_its_deadline(chain_app, monkeypatch):
    redis = get_redis(chain_app)
    now = [100.0]
    monkeypatch.setattr(clock, "monotonic", lambda: now[0])
    lease = Lease(redis, "schedule", "run", LONG_LEASE, deadline=130.0)
    assert lease.acquire() is None
    redis.delete(lease_key("schedule"))  # Redis was flushed
    lease.renew_if_held()
    assert redis.get(lease_key("schedule")) == b"run"
    now[0] = 131.0  # past the run's deadline (its timeout plus the grace): the lease is left to lapse
    redis.delete(lease_key("schedule"))
    lease.renew_if_held()
    assert not redis.exists(lease_key("schedule"))
    lease.release_now()


@pytest.mark.parametrize("holder", [b"another-run", None])
def test_release_deletes_only_its_own_key(chain_app, holder):
    redis = get_redis(chain_app)
    lease = Lease(redis, "schedule", "run", LONG_LEASE)
    assert lease.acquire() is None
    redis.delete(lease_key("schedule"))
    if holder is not None:
        redis.set(lease_key("schedule"), holder)
    lease.release_now()
    assert redis.get(lease_key("schedule")) == holder


def _ended(caplog: pytest.LogCaptureFixture, prepared: Prepared, status: RunStatus) -> tuple[str, str]:
    with caplog.at_level(logging.INFO, logger="recur_server.chain.run"):
        complete(prepared, status, None)
    lines = [(r.levelname, r.getMessage()) for r in caplog.records
             if r.name == "recur_server.chain.run" and prepared.claim.run_id in r.getMessage()]
    assert len(lines) == 1, lines
    return lines[0]


def _running(chain_app, fake_clock) -> tuple[str, Prepared]:
    """A schedule's first tick claimed, its task not yet ended."""
    chain_app.config["RECUR_LEASE_SECONDS"] = LONG_LEASE
    schedule = make_schedule(fake_clock.now, interval_seconds=10)
    reconcile(fake_clock.now)
    prepared = prepare(schedule.id, 0, 0, 0, fake_clock.set(next_due(chain_app)), "w1")
    assert isinstance(prepared, Prepared)
    return schedule.id, prepared


def test_a_written_off_run_that_ends_says_its_outcome_was_not_recorded(chain_app, fake_clock, caplog):
    """Its task succeeded, but the run had been written off as worker_lost and its retry planned: the line at
    INFO says what was recorded, not what the task did ("run X succeeded" read as if the tick had succeeded)."""
    schedule_id, stalled = _running(chain_app, fake_clock)
    get_redis(chain_app).delete(lease_key(schedule_id))
    fake_clock.advance(seconds=LONG_LEASE + 1)
    assert reconcile(fake_clock.now).runs_written_off == [stalled.claim.run_id]

    level, message = _ended(caplog, stalled, RunStatus.SUCCEEDED)
    assert level == "WARNING" and "not recorded" in message, message
    written_off = [r for r in runs_of(schedule_id) if r.id == stalled.claim.run_id]
    assert [r.status for r in written_off] == ["failed"]
    # The line says what the run's row holds instead: failed, and the write-off's reason.
    assert f"finished already as failed ({written_off[0].error})" in message, message


def test_a_run_whose_schedule_was_deleted_says_so(chain_app, fake_clock, caplog):
    schedule_id, prepared = _running(chain_app, fake_clock)
    assert schedules.remove([schedule_id], fake_clock.now) == [schedule_id]
    level, message = _ended(caplog, prepared, RunStatus.SUCCEEDED)
    assert level == "WARNING" and "not recorded: its schedule was deleted while it ran" in message, message


def test_an_outcome_an_earlier_commit_recorded_is_not_called_unrecorded(chain_app, fake_clock, caplog):
    """The finish's first commit landed but its answer was lost; the retry finds the run finished, as it says."""
    schedule_id, prepared = _running(chain_app, fake_clock)
    assert finish_run(prepared.claim.run_id, RunStatus.SUCCEEDED, None, fake_clock.now, schedule_id) is not None
    level, message = _ended(caplog, prepared, RunStatus.SUCCEEDED)
    assert level == "INFO" and "(recorded: an earlier commit of it landed" in message, message
    assert [r.status for r in runs_of(schedule_id) if r.id == prepared.claim.run_id] == ["succeeded"]
