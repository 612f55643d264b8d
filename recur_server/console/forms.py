"""The schedule form: its fields as an API body, checked by the API's own schema (ScheduleIn) and service
(recur_server.services.schedules), so the console holds no second copy of the rules; errors come back per field."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from marshmallow import Schema, ValidationError
from werkzeug.datastructures import MultiDict

from recur_server.infra.clock import ceil_second
from recur_server.models import OnExhausted
from recur_server.policies import CatchUpPolicy, OverlapPolicy
from recur_server.schemas.errors import field_errors
from recur_server.schemas.runs import BackfillIn
from recur_server.schemas.schedules import ScheduleIn, ScheduleOut
from recur_server.timing import ON_CALENDAR, iso

KINDS = ("cron", "every", "interval_seconds", "rrule", "at", "after_seconds")
_TEXT = ("name", "key", "description", "timezone", "start_at", "end_at", "only_between", "anchor_date",
         "on_exhausted", "trigger_node_id", "catch_up", "overlap", "on_calendar")
_INTEGERS = ("workflow_id", "total_repeats", "max_retries", "timeout_seconds", "jitter_seconds",
             "catch_up_window_seconds", "catch_up_limit", "alert_after_seconds", "keep_runs_days",
             "long_after_seconds", "late_after_seconds", "failing_after", "calendar_id")
# Fields a schedule may hold empty (null): on the form, a field given but left empty means null, so an edit can
# take a window, an alert or a key away again (and a create sends null, which is the API's default for each).
NULLABLE = ("key", "description", "trigger_node_id", "trigger_payload", "start_at", "end_at", "only_between",
            "not_on", "anchor_date", "catch_up_window_seconds", "alert_after_seconds", "keep_runs_days",
            "long_after_seconds", "late_after_seconds", "failing_after", "calendar_id", "on_calendar")
# The choices of the form's menus, from the API's own enums.
CHOICES = {"catch_up": [p.value for p in CatchUpPolicy], "overlap": [p.value for p in OverlapPolicy],
           "on_exhausted": [p.value for p in OnExhausted], "on_calendar": list(ON_CALENDAR)}
_SCHEDULE_IN = ScheduleIn()
_SCHEDULE_OUT = ScheduleOut()
_BACKFILL = BackfillIn()


def body_from_form(form: MultiDict[str, str]) -> tuple[dict[str, Any], dict[str, list[str]]]:
    """(the API body, errors the form itself can tell: not a number, not JSON). Empty fields are left out."""
    body: dict[str, Any] = {}
    errors: dict[str, list[str]] = {}
    kind = form.get("kind", "cron")
    if kind not in KINDS:
        errors["kind"] = ["choose a kind of timing"]
    elif form.get(kind, "").strip():
        value: Any = form[kind].strip()
        if kind in ("interval_seconds", "after_seconds"):
            value = _integer(value, kind, errors)
        body[kind] = value
    else:
        errors[kind] = ["give the timing"]
    for name in _TEXT:
        if form.get(name, "").strip():
            body[name] = form[name].strip()
    for name in _INTEGERS:
        if form.get(name, "").strip():
            body[name] = _integer(form[name].strip(), name, errors)
    if form.get("not_on", "").strip():
        body["not_on"] = [part.strip() for part in form["not_on"].split(",") if part.strip()]
    if form.get("trigger_payload", "").strip():
        try:
            body["trigger_payload"] = json.loads(form["trigger_payload"])
        except ValueError as exc:
            errors["trigger_payload"] = [f"not JSON: {exc}"]
    if form.get("day_or", "") in ("true", "false"):
        body["day_or"] = form["day_or"] == "true"
    for name in NULLABLE:
        if name in form and not form[name].strip():
            body[name] = None
    if "after_schedule" in form:  # emptied: it follows nothing (null)
        body["after"] = _after_from_form(form, errors)
    return body, errors


def _after_from_form(form: MultiDict[str, str], errors: dict[str, list[str]]) -> dict[str, Any] | None:
    """The body's `after` from the form's after_* fields (docs/follows.md)."""
    upstream = form["after_schedule"].strip()
    if not upstream:
        return None
    after: dict[str, Any] = {"schedule": upstream}
    for name, field in (("after_on", "on"), ("after_within", "within")):
        if form.get(name, "").strip():
            after[field] = form[name].strip()
    if form.get("after_delay_seconds", "").strip():
        after["delay_seconds"] = _integer(form["after_delay_seconds"].strip(), "after_delay_seconds", errors)
    return after


def _same_after(value: dict[str, Any] | None, shown: dict[str, Any] | None) -> bool:
    """Whether a form's `after` is the schedule's (the form names the upstream by the id it was shown)."""
    if value is None or shown is None:
        return value is shown
    return bool(value["schedule"] == shown["schedule_id"] and value.get("on", "succeeded") == shown["on"]
            and value.get("delay_seconds", 0) == shown["delay_seconds"] and value.get("within") == shown["within"])


def _integer(text: str, name: str, errors: dict[str, list[str]]) -> Any:
    try:
        return int(text)
    except ValueError:
        errors[name] = ["must be a whole number"]
        return text


def loaded(schema: Schema, body: dict[str, Any], partial: bool = False) -> tuple[dict[str, Any], dict[str, list[str]]]:
    """The body loaded by one of the API's schemas, or its errors by field, named as the API names them."""
    try:
        return schema.load(body, partial=partial), {}
    except ValidationError as exc:
        return {}, field_errors(exc.messages if isinstance(exc.messages, dict) else {"_schema": exc.messages})


