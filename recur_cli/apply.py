"""`recur apply FILE`: make the owner's workflows, webhooks, calendars and keyed schedules match a YAML file,
idempotently.

The file goes to the server (POST /apply/file/), which plans it against what the owner has and carries the
plan out whole: it creates what is new, changes only the fields that differ (a timing change re-plans, as any
PATCH does), leaves everything else alone, and with --prune deletes the owner's keyed schedules the file no
longer lists, the webhooks (calendars) a file with a `webhooks` (`calendars`) entry no longer lists, and puts
a listed workflow's policies the file leaves out back to their defaults. When one change is refused, none is
kept. --dry-run: every check a real apply meets, nothing changed. A created webhook's secret is printed that
once.
"""

from __future__ import annotations

import sys
from typing import Any

import click

from recur_cli import output
from recur_cli.applyfile import load
from recur_cli.context import current, json_option
from recur_cli.filetypes import FileError

ACTIONS = ("create", "update", "delete", "unchanged")
DONE = {"create": "created", "update": "updated", "delete": "deleted", "unchanged": "unchanged"}
KINDS = ("workflow", "webhook", "calendar", "schedule")
TIMINGS = ("interval_seconds", "cron", "rrule", "at")


@click.command("apply")
@click.argument("path", type=click.Path(dir_okay=False, allow_dash=True))
@click.option("--prune", is_flag=True,
              help="Delete your keyed schedules (and, if the file has `webhooks` or `calendars`, those) the file "
                   "does not list; reset the policies of its workflows that it leaves out.")
@click.option("--dry-run", is_flag=True, help="Print the plan; change nothing.")
@json_option
def apply(path: str, prune: bool, dry_run: bool) -> None:
    """Create and update workflows, webhooks, calendars and schedules from a YAML file (workflows and calendars
    matched by name, webhooks by url, schedules by `key`)."""
    try:
        text = sys.stdin.read() if path == "-" else open(path, encoding="utf-8").read()  # noqa: SIM115
        document = load(text, path)
    except (OSError, FileError) as exc:
        raise click.UsageError(str(exc)) from None
    apply_document(document, prune, dry_run)


def apply_document(document: dict[str, Any], prune: bool = False, dry_run: bool = False, err: bool = False) -> None:
    """Send the file to the server to plan and carry out (a dry run there too) and report what it did; `err`:
    the report goes to stderr."""
    answer = current().client.apply_file(document, prune=prune, dry_run=dry_run)
    for warning in answer["warnings"]:  # not an error: the workers may be deployed after
        click.echo(f"warning: {warning}", err=True)
    report(answer["steps"], dry_run, err)


_SECRET_NOTE = "secret (shown once; verify signatures with it)"


def report(steps: list[dict[str, Any]], dry_run: bool, err: bool = False) -> None:
    """Each step, then a line of counts for workflows, webhooks and calendars when the file has any, then the
    schedules' counts as the last line."""
    if current().json:
        output.emit_json({"dry_run": dry_run, "steps": steps, "summary": _summary(steps, "schedule"),
                          "summaries": {kind: _summary(steps, kind) for kind in KINDS}})
        return
    for step in steps:
        click.echo(line(step), err=err)
        if step.get("secret") is not None:
            click.echo(f"          {_SECRET_NOTE}: {step['secret']}", err=err)
    for kind in KINDS[:3]:
        if any(s["kind"] == kind for s in steps):
            click.echo(f"{kind}s: {_counts(steps, kind, dry_run)}", err=err)
    click.echo(("plan: " if dry_run else "") + _counts(steps, "schedule", dry_run)
               + (" (dry run: nothing was changed)" if dry_run else ""), err=err)


def _counts(steps: list[dict[str, Any]], kind: str, dry_run: bool) -> str:
    summary = _summary(steps, kind)
    return ", ".join(f"{summary[a]} {a if dry_run else DONE[a]}" for a in ACTIONS)


def _summary(steps: list[dict[str, Any]], kind: str) -> dict[str, int]:
    return {action: sum(1 for s in steps if s["kind"] == kind and s["action"] == action) for action in ACTIONS}


def line(step: dict[str, Any]) -> str:
    head = f"{step['action']:9} {step['kind']} {step['name']}"
    if step["action"] == "update":
        changed = "; ".join(f"{name}: {_value(change['from'])} -> {_value(change['to'])}"
                            for name, change in step["changes"].items())
        return f"{head}  ({changed})"
    return head


def _value(value: object) -> str:
    """A side of a change as a reader writes it: a timing of another kind, {"interval_seconds": 5400}, as
    `interval_seconds=5400`; anything else as the CLI prints values."""
    if isinstance(value, dict) and len(value) == 1 and next(iter(value)) in TIMINGS:
        ((kind, inner),) = value.items()
        return f"{kind}={output.text(inner)}"
    return output.text(value)
