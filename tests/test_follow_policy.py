"""The pure decisions of runs that follow runs (recur_server.policies.follow), with literal datetimes: which ends
trigger, when a trigger is due or skipped (a window read in the follower's zone, across a DST change and
overnight), and when a failed triggered run is retried."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from recur_server.policies.follow import decide_trigger, fires, in_window, retry_at


@pytest.mark.parametrize(("on", "status", "expected"), [
    (None, "succeeded", True), ("succeeded", "succeeded", True), ("succeeded", "failed", False),
    ("failed", "failed", True), ("failed", "timed_out", True), ("failed", "succeeded", False),
    ("ended", "succeeded", True), ("ended", "timed_out", True),
    ("ended", "skipped", False), ("ended", "cancelled", False), ("ended", "missed", False),
])
def test_which_ends_trigger(on, status, expected):
    assert fires(on, status) is expected


def test_a_trigger_is_due_its_delay_after_the_upstream_ended():
    ended = datetime(2026, 3, 2, 12, 0, 0, 250000, tzinfo=UTC)
    decision = decide_trigger(ended, 90, "active", None, "UTC")
    assert decision.due_at == datetime(2026, 3, 2, 12, 1, 30, 250000, tzinfo=UTC)
    assert decision.skipped_reason is None
    assert decide_trigger(ended, None, "active", None, None).due_at == ended


@pytest.mark.parametrize("status", ["paused", "done", "dead", "invalid"])
def test_a_follower_that_is_not_active_records_it_skipped(status):
    ended = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
    assert decide_trigger(ended, 0, status, None, "UTC").skipped_reason == "paused"


def test_the_window_is_read_in_the_followers_zone_across_a_dst_change():
    # Berlin moves from UTC+1 to UTC+2 on 29 March 2026 at 01:00 UTC.
    before = datetime(2026, 3, 28, 6, 30, tzinfo=UTC)  # 07:30 in Berlin
    after = datetime(2026, 3, 29, 6, 30, tzinfo=UTC)  # 08:30 in Berlin
    assert not in_window(before, "08:00-18:00", "Europe/Berlin")
    assert in_window(after, "08:00-18:00", "Europe/Berlin")
    assert decide_trigger(before, 0, "active", "08:00-18:00", "Europe/Berlin").skipped_reason == "outside_window"
    # the delay counts: due at 08:00:00 local, the window's start (inclusive)
    assert decide_trigger(before, 1800, "active", "08:00-18:00", "Europe/Berlin").skipped_reason is None
    # end exclusive, and an overnight window
    assert not in_window(datetime(2026, 3, 29, 16, 0, tzinfo=UTC), "08:00-18:00", "Europe/Berlin")
    assert in_window(datetime(2026, 3, 29, 23, 0, tzinfo=UTC), "22:00-06:00", "UTC")
    assert not in_window(datetime(2026, 3, 29, 12, 0, tzinfo=UTC), "22:00-06:00", "UTC")


def test_a_failed_triggered_run_is_retried_with_backoff_until_max_retries():
    failed = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
    assert retry_at(failed, 0, 0) is None
    assert retry_at(failed, 0, 3) == datetime(2026, 3, 2, 12, 0, 10, tzinfo=UTC)
    assert retry_at(failed, 1, 3) == datetime(2026, 3, 2, 12, 0, 20, tzinfo=UTC)
    assert retry_at(failed, 2, 3) == datetime(2026, 3, 2, 12, 0, 40, tzinfo=UTC)
    assert retry_at(failed, 3, 3) is None
    assert retry_at(failed, 8, 100) == datetime(2026, 3, 2, 12, 1, 40, tzinfo=UTC)  # at most 100 s
