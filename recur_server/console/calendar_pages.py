"""The console's calendar pages: the owner's calendars with a form to make one, and a calendar's page with
its days of the coming year, the schedules that use it, an edit form and a delete button. Forms are checked by
the API's CalendarIn and carried out by recur_server.services.calendars, so an edit re-plans as the API's does."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from flask import abort, flash, redirect, render_template, request, url_for
from sqlalchemy import select
from werkzeug.datastructures import MultiDict

from recur_server.auth.scope import caller, scoped
from recur_server.calendars.expansion import CalendarInvalid
from recur_server.calendars.models import Calendar
from recur_server.console import forms, session
from recur_server.console.paging import after_of
from recur_server.console.views import PAGE, Page, console
from recur_server.infra import clock
from recur_server.infra.extensions import db
from recur_server.models import Schedule
from recur_server.schemas.calendars import CalendarIn
from recur_server.services import calendars as calendar_edits
from recur_server.services import queries

_CALENDAR_IN = CalendarIn()
_FIELDS = ("name", "country", "subdivision", "first_year", "last_year", "dates", "removed")


def owned_calendar(calendar_id: int, for_update: bool = False) -> Calendar:
    calendar = queries.owned(Calendar, calendar_id, for_update)
    if calendar is None:
        abort(404, description=f"calendar {calendar_id} does not exist")
    return calendar


@console.app_template_global()
def calendar_name(calendar_id: int) -> str:
    """A schedule's calendar by name, for its page (the caller's own, else its id)."""
    calendar = queries.owned(Calendar, calendar_id)
    return calendar.name if calendar is not None else str(calendar_id)


def values_of(calendar: Calendar | None) -> dict[str, str]:
    if calendar is None:
        return dict.fromkeys(_FIELDS, "")
    return {"name": calendar.name, "country": calendar.country or "", "subdivision": calendar.subdivision or "",
            "first_year": str(calendar.first_year), "last_year": str(calendar.last_year),
            "dates": "\n".join(calendar.dates or []), "removed": "\n".join(calendar.removed or [])}


def _body(form: MultiDict[str, str], editing: bool) -> tuple[dict[str, str], dict[str, Any]]:
    """(the form's values as typed, the API body): dates one per line; an empty country means none when
    editing; empty years are left to the defaults."""
    values = {name: (form.get(name) or "").strip() for name in _FIELDS}
    body: dict[str, Any] = {"name": values["name"]}
    for name in ("country", "subdivision"):
        if values[name] or editing:
            body[name] = values[name] or None
    for name in ("first_year", "last_year"):
        if values[name]:
            body[name] = int(values[name]) if values[name].isdigit() else values[name]
    for name in ("dates", "removed"):
        body[name] = [line.strip() for line in values[name].splitlines() if line.strip()]
    return values, body


def _carried_out(call: Any, *args: Any) -> dict[str, list[str]]:
    try:
        call(*args)
    except CalendarInvalid as exc:
        db.session.rollback()
        return exc.errors
    except calendar_edits.Conflict as exc:
        db.session.rollback()
        return exc.errors or {"_schema": [exc.message]}
    return {}


@console.route("/calendars", methods=["GET", "POST"])
@session.signed_in
def calendar_list() -> Page:
    errors: dict[str, list[str]] = {}
    values = values_of(None)
    if request.method == "POST":
        values, body = _body(request.form, editing=False)
        data, errors = forms.loaded(_CALENDAR_IN, body)
        if not errors:
            errors = _carried_out(calendar_edits.create, caller().id, data, clock.utcnow())
        if not errors:
            flash(f"Created calendar {data['name']}.")
            return redirect(url_for("console.calendar_list"))
    after = after_of(queries.CALENDARS)
    found = queries.keyset_page(scoped(select(Calendar), Calendar), queries.CALENDARS, PAGE, after=after)
    page = render_template("calendars.html", calendars=found.items, total=found.total,
                           total_capped=found.total_capped, older=found.next, first=after is not None, v=values,
                           errors=errors)
    return (page, 422) if errors else page


@console.route("/calendars/<int:calendar_id>", methods=["GET", "POST"])
@session.signed_in
def calendar_page(calendar_id: int) -> Page:
    calendar = owned_calendar(calendar_id, for_update=request.method == "POST")
    errors: dict[str, list[str]] = {}
    values = values_of(calendar)
    if request.method == "POST":
        values, body = _body(request.form, editing=True)
        data, errors = forms.loaded(_CALENDAR_IN, body, partial=True)
        replanned: list[Schedule] = []
        if not errors:
            try:
                replanned = calendar_edits.update(calendar, data, clock.utcnow())
            except (CalendarInvalid, calendar_edits.Conflict) as exc:
                db.session.rollback()
                errors = exc.errors or {"_schema": [str(exc)]}
        if not errors:
            flash(f"Saved calendar {calendar.name}" + (f"; re-planned {len(replanned)} schedules." if replanned
                                                       else "."))
            return redirect(url_for("console.calendar_page", calendar_id=calendar_id))
        calendar = owned_calendar(calendar_id)
    today = clock.utcnow().date()
    days = calendar_edits.days_between(calendar, today, today + timedelta(days=365))
    users = db.session.scalars(select(Schedule).where(Schedule.calendar_id == calendar.id)
                               .order_by(Schedule.name).limit(PAGE)).all()
    page = render_template("calendar.html", c=calendar, days=days, users=users, v=values, errors=errors)
    return (page, 422) if errors else page


@console.route("/calendars/<int:calendar_id>/delete", methods=["GET", "POST"])
@session.signed_in
def calendar_delete(calendar_id: int) -> Page:
    calendar = owned_calendar(calendar_id, for_update=request.method == "POST")
    back = url_for("console.calendar_page", calendar_id=calendar_id)
    if request.method == "GET":
        return render_template("confirm.html", title=f"Delete calendar {calendar.name}?", button="Delete calendar",
                               text="Schedules that use it must be pointed elsewhere first.", back=back)
    name = calendar.name
    errors = _carried_out(calendar_edits.remove, calendar)
    if errors:
        flash("; ".join(message for messages in errors.values() for message in messages))
        return redirect(back)
    flash(f"Deleted calendar {name}.")
    return redirect(url_for("console.calendar_list"))
