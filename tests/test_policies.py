"""The catch-up and overlap decisions, with literal datetimes (recur_server.policies is pure)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from recur_server.policies import decide_after_run, decide_catch_up, due_ticks, split_at_window
from recur_server.policies.ticks import MAX_COUNTED_TICKS, Gap
from recur_server.timing import build_spec

T0 = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)


def every(seconds: int):  # type: ignore[no-untyped-def]
    return build_spec({"interval_seconds": seconds, "anchor_at": T0}).next_after


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def decide(policy: str, first: float, now: float, window: int | None = None, limit: int = 100):  # type: ignore[no-untyped-def]
    outside, inside = split_at_window(every(2), at(first), at(now), window, keep=limit)
    return decide_catch_up(outside, inside, policy, limit)


def test_five_missed_ticks_under_each_catch_up_policy() -> None:
    # A 2 s schedule whose tick at +2 s found no worker until +10.5 s: ticks 2, 4, 6, 8, 10 are due.
    skip = decide("skip", 2, 10.5)
    assert skip.run is None and skip.missed == [("catch_up_skip", Gap(at(2), at(10), 5))]
    latest = decide("latest", 2, 10.5)
    assert latest.run == at(10) and latest.run_through is None
    assert latest.missed == [("catch_up_skip", Gap(at(2), at(8), 4))]
    everything = decide("all", 2, 10.5)
    assert (everything.run, everything.run_through, everything.missed) == (at(2), at(10), [])
    assert everything.caught_up


def test_all_keeps_the_newest_ticks_within_its_limit() -> None:
    capped = decide("all", 2, 10.5, limit=2)
    assert (capped.run, capped.run_through) == (at(8), at(10))
    assert capped.missed == [("catch_up_limit", Gap(at(2), at(6), 3))]


def test_a_window_shorter_than_the_outage_runs_only_the_ticks_inside_it() -> None:
    windowed = decide("all", 2, 10.5, window=5)  # ticks at or after +5.5 s: 6, 8, 10
    assert windowed.missed == [("catch_up_window", Gap(at(2), at(4), 2))]
    assert (windowed.run, windowed.run_through) == (at(6), at(10))
    alone = decide("latest", 2, 31.5, window=1)  # nothing inside the window: nothing runs
    assert alone.run is None and alone.missed == [("catch_up_window", Gap(at(2), at(30), 15))]


def test_a_late_link_that_was_not_overtaken_runs_its_own_tick() -> None:
    late = decide("skip", 2, 3.9)
    assert late.run == at(2) and not late.missed and not late.caught_up


def test_a_week_long_outage_of_a_one_second_schedule_is_counted_as_at_least_the_cap() -> None:
    outside, inside = split_at_window(every(1), at(1), at(7 * 86400), None, keep=3)
    decision = decide_catch_up(outside, inside, "all", 3)
    assert (decision.run, decision.run_through) == (at(7 * 86400 - 2), at(7 * 86400))
    [(reason, gap)] = decision.missed
    assert reason == "catch_up_limit" and gap.first == at(1) and gap.last == at(7 * 86400 - 3)
    assert gap.count == MAX_COUNTED_TICKS - 3 and not gap.exact  # a lower bound, said so


@pytest.mark.parametrize(("policy", "next_tick", "through", "skipped"), [
    ("skip", None, None, [("overlap", Gap(at(2), at(6), 3))]),
    ("buffer_one", at(6), at(6), [("overlap", Gap(at(2), at(4), 2))]),
    ("buffer_all", at(2), at(6), []),
    ("allow_all", None, None, [("overlap", Gap(at(2), at(6), 3))]),
])
def test_ticks_that_came_due_during_a_run(policy: str, next_tick: datetime | None, through: datetime | None,
                                          skipped: list[tuple[str, Gap]]) -> None:
    # A run of the tick at 0 took until +6.5 s: ticks 2, 4 and 6 came due meanwhile.
    passed = due_ticks(every(2), at(2), at(6.5), keep=100)
    decision = decide_after_run(passed, policy, limit=100)
    assert (decision.next_tick, decision.run_through, decision.skipped) == (next_tick, through, skipped)


def test_buffer_all_is_bounded_like_catch_up() -> None:
    decision = decide_after_run(due_ticks(every(2), at(2), at(6.5), keep=2), "buffer_all", limit=2)
    assert (decision.next_tick, decision.run_through) == (at(4), at(6))
    assert decision.skipped == [("overlap_limit", Gap(at(2), at(2), 1))]


def test_nothing_came_due_during_a_short_run() -> None:
    assert decide_after_run(due_ticks(every(2), at(2), at(1.5), keep=100), "skip", 100).next_tick is None
