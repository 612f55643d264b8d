"""A position in a list read in its order (keyset pagination): the sort key of the last row a page showed,
e.g. a run's (started_at, id) or an audit row's (id,), written as a token a client hands back for the next
page. A page after a token starts where the index says, however deep in the history it is.

One format for every list, which a regular expression states exactly (`pattern`, in the API's document): the
key's parts joined by `.`, an instant as whole microseconds since 1970 (up to the year 3000), a number as
itself (up to 2**31 - 1, PostgreSQL's INTEGER), a text key (an id) as itself (letters, digits, `-` and `_`,
at most 36). Every string the pattern matches is a cursor this module reads, so the document is exactly as
strict as the API. A token of the earlier format (URL-safe base64 of a JSON array) is still read, so a client
paging across an upgrade is not cut off.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from datetime import UTC, datetime, timedelta

MAX_LENGTH = 200  # a token this module writes is at most 17 + 1 + 36 characters
_TEXT_MAX = 36  # text keys are ids: UUIDs
_INT_MAX = 2**31 - 1  # PostgreSQL's INTEGER: a larger id names no row, and the databases refuse to compare it
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICRO = timedelta(microseconds=1)
_INSTANT_MAX = (datetime(3000, 1, 1, tzinfo=UTC) - _EPOCH) // _MICRO - 1  # the last microsecond of 2999

Part = datetime | int | str
Key = tuple[Part, ...]
Shape = tuple[type, ...]


def encode(*key: Part) -> str:
    """The token of a sort key (the last row of a page)."""
    return ".".join(_written(part) for part in key)


def decode(token: str, shape: Shape) -> Key:
    """The sort key a token stands for, each part of the type `shape` gives; ValueError for anything that is
    not a cursor of a key of that shape."""
    if not isinstance(token, str) or not 0 < len(token) <= MAX_LENGTH:
        raise ValueError("not a cursor")
    if re.fullmatch(pattern(shape), token):
        return tuple(_read(value, kind) for value, kind in zip(token.split("."), shape, strict=True))
    return _decode_earlier(token, shape)


def pattern(shape: Shape) -> str:
    """The regular expression (anchored) every cursor of a key of this shape matches, and nothing else."""
    return "^" + r"\.".join(_PART_PATTERNS[kind] for kind in shape) + "$"


def _written(part: Part) -> str:
    if isinstance(part, datetime):
        return str((part.astimezone(UTC) - _EPOCH) // _MICRO)
    return str(part)


def _read(value: str, kind: type) -> Part:
    if kind is datetime:
        return _EPOCH + int(value) * _MICRO
    if kind is int:
        return int(value)
    return value


def up_to(most: int) -> str:
    """A regular expression matching exactly the decimal numbers 0 to `most`, without leading zeros."""
    digits = str(most)
    if len(digits) == 1:
        return f"[0-{digits}]"
    # numbers with fewer digits than `most`: any
    alternatives = ["0", "[1-9]"] + ([f"[1-9][0-9]{{1,{len(digits) - 2}}}"] if len(digits) > 2 else [])
    # numbers with as many digits as `most`: a prefix of it, then a smaller digit, then anything
    for i, digit in enumerate(digits):
        low = 1 if i == 0 else 0
        if int(digit) > low:
            rest = len(digits) - i - 1
            alternatives.append(digits[:i] + f"[{low}-{int(digit) - 1}]" + (f"[0-9]{{{rest}}}" if rest else ""))
    alternatives.append(digits)
    return "(?:" + "|".join(alternatives) + ")"


_PART_PATTERNS = {datetime: up_to(_INSTANT_MAX), int: up_to(_INT_MAX), str: f"[0-9A-Za-z_-]{{1,{_TEXT_MAX}}}"}


def _decode_earlier(token: str, shape: Shape) -> Key:
    """A token of the earlier format: URL-safe base64 of the key's parts as a JSON array."""
    try:
        parts = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode())
    except (binascii.Error, UnicodeDecodeError, ValueError) as exc:
        raise ValueError("not a cursor") from exc
    if not isinstance(parts, list) or len(parts) != len(shape):
        raise ValueError("not a cursor")
    return tuple(_earlier_part(value, kind) for value, kind in zip(parts, shape, strict=True))


def _earlier_part(value: object, kind: type) -> Part:
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
