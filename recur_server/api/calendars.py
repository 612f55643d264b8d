"""/calendars/: an owner's named calendars (sets of dates schedules skip or shift off), and their days."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from flask.views import MethodView
from sqlalchemy import select

from recur_server.api.blueprint import api
from recur_server.api.errors import ApiError, not_found
from recur_server.auth.scope import caller, scoped
from recur_server.calendars.models import Calendar
from recur_server.infra import clock
from recur_server.schemas.calendars import (
    CalendarDaysIn,
    CalendarDaysOut,
    CalendarIn,
    CalendarOut,
    CalendarPage,
    CalendarPageIn,
)
from recur_server.services import calendars as calendar_edits
from recur_server.services.queries import CALENDARS, Page, keyset_page, owned


def calendar_or_404(calendar_id: int, for_update: bool = False) -> Calendar:
    calendar = owned(Calendar, calendar_id, for_update)
    if calendar is None:
        raise not_found("calendar", calendar_id)
    return calendar


@api.route("/calendars/", endpoint="calendars")
class Calendars(MethodView):
    @api.arguments(CalendarPageIn, location="query")
    @api.response(200, CalendarPage)
    def get(self, query: dict[str, Any]) -> Page:
        """List calendars, oldest first

        A page at a time after a cursor (`next`), one range of the index (owner_id, id); `name` is checked on
        the rows read along it.
        """
        statement = scoped(select(Calendar), Calendar, query.get("owner_id"))
        if query.get("name"):
            statement = statement.where(Calendar.name == query["name"])
        return keyset_page(statement, CALENDARS, query["limit"], query["offset"], query.get("cursor"))

    @api.arguments(CalendarIn)
    @api.response(201, CalendarOut)
    @api.errors(409)
    def post(self, data: dict[str, Any]) -> Calendar:
        """Create a calendar

        Its days: the public holidays of `country` (and `subdivision`) from first_year to last_year (at most
        20 years), plus `dates`, minus `removed`. 422 naming the field for an unknown country or
        subdivision, a bad date or too many; 409 for a name taken or an owner's 100th calendar.
        """
        return calendar_edits.create(caller().id, data, clock.utcnow())


@api.route("/calendars/<int:calendar_id>/", endpoint="calendar")
class CalendarItem(MethodView):
    @api.response(200, CalendarOut)
    @api.errors(404)
    def get(self, calendar_id: int) -> Calendar:
        """Get a calendar"""
        return calendar_or_404(calendar_id)

    @api.arguments(CalendarIn(partial=True))
    @api.response(200, CalendarOut)
    @api.errors(404, 409)
    def patch(self, data: dict[str, Any], calendar_id: int) -> Calendar:
        """Edit a calendar (a change of its days re-plans the active schedules that use it)

        Each active schedule that uses it gets its next run planned again from now, as a timing PATCH does,
        with an audit event `calendar_changed`.
        """
        calendar = calendar_or_404(calendar_id, for_update=True)
        calendar_edits.update(calendar, data, clock.utcnow())
        return calendar

    @api.response(204)
    @api.errors(404, 409)
    def delete(self, calendar_id: int) -> None:
        """Delete a calendar no schedule uses (409 naming the schedules that do)"""
        calendar_edits.remove(calendar_or_404(calendar_id, for_update=True))


@api.route("/calendars/<int:calendar_id>/days/", endpoint="calendar_days")
class CalendarDays(MethodView):
    @api.arguments(CalendarDaysIn, location="query")
    @api.response(200, CalendarDaysOut)
    @api.errors(404)
    def get(self, query: dict[str, Any], calendar_id: int) -> dict[str, Any]:
        """A calendar's days from `from` to `to` (both included; default: a year from today; at most 400 days)"""
        calendar = calendar_or_404(calendar_id)
        start = query.get("start") or clock.utcnow().date()
        end = query.get("end") or start + timedelta(days=calendar_edits.MAX_DAYS_LISTED - 1)
        if end < start or (end - start).days >= calendar_edits.MAX_DAYS_LISTED:
            raise ApiError(422, "validation_error", "The query is invalid.",
                           {"to": [f"must be from `from` to {calendar_edits.MAX_DAYS_LISTED} days after it."]})
        days = calendar_edits.days_between(calendar, start, end)
        return {"calendar_id": calendar.id, "start": start.isoformat(), "end": end.isoformat(),
                "days": [{"date": day, "name": name} for day, name in days]}
