"""`recur schedules ...`: list, show, create, edit, pause, resume, trigger, backfill, delete, runs, preview."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import click

from recur_cli import output
from recur_cli.calendars import calendar_id
from recur_cli.context import current, json_option, parse_json_option
from recur_client import BatchDeleted

F = TypeVar("F", bound=Callable[..., Any])

# (option, API field, type, help) for the timing of a schedule; the API checks every value.
_TIMING = (
    ("--cron", "cron", str, "A cron expression, e.g. '0 9 * * 1-5'."),
    ("--every", "every", str, "A fixed rate, e.g. '30s', '15m', '2h', 'daily'."),
    ("--interval", "interval_seconds", int, "A fixed rate in seconds."),
    ("--rrule", "rrule", str, "An RFC 5545 recurrence rule."),
    ("--at", "at", str, "Once, at this ISO 8601 instant."),
    ("--after", "after_seconds", int, "Once, this many seconds from now."),
    ("--timezone", "timezone", str, "The zone cron and rrule times are read in (default UTC)."),
    ("--anchor-date", "anchor_date", str, "Where a fixed rate's ticks are counted from."),
    ("--start-at", "start_at", str, "No run before this instant."),
    ("--end-at", "end_at", str, "No run after this instant."),
    ("--only-between", "only_between", str, "Only between these local times, e.g. '09:00-17:00'."),
    ("--jitter", "jitter_seconds", int, "Delay each run by up to this many seconds."),
)
_OTHER = (
    ("--name", "name", str, "The schedule's name."),
    ("--key", "key", str, "Your own unique name for it (recur apply matches schedules by key)."),
    ("--description", "description", str, "Free text."),
    ("--repeats", "total_repeats", int, "Stop after this many runs (0: no limit)."),
    ("--retries", "max_retries", int, "Retries of a failed run before it counts as failed."),
    ("--timeout", "timeout_seconds", int, "Seconds a run may take."),
    ("--on-exhausted", "on_exhausted", str, "When retries run out: dead, pause or continue."),
    ("--catch-up", "catch_up", str, "Ticks missed while nothing ran: skip, latest or all."),
    ("--catch-up-window", "catch_up_window_seconds", int, "Never run a tick older than this many seconds."),
    ("--catch-up-limit", "catch_up_limit", int, "catch_up all: at most this many missed ticks run."),
    ("--overlap", "overlap", str, "A tick due during a run: skip, buffer_one, buffer_all, cancel_other, allow_all."),
    ("--trigger-node", "trigger_node_id", str, "Passed to every run as its trigger node."),
    ("--alert-after", "alert_after_seconds", str,
     "Send schedule.missed when no run started this many seconds after a due tick ('none': no alert)."),
    ("--keep-runs-days", "keep_runs_days", str, "Keep its runs this many days ('none': the server's setting)."),
    ("--long-after", "long_after_seconds", str, "Send run.long when a run is still going this many seconds after "
     "it started ('none': no alert)."),
    ("--late-after", "late_after_seconds", str, "Send run.late when a run starts more than this many seconds after "
     "its tick ('none': no alert)."),
    ("--failing-after", "failing_after", str, "Send schedule.failing when this many runs in a row failed ('none': "
     "no alert)."),
)
# Options that take a number or 'none' (sent as null: the API's "not set").
_NUMBER_OR_NONE = ("alert_after_seconds", "keep_runs_days", "long_after_seconds", "late_after_seconds",
                   "failing_after")


def timing_options(command: F) -> F:
    for flag, dest, kind, text in reversed(_TIMING):
        command = click.option(flag, dest, type=kind, help=text)(command)
    command = click.option("--day-or/--day-and", "day_or", default=None,
                           help="cron: a day matching day-of-month OR day-of-week (the default), or AND.")(command)
    command = click.option("--calendar", "calendar", help="A calendar's id or name whose days it skips or shifts "
                           "off ('none': no calendar).")(command)
    command = click.option("--on-calendar", "on_calendar", type=click.Choice(["skip", "shift_next", "shift_previous"]),
                           help="A tick on a calendar day: skip it (default), or move it to the next/previous "
                           "day off the calendar.")(command)
    return click.option("--not-on", "not_on", multiple=True,
                        help="A date or weekday to skip (repeatable).")(command)


def schedule_options(command: F) -> F:
    command = timing_options(command)
    for flag, dest, kind, text in reversed(_OTHER):
        command = click.option(flag, dest, type=kind, help=text)(command)
    command = click.option("--workflow", "workflow", help="The workflow's id or name.")(command)
    command = follow_options(command)
    return click.option("--payload", "trigger_payload",
                        help="JSON handed to every run, or @FILE to read it from a file.")(command)


def follow_options(command: F) -> F:
    """The schedule's `after` (docs/follows.md): runs triggered by another schedule's runs ending."""
    for flag, dest, kind, text in reversed((
        ("--follow", "follow", str, "Also run when this schedule's run ends (its id or key; 'none': stop)."),
        ("--follow-on", "follow_on", click.Choice(["succeeded", "failed", "ended"]),
         "Which ends trigger it (default succeeded)."),
        ("--follow-delay", "follow_delay", int, "Seconds after the upstream run ended (default 0)."),
        ("--follow-within", "follow_within", str, "Only when that time is in this local window, e.g. '06:00-22:00'."),
    )):
        command = click.option(flag, dest, type=kind, help=text)(command)
    return command


def _after_from(options: dict[str, Any]) -> dict[str, Any] | None:
    follow = options["follow"]
    if follow is None:
        raise click.BadParameter("--follow-on, --follow-delay and --follow-within go with --follow",
                                 param_hint="--follow")
    if follow == "none":
        return None
    after: dict[str, Any] = {"schedule": follow}
    for option, field in (("follow_on", "on"), ("follow_delay", "delay_seconds"), ("follow_within", "within")):
        if options.get(option) is not None:
            after[field] = options[option]
    return after


def body_from(options: dict[str, Any]) -> dict[str, Any]:
    """The API body from the options given (options left out are left out of the body)."""
    follows = ("follow", "follow_on", "follow_delay", "follow_within")
    body = {k: v for k, v in options.items()
            if v is not None and k not in ("not_on", "workflow", "trigger_payload", "calendar", *follows)}
    if any(options.get(name) is not None for name in follows):
        body["after"] = _after_from(options)
    if options.get("not_on"):
        body["not_on"] = list(options["not_on"])
    if options.get("trigger_payload") is not None:
        body["trigger_payload"] = parse_json_option(options["trigger_payload"], "--payload")
    if options.get("workflow") is not None:
        body["workflow_id"] = workflow_id(options["workflow"])
    if options.get("calendar") is not None:
        body["calendar_id"] = None if options["calendar"] == "none" else calendar_id(options["calendar"])
    for name in _NUMBER_OR_NONE:
        if name in body:
            body[name] = _number_or_none(body[name], name)
    return body


def _number_or_none(value: str, name: str) -> int | None:
    if value.strip().lower() == "none":
        return None
    try:
        return int(value)
    except ValueError:
        raise click.BadParameter(f"{value!r} is not a whole number or 'none'",
                                 param_hint="--" + name.removesuffix("_seconds").replace("_", "-")) from None


def workflow_id(given: str) -> int:
    """A workflow named by id, or by name among the caller's own."""
    if given.isdigit():
        return int(given)
    client = current().client
    me = client.me()
    found = [w for w in client.workflows.iterate(owner_id=me["id"]) if w["name"] == given]
    if len(found) != 1:
        raise click.BadParameter(f"{len(found)} workflows are named {given!r}; give its id",
                                 param_hint="--workflow")
    return int(found[0]["id"])


