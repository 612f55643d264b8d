"""Named calendars and their days."""

from __future__ import annotations

from typing import TypedDict


class Calendar(TypedDict):
    """A named calendar; `day_count` is how many days it holds (list them with calendars.days)."""

    id: int
    owner_id: int
    name: str
    country: str | None
    subdivision: str | None
    first_year: int
    last_year: int
    dates: list[str]
    removed: list[str]
    day_count: int
    created_at: str
    updated_at: str


class CalendarDay(TypedDict):
    date: str
    name: str


CalendarDays = TypedDict("CalendarDays", {"calendar_id": int, "from": str, "to": str, "days": list[CalendarDay]})
