"""Pure policy decisions: what to run, skip or record missed when runs and time collide.

Functions of (ticks, what is running, now) with time passed in; the chain carries out what they decide.
"""

from __future__ import annotations

from .catch_up import CatchUp, CatchUpPolicy, decide_catch_up
from .overlap import AfterRun, OverlapPolicy, decide_after_run, is_detached
from .ticks import MAX_COUNTED_TICKS, Gap, Ticks, due_ticks, split_at_window, ticks_between

__all__ = [
    "MAX_COUNTED_TICKS", "AfterRun", "CatchUp", "CatchUpPolicy", "Gap", "OverlapPolicy", "Ticks",
    "decide_after_run", "decide_catch_up", "due_ticks", "is_detached", "split_at_window", "ticks_between",
]
