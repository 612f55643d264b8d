"""`recur apply FILE`: make the owner's workflows, webhooks and keyed schedules match a YAML file, idempotently.

Creates what is new, changes only the fields that differ (a timing change re-plans, as any PATCH does), leaves
everything else alone, and with --prune deletes the owner's keyed schedules the file no longer lists, the
webhooks a file with a `webhooks` entry no longer lists, and puts a listed workflow's policies the file leaves
out back to their defaults. Schedules without a key and workflows the file does not list are never touched.
The changes go to the server as one apply (POST /apply/): all of them, or, when one is refused, none.
--dry-run sends them as a dry run: every check a real apply meets, nothing changed. A created webhook's
secret is printed that once.
"""

from __future__ import annotations

import sys
from typing import Any, cast

import click

from recur_cli import output
from recur_cli.applyfile import ApplyFile, load
from recur_cli.client import ApiError, Client
from recur_cli.context import current, json_option
from recur_cli.filetypes import FileError
from recur_cli.plan import Plan, interval_from_preview, make_plan
from recur_cli.steps import CREATE, DELETE, UNCHANGED, UPDATE, Step


@click.command("apply")
@click.argument("path", type=click.Path(dir_okay=False, allow_dash=True))
@click.option("--prune", is_flag=True,
              help="Delete your keyed schedules (and, if the file has `webhooks`, webhooks) the file does not "
                   "list; reset the policies of its workflows that it leaves out.")
@click.option("--dry-run", is_flag=True, help="Print the plan; change nothing.")
@json_option
def apply(path: str, prune: bool, dry_run: bool) -> None:
    """Create and update workflows, webhooks and schedules from a YAML file (workflows matched by name,
    webhooks by url, schedules by `key`)."""
    try:
        text = sys.stdin.read() if path == "-" else open(path, encoding="utf-8").read()  # noqa: SIM115
        wanted = load(text, path)
    except (OSError, FileError) as exc:
        raise click.UsageError(str(exc)) from None
    apply_file(wanted, prune, dry_run)


def apply_file(wanted: ApplyFile, prune: bool = False, dry_run: bool = False, err: bool = False) -> None:
    """Plan, send the plan to the server as one apply (POST /apply/: whole or nothing; a dry run there too, so
    that it meets every check a real one would) and report; `err`: the report goes to stderr."""
    client = current().client
    plan = plan_for(client, wanted, prune)
    if plan.changes_anything:
        try:
            made = client.apply(changes_of(plan), dry_run=dry_run)
        except ApiError as exc:
            if dry_run:  # the plan, then what the server refused in it
                report(plan, dry_run, err)
            raise type(exc)(exc.status, _naming_the_step(plan, exc), exc.errors, exc.body, exc.code) from None
        if not dry_run:
            _note_made(plan, made)
        for warning in made.get("warnings") or []:  # not an error: the workers may be deployed after
            click.echo(f"warning: {warning}", err=True)
    report(plan, dry_run, err)


def plan_for(client: Client, wanted: ApplyFile, prune: bool) -> Plan:
    me = client.me()
    workflows = cast(list[dict[str, Any]], list(client.workflows.iterate(owner_id=me["id"])))
    schedules = cast(list[dict[str, Any]], list(client.schedules.iterate(owner_id=me["id"])))
    # An admin's list holds every owner's webhooks; apply speaks for the caller's own only.
    webhooks = [cast(dict[str, Any], w) for w in client.webhooks.iterate() if w["owner_id"] == me["id"]] \
        if wanted.declares_webhooks else []
    calendars = cast(list[dict[str, Any]], list(client.calendars.iterate(owner_id=me["id"]))) \
        if wanted.declares_calendars or any("calendar" in s.fields for s in wanted.schedules) else []
    intervals: dict[str, int] = {}

    def interval_of(every: str) -> int:
        if every not in intervals:
            answer = client.schedules.preview(every=every, count=2)
            intervals[every] = interval_from_preview(cast(list[dict[str, Any]], answer["next_runs"]))
        return intervals[every]

    try:
        return make_plan(wanted, workflows, schedules, interval_of, prune, webhooks, calendars)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None


KINDS = {"workflow": "workflows", "webhook": "webhooks", "calendar": "calendars", "schedule": "schedules"}


