"""The one place that reads the wall clock. Everything else takes `now` as an argument."""

from __future__ import annotations

import math
import time
from datetime import UTC, datetime


def utcnow() -> datetime:
    """The current instant, timezone-aware UTC."""
    return datetime.now(UTC)


def monotonic() -> float:
    return time.monotonic()


def ceil_second(instant: datetime) -> datetime:
    """Round up to a whole second (calendar ticks, one-shots and retries are whole seconds; never early)."""
    if instant.microsecond == 0:
        return instant
    return datetime.fromtimestamp(math.ceil(instant.timestamp()), UTC)
