"""`recur apply FILE`: make the owner's workflows, webhooks and keyed schedules match a YAML file, idempotently.

Creates what is new, PATCHes only the fields that differ (a timing change re-plans, as any PATCH does),
leaves everything else alone, and with --prune deletes the owner's keyed schedules the file no longer lists,
the webhooks a file with a `webhooks` entry no longer lists, and puts a listed workflow's policies the file
leaves out back to their defaults. Schedules without a key and workflows the file does not list are never
touched. --dry-run prints the plan and changes nothing. A created webhook's secret is printed that once.
"""

from __future__ import annotations

import sys
from typing import Any, cast

import click

from recur_cli import apply_calendars, output
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
    """Plan, carry out (unless dry_run) and report; `err`: the report goes to stderr."""
    client = current().client
    plan = plan_for(client, wanted, prune)
    if not dry_run:
        try:
            execute(client, plan)
        except ApiError:
            _secrets_made(plan)  # what was done stays done: its secrets must not be lost with the error
            raise
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


def execute(client: Client, plan: Plan) -> None:
    """Carry the plan out in its order (workflows first). It stops at the first refusal; what was done
    stays done, and applying again after a fix carries on from there."""
    workflow_ids: dict[str, int] = {}
    for step in plan.steps:
        if step.kind == "workflow":
            if step.action == CREATE:
                step.target = client.workflows.create(**step.body)["id"]
            elif step.action == UPDATE:
                client.workflows.update(step.target, **step.body)
            workflow_ids[step.name] = step.target
    for step in plan.steps:
        if step.kind == "webhook" and step.action != UNCHANGED:
            _carry_out_webhook(client, step)
    calendar_ids: dict[str, int] = {}
    for step in plan.steps:
        if step.kind == "calendar" and step.action != DELETE:
            apply_calendars.carry_out(client, step, calendar_ids)
    for step in plan.steps:
        if step.kind != "schedule" or step.action == UNCHANGED:
            continue
        body = apply_calendars.with_calendar_id(dict(step.body), calendar_ids, client)
        if step.workflow is not None:
            body["workflow_id"] = workflow_ids.get(step.workflow) or _workflow_id(client, step.workflow)
        try:
            if step.action == CREATE:
                step.target = client.schedules.create(**body)["id"]
            elif step.action == UPDATE:
                client.schedules.update(step.target, **body)
            elif step.action == DELETE:
                client.schedules.delete(step.target)
        except ApiError as exc:
            raise type(exc)(exc.status, f"schedule {step.name}: {exc.message}", exc.errors, exc.body) from None
    for step in plan.steps:  # last: the schedules that used a pruned calendar were pruned or moved above
        if step.kind == "calendar" and step.action == DELETE:
            apply_calendars.carry_out(client, step, calendar_ids)


def _carry_out_webhook(client: Client, step: Step) -> None:
    try:
        if step.action == CREATE:
            made = client.webhooks.create(step.body["url"], step.body["event_types"])
            step.target, step.secret = made["id"], made["secret"]
        elif step.action == UPDATE:
            client.webhooks.update(step.target, event_types=step.body["event_types"])
        elif step.action == DELETE:
            client.webhooks.delete(step.target)
    except ApiError as exc:
        raise type(exc)(exc.status, f"webhook {step.name}: {exc.message}", exc.errors, exc.body) from None


def _secrets_made(plan: Plan) -> None:
    for step in plan.steps:
        if step.secret is not None:
            click.echo(f"created webhook {step.target} for {step.name}; {_SECRET_NOTE}: {step.secret}", err=True)


def _workflow_id(client: Client, name: str) -> int:
    me = client.me()
    return int(next(w["id"] for w in client.workflows.iterate(owner_id=me["id"]) if w["name"] == name))


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
