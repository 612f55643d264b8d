"""A position in a schedule's run history read newest first (keyset pagination): the sort key of the last
run a page showed, (started_at, id), written as an opaque token a client hands back for the next page. A
page after a token starts where the index says, however deep in the history it is."""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from datetime import UTC, datetime

MAX_LENGTH = 200  # a token this module writes is about 110 characters
_ID_MAX = 36


@dataclass(frozen=True)
class After:
    """The sort key of the last row shown: the next page holds the rows that sort after it."""

    started_at: datetime
    id: str


def encode(started_at: datetime, row_id: str) -> str:
    text = json.dumps([started_at.astimezone(UTC).isoformat(timespec="microseconds"), row_id], separators=(",", ":"))
    return base64.urlsafe_b64encode(text.encode()).rstrip(b"=").decode()


def decode(token: str) -> After:
    """The position a token stands for; ValueError for anything this module did not write."""
    if not 0 < len(token) <= MAX_LENGTH:
        raise ValueError("not a cursor")
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        started, row_id = json.loads(raw.decode())
        moment = datetime.fromisoformat(started)
    except (binascii.Error, UnicodeDecodeError, ValueError, TypeError) as exc:
        raise ValueError("not a cursor") from exc
    if (moment.tzinfo is None or not 1970 <= moment.year < 3000 or not isinstance(row_id, str)
            or not 0 < len(row_id) <= _ID_MAX or not row_id.isprintable()):
        raise ValueError("not a cursor")
    return After(moment.astimezone(UTC), row_id)