LIST_COLUMNS: list[output.Column] = [
    ("ID", lambda s: s["id"]),
    ("KEY", lambda s: s.get("key")),
    ("NAME", lambda s: s["name"]),
    ("STATUS", lambda s: "overdue" if s.get("overdue") else s["status"]),  # never a plain "active" when overdue
    ("TIMING", output.timing_of),
    ("ZONE", lambda s: s.get("timezone")),
    ("NEXT RUN (UTC)", lambda s: s.get("next_run_at")),
    ("RUNS", lambda s: s.get("run_count")),
    ("ERRORS", lambda s: s.get("error_count")),
]
RUN_COLUMNS: list[output.Column] = [
    ("REPEAT", lambda r: r["repeat_number"]),
    ("RETRY", lambda r: r["retry_number"]),
    ("STATUS", lambda r: r["status"]),
    ("ID", lambda r: r["id"]),  # for `recur runs show`
    ("TRIGGER", lambda r: r.get("trigger", "schedule")),
    ("SCHEDULED FOR", lambda r: r["scheduled_for"]),
    ("STARTED", lambda r: r["started_at"]),
    ("FINISHED", lambda r: r.get("finished_at")),
    ("WORKER", lambda r: r.get("worker")),
    ("ERROR", lambda r: _short(r.get("error"))),
]


