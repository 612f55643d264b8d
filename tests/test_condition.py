"""A schedule's badge names what is wrong before "active" (pure)."""

from __future__ import annotations

import pytest

from recur_server.policies.condition import condition


@pytest.mark.parametrize(("status", "health", "breaker", "last", "badge", "problems"), [
    ("active", "ok", None, "succeeded", "active", ()),
    ("active", "ok", "closed", None, "active", ()),
    ("active", "late", "open", "skipped", "breaker open", ("breaker open", "late")),
    ("active", "late", None, "succeeded", "late", ("late",)),
    ("active", "ok", None, "timed_out", "failing", ("failing",)),
    ("active", "ok", "half_open", "failed", "breaker probing", ("breaker probing", "failing")),
    ("invalid", "late", None, "failed", "invalid", ("invalid", "late")),
    ("dead", "ok", None, "failed", "dead", ("dead",)),
    ("paused", "ok", None, "failed", "paused", ("failing",)),  # paused by intent: it says so
    ("done", "ok", None, "succeeded", "done", ()),
])
def test_the_badge_is_the_worst_problem_else_the_status(status, health, breaker, last, badge, problems) -> None:
    found = condition(status, health, breaker, last)
    assert (found.badge, found.problems) == (badge, problems)


def test_alerts_on_runs_show_on_the_badge() -> None:
    found = condition("active", "ok", None, "succeeded", running_long=True)
    assert (found.badge, found.problems) == ("running long", ("running long",))
    # a failure streak raised stays "failing" even once a run was skipped or cancelled after it
    found = condition("active", "late", None, "succeeded", failing_alert=True, running_long=True)
    assert (found.badge, found.problems) == ("late", ("late", "running long", "failing"))
    assert condition("paused", "ok", None, None, failing_alert=True).badge == "paused"
