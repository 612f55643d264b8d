"""What is wrong with a schedule, first: the badge a list shows instead of a green "active" that hides it.

Pure: from the schedule's status, its missed-run health, whether it is overdue (recur_server.policies.overdue), its
workflow's breaker state, the outcome of its newest finished run, and its alerts on runs (a failure streak
raised, a run going too long). Problems come in
the order an operator must act on them.
"""

from __future__ import annotations

from dataclasses import dataclass

FAILED_OUTCOMES = ("failed", "timed_out")


@dataclass(frozen=True)
class Condition:
    """`badge`: the one word a list shows (a CSS class too); `problems`: every one that holds, worst first."""

    badge: str
    problems: tuple[str, ...]


def condition(status: str, health: str | None, breaker_state: str | None, last_outcome: str | None,
              failing_alert: bool = False, running_long: bool = False, overdue: bool = False) -> Condition:
    """`status` is the schedule's (active, paused, done, dead, invalid); `health` "late" when its missed-run
    alert fired; `breaker_state` its workflow's breaker (None: no breaker); `last_outcome` its newest
    finished run's status (None: none yet); `failing_alert` its schedule.failing raised (failing_since);
    `running_long` a run of it still going that run.long was sent for; `overdue` its next run past by more
    than its grace (only an active schedule is)."""
    problems: list[str] = []
    if status in ("invalid", "dead"):
        problems.append(status)
    if breaker_state == "open":
        problems.append("breaker open")
    elif breaker_state == "half_open":
        problems.append("breaker probing")
    if health == "late":
        problems.append("late")
    if overdue and status == "active":
        problems.append("overdue")
    if running_long:
        problems.append("running long")
    if (last_outcome in FAILED_OUTCOMES or failing_alert) and status not in ("invalid", "dead"):
        problems.append("failing")
    # A schedule paused or done by intent says so; an active one says what is wrong with it, if anything.
    badge = problems[0] if problems and status in ("active", "invalid", "dead") else status
    return Condition(badge, tuple(problems))
