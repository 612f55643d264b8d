"""Calendars in `recur apply`: a file's `calendars` (matched by name) and a schedule's `calendar: NAME`.

A calendar is created or PATCHed before the schedules (which may name it), and, with --prune and only when
the file has a `calendars` entry, the owner's calendars it does not list are deleted last, after the schedules
that used them were pruned or pointed elsewhere (a calendar still in use refuses with its 409).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from recur_cli.filetypes import FileError, jsonable
from recur_cli.steps import CREATE, DELETE, UNCHANGED, UPDATE, Step

CALENDAR_FIELDS = ("country", "subdivision", "first_year", "last_year", "dates", "removed")


@dataclass
class CalendarSpec:
    name: str
    fields: dict[str, Any] = field(default_factory=dict)


def calendars_of(document: dict[str, Any]) -> list[CalendarSpec]:
    """The file's `calendars`, checked for shape (names once each, known fields); the API checks values."""
    items = document.get("calendars") or []
    if not isinstance(items, list):
        raise FileError("`calendars` must be a list")
    specs: list[CalendarSpec] = []
    for index, item in enumerate(items):
        where = f"calendars[{index}]"
        if not isinstance(item, dict) or not isinstance(item.get("name"), str) or not item["name"]:
            raise FileError(f"{where}: every calendar needs a `name` (apply matches calendars by it)")
        unknown = set(item) - {"name", *CALENDAR_FIELDS}
        if unknown:
            raise FileError(f"{where} ({item['name']}): unknown fields {sorted(unknown)}; a calendar takes "
                            f"name, {', '.join(CALENDAR_FIELDS)}")
        specs.append(CalendarSpec(item["name"], {k: jsonable(v) for k, v in item.items() if k != "name"}))
    names = [spec.name for spec in specs]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise FileError(f"calendars named more than once: {twice}")
    return specs


def _as_served(name: str, value: Any) -> Any:
    """A file's value in the form the API answers with (a country upper-case, a list of dates as a list)."""
    if name == "country" and isinstance(value, str):
        return value.strip().upper()
    if name in ("dates", "removed") and value is None:
        return []
    return value


def calendar_steps(wanted: list[CalendarSpec], calendars: list[dict[str, Any]]) -> list[Step]:
    """Create or PATCH each calendar of the file (only the fields it gives are compared and sent)."""
    by_name = {c["name"]: c for c in calendars}
    steps: list[Step] = []
    for spec in wanted:
        found = by_name.get(spec.name)
        if found is None:
            steps.append(Step("calendar", spec.name, CREATE, body={"name": spec.name, **spec.fields}))
            continue
        changes = {name: (found.get(name), _as_served(name, value)) for name, value in spec.fields.items()
                   if found.get(name) != _as_served(name, value)}
        steps.append(Step("calendar", spec.name, UPDATE if changes else UNCHANGED, changes,
                          {name: spec.fields[name] for name in changes}, found["id"]))
    return steps


def pruned_calendar_steps(wanted: list[CalendarSpec], calendars: list[dict[str, Any]]) -> list[Step]:
    listed = {spec.name for spec in wanted}
    return [Step("calendar", c["name"], DELETE, target=c["id"])
            for c in sorted(calendars, key=lambda c: c["id"]) if c["name"] not in listed]


def calendar_change(value: Any, current: dict[str, Any], names: dict[int, str]) -> tuple[Any, Any] | None:
    """(now, after) of a schedule's `calendar: NAME` (null: none) against its calendar_id, or None if equal."""
    now = names.get(current.get("calendar_id") or 0) if current.get("calendar_id") else None
    return None if now == value else (now, value)
