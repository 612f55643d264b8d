"""What `recur apply` would do: compare the file with the owner's workflows, webhooks and keyed schedules on
the server.

Only the fields the file gives are compared and sent: a field left out keeps its value on the server, except
that with --prune a listed workflow's policies the file leaves out go back to their defaults (a file that
stops declaring a limit means no limit). Values are compared in the form the API answers with (instants in
UTC, rounded up to whole seconds as the API stores them; `every` as the interval in seconds it stands for;
event types as a sorted set).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from recur_cli.apply_calendars import calendar_change, calendar_steps, pruned_calendar_steps
from recur_cli.applyfile import ApplyFile, WebhookSpec
from recur_cli.steps import CREATE, DELETE, UNCHANGED, UPDATE, Step
from recur_client.fields import iso

_INSTANTS = ("at", "anchor_date", "start_at", "end_at")
_KINDS = ("interval_seconds", "cron", "rrule", "at")
# A workflow's policies as the server makes them when none is given (WorkflowIn's fields left out): what
# --prune puts back when the file no longer declares one. tests/test_recur_apply.py checks them against a
# server's new workflow.
POLICY_DEFAULTS: dict[str, Any] = {"max_concurrent_runs": None, "concurrency_policy": "wait",
                                   "breaker_threshold": None, "breaker_reset_seconds": 300, "queue": None}


@dataclass
class Plan:
    steps: list[Step]

    def count(self, action: str, kind: str | None = None) -> int:
        return sum(1 for s in self.steps if s.action == action and (kind is None or s.kind == kind))

    @property
    def changes_anything(self) -> bool:
        return any(s.action != UNCHANGED for s in self.steps)


def make_plan(wanted: ApplyFile, workflows: list[dict[str, Any]], schedules: list[dict[str, Any]],
              interval_of: Callable[[str], int], prune: bool, webhooks: list[dict[str, Any]] | None = None,
              calendars: list[dict[str, Any]] | None = None) -> Plan:
    """`workflows`, `schedules` and `webhooks` are the owner's own, as the API lists them; `interval_of(every)`
    asks the server what interval an `every` text stands for. Steps come workflows first, then webhooks,
    then schedules: the order they are carried out in."""
    from recur_cli.apply_follows import after_change, upstream_first

    steps: list[Step] = []
    by_name: dict[str, list[dict[str, Any]]] = {}
    for workflow in workflows:
        by_name.setdefault(workflow["name"], []).append(workflow)
    for flow in wanted.workflows:
        found = by_name.get(flow.name, [])
        if len(found) > 1:
            raise ValueError(f"{len(found)} workflows on the server are named {flow.name!r}: rename all but one")
        defaults = POLICY_DEFAULTS if prune and found else {}
        wanted_fields = {**defaults, "task": flow.task, **flow.fields}
        changes = {name: (found[0].get(name), value) for name, value in wanted_fields.items()
                   if found and found[0].get(name) != value}
        if not found:
            steps.append(Step("workflow", flow.name, CREATE, body={"name": flow.name, **wanted_fields}))
        elif changes:
            steps.append(Step("workflow", flow.name, UPDATE, changes,
                              {name: wanted_fields[name] for name in changes}, found[0]["id"]))
        else:
            steps.append(Step("workflow", flow.name, UNCHANGED, target=found[0]["id"]))
    steps.extend(_webhook_steps(wanted, webhooks or [], prune))
    steps.extend(calendar_steps(wanted.calendars, calendars or []))
    calendar_names = {c["id"]: c["name"] for c in calendars or []}
    declared = {w.name for w in wanted.workflows}
    for spec in wanted.schedules:
        if spec.workflow not in declared and len(by_name.get(spec.workflow, [])) != 1:
            raise ValueError(f"schedule {spec.key}: no single workflow named {spec.workflow!r} in the file or "
                             "on the server")

    keyed = {s["key"]: s for s in schedules if s.get("key")}
    keys_by_id = {s["id"]: s.get("key") for s in schedules}
    ids = {name: found[0]["id"] for name, found in by_name.items() if len(found) == 1}
    for spec in wanted.schedules:
        current = keyed.get(spec.key)
        if current is None:
            steps.append(Step("schedule", spec.key, CREATE, body=dict(spec.fields), workflow=spec.workflow))
            continue
        changes = {}
        for name, value in spec.fields.items():
            if name == "after":  # the upstream by key: compared with the key of the schedule the server names
                followed = after_change(value, current, keys_by_id)
                if followed is not None:
                    changes[name] = followed
                continue
            if name == "calendar":  # by name: compared with the name of the calendar its calendar_id names
                changed = calendar_change(value, current, calendar_names)
                if changed is not None:
                    changes[name] = changed
                continue
            now, after = _compared(name, current, value, interval_of)
            if now != after:
                changes[name] = (now, after)
        if ids.get(spec.workflow) != current["workflow_id"]:
            changes["workflow"] = (current["workflow_id"], spec.workflow)
        body = {name: spec.fields[name] for name in changes if name != "workflow"}
        step = Step("schedule", spec.key, UPDATE if changes else UNCHANGED, changes, body, current["id"],
                    spec.workflow if "workflow" in changes else None)
        steps.append(step)
    steps = upstream_first(steps, wanted.schedules)  # a follower after the schedule it follows
    if prune:
        listed = {s.key for s in wanted.schedules}
        for key, current in sorted(keyed.items()):
            if key not in listed:
                steps.append(Step("schedule", key, DELETE, target=current["id"]))
    if prune and wanted.declares_calendars:
        steps.extend(pruned_calendar_steps(wanted.calendars, calendars or []))
    return Plan(steps)


def _webhook_steps(wanted: ApplyFile, webhooks: list[dict[str, Any]], prune: bool) -> list[Step]:
    """Webhooks matched by URL. A changed event list is one PATCH (the secret and delivery log stay); with
    --prune, and only when the file has a `webhooks` entry, the owner's webhooks it does not list are
    deleted."""
    by_url: dict[str, list[dict[str, Any]]] = {}
    for webhook in webhooks:
        by_url.setdefault(webhook["url"], []).append(webhook)
    steps = [_webhook_step(spec, by_url.get(spec.url, [])) for spec in wanted.webhooks]
    if prune and wanted.declares_webhooks:
        listed = {spec.url for spec in wanted.webhooks}
        steps.extend(Step("webhook", w["url"], DELETE, target=w["id"])
                     for w in sorted(webhooks, key=lambda w: w["id"]) if w["url"] not in listed)
    return steps


def _webhook_step(spec: WebhookSpec, found: list[dict[str, Any]]) -> Step:
    if len(found) > 1:
        raise ValueError(f"{len(found)} of your webhooks send to {spec.url}: delete all but one "
                         "(recur webhooks delete ID)")
    if not found:
        return Step("webhook", spec.url, CREATE, body={"url": spec.url, "event_types": spec.event_types})
    now = sorted(set(found[0]["event_types"]))
    if now == spec.event_types:
        return Step("webhook", spec.url, UNCHANGED, target=found[0]["id"])
    return Step("webhook", spec.url, UPDATE, {"event_types": (now, spec.event_types)},
                {"event_types": spec.event_types}, found[0]["id"])


def _compared(name: str, current: dict[str, Any], value: Any, interval_of: Callable[[str], int]) -> tuple[Any, Any]:
    """(the server's value, the file's value) of one field, in one form."""
    if name == "every":
        kind_now = _kind(current)
        return kind_now, ("interval_seconds", interval_of(str(value)))
    if name in _KINDS and name != "at":
        return _kind(current), (name, value.strip() if isinstance(value, str) else value)
    if name == "at":
        return _kind(current), ("at", instant(value))
    if name in _INSTANTS:
        return current.get(name), instant(value)
    if name == "timezone" and value is None:
        return current.get(name), "UTC"
    return current.get(name), value


def _kind(schedule: dict[str, Any]) -> tuple[str, Any] | None:
    for kind in _KINDS:
        if schedule.get(kind) is not None:
            value = schedule[kind]
            return kind, value.strip() if isinstance(value, str) and kind != "at" else value
    return None


def instant(value: Any) -> Any:
    """An ISO 8601 instant as the API answers it: UTC, with Z, rounded up to the whole second."""
    if not isinstance(value, str):
        return value
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return value  # the API will say what is wrong with it
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    parsed = parsed.astimezone(UTC)
    if parsed.microsecond:
        parsed = parsed.replace(microsecond=0) + timedelta(seconds=1)
    return iso(parsed)


def interval_from_preview(next_runs: list[dict[str, Any]]) -> int:
    """The interval an `every` stands for, from the first two nominal times the preview gives."""
    first, second = (datetime.fromisoformat(r["utc"].replace("Z", "+00:00")) for r in next_runs[:2])
    return math.ceil((second - first).total_seconds())
