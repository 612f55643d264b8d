"""`client.calendars`: named calendars (a country's holidays and dates by hand) that schedules skip or shift
their ticks off, and the days they hold."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, cast

from recur_client.pages import WALK_PAGE, walk
from recur_client.results import Calendar, CalendarDays, Page
from recur_client.transport import Transport


class Calendars:
    def __init__(self, transport: Transport) -> None:
        self.transport = transport

    def list(self, *, name: str | None = None, owner_id: int | None = None, limit: int | None = None,
             offset: int | None = None, cursor: str | None = None) -> Page[Calendar]:
        query = {"name": name, "owner_id": owner_id, "limit": limit, "offset": offset, "cursor": cursor}
        return cast(Page[Calendar], self.transport.request("GET", "/calendars/", query=query))

    def iterate(self, *, name: str | None = None, owner_id: int | None = None) -> Iterator[Calendar]:
        """Every calendar of the token's owner (an admin's: every owner's, or `owner_id`'s), page by page."""
        return walk(lambda cursor: self.list(name=name, owner_id=owner_id, limit=WALK_PAGE, cursor=cursor))

    def get(self, calendar_id: int) -> Calendar:
        return cast(Calendar, self.transport.request("GET", f"/calendars/{calendar_id}/"))

    def create(self, name: str, **fields: Any) -> Calendar:
        """A new calendar: `country` (and `subdivision`), `first_year`, `last_year`, `dates`, `removed`
        (CalendarFields)."""
        return cast(Calendar, self.transport.request("POST", "/calendars/", {"name": name, **fields}))

    def update(self, calendar_id: int, **fields: Any) -> Calendar:
        """Change the fields given (PATCH); a change of its days re-plans the schedules that use it."""
        return cast(Calendar, self.transport.request("PATCH", f"/calendars/{calendar_id}/", fields))

    def delete(self, calendar_id: int) -> None:
        """Delete a calendar; Conflict while a schedule uses it."""
        self.transport.request("DELETE", f"/calendars/{calendar_id}/")

    def days(self, calendar_id: int, *, start: str | None = None, end: str | None = None) -> CalendarDays:
        """The calendar's days from `start` to `end` (YYYY-MM-DD, both included; default a year from today;
        at most 400 days)."""
        query = {"from": start, "to": end}
        return cast(CalendarDays, self.transport.request("GET", f"/calendars/{calendar_id}/days/", query=query))
