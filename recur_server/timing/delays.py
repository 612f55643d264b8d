"""Delays the caller adds to nominal times: retry back-off and deterministic per-tick jitter."""
from __future__ import annotations

import hashlib
from datetime import datetime

from .errors import TimingError
from .instants import to_utc

_MAX_FACTOR = 10


def retry_delay(interval_seconds: int, retry: int) -> int:
    """Seconds before retry number `retry` (1-based): interval * 2**(retry-1), capped at interval * 10."""
    if isinstance(interval_seconds, bool) or not isinstance(interval_seconds, int) or interval_seconds < 0:
        raise TimingError("interval_seconds", f"must be whole seconds >= 0, got {interval_seconds!r}")
    if isinstance(retry, bool) or not isinstance(retry, int) or retry < 1:
        raise TimingError("retry", f"retry number must be a whole number >= 1, got {retry!r}")
    factor = _MAX_FACTOR if retry > 5 else min(2 ** (retry - 1), _MAX_FACTOR)
    return interval_seconds * factor


def jitter_delay(
    schedule_id: str, nominal: datetime, jitter_seconds: int, next_nominal: datetime | None
) -> int:
    """Whole seconds in [0, jitter_seconds), stable per (schedule, tick), never reaching `next_nominal`.

    Uses SHA-256 (not hash(), which is salted per process) so every worker agrees on the delay.
    """
    if isinstance(jitter_seconds, bool) or not isinstance(jitter_seconds, int) or jitter_seconds < 0:
        raise TimingError("jitter_seconds", f"must be a whole number of seconds >= 0, got {jitter_seconds!r}")
    if jitter_seconds <= 1:
        return 0
    tick = to_utc(nominal, "nominal")
    digest = hashlib.sha256(f"{schedule_id}|{tick:%Y-%m-%dT%H:%M:%SZ}".encode()).digest()
    delay = int.from_bytes(digest[:8], "big") % jitter_seconds
    if next_nominal is not None:
        room = int((to_utc(next_nominal, "next_nominal") - tick).total_seconds()) - 1
        delay = min(delay, max(room, 0))
    return delay
