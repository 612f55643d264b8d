"""Alerts on long and late runs and on failure streaks: pure decisions, in time given as arguments.

run.late: a run of a tick started more than late_after_seconds after its nominal time. run.long: a run still
going more than long_after_seconds after it started. schedule.failing: failing_after runs in a row failed
(or timed out); it stays raised until a run succeeds, which ends it (schedule.recovered). Each is emitted once:
the caller records the alert in the transaction that emits it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

# Runs that stand for a tick of the schedule's timing. A manual run's nominal time is when it was asked for, a
# backfill's is a past tick on purpose, a followed run's the upstream's end: none of them starts "late".
TICK_TRIGGERS = frozenset({"schedule", "retry", "catch_up"})
FAILED = frozenset({"failed", "timed_out"})


def lateness_seconds(scheduled_for: datetime, started_at: datetime) -> float:
    return (started_at - scheduled_for).total_seconds()


def is_late_start(scheduled_for: datetime, started_at: datetime, late_after_seconds: int | None,
                  trigger: str) -> bool:
    """Whether a run that started at `started_at` for the tick `scheduled_for` warrants run.late."""
    if late_after_seconds is None or trigger not in TICK_TRIGGERS:
        return False
    return lateness_seconds(scheduled_for, started_at) > late_after_seconds


def is_long(started_at: datetime, long_after_seconds: int | None, now: datetime) -> bool:
    """Whether a run going since `started_at` has been going longer than long_after_seconds at `now`."""
    if long_after_seconds is None:
        return False
    return (now - started_at).total_seconds() > long_after_seconds


@dataclass(frozen=True)
class Streak:
    """Failed runs in a row (`failures`), and since when schedule.failing has been raised (None: it is not)."""

    failures: int
    failing_since: datetime | None


@dataclass(frozen=True)
class StreakStep:
    """The streak after one outcome; `failing`: emit schedule.failing now; `recovered`: the alert ended now."""

    streak: Streak
    failing: bool = False
    recovered: bool = False


def record_outcome(streak: Streak, failing_after: int | None, status: str, now: datetime) -> StreakStep:
    """A run ended with `status`. Failures (failed, timed_out) lengthen the streak, a success ends it; skipped,
    cancelled and missed runs leave it as it is. The alert is raised when the streak reaches failing_after,
    once; a success with the alert raised ends it, whatever failing_after is now."""
    if status == "succeeded":
        if streak.failures == 0 and streak.failing_since is None:
            return StreakStep(streak)
        return StreakStep(Streak(0, None), recovered=streak.failing_since is not None)
    if status not in FAILED or (failing_after is None and streak.failing_since is None):
        return StreakStep(streak)
    failures = streak.failures + 1
    if streak.failing_since is None and failing_after is not None and failures >= failing_after:
        return StreakStep(Streak(failures, now), failing=True)
    return StreakStep(Streak(failures, streak.failing_since))
