"""The workers' reconcile passes: one at a time, and once per period across all workers; and the background
loop's mover, which no pass of the database holds up."""

from __future__ import annotations

import signal
import threading
import time
from typing import Any

import pytest

from harness.chain_driver import make_schedule, next_due, scheduled_ids
from harness.servers import wait_for
from recur_server.chain.ids import link_id
from recur_server.chain.leases import PULSE_KEY
from recur_server.infra.extensions import get_queue, get_redis
from recur_server.notify import watch
from recur_server.services.reconcile_stats import read_stats
from recur_server.workers import background
from recur_server.workers.background import RECONCILE_LOCK, RECONCILED_KEY, reconcile_once


def _passes(app) -> int:  # type: ignore[no-untyped-def]
    return int(read_stats(get_redis(app)).get("reconcile_passes", "0"))


def test_periodic_passes_run_once_per_period_across_workers(chain_app, fake_clock):
    redis = get_redis(chain_app)
    make_schedule(fake_clock.now, interval_seconds=10)
    began = time.monotonic()
    assert reconcile_once(chain_app, every=60) is not None
    left, since = redis.pttl(RECONCILED_KEY), (time.monotonic() - began) * 1000
    # the period, less what the pass and this read took (5.4 s of it once, on a loaded CI machine)
    assert 60_000 - since - 5 < left <= 60_000, (left, since)
    # Another worker's turn within the period: skipped, and nothing was locked or counted.
    assert reconcile_once(chain_app, every=60) is None
    assert _passes(chain_app) == 1 and not redis.exists(RECONCILE_LOCK)
    # A worker starting up reconciles whatever the period says.
    assert reconcile_once(chain_app) is not None
    assert _passes(chain_app) == 2
    # Once the period is over (here: the key lapsed, or Redis was emptied), the next turn runs a pass
    # that repairs what went missing meanwhile.
    redis.flushall()
    report = reconcile_once(chain_app, every=60)
    assert report is not None and report["links_repaired"] == 1
    assert len(scheduled_ids(chain_app)) == 1


def test_a_pass_waits_for_none_while_another_runs_and_leaves_its_lock_alone(chain_app, fake_clock):
    redis = get_redis(chain_app)
    make_schedule(fake_clock.now, interval_seconds=10)
    redis.set(RECONCILE_LOCK, "another-process", px=10_000)
    assert reconcile_once(chain_app) is None
    assert reconcile_once(chain_app, every=5) is None
    assert redis.get(RECONCILE_LOCK) == b"another-process"
    assert _passes(chain_app) == 0 and not redis.exists(RECONCILED_KEY)


def test_a_stop_signal_that_comes_while_the_loop_holds_its_events_lock_does_not_wait_for_itself(app, monkeypatch):
    """A worker's background process stops on SIGTERM. CPython runs the handler in the main thread, between two
    of its bytecodes: here, often inside `stop.wait()`, which holds the Event's lock on its way out of each
    wait. A handler that set the Event there waited for that lock, held by the thread it interrupted, forever:
    the process outlived its worker, its watch thread still checking and delivering (found in a test run)."""
    handlers: dict[int, Any] = {}
    monkeypatch.setattr(signal, "signal", lambda signum, handler: handlers.setdefault(signum, handler))
    stops: list[threading.Event] = []
    monkeypatch.setattr(background, "run_background", lambda app, stop, *rest: stops.append(stop))
    monkeypatch.setattr(watch, "start_thread", lambda app: threading.Event())
    monkeypatch.setattr(background, "start_daemon", lambda *args: None)
    background.background_process_main(app, None)
    [stop] = stops

    def interrupted_on_its_way_out_of_a_wait() -> None:
        with stop._cond:  # type: ignore[attr-defined]  # where Condition.wait holds it: _acquire_restore
            handlers[signal.SIGTERM](signal.SIGTERM, None)

    handler = threading.Thread(target=interrupted_on_its_way_out_of_a_wait, daemon=True)
    handler.start()
    handler.join(5)
    assert not handler.is_alive(), "the SIGTERM handler waited for the lock of the wait it interrupted"
    assert stop.wait(5) and stop.is_set()  # the loop, back from its wait, sees the stop


@pytest.mark.parametrize("held", ["reconcile_once", "start_waiting"])
def test_a_due_link_is_moved_while_a_database_pass_is_going(real_app, fake_clock, monkeypatch, held):
    """A pass of the database can take seconds (a reconciler's sweep of a million schedules: 15-19 s; a
    periodic pass while the workers are behind: 2.3 s), and with one worker its mover is the only one: a link
    that comes due meanwhile is moved on time, not after the pass. Nor does the lease pulse lapse, which would
    stop every write-off of a lost run for a while after (recur_server.chain.leases)."""
    schedule = make_schedule(fake_clock.now, interval_seconds=10)
    going, release = threading.Event(), threading.Event()

    def long_pass(*args: Any, **kwargs: Any) -> None:
        going.set()
        release.wait(60)

    monkeypatch.setattr(background, held, long_pass)
    stop = threading.Event()
    loop = threading.Thread(target=background.run_background, args=(real_app, stop), daemon=True)
    loop.start()
    try:
        wait_for(going.is_set, timeout=15, what=f"the loop to begin its pass ({held})")
        get_redis(real_app).delete(PULSE_KEY)
        wait_for(lambda: get_redis(real_app).exists(PULSE_KEY), timeout=15, what="the pulse during the pass")
        fake_clock.set(next_due(real_app))
        wait_for(lambda: get_queue(real_app).job_ids == [link_id(schedule.id, 0, 0)], timeout=15,
                 what="the link moved while the pass is still going")
    finally:
        release.set()
        stop.set()
        loop.join(timeout=10)
    assert not loop.is_alive()
