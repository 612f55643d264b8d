"""A named calendar: its body (a country's holidays of some years, dates listed and removed by hand), its
answer, its list, and the query of its days."""

from __future__ import annotations

from typing import Any

from marshmallow import RAISE, Schema, ValidationError, fields, validate, validates_schema

from recur_server.calendars.expansion import (
    FIRST_YEAR,
    LAST_YEAR,
    MAX_DAYS,
    MAX_ENTRIES,
    MAX_RANGE_DAYS,
    MAX_YEARS,
)
from recur_server.calendars.models import Calendar
from recur_server.schemas.common import Cursor, OwnedPageIn, page_of
from recur_server.schemas.fields import Iso, out, whole
from recur_server.services.calendars import MAX_DAYS_LISTED
from recur_server.services.queries import CALENDARS

_DATE = r"(19[7-9]\d|2\d{3})-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])"
_ENTRY = fields.String(validate=validate.Length(min=10, max=21), metadata={
    "pattern": f"^{_DATE}(/{_DATE})?$", "example": "2026-12-24/2026-12-31",
    "description": f"a date, or a range of at most {MAX_RANGE_DAYS} days (both ends included)"})


class CalendarIn(Schema):
    """Create body; PATCH loads it with partial=True. The days: the country's (and subdivision's) public
    holidays of first_year..last_year, plus `dates`, minus `removed`."""

    class Meta:
        unknown = RAISE

    name = fields.String(required=True, validate=validate.Length(min=1, max=200), metadata={"example": "us-ny"})
    country = fields.String(allow_none=True, validate=validate.Length(min=2, max=3), metadata={
        "example": "US", "pattern": "^[A-Za-z]{2,3}$",
        "description": "an ISO 3166 code the holidays package knows (lower case is read as upper); null: none"})
    subdivision = fields.String(allow_none=True, validate=validate.Length(min=1, max=64), metadata={
        "example": "NY", "description": "a subdivision of the country (a state, a Land), e.g. NY, BY"})
    first_year = whole(FIRST_YEAR, LAST_YEAR, metadata={"description": "default: this year"})
    last_year = whole(FIRST_YEAR, LAST_YEAR, metadata={
        "description": f"default: first_year + 2; at most {MAX_YEARS} years from first_year"})
    dates = fields.List(_ENTRY, validate=validate.Length(max=MAX_ENTRIES), metadata={
        "description": f"days added by hand, at most {MAX_ENTRIES} entries ({MAX_DAYS} days in the calendar)",
        "example": ["2026-12-24/2026-12-31"]})
    removed = fields.List(_ENTRY, validate=validate.Length(max=MAX_ENTRIES), metadata={
        "description": "days taken out again (of the country's holidays or of `dates`)", "example": ["2026-12-26"]})


class CalendarOut(Schema):
    id = out(fields.Integer())
    owner_id = out(fields.Integer())
    name = out(fields.String())
    country = out(fields.String(allow_none=True))
    subdivision = out(fields.String(allow_none=True))
    first_year = out(fields.Integer())
    last_year = out(fields.Integer())
    dates = out(fields.List(fields.String()))
    removed = out(fields.List(fields.String()))
    day_count = out(fields.Method("_day_count", metadata={"type": "integer",
                                                          "description": "the days the calendar holds"}))
    created_at = out(Iso())
    updated_at = out(Iso())

    def _day_count(self, calendar: Calendar) -> int:
        return len(calendar.days or {})


class CalendarPageIn(OwnedPageIn):
    cursor = Cursor(CALENDARS)
    name = fields.String(validate=validate.Length(min=1, max=200))


CalendarPage = page_of(CalendarOut)


class CalendarDaysIn(Schema):
    """A span of a calendar's days: `from` to `to`, both included (default: a year from today)."""

    class Meta:
        unknown = RAISE

    start = fields.Date(data_key="from", metadata={"example": "2026-01-01"})
    end = fields.Date(data_key="to", metadata={"example": "2026-12-31"})

    @validates_schema
    def _span(self, data: dict[str, Any], **_: Any) -> None:
        start, end = data.get("start"), data.get("end")
        if start is not None and end is not None:
            if end < start:
                raise ValidationError("must not be before `from`.", field_name="to")
            if (end - start).days + 1 > MAX_DAYS_LISTED:
                raise ValidationError(f"spans more than {MAX_DAYS_LISTED} days from `from`.", field_name="to")


class CalendarDayOut(Schema):
    date = out(fields.String(metadata={"example": "2026-12-25"}))
    name = out(fields.String(metadata={"example": "Christmas Day"}))


class CalendarDaysOut(Schema):
    calendar_id = out(fields.Integer())
    start = out(fields.String(data_key="from"))
    end = out(fields.String(data_key="to"))
    days = out(fields.List(fields.Nested(CalendarDayOut)))
