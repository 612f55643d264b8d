"""Overdue (recur_server.policies.overdue): an active schedule whose next run is past by more than its grace, decided
from
`now` alone (pure), and the badge it puts on the schedule (recur_server.policies.condition)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from recur_server.policies.condition import condition
from recur_server.policies.overdue import grace_seconds, overdue_seconds

NOW = datetime(2026, 3, 2, 12, 0, 0, 250000, tzinfo=UTC)


def test_past_the_grace_is_overdue_by_the_seconds_since_the_next_run() -> None:
    assert overdue_seconds(True, NOW - timedelta(seconds=61), 60, NOW) == 61.0
    assert overdue_seconds(True, NOW - timedelta(days=2), 60, NOW) == 2 * 86400


@pytest.mark.parametrize("past", [timedelta(seconds=60), timedelta(seconds=59.999), timedelta(0),
                                  timedelta(seconds=-3600)])
def test_up_to_the_grace_itself_is_not_overdue(past: timedelta) -> None:
    assert overdue_seconds(True, NOW - past, 60, NOW) is None
    assert overdue_seconds(True, NOW - timedelta(seconds=60, microseconds=1), 60, NOW) == pytest.approx(60.000001)


def test_a_schedule_not_active_is_never_overdue() -> None:
    assert overdue_seconds(False, NOW - timedelta(hours=5), 60, NOW) is None


@pytest.mark.parametrize(("status", "overdue"), [("active", True), ("paused", False), ("done", False),
                                                 ("dead", False), ("invalid", False)])
def test_a_schedule_row_is_overdue_only_while_active(app, status: str, overdue: bool) -> None:
    """Paused, done, dead and invalid schedules may keep a next_run_at in the past: none waits on a worker."""
    from recur_server.models import Schedule
    from recur_server.services.overdue import overdue_seconds as overdue_of

    row = Schedule(status=status, next_run_at=NOW - timedelta(seconds=61), alert_after_seconds=None)
    assert (overdue_of(row, NOW) is not None) is overdue
    assert overdue_of(Schedule(status=status, next_run_at=NOW - timedelta(seconds=60)), NOW) is None  # the grace
    app.config["RECUR_OVERDUE_AFTER_SECONDS"] = 30.0
    assert (overdue_of(Schedule(status=status, next_run_at=NOW - timedelta(seconds=31)), NOW) is not None) is overdue


def test_nothing_planned_is_not_overdue() -> None:
    assert overdue_seconds(True, None, 60, NOW) is None


def test_the_grace_is_the_schedules_alert_after_seconds_else_the_default() -> None:
    assert grace_seconds(None, 60.0) == 60.0
    assert grace_seconds(300, 60.0) == 300.0
    assert grace_seconds(5, 60.0) == 5.0  # shorter too: overdue from when its missed-run alert would fire
    assert overdue_seconds(True, NOW - timedelta(seconds=90), grace_seconds(300, 60.0), NOW) is None
    assert overdue_seconds(True, NOW - timedelta(seconds=6), grace_seconds(5, 60.0), NOW) == 6.0


@pytest.mark.parametrize(("status", "badge", "problems"), [
    ("active", "overdue", ("overdue",)),
    ("paused", "paused", ()),
    ("done", "done", ()),
    ("dead", "dead", ("dead",)),
])
def test_an_overdue_active_schedule_never_shows_active(status: str, badge: str, problems: tuple[str, ...]) -> None:
    found = condition(status, "ok", None, "succeeded", overdue=True)
    assert (found.badge, found.problems) == (badge, problems)


def test_overdue_comes_after_what_already_named_the_trouble() -> None:
    found = condition("active", "late", "open", "succeeded", overdue=True)
    assert (found.badge, found.problems) == ("breaker open", ("breaker open", "late", "overdue"))
    assert condition("active", "ok", None, "succeeded", overdue=False).badge == "active"
