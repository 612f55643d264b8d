"""What `recur apply` would do: compare the file with the owner's workflows and keyed schedules on the server.

Only the fields the file gives are compared and sent: a field left out keeps its value on the server. Values
are compared in the form the API answers with (instants in UTC, rounded up to whole seconds as the API
stores them; `every` as the interval in seconds it stands for).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from recur_cli.applyfile import ApplyFile

CREATE, UPDATE, DELETE, UNCHANGED = "create", "update", "delete", "unchanged"
_INSTANTS = ("at", "anchor_date", "start_at", "end_at")
_KINDS = ("interval_seconds", "cron", "rrule", "at")


@dataclass
class Step:
    kind: str  # "workflow" or "schedule"
    name: str  # a workflow's name, a schedule's key
    action: str
    changes: dict[str, tuple[Any, Any]] = field(default_factory=dict)  # field: (now, after)
    body: dict[str, Any] = field(default_factory=dict)  # what is sent (create, update)
    target: Any = None  # the server's id (update, delete)
    workflow: str | None = None  # a schedule's workflow, by name

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "name": self.name, "action": self.action}
        if self.target is not None:
            out["id"] = self.target
        if self.action == UPDATE:
            out["changes"] = {k: {"from": old, "to": new} for k, (old, new) in self.changes.items()}
        if self.action == CREATE:
            out["fields"] = self.body
        return out


@dataclass
class Plan:
    steps: list[Step]

    def count(self, action: str, kind: str | None = None) -> int:
        return sum(1 for s in self.steps if s.action == action and (kind is None or s.kind == kind))

    @property
    def changes_anything(self) -> bool:
        return any(s.action != UNCHANGED for s in self.steps)


def make_plan(wanted: ApplyFile, workflows: list[dict[str, Any]], schedules: list[dict[str, Any]],
              interval_of: Callable[[str], int], prune: bool) -> Plan:
    """`workflows` and `schedules` are the owner's own, as the API lists them; `interval_of(every)` asks
    the server what interval an `every` text stands for."""
    steps: list[Step] = []
    by_name: dict[str, list[dict[str, Any]]] = {}
    for workflow in workflows:
        by_name.setdefault(workflow["name"], []).append(workflow)
    for flow in wanted.workflows:
        found = by_name.get(flow.name, [])
        if len(found) > 1:
            raise ValueError(f"{len(found)} workflows on the server are named {flow.name!r}: rename all but one")
        wanted_fields = {"task": flow.task, **flow.fields}
        changes = {name: (found[0].get(name), value) for name, value in wanted_fields.items()
                   if found and found[0].get(name) != value}
        if not found:
            steps.append(Step("workflow", flow.name, CREATE, body={"name": flow.name, **wanted_fields}))
        elif changes:
            steps.append(Step("workflow", flow.name, UPDATE, changes,
                              {name: wanted_fields[name] for name in changes}, found[0]["id"]))
        else:
            steps.append(Step("workflow", flow.name, UNCHANGED, target=found[0]["id"]))
    declared = {w.name for w in wanted.workflows}
    for spec in wanted.schedules:
        if spec.workflow not in declared and len(by_name.get(spec.workflow, [])) != 1:
            raise ValueError(f"schedule {spec.key}: no single workflow named {spec.workflow!r} in the file or "
                             "on the server")

    keyed = {s["key"]: s for s in schedules if s.get("key")}
    ids = {name: found[0]["id"] for name, found in by_name.items() if len(found) == 1}
    for spec in wanted.schedules:
        current = keyed.get(spec.key)
        if current is None:
            steps.append(Step("schedule", spec.key, CREATE, body=dict(spec.fields), workflow=spec.workflow))
            continue
        changes = {}
        for name, value in spec.fields.items():
            now, after = _compared(name, current, value, interval_of)
            if now != after:
                changes[name] = (now, after)
        if ids.get(spec.workflow) != current["workflow_id"]:
            changes["workflow"] = (current["workflow_id"], spec.workflow)
        body = {name: spec.fields[name] for name in changes if name != "workflow"}
        step = Step("schedule", spec.key, UPDATE if changes else UNCHANGED, changes, body, current["id"],
                    spec.workflow if "workflow" in changes else None)
        steps.append(step)
    if prune:
        listed = {s.key for s in wanted.schedules}
        for key, current in sorted(keyed.items()):
            if key not in listed:
                steps.append(Step("schedule", key, DELETE, target=current["id"]))
    return Plan(steps)


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
    return parsed.isoformat().replace("+00:00", "Z")


def interval_from_preview(next_runs: list[dict[str, Any]]) -> int:
    """The interval an `every` stands for, from the first two nominal times the preview gives."""
    first, second = (datetime.fromisoformat(r["utc"].replace("Z", "+00:00")) for r in next_runs[:2])
    return math.ceil((second - first).total_seconds())
