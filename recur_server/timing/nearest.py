"""The ticks of a timing nearest an instant: the last one before it and the nearest on either side.

A timing only answers "the first tick after t"; the one before an instant is found by halving the span between
a tick known to be before it and the instant (each step one call of `next_after`), so it costs a few dozen calls
whatever the timing, and looks no further back than `horizon`.
"""
from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

NextAfter = Callable[[datetime], "datetime | None"]
# Halvings of the span: a year of milliseconds takes 35; each step either halves it or moves to a later tick.
MAX_STEPS = 96
_MS = timedelta(milliseconds=1)


def tick_before(next_after: NextAfter, instant: datetime, horizon: timedelta) -> datetime | None:
    """The last tick strictly before `instant` and no earlier than `instant - horizon`; None when there is none."""
    try:
        best = next_after(instant - horizon - _MS)
    except OverflowError:
        return None
    if best is None or best >= instant:
        return None
    high = instant  # no tick lies in [high, instant) beyond those already known
    for _ in range(MAX_STEPS):
        following = next_after(best)
        if following is None or following >= instant:
            return best
        middle = best + (high - best) / 2
        found = next_after(middle)
        if found is not None and found < instant:
            best = found
        else:
            high = middle
    return best


def tick_at_or_after(next_after: NextAfter, instant: datetime) -> datetime | None:
    """The first tick at or after `instant`."""
    return next_after(instant - _MS)


def nearest_tick(next_after: NextAfter, instant: datetime, horizon: timedelta) -> datetime | None:
    """The tick nearest `instant` on either side (the earlier one on a tie), within `horizon` before it."""
    after = tick_at_or_after(next_after, instant)
    if after == instant:
        return after
    before = tick_before(next_after, instant, horizon)
    if before is None:
        return after
    if after is None or instant - before <= after - instant:
        return before
    return after