def _short(text: str | None, width: int = 60) -> str | None:
    if text is None:
        return None
    line = text.strip().splitlines()[-1] if text.strip() else ""
    return line if len(line) <= width else line[: width - 3] + "..."


def show_schedule(schedule: Mapping[str, Any]) -> None:
    if current().json:
        output.emit_json(schedule)
        return
    output.fields({k: v for k, v in schedule.items() if k not in ("next_runs", "warnings")})
    if schedule.get("next_runs"):
        click.echo("next runs:")
        for instant in schedule["next_runs"]:
            click.echo(f"  {instant}")
    for warning in schedule.get("warnings") or []:  # not an error: the workers may be deployed after
        click.echo(f"warning: {warning}", err=True)


@click.group("schedules")
def schedules() -> None:
    """Schedules: when a workflow's task runs."""


@schedules.command("list")
@click.option("--status", help="Only schedules in this status.")
@click.option("--workflow", "workflow", help="Only schedules of this workflow (id or name).")
@click.option("--owner", "owner_id", type=int, help="An admin: only this owner's schedules.")
@click.option("--key", help="Only the schedule with this key.")
@click.option("--limit", type=int, default=50, show_default=True)
@click.option("--offset", type=int, default=0, help="Skip this many schedules (at most 10,000; deeper: --cursor).")
@click.option("--cursor", default=None, help="Start after the page that printed this cursor.")
@json_option
def list_schedules(status: str | None, workflow: str | None, owner_id: int | None, key: str | None, limit: int,
                   offset: int, cursor: str | None) -> None:
    """List schedules, newest first, a page at a time through --cursor."""
    page = current().client.schedules.list(status=status, key=key, limit=limit, offset=offset, cursor=cursor,
                                           workflow_id=workflow_id(workflow) if workflow else None,
                                           owner_id=owner_id)
    if current().json:
        output.emit_json(page)
        return
    output.table(page["items"], LIST_COLUMNS, empty="no schedules")
    if page.get("next"):
        total = f"more than {page['total']:,}" if page.get("total_capped") else f"{page['total']:,}"
        click.echo(f"({len(page['items'])} of {total}; --cursor {page['next']} for more)")


@schedules.command("show")
@click.argument("schedule_id")
@json_option
def show(schedule_id: str) -> None:
    """One schedule: its fields, its timing in words and its next runs."""
    show_schedule(current().client.schedules.get(schedule_id))


@schedules.command("create")
@schedule_options
@json_option
def create(**options: Any) -> None:
    """Create a schedule (--name, --workflow and one kind of timing are needed)."""
    body = body_from(options)
    missing = [flag for flag, field in (("--name", "name"), ("--workflow", "workflow_id")) if field not in body]
    if missing:
        raise click.UsageError(f"missing {' and '.join(missing)}")
    show_schedule(current().client.schedules.create(**body))


@schedules.command("edit")
@click.argument("schedule_id")
@schedule_options
@json_option
def edit(schedule_id: str, **options: Any) -> None:
    """Change the fields given (a timing change re-plans the schedule)."""
    body = body_from(options)
    if not body:
        raise click.UsageError("nothing to change: give at least one field")
    show_schedule(current().client.schedules.update(schedule_id, **body))


@schedules.command("pause")
@click.argument("schedule_id")
@click.option("--note", help="Why it is paused (shown until it is resumed).")
@json_option
def pause(schedule_id: str, note: str | None) -> None:
    """Pause a schedule: no run starts until it is resumed."""
    schedule = current().client.schedules.pause(schedule_id, note)
    _done(schedule, f"paused {schedule['id']}")


@schedules.command("resume")
@click.argument("schedule_id")
@json_option
def resume(schedule_id: str) -> None:
    """Resume a paused schedule, or revive a dead one, from its next tick after now (a dead one's retries
    start over)."""
    schedule = current().client.schedules.resume(schedule_id)
    _done(schedule, f"resumed {schedule['id']}; next run {schedule.get('next_run_at')}")


