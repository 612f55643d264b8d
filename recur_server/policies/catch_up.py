"""Catch-up: which of the ticks missed while nothing ran them are run, and which are recorded missed.

A tick counts as missed once the tick after it has also come due (its link was overtaken): a link that
is merely late runs. `catch_up_window_seconds` bounds any tick's lateness, overtaken or not.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum

from .ticks import Gap, Ticks


class CatchUpPolicy(StrEnum):
    SKIP = "skip"  # run none of the missed ticks; the next run is the next future tick
    LATEST = "latest"  # run the most recent missed tick once
    ALL = "all"  # run every missed tick in order, the newest catch_up_limit of them


DEFAULT_LIMIT = 100
MAX_LIMIT = 1000


@dataclass(frozen=True)
class CatchUp:
    """What a late link does: run tick `run` (None: run nothing and plan after now), then, with `all`,
    every tick up to `run_through` in order; `missed` are recorded, each gap as one row with its reason."""

    run: datetime | None
    run_through: datetime | None = None
    missed: list[tuple[str, Gap]] = field(default_factory=list)

    @property
    def caught_up(self) -> bool:
        """Whether the run stands for missed ticks (trigger `catch_up`) rather than its own on-time tick."""
        return bool(self.missed) or self.run_through is not None


def needs_decision(nominal: datetime, following: datetime | None, now: datetime,
                   window_seconds: int | None) -> bool:
    """Cheap test for the hot path: is the link overtaken by its next tick, or older than the window?"""
    if following is not None and following <= now:
        return True
    return window_seconds is not None and (now - nominal).total_seconds() > window_seconds


def decide_catch_up(outside: Ticks, inside: Ticks, policy: str, limit: int = DEFAULT_LIMIT) -> CatchUp:
    """Decide over the due ticks from the link's own one up to now, split at the window
    (recur_server.policies.ticks.split_at_window, with keep >= limit)."""
    missed: list[tuple[str, Gap]] = []
    if outside.count and outside.first is not None and outside.latest is not None:
        missed.append(("catch_up_window", Gap(outside.first, outside.latest, outside.count, outside.exact)))
    if inside.count == 0 or inside.latest is None or inside.first is None:
        return CatchUp(run=None, missed=missed)
    if inside.count == 1:
        return CatchUp(run=inside.latest, missed=missed)
    if policy == CatchUpPolicy.SKIP:
        missed.append(("catch_up_skip", Gap(inside.first, inside.latest, inside.count, inside.exact)))
        return CatchUp(run=None, missed=missed)
    if policy == CatchUpPolicy.ALL:
        kept = inside.tail[-max(1, limit):]
        gap = inside.gap_before(len(kept))
        if gap is not None:
            missed.append(("catch_up_limit", gap))
        return CatchUp(run=kept[0], run_through=kept[-1] if len(kept) > 1 else None, missed=missed)
    gap = inside.gap_before(1)  # latest
    if gap is not None:
        missed.append(("catch_up_skip", gap))
    return CatchUp(run=inside.latest, missed=missed)
