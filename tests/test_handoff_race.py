"""A run commits its outcome, then hands off its successor: a reconciler passing in between must not take
the successor for missing (its repair would be harmless, but it counts as one, and links_repaired is what
tells a dropped link)."""

from __future__ import annotations

from harness.chain_driver import fresh, make_schedule, next_due, run_due, scheduled_ids
from recur_server.chain.finish import finish_run
from recur_server.chain.ids import link_id
from recur_server.chain.mover import Mover
from recur_server.chain.run import Prepared, prepare
from recur_server.infra.extensions import get_queue, get_redis
from recur_server.models import RunStatus
from recur_server.services.reconcile import reconcile


def test_a_successor_being_handed_off_is_not_taken_for_missing(chain_app, fake_clock):
    """Before: the pass between the commit and the hand-off re-created n1 (links_repaired == [n1])."""
    schedule = make_schedule(fake_clock.now, interval_seconds=10)
    reconcile(fake_clock.now)  # the first pass after Redis was emptied; not the one under test
    due = fake_clock.set(next_due(chain_app))
    Mover(get_redis(chain_app), get_queue(chain_app)).move_due(due)
    prepared = prepare(schedule.id, 0, 0, 0, due, "w")
    assert isinstance(prepared, Prepared)
    # The run's outcome is committed; its worker has not yet released the lease and put the successor.
    finish_run(prepared.claim.run_id, RunStatus.SUCCEEDED, None, fake_clock.now)
    assert fresh(schedule.id).current_repeat == 1 and scheduled_ids(chain_app) == []
    assert reconcile(fake_clock.now).links_repaired == []
    # Had that worker died there, its lease lapses and the next pass re-creates the successor.
    prepared.lease.release_now()
    assert reconcile(fake_clock.now).links_repaired == [link_id(schedule.id, 1, 0)]
    assert scheduled_ids(chain_app) == [link_id(schedule.id, 1, 0)]


def test_a_link_that_ran_after_the_pass_read_its_row_is_not_re_created(chain_app, fake_clock, monkeypatch):
    """Before: a pass that read the rows before the link ran (and handed off its successor) then found
    the link gone from Redis, and re-created it (links_repaired == [n0]; the copy then ran as "stale")."""
    from recur_server.services import reconcile as reconciler

    schedule = make_schedule(fake_clock.now, interval_seconds=10)
    reconcile(fake_clock.now)  # the first pass after Redis was emptied; not the one under test
    fake_clock.set(next_due(chain_app))
    looked_up = reconciler.pending_revisions

    def link_runs_in_between(*args, **kwargs):  # type: ignore[no-untyped-def]
        monkeypatch.setattr(reconciler, "pending_revisions", looked_up)
        run_due(chain_app, fake_clock.now)  # n0 runs and hands off n1 between the pass's two reads
        return looked_up(*args, **kwargs)

    monkeypatch.setattr(reconciler, "pending_revisions", link_runs_in_between)
    assert reconcile(fake_clock.now).links_repaired == []
    assert fresh(schedule.id).current_repeat == 1
    assert scheduled_ids(chain_app) == [link_id(schedule.id, 1, 0)]
