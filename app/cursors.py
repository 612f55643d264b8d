"""A position in a list read in its order (keyset pagination): the sort key of the last row a page showed,
e.g. a run's (started_at, id) or an audit row's (id,), written as an opaque token a client hands back for
the next page. A page after a token starts where the index says, however deep in the history it is.

One format for every list: the key's parts in a JSON array (an instant as ISO 8601 in UTC), in URL-safe
base64. Reading a token needs the shape of the list's key, the type of each part."""

from __future__ import annotations

import base64
import binascii
import json
from datetime import UTC, datetime

MAX_LENGTH = 200  # a token this module writes is about 110 characters
_TEXT_MAX = 36  # text keys are ids: UUIDs
_INT_MAX = 2**31 - 1  # PostgreSQL's INTEGER: a larger id names no row, and the databases refuse to compare it

Part = datetime | int | str
Key = tuple[Part, ...]
Shape = tuple[type, ...]


def encode(*key: Part) -> str:
    """The token of a sort key (the last row of a page)."""
    parts = [p.astimezone(UTC).isoformat(timespec="microseconds") if isinstance(p, datetime) else p for p in key]
    text = json.dumps(parts, separators=(",", ":"))
    return base64.urlsafe_b64encode(text.encode()).rstrip(b"=").decode()


def decode(token: str, shape: Shape) -> Key:
    """The sort key a token stands for, each part of the type `shape` gives; ValueError for anything this
    module did not write for a key of that shape."""
    if not 0 < len(token) <= MAX_LENGTH:
        raise ValueError("not a cursor")
    try:
        parts = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode())
    except (binascii.Error, UnicodeDecodeError, ValueError) as exc:
        raise ValueError("not a cursor") from exc
    if not isinstance(parts, list) or len(parts) != len(shape):
        raise ValueError("not a cursor")
    return tuple(_part(value, kind) for value, kind in zip(parts, shape, strict=True))


def _part(value: object, kind: type) -> Part:
    if kind is datetime and isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value)
        except ValueError as exc:
            raise ValueError("not a cursor") from exc
        if moment.tzinfo is not None and 1970 <= moment.year < 3000:
            return moment.astimezone(UTC)
    if kind is int and isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= _INT_MAX:
        return value
    if kind is str and isinstance(value, str) and 0 < len(value) <= _TEXT_MAX and value.isprintable():
        return value
    raise ValueError("not a cursor")
