"""`recur calendars ...`: list, show, create, edit, delete, days: named sets of dates schedules skip or shift
their ticks off (`recur schedules create --calendar NAME --on-calendar shift_next`)."""

from __future__ import annotations

from typing import Any

import click

from recur_cli import output
from recur_cli.context import current, emit, json_option, page_options

COLUMNS: list[output.Column] = [
    ("ID", lambda c: c["id"]),
    ("NAME", lambda c: c["name"]),
    ("COUNTRY", lambda c: "/".join(p for p in (c.get("country"), c.get("subdivision")) if p) or None),
    ("YEARS", lambda c: f"{c['first_year']}-{c['last_year']}"),
    ("DAYS", lambda c: c["day_count"]),
    ("BY HAND", lambda c: len(c["dates"])),
    ("REMOVED", lambda c: len(c["removed"])),
    ("OWNER", lambda c: c.get("owner_id")),
]
DAY_COLUMNS: list[output.Column] = [("DATE", lambda d: d["date"]), ("NAME", lambda d: d["name"])]


def calendar_id(given: str) -> int:
    """A calendar named by id, or by name among the caller's own."""
    if given.isdigit():
        return int(given)
    client = current().client
    found = list(client.calendars.iterate(name=given, owner_id=client.me()["id"]))
    if len(found) != 1:
        raise click.BadParameter(f"no calendar of yours is named {given!r}", param_hint="--calendar")
    return int(found[0]["id"])


def _fields(options: dict[str, Any]) -> dict[str, Any]:
    """The API body from the options given; --date and --remove replace the lists, --no-country clears it."""
    body: dict[str, Any] = {k: v for k, v in options.items()
                            if v is not None and k not in ("dates", "removed", "no_country")}
    for name in ("dates", "removed"):
        if options.get(name):
            body[name] = list(options[name])
    if options.get("no_country"):
        body["country"] = body["subdivision"] = None
    return body


def calendar_options(command: Any) -> Any:
    for decorate in reversed((
        click.option("--country", help="An ISO 3166 country code whose public holidays it holds, e.g. US, DE."),
        click.option("--subdivision", help="A subdivision of the country, e.g. NY, BY."),
        click.option("--first-year", "first_year", type=int, help="The first year of holidays (default: this one)."),
        click.option("--last-year", "last_year", type=int, help="The last year of holidays (at most 20 years)."),
        click.option("--date", "dates", multiple=True,
                     help="A date or range added by hand, YYYY-MM-DD or YYYY-MM-DD/YYYY-MM-DD (repeatable)."),
        click.option("--remove", "removed", multiple=True,
                     help="A date or range taken out again, e.g. a holiday the office works (repeatable)."),
    )):
        command = decorate(command)
    return command


@click.group("calendars")
def calendars() -> None:
    """Named calendars: a country's holidays and dates by hand, which schedules skip or shift off."""


@calendars.command("list")
@click.option("--name", help="Only the calendar with this name.")
@click.option("--owner", "owner_id", type=int, help="An admin: only this owner's calendars.")
@page_options
@json_option
def list_calendars(name: str | None, owner_id: int | None, limit: int | None, offset: int | None,
                   cursor: str | None) -> None:
    """Your calendars, oldest first."""
    answer = current().client.calendars.list(name=name, owner_id=owner_id, limit=limit, offset=offset,
                                             cursor=cursor)
    emit(answer, lambda: output.page(answer, COLUMNS, empty="no calendars"))


@calendars.command("show")
@click.argument("calendar")
@json_option
def show(calendar: str) -> None:
    """One calendar (by id or name)."""
    found = current().client.calendars.get(calendar_id(calendar))
    emit(found, lambda: output.fields(found))


@calendars.command("create")
@click.argument("name")
@calendar_options
@json_option
def create(name: str, **options: Any) -> None:
    """Create a calendar: e.g. `recur calendars create us-ny --country US --subdivision NY --date 2026-12-24`."""
    made = current().client.calendars.create(name, **_fields(options))
    emit(made, lambda: click.echo(f"created calendar {made['id']} {made['name']} ({made['day_count']} days)"))


@calendars.command("edit")
@click.argument("calendar")
@click.option("--name", help="A new name.")
@calendar_options
@click.option("--no-country", "no_country", is_flag=True, help="Hold no country's holidays any more.")
@json_option
def edit(calendar: str, **options: Any) -> None:
    """Change a calendar (by id or name); a change of its days re-plans the schedules that use it."""
    body = _fields(options)
    if not body:
        raise click.UsageError("give something to change")
    changed = current().client.calendars.update(calendar_id(calendar), **body)
    emit(changed, lambda: click.echo(f"changed calendar {changed['id']} {changed['name']} "
                                     f"({changed['day_count']} days)"))


@calendars.command("delete")
@click.argument("calendar")
@json_option
def delete(calendar: str) -> None:
    """Delete a calendar no schedule uses."""
    ident = calendar_id(calendar)
    current().client.calendars.delete(ident)
    emit({"deleted": ident}, lambda: click.echo(f"deleted calendar {ident}"))


@calendars.command("days")
@click.argument("calendar")
@click.option("--from", "start", help="The first date, YYYY-MM-DD (default: today).")
@click.option("--to", "end", help="The last date, YYYY-MM-DD (default: a year on; at most 400 days).")
@json_option
def days(calendar: str, start: str | None, end: str | None) -> None:
    """A calendar's days with their names, from --from to --to."""
    answer = current().client.calendars.days(calendar_id(calendar), start=start, end=end)
    emit(answer, lambda: output.table(answer["days"], DAY_COLUMNS, empty="no days in that span"))
