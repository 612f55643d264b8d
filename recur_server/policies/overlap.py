"""Overlap: what becomes of the ticks that came due while a run of the same schedule was still going.

`skip`, `buffer_one` and `buffer_all` keep one run at a time: the chain's next link is handed off when the
run ends, and decide_after_run says which tick it stands for. `allow_all` and `cancel_other` hand the next
link off when a run starts (is_detached), so a tick starts on time whatever is running.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum

from .ticks import Gap, Ticks


class OverlapPolicy(StrEnum):
    SKIP = "skip"
    BUFFER_ONE = "buffer_one"
    BUFFER_ALL = "buffer_all"
    CANCEL_OTHER = "cancel_other"
    ALLOW_ALL = "allow_all"


# The policies whose run leaves the chain at its start (its successor is handed off then).
DETACHED = (OverlapPolicy.ALLOW_ALL, OverlapPolicy.CANCEL_OTHER)


def is_detached(policy: str | None) -> bool:
    """Whether a run of this policy leaves the chain at its start (its successor is handed off then)."""
    return policy in DETACHED


def waits_for_running(policy: str | None) -> bool:
    """Whether a run that finds another one going waits for it to end (rather than skip or start)."""
    return policy in (OverlapPolicy.BUFFER_ONE, OverlapPolicy.BUFFER_ALL)


@dataclass(frozen=True)
class AfterRun:
    """The tick the chain's next link stands for once a run ended.

    `next_tick` None means plan normally (the first tick after now); `run_through` keeps a backlog going
    (every tick up to it runs in order); `skipped` is the gap of ticks given up, recorded as one row.
    """

    next_tick: datetime | None = None
    run_through: datetime | None = None
    skipped: list[tuple[str, Gap]] = field(default_factory=list)


def decide_after_run(passed: Ticks, policy: str, limit: int) -> AfterRun:
    """`passed`: ticks after the finished run's nominal time that are already due (from due_ticks)."""
    if passed.count == 0 or passed.latest is None:
        return AfterRun()
    if policy == OverlapPolicy.BUFFER_ONE:
        gap = passed.gap_before(1)
        return AfterRun(passed.latest, passed.latest, [("overlap", gap)] if gap else [])
    if policy == OverlapPolicy.BUFFER_ALL:
        kept = passed.tail[-max(1, limit):]
        gap = passed.gap_before(len(kept))
        return AfterRun(kept[0], kept[-1], [("overlap_limit", gap)] if gap else [])
    assert passed.first is not None
    # skip, and the detached policies (whose runs never hold the chain: only a stuck link gets here)
    return AfterRun(None, None, [("overlap", Gap(passed.first, passed.latest, passed.count, passed.exact))])