def changes_of(plan: Plan) -> dict[str, Any]:
    """The plan as POST /apply/ takes it: per kind, what to create, update (by id) and delete. The server
    carries them out in its order (workflows, webhooks, calendars, schedules, calendars deleted), each
    kind's creates, updates and deletes in the plan's order; a schedule names its workflow and calendar by
    name."""
    changes: dict[str, dict[str, list[Any]]] = {}
    for step in plan.steps:
        if step.action == UNCHANGED:
            continue
        body = dict(step.body)
        if step.kind == "schedule" and step.workflow is not None:
            body["workflow"] = step.workflow
        listed = changes.setdefault(KINDS[step.kind], {}).setdefault(step.action, [])
        if step.action == CREATE:
            listed.append(body)
        elif step.action == UPDATE:
            listed.append({"id": step.target, "fields": body})
        elif step.action == DELETE:
            listed.append(step.target)
    return changes


def _naming_the_step(plan: Plan, exc: ApiError) -> str:
    """The server's message, starting with the step refused as the file names it (`webhook URL`, `schedule
    KEY`): the server names a change by its place in the apply (webhooks.create.1)."""
    places: dict[str, Step] = {}
    counters: dict[tuple[str, str], int] = {}
    for step in plan.steps:
        if step.action != UNCHANGED:
            index = counters.get((step.kind, step.action), 0)
            counters[(step.kind, step.action)] = index + 1
            places[f"{KINDS[step.kind]}.{step.action}.{index}"] = step
    for name in exc.errors:
        place = ".".join(name.split(".")[:3])
        if place in places:
            step, message = places[place], exc.message
            if message.startswith(f"{place} (") and "): " in message:  # the server's own naming of the place
                message = message.split("): ", 1)[1]
            return f"{step.kind} {step.name}: {message}"
    return exc.message


def _note_made(plan: Plan, made: dict[str, Any]) -> None:
    """Each created step's id (and a webhook's secret), from the answer's lists, which keep the plan's order."""
    for kind, plural in KINDS.items():
        created = [s for s in plan.steps if s.kind == kind and s.action == CREATE]
        for step, answer in zip(created, made.get(plural) or [], strict=False):
            step.target = answer["id"]
            if kind == "webhook":
                step.secret = answer.get("secret")


_SECRET_NOTE = "secret (shown once; verify signatures with it)"


def report(plan: Plan, dry_run: bool, err: bool = False) -> None:
    """Each step, then a line of counts for workflows and webhooks when the file has any, then the
    schedules' counts as the last line."""
    if current().json:
        output.emit_json({"dry_run": dry_run, "steps": [s.as_dict() for s in plan.steps],
                          "summary": _summary(plan),
                          "summaries": {kind: _summary(plan, kind)
                                        for kind in ("workflow", "webhook", "calendar", "schedule")}})
        return
    for step in plan.steps:
        click.echo(_line(step), err=err)
        if step.secret is not None:
            click.echo(f"          {_SECRET_NOTE}: {step.secret}", err=err)
    for kind in ("workflow", "webhook", "calendar"):
        if any(s.kind == kind for s in plan.steps):
            click.echo(f"{kind}s: {_counts(plan, kind, dry_run)}", err=err)
    click.echo(("plan: " if dry_run else "") + _counts(plan, "schedule", dry_run)
               + (" (dry run: nothing was changed)" if dry_run else ""), err=err)


def _counts(plan: Plan, kind: str, dry_run: bool) -> str:
    summary = _summary(plan, kind)
    return ", ".join(f"{summary[a]} {a if dry_run else _done(a)}" for a in (CREATE, UPDATE, DELETE, UNCHANGED))


def _summary(plan: Plan, kind: str = "schedule") -> dict[str, int]:
    return {action: plan.count(action, kind) for action in (CREATE, UPDATE, DELETE, UNCHANGED)}


def _done(action: str) -> str:
    return {CREATE: "created", UPDATE: "updated", DELETE: "deleted", UNCHANGED: "unchanged"}[action]


def _line(step: Step) -> str:
    head = f"{step.action:9} {step.kind} {step.name}"
    if step.action == UPDATE:
        changed = "; ".join(f"{name}: {_value(old)} -> {_value(new)}" for name, (old, new) in step.changes.items())
        return f"{head}  ({changed})"
    return head


def _value(value: object) -> str:
    """A side of a change as a reader writes it: a timing compared by its kind, ('interval_seconds', 5400),
    as `interval_seconds=5400`; anything else as the CLI prints values."""
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], str):
        return f"{value[0]}={output.text(value[1])}"
    return output.text(value)
