"""Enumerating a timing's ticks over a span, bounded: an outage of a week on a one-second schedule is
600,000 ticks, and no decision needs more than the newest few of them and a count."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

NextAfter = Callable[[datetime], "datetime | None"]

# Ticks are counted exactly up to this many; past it a count says "at least" (Ticks.exact is False).
MAX_COUNTED_TICKS = 10_000


@dataclass(frozen=True)
class Gap:
    """A run of consecutive ticks collapsed into one record: the first, the last and how many."""

    first: datetime
    last: datetime
    count: int
    exact: bool = True


@dataclass(frozen=True)
class Ticks:
    """Ticks from `first` up to now: the newest of them in `tail` (oldest first; one more than the caller
    asked to keep, so the tick before a kept run is known) and how many there are in all."""

    tail: tuple[datetime, ...]
    count: int
    exact: bool
    first: datetime | None

    @property
    def latest(self) -> datetime | None:
        return self.tail[-1] if self.tail else None

    def gap_before(self, kept: int) -> Gap | None:
        """The ticks before the newest `kept` ones, collapsed (None when there are none)."""
        dropped = self.count - kept
        if dropped <= 0 or self.first is None:
            return None
        listed_dropped = len(self.tail) - kept
        last = self.tail[listed_dropped - 1] if listed_dropped > 0 else self.first
        return Gap(self.first, last, dropped, self.exact)


def due_ticks(next_after: NextAfter, first: datetime, now: datetime, keep: int) -> Ticks:
    """Every tick from `first` (a tick itself) up to and including `now`, listing the newest keep + 1.

    Walks forward up to MAX_COUNTED_TICKS; beyond that it finds the newest ticks by searching back from
    now (doubling the span) and reports the count as a lower bound.
    """
    keep = max(1, keep)
    if first > now:
        return Ticks((), 0, True, None)
    tail: list[datetime] = [first]
    count = 1
    tick: datetime | None = first
    while count < MAX_COUNTED_TICKS:
        tick = next_after(tick) if tick is not None else None
        if tick is None or tick > now:
            return Ticks(tuple(tail[-(keep + 1):]), count, True, first)
        tail.append(tick)
        count += 1
        if len(tail) > 2 * keep + 2:
            del tail[:-(keep + 1)]
    newest = _newest(next_after, tail[-1], now, keep)
    return Ticks(tuple(newest), max(count, MAX_COUNTED_TICKS), False, first)


def _newest(next_after: NextAfter, floor: datetime, now: datetime, keep: int) -> list[datetime]:
    span = timedelta(seconds=1)
    while True:
        start = max(floor, now - span)
        found = ticks_between(next_after, start, now, limit=MAX_COUNTED_TICKS)
        if len(found) > keep or start == floor:
            return found[-(keep + 1):]
        span *= 2


def ticks_between(next_after: NextAfter, after: datetime, until: datetime, limit: int,
                  inclusive_end: bool = True) -> list[datetime]:
    """Ticks strictly after `after` up to `until` (inclusive unless told), at most `limit` of them."""
    found: list[datetime] = []
    tick = next_after(after)
    while tick is not None and (tick <= until if inclusive_end else tick < until) and len(found) < limit:
        found.append(tick)
        tick = next_after(tick)
    return found


def split_at_window(next_after: NextAfter, first: datetime, now: datetime, window_seconds: int | None,
                    keep: int) -> tuple[Ticks, Ticks]:
    """The due ticks from `first`, as (older than the window, inside it); without a window all are inside."""
    empty = Ticks((), 0, True, None)
    if window_seconds is None:
        return empty, due_ticks(next_after, first, now, keep)
    cutoff = now - timedelta(seconds=window_seconds)
    if first >= cutoff:
        return empty, due_ticks(next_after, first, now, keep)
    outside = due_ticks(next_after, first, cutoff - timedelta(microseconds=1), 1)
    after = next_after(outside.latest) if outside.latest is not None else None
    inside = due_ticks(next_after, after, now, keep) if after is not None else empty
    return outside, inside
