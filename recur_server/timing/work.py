"""The work one request may spend on timing math: a count of steps (candidates a search examines, days a
rule passes over, times of a day it tries), the same on every machine, not a clock.

A request sets a budget (`budget(steps)`, recur_server/api and the console do it for every request); the timing code
spends from it (`spend`) wherever a search can be long. Past the budget, WorkExceeded is raised, a
TimingError naming the field whose timing could not be decided (the Spec names it): a 422, never a process
held for minutes. Code outside a request (the chain's own planning in a worker, the reconciler) runs with no
budget: a valid rule is never cut short there, and its search is bounded by the rule itself (a day of
candidates per day passed over, until the rule's next run or the year 3000).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from .errors import TimingError

# Enough for every rule a real calendar needs many times over (a leap-day rule at 23:59:59 every second
# passes about 1,500 days; a cron with a window rejects at most MAX_RULED_OUT candidates), and a fraction
# of a second of CPU at most.
REQUEST_STEPS = 200_000


class WorkExceeded(TimingError):
    """The timing could not be decided within the request's budget of steps."""


@dataclass
class _Budget:
    left: int
    steps: int


_current: ContextVar[_Budget | None] = ContextVar("recur_timing_budget", default=None)


@contextmanager
def budget(steps: int = REQUEST_STEPS) -> Iterator[None]:
    """Hold every timing evaluation inside the block to `steps` in all."""
    token = start(steps)
    try:
        yield
    finally:
        stop(token)


def start(steps: int = REQUEST_STEPS) -> object:
    """Set a budget until `stop(token)` (for frameworks' before/after hooks); returns the token."""
    return _current.set(_Budget(steps, steps))


def stop(token: object) -> None:
    _current.reset(token)  # type: ignore[arg-type]


def spend(steps: int = 1, field: str = "timing") -> None:
    """Count `steps` against the current budget, if any; WorkExceeded past it."""
    current = _current.get()
    if current is None:
        return
    current.left -= steps
    if current.left < 0:
        raise WorkExceeded(field, f"its runs are too far apart to find within the {current.steps:,} steps a "
                                  "request may take (a rule whose next run lies years of candidates away); "
                                  "make it less sparse, e.g. a coarser FREQ with BYHOUR/BYMINUTE/BYSECOND")


def left() -> int | None:
    """Steps left in the current budget (None: no budget)."""
    current = _current.get()
    return None if current is None else max(0, current.left)
