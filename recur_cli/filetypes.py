"""What a file `recur apply` reads may hold: its errors, and YAML's own types as JSON."""

from __future__ import annotations

from datetime import date, datetime
from typing import Any


class FileError(Exception):
    """The file cannot be applied as it is; the message says where."""


def jsonable(value: Any) -> Any:
    """YAML's own types as JSON: dates and times (YAML reads 2026-12-01T09:00:00Z as one) as ISO 8601."""
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [jsonable(v) for v in value]
    return value
