"""Walking a list: every list answers {items, total, total_capped, next}, and `next` is the cursor of the page
after it. Each page is one index range on the server, however long the list."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Generic, TypedDict, TypeVar

T = TypeVar("T")


class Page(TypedDict, Generic[T]):
    """One page of a list. `next` is the cursor of the page after it (None on the last page); `total` is the
    count of the whole list, capped at 10,000 rows (then `total_capped` is true)."""

    items: list[T]
    total: int
    total_capped: bool
    next: str | None

WALK_PAGE = 1000  # the API's largest page


def walk(fetch: Callable[[str | None], Page[T]]) -> Iterator[T]:
    """Every item of a list, page by page: `fetch(cursor)` gets the page after `cursor` (None: the first)."""
    cursor: str | None = None
    while True:
        page = fetch(cursor)
        yield from page["items"]
        cursor = page.get("next")
        if not cursor or not page["items"]:
            return