OVERLAP_CHOICES = click.Choice(["skip", "buffer_one", "buffer_all", "cancel_other", "allow_all"])


@schedules.command("trigger")
@click.argument("schedule_id")
@click.option("--overlap", type=OVERLAP_CHOICES, help="Overlap policy for this run (default: the schedule's).")
@click.option("--idempotency-key", help="Send again with the same key: one run, the first answer.")
@json_option
def trigger(schedule_id: str, overlap: str | None, idempotency_key: str | None) -> None:
    """Run the schedule's task once now, outside its timing (trigger `manual`)."""
    answer = current().client.schedules.trigger(schedule_id, overlap=overlap, idempotency_key=idempotency_key)
    _done(answer, f"triggered {schedule_id}: run {answer['run_id']} for {answer['scheduled_for']}")


@schedules.command("backfill")
@click.argument("schedule_id")
@click.option("--start", required=True, help="First instant of the range, included (ISO 8601).")
@click.option("--end", required=True, help="End of the range, not included (ISO 8601).")
@click.option("--overlap", type=OVERLAP_CHOICES, help="Overlap policy for its runs (default buffer_all).")
@click.option("--dry-run", is_flag=True, help="List the nominal times it would run; run none.")
@json_option
def backfill(schedule_id: str, start: str, end: str, overlap: str | None, dry_run: bool) -> None:
    """Run every nominal time of the schedule in [--start, --end), oldest first, one at a time."""
    schedules_ = current().client.schedules
    if dry_run:
        plan = schedules_.plan_backfill(schedule_id, start, end)
        if current().json:
            output.emit_json(plan)
            return
        click.echo(f"{plan['total']} runs would start:")
        for instant in plan["times"]:
            click.echo(f"  {instant}")
        return
    started = schedules_.backfill(schedule_id, start, end, overlap=overlap)
    if current().json:
        output.emit_json(started)
    else:
        click.echo(f"backfill {started['id']} started: {started['total']} runs, oldest first")


@schedules.command("delete")
@click.argument("schedule_ids", nargs=-1, required=True)
@json_option
def delete(schedule_ids: tuple[str, ...]) -> None:
    """Delete schedules with their run history and pending runs."""
    client = current().client
    if len(schedule_ids) == 1:
        client.schedules.delete(schedule_ids[0])
        answer: BatchDeleted = {"deleted": list(schedule_ids), "not_found": []}
    else:
        answer = client.schedules.delete_many(list(schedule_ids))
    if current().json:
        output.emit_json(answer)
        return
    for schedule_id in answer["deleted"]:
        click.echo(f"deleted {schedule_id}")
    for schedule_id in answer["not_found"]:
        click.echo(f"not found: {schedule_id}", err=True)
    if answer["not_found"]:
        raise click.exceptions.Exit(1)


@schedules.command("runs")
@click.argument("schedule_id")
@click.option("--limit", type=int, default=20, show_default=True)
@click.option("--offset", type=int, default=0, help="Skip this many runs (at most 10,000; deeper: --cursor).")
@click.option("--cursor", default=None, help="Start after the page that printed this cursor.")
@json_option
def runs(schedule_id: str, limit: int, offset: int, cursor: str | None) -> None:
    """A schedule's run history, newest first, a page at a time through --cursor."""
    page = current().client.schedules.runs(schedule_id, limit=limit, offset=offset, cursor=cursor or None)
    if current().json:
        output.emit_json(page)
        return
    output.table(page["items"], RUN_COLUMNS, empty="no runs yet")
    if page.get("next"):
        click.echo(f"(older runs: --cursor {page['next']})")


@schedules.command("preview")
@timing_options
@click.option("--count", type=int, default=5, show_default=True)
@json_option
def preview(count: int, **options: Any) -> None:
    """What a timing means: its description and next runs, as if created now."""
    answer = current().client.schedules.preview(count=count, **body_from(options))
    if current().json:
        output.emit_json(answer)
        return
    click.echo(answer["description"])
    for instant in answer["next_runs"]:
        click.echo(f"  {instant['local']}  ({instant['utc']})")


def _done(answer: Any, message: str) -> None:
    if current().json:
        output.emit_json(answer)
    else:
        click.echo(message)
