"""Where a console list's page starts: the position its "Older"/"Next" link carries (`after`, an opaque cursor
of the list's order, as the API's `next`)."""

from __future__ import annotations

from typing import Any

from flask import request

from recur_server.infra import cursors
from recur_server.services import queries


def after_of(order: queries.Order) -> Any:
    """The request's `after` read as a position in `order`; a cursor not ours shows the first page."""
    try:
        return cursors.decode(request.args.get("after", ""), order.shape)
    except ValueError:
        return None
