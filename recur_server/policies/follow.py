"""Runs that follow other runs: which upstream outcomes trigger a follower, whether a trigger runs or is
recorded skipped, and when a failed triggered run is retried. Pure: time and states are arguments."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from recur_server.timing.delays import retry_delay
from recur_server.timing.instants import load_zone
from recur_server.timing.window import parse_window


class FollowOn(StrEnum):
    """Which ends of an upstream run trigger the follower."""

    SUCCEEDED = "succeeded"
    FAILED = "failed"  # failed or timed out
    ENDED = "ended"  # any of those


# A retry of a triggered run waits RETRY_BASE_SECONDS * 2**(n-1), at most ten times that (timing.retry_delay).
RETRY_BASE_SECONDS = 10
_FAILED = ("failed", "timed_out")


def fires(on: str | None, upstream_status: str) -> bool:
    """Whether an upstream run that ended `upstream_status` triggers a follower with `on` (None: succeeded).
    Skipped, cancelled and missed rows are not runs that ended: they trigger nothing."""
    wanted = on or FollowOn.SUCCEEDED
    if upstream_status == "succeeded":
        return wanted in (FollowOn.SUCCEEDED, FollowOn.ENDED)
    if upstream_status in _FAILED:
        return wanted in (FollowOn.FAILED, FollowOn.ENDED)
    return False


@dataclass(frozen=True)
class TriggerDecision:
    due_at: datetime
    skipped_reason: str | None  # None: run it at due_at; else "paused" or "outside_window"


def decide_trigger(ended_at: datetime, delay_seconds: int | None, follower_status: str, within: str | None,
                   timezone: str | None) -> TriggerDecision:
    """A trigger is due `delay_seconds` after the upstream run ended. A follower that is not active records it
    skipped ("paused"); with `within` ("HH:MM-HH:MM" in the follower's zone, as only_between reads it), a due
    time outside the window is skipped ("outside_window"), not moved to the window's next opening."""
    due_at = ended_at + timedelta(seconds=delay_seconds or 0)
    if follower_status != "active":
        return TriggerDecision(due_at, "paused")
    if within is not None and not in_window(due_at, within, timezone):
        return TriggerDecision(due_at, "outside_window")
    return TriggerDecision(due_at, None)


def in_window(instant: datetime, within: str, timezone: str | None) -> bool:
    local = instant.astimezone(load_zone(timezone or "UTC"))
    return parse_window(within).contains(local.time().replace(tzinfo=None))


def retry_at(failed_at: datetime, attempt: int, max_retries: int) -> datetime | None:
    """When attempt `attempt` (0 first) of a triggered run failed: when the next starts, or None when the
    follower's max_retries are used up."""
    if attempt >= max_retries:
        return None
    return failed_at + timedelta(seconds=retry_delay(RETRY_BASE_SECONDS, attempt + 1))
