"""The reconciler's periodic pass reads only the active schedules due within its horizon; a full sweep reads
them all. Each re-creates a lost link it reads; a Redis that lost its data makes any pass a sweep, and the
background loop sweeps at start, then when RECUR_RECONCILE_SWEEP_SECONDS has passed since the last sweep."""

from __future__ import annotations

from datetime import timedelta

from harness.chain_driver import make_schedule, next_due, scheduled_ids
from recur_server.chain.ids import link_id
from recur_server.chain.leases import lease_key
from recur_server.chain.redis_links import scheduled_key
from recur_server.chain.run import Prepared, prepare
from recur_server.infra.extensions import db, get_queue, get_redis
from recur_server.services import schedules
from recur_server.services.reconcile import reconcile
from recur_server.workers.background import RECONCILED_KEY, SWEPT_KEY, reconcile_once

HORIZON = timedelta(seconds=60)
LONG_LEASE = 600


def lose(app, *ids: str) -> None:  # type: ignore[no-untyped-def]
    """The links gone from Redis, and nothing else: as a hand-off lost after its commit leaves it."""
    get_redis(app).zrem(scheduled_key(get_queue(app)), *ids)


def test_a_periodic_pass_reads_and_repairs_what_is_due_soon_and_a_sweep_the_rest(real_app, fake_clock):
    soon = make_schedule(fake_clock.now, name="soon", at=fake_clock.now + timedelta(seconds=30))
    later = make_schedule(fake_clock.now, name="later", at=fake_clock.now + timedelta(days=2))
    links = [link_id(soon.id, 0, 0), link_id(later.id, 0, 0)]
    assert reconcile(fake_clock.now).sweep  # the first pass: Redis is known to hold its data from here on
    lose(real_app, *links)

    due_soon = reconcile(fake_clock.now, horizon=HORIZON)
    assert (due_soon.sweep, due_soon.checked, due_soon.links_repaired) == (False, 1, [links[0]])
    assert scheduled_ids(real_app) == [links[0]]

    swept = reconcile(fake_clock.now)
    assert (swept.sweep, swept.checked, swept.links_repaired) == (True, 2, [links[1]])
    assert sorted(scheduled_ids(real_app)) == sorted(links)

    fake_clock.set(fake_clock.now + timedelta(days=2) - timedelta(seconds=30))  # the later one is due soon now
    lose(real_app, links[1])
    assert reconcile(fake_clock.now, horizon=HORIZON).links_repaired == [links[1]]


def test_a_redis_that_lost_its_data_is_swept_whatever_the_pass(real_app, fake_clock):
    later = make_schedule(fake_clock.now, at=fake_clock.now + timedelta(days=2))
    reconcile(fake_clock.now)
    get_redis(real_app).flushall()
    report = reconcile(fake_clock.now, horizon=HORIZON)
    assert (report.sweep, report.links_repaired) == (True, [link_id(later.id, 0, 0)])


def test_the_background_sweeps_at_start_then_once_per_sweep_period(real_app, fake_clock):
    make_schedule(fake_clock.now, at=fake_clock.now + timedelta(days=2))
    redis = get_redis(real_app)
    started = reconcile_once(real_app, at_start=True)  # the first worker's start
    assert started is not None and started["sweep"] and started["checked"] == 1
    restarted = reconcile_once(real_app, at_start=True)  # another's, within the hour: what is due soon
    assert restarted is not None and (restarted["sweep"], restarted["checked"]) == (False, 0)
    recovered = reconcile_once(real_app)  # `flask recover`
    assert recovered is not None and recovered["sweep"] and recovered["checked"] == 1
    periodic = reconcile_once(real_app, every=0.001)
    assert periodic is not None and (periodic["sweep"], periodic["checked"]) == (False, 0)
    assert 3500_000 < redis.pttl(SWEPT_KEY) <= 3600_000  # RECUR_RECONCILE_SWEEP_SECONDS's default
    redis.delete(SWEPT_KEY, RECONCILED_KEY)  # the sweep period is over, and the reconcile period
    again = reconcile_once(real_app, every=0.001)
    assert again is not None and again["sweep"] and again["checked"] == 1


def test_a_periodic_pass_writes_off_a_lost_run_whose_schedule_was_re_planned_past_the_horizon(real_app, fake_clock):
    """An edit while a link runs moves next_run_at far out; the run is still in flight and read by the pass."""
    real_app.config["RECUR_LEASE_SECONDS"] = LONG_LEASE
    schedule = make_schedule(fake_clock.now, interval_seconds=10)
    reconcile(fake_clock.now)
    due = fake_clock.set(next_due(real_app))
    lost = prepare(schedule.id, 0, 0, 0, due, "a-worker-killed-later")
    assert isinstance(lost, Prepared)
    db.session.rollback()
    schedules.update(schedule.id, {"interval_seconds": 7 * 86400}, fake_clock.now)  # re-planned a week out
    get_redis(real_app).delete(lease_key(schedule.id))  # its worker was killed
    fake_clock.advance(seconds=LONG_LEASE + 1)
    report = reconcile(fake_clock.now, horizon=HORIZON)
    assert (report.sweep, report.runs_written_off) == (False, [lost.claim.run_id])
