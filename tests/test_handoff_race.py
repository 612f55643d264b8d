"""A run commits its outcome, then hands off its successor: a reconciler passing in between must not take
the successor for missing (its repair would be harmless, but it counts as one, and links_repaired is what
tells a dropped link)."""

from __future__ import annotations

from app.chain import link, state
from app.chain.ids import link_id
from app.chain.mover import Mover
from app.extensions import get_queue, get_redis
from app.models import RunStatus
from app.recovery import reconcile
from tests.chain_driver import fresh, make_schedule, next_due, scheduled_ids


def test_a_successor_being_handed_off_is_not_taken_for_missing(chain_app, fake_clock):
    """Before: the pass between the commit and the hand-off re-created n1 (links_repaired == [n1])."""
    schedule = make_schedule(fake_clock.now, interval_seconds=10)
    reconcile(fake_clock.now)  # the first pass after Redis was emptied; not the one under test
    due = fake_clock.set(next_due(chain_app))
    Mover(get_redis(chain_app), get_queue(chain_app)).move_due(due)
    prepared = link.prepare(schedule.id, 0, 0, 0, due, "w")
    assert isinstance(prepared, link.Prepared)
    # The run's outcome is committed; its worker has not yet released the lease and put the successor.
    state.finish_run(prepared.claim.run_id, RunStatus.SUCCEEDED, None, fake_clock.now)
    assert fresh(schedule.id).current_repeat == 1 and scheduled_ids(chain_app) == []
    assert reconcile(fake_clock.now).links_repaired == []
    # Had that worker died there, its lease lapses and the next pass re-creates the successor.
    prepared.lease.release_now()
    assert reconcile(fake_clock.now).links_repaired == [link_id(schedule.id, 1, 0)]
    assert scheduled_ids(chain_app) == [link_id(schedule.id, 1, 0)]