def validated(body: dict[str, Any], partial: bool = False) -> tuple[dict[str, Any], dict[str, list[str]]]:
    """A schedule's body, checked by the API's ScheduleIn."""
    return loaded(_SCHEDULE_IN, body, partial)


def validated_backfill(values: dict[str, str]) -> tuple[dict[str, Any], dict[str, list[str]]]:
    """A backfill's range, checked by the API's own BackfillIn."""
    return loaded(_BACKFILL, {"start": values["start"].strip(), "end": values["end"].strip()})


def changed_fields(body: dict[str, Any], current: Any) -> dict[str, Any]:
    """Of an edit's body, the fields that differ from the schedule as the API shows it (a PATCH sends only
    those, so an edit of the name does not re-plan the timing). Timing kinds count as one field."""
    shown = _SCHEDULE_OUT.dump(current)
    changed = {}
    for name, value in body.items():
        if name == "after":
            if not _same_after(value, shown.get("after")):
                changed[name] = value
        elif name in KINDS:
            if name == "every" or str(shown.get(name) or "") != str(value):
                changed[name] = value
        elif name in ("start_at", "end_at", "anchor_date") and value is not None:
            if _instant(value) != shown.get(name):
                changed[name] = value
        elif shown.get(name) != value:
            changed[name] = value
    return changed


def _instant(text: str) -> str | None:
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return text
    return iso(ceil_second(parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)))


def form_values(schedule: Any | None) -> dict[str, Any]:
    """A form's initial values: a schedule's (edit) or the defaults (new)."""
    if schedule is None:
        return {"kind": "cron", "timezone": "UTC"}
    shown = _SCHEDULE_OUT.dump(schedule)
    values: dict[str, Any] = {k: v for k, v in shown.items() if v is not None and not isinstance(v, (list, dict))}
    values["kind"] = next((k for k in KINDS if shown.get(k) is not None), "cron")
    if shown.get("not_on"):
        values["not_on"] = ", ".join(str(d) for d in shown["not_on"])
    if shown.get("trigger_payload") is not None:
        values["trigger_payload"] = json.dumps(shown["trigger_payload"])
    if shown.get("day_or") is not None:
        values["day_or"] = "true" if shown["day_or"] else "false"
    if shown.get("after") is not None:
        after = shown["after"]
        values.update(after_schedule=after["schedule_id"], after_on=after["on"],
                      after_delay_seconds=after["delay_seconds"] or "", after_within=after["within"] or "")
    return values
