"""The times a console page shows: one zone per page (the viewer's choice, `?tz=`, or else the schedule's
own), each instant written in it with the same instant in UTC on hover (its title)."""

from __future__ import annotations

from datetime import UTC, datetime
from functools import cache
from zoneinfo import ZoneInfo, available_timezones

from flask import Flask, request
from markupsafe import Markup

from recur_server.timing import iso

UTC_NAME = "UTC"


def view_zone(default: str | None = None) -> str:
    """The zone this page shows its times in: `?tz=` if it names a zone, else `default`, else UTC."""
    for zone in (request.args.get("tz") or "", default or ""):
        if zone and (zone == UTC_NAME or zone in _zones()):
            return zone
    return UTC_NAME


@cache
def _zones() -> frozenset[str]:
    return frozenset(available_timezones())


def in_zone(instant: datetime, zone: str) -> str:
    if instant.tzinfo is None:  # RQ's own stamps are naive UTC
        instant = instant.replace(tzinfo=UTC)
    local = instant.astimezone(UTC if zone == UTC_NAME else ZoneInfo(zone))
    return local.strftime("%Y-%m-%d %H:%M:%S ") + (UTC_NAME if zone == UTC_NAME else str(local.tzname()))


def init_app(app: Flask) -> None:
    app.add_template_global(view_zone)
    app.add_template_filter(stamp)


def stamp(instant: datetime | None, zone: str) -> Markup:
    """`<time>` with the instant in the page's zone, and in UTC on hover."""
    if instant is None:
        return Markup("-")
    aware = instant if instant.tzinfo is not None else instant.replace(tzinfo=UTC)
    return Markup('<time datetime="{}" title="{}">{}</time>').format(
        iso(aware), in_zone(aware, UTC_NAME), in_zone(aware, zone))
