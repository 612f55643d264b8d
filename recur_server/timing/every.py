"""Parsing shorthand intervals ("30s", "5m", "2h", "1d", "hourly", "daily", "weekly") into seconds."""
from __future__ import annotations

import re

from .errors import TimingError

_WORDS = {"secondly": 1, "minutely": 60, "hourly": 3600, "daily": 86400, "weekly": 604800}
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_PATTERN = re.compile(r"^\s*(\d+)\s*([smhdw])\s*$", re.IGNORECASE)


def parse_every(text: str) -> int:
    """Seconds for a shorthand interval; TimingError("every") for anything else or a zero amount."""
    if not isinstance(text, str):
        raise TimingError("every", f"expected text like '30s', '5m' or 'daily', got {type(text).__name__}")
    word = text.strip().lower()
    if word in _WORDS:
        return _WORDS[word]
    match = _PATTERN.match(word)
    if match is None:
        raise TimingError("every", f"cannot read {text!r}: use e.g. '30s', '5m', '2h', '1d' or 'daily'")
    amount = int(match.group(1))
    if amount == 0:
        raise TimingError("every", f"interval must be positive, got {text!r}")
    return amount * _UNITS[match.group(2).lower()]
