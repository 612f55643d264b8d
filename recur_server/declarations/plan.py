"""The one planner: what it takes to make an owner's objects match what is declared, step by step. A sync
(recur_server.declarations.sync: the declarations in Python) and an apply file (recur_server.declarations.file:
`recur apply` and the importers) both plan here, each object compared with its row by the same rules.

The two differ in one thing, `whole`: a declaration states a schedule whole, so a field it leaves out means
the API's default (removing `retries=5` from the code puts max_retries back to 3); a file gives the fields it
cares about, and one it leaves out keeps its value. Only the fields whose value differs are changed (an
unchanged schedule is not touched: no re-plan, its counters and history kept). Values are compared as the API
stores them: instants in UTC rounded up to the whole second, `every` as the interval it stands for.

A sync's own rules: keys the owner holds without a declaration mark were made through the API, never changed
(a declaration that wants one is a conflict); a declared schedule whose declaration is gone is paused
(deleted with prune).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from recur_server import timing
from recur_server.infra.clock import ceil_second
from recur_server.models import Schedule, ScheduleStatus, Workflow
from recur_server.schemas.fields import defaults
from recur_server.schemas.schedules import ScheduleIn
from recur_server.schemas.workflows import WorkflowIn

CREATE, UPDATE, UNCHANGED, PAUSE, RESUME, DELETE, CONFLICT = (
    "create", "update", "unchanged", "pause", "resume", "delete", "conflict")
# The note a schedule paused by sync carries: a schedule paused so is resumed when its declaration returns;
# one paused by a person is left paused.
REMOVED_NOTE = "its declaration was removed from the code (declarations sync)"

KINDS = ("interval_seconds", "every", "cron", "rrule", "at", "after_seconds")
_INSTANTS = ("start_at", "end_at", "anchor_date")
# Compared on their own (a kind of timing, the upstream), or not fields of the row.
_NOT_COMPARED = {*KINDS, "after", "key", "workflow", "calendar"}


def schedule_defaults() -> dict[str, Any]:
    """A schedule's fields as a create that gives none of them leaves them (ScheduleIn's defaults)."""
    return defaults(ScheduleIn)


def workflow_defaults() -> dict[str, Any]:
    """A workflow's policies as a create that gives none of them leaves them (WorkflowIn's defaults)."""
    return defaults(WorkflowIn)


@dataclass
class Step:
    kind: str  # "workflow", "webhook", "calendar" or "schedule"
    name: str  # a workflow's or calendar's name, a webhook's URL, a schedule's key
    action: str
    changes: dict[str, tuple[Any, Any]] = field(default_factory=dict)  # field: (now, wanted)
    body: dict[str, Any] = field(default_factory=dict)  # a create's body, or the fields a change sets
    target: Any = None  # the id of what it changes (a schedule's, in a sync)
    workflow: str | None = None  # a file's schedule: its workflow by name, when it is created or moved
    workflow_body: dict[str, Any] = field(default_factory=dict)  # a sync's schedule: its workflow's fields
    workflow_id: int | None = None
    note: str = ""
    secret: str | None = None  # a created webhook's signing secret: the one time it is shown

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "name": self.name, "action": self.action}
        if self.target is not None:
            out["id"] = self.target
        if self.changes:
            out["changes"] = {name: {"from": shown(old), "to": shown(new)} for name, (old, new) in self.changes.items()}
        if self.action == CREATE:
            out["fields"] = shown(self.body)
        if self.note:
            out["note"] = self.note
        if self.secret is not None:
            out["secret"] = self.secret
        return out


@dataclass
class Plan:
    steps: list[Step]

    def count(self, action: str, kind: str | None = None) -> int:
        return sum(1 for step in self.steps if step.action == action and (kind is None or step.kind == kind))

    @property
    def changes_anything(self) -> bool:
        return any(step.action not in (UNCHANGED, CONFLICT) for step in self.steps)


def schedule_changes(wanted: dict[str, Any], schedule: Schedule, upstream: str | None,
                     whole: bool) -> tuple[dict[str, tuple[Any, Any]], dict[str, Any]]:
    """(changes, body) that make `schedule` what `wanted` (as ScheduleIn loads it) says. `upstream`: the key
    (else the id) of the schedule it follows now. `whole`: a field `wanted` leaves out is compared with its
    default; otherwise only the fields given are."""
    changes: dict[str, tuple[Any, Any]] = {}
    body: dict[str, Any] = {}
    given = next((kind for kind in KINDS if wanted.get(kind) is not None), None)
    if given is not None:
        kind_now, kind_wanted = _kind_of_row(schedule), _kind_wanted(wanted)
        if kind_wanted[0] == "at" and kind_wanted[1] is None:  # after_seconds: fixed when created
            kind_wanted = ("at", schedule.at) if kind_now[0] == "at" else kind_wanted
        if kind_now != kind_wanted:
            same = kind_now[0] == kind_wanted[0]
            changes[kind_wanted[0]] = (kind_now[1], kind_wanted[1]) if same else (_pair(kind_now), _pair(kind_wanted))
            body[given] = wanted[given]
    fallback = schedule_defaults() if whole else {}
    for name in {**fallback, **wanted}:
        if name in _NOT_COMPARED:
            continue
        declared = wanted.get(name, fallback.get(name))
        held = _row_value(schedule, name)
        if _comparable(name, declared) != _comparable(name, held):
            changes[name] = (held, declared)
            body[name] = declared
    if whole or "after" in wanted:
        follows = _follow_change(wanted.get("after"), schedule, upstream)
        if follows is not None:
            changes["after"] = follows
            body["after"] = wanted.get("after")
    return changes, body


def workflow_changes(wanted: dict[str, Any], workflow: Workflow | None,
                     fallback: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
    """The fields of `workflow` (None: none yet) that differ from `wanted` (as WorkflowIn loads it); a field
    `wanted` leaves out is compared with its value in `fallback`, or not at all."""
    changes: dict[str, tuple[Any, Any]] = {}
    for name in {**fallback, **wanted}:
        declared = wanted.get(name, fallback.get(name))
        held = getattr(workflow, name) if workflow is not None else None
        if declared != held:
            changes[name] = (held, declared)
    return changes


def upstream_first(steps: list[Step], upstream: dict[str, str | None]) -> list[Step]:
    """The steps in an order where a schedule's upstream (`after`, by key, among `upstream`'s keys) is created
    or changed before it; the others keep their order (a circle is refused elsewhere: its members keep theirs)."""

    def depth(step: Step) -> int:
        key: str | None = step.name if step.kind == "schedule" else None
        seen: set[str] = set()
        while key is not None and upstream.get(key) in upstream and key not in seen:
            seen.add(key)
            key = upstream[key]
        return len(seen)

    return sorted(steps, key=depth)


@dataclass
class Wanted:
    """One declaration, its fields checked by the API's schemas: `schedule` as ScheduleIn loads it (without
    workflow_id), `workflow` as WorkflowIn loads it."""

    key: str
    schedule: dict[str, Any]
    workflow: dict[str, Any]
    where: str = ""


@dataclass
class Current:
    """What the database holds for one key of the owner: the schedule, its workflow, and the mark."""

    schedule: Schedule | None
    workflow: Workflow | None
    declared: bool
    upstream: str | None = None  # the key (else the id) of the schedule it follows, when it follows one


def plan_declarations(wanted: list[Wanted], current: dict[str, Current], prune: bool) -> Plan:
    """A sync's plan. `current`: every key of the owner that is declared (marked) or wanted, with what the
    database holds."""
    steps: list[Step] = []
    for want in sorted(wanted, key=lambda w: w.key):
        now = current.get(want.key, Current(None, None, False))
        if now.schedule is None:
            steps.append(Step("schedule", want.key, CREATE, body=dict(want.schedule),
                              workflow_body=dict(want.workflow)))
        elif not now.declared:
            steps.append(Step("schedule", want.key, CONFLICT, target=now.schedule.id,
                              note="a schedule made through the API holds this key: sync leaves it alone; "
                                   "delete it or give the declaration another key"))
        else:
            steps.append(_declared_step(want, now))
    steps = upstream_first(steps, upstreams(wanted))
    for key in sorted(set(current) - {want.key for want in wanted}):
        schedule = current[key].schedule
        if not current[key].declared or schedule is None:
            continue
        if prune:
            steps.append(Step("schedule", key, DELETE, target=schedule.id, workflow_id=schedule.workflow_id))
        elif schedule.status == ScheduleStatus.ACTIVE.value:
            steps.append(Step("schedule", key, PAUSE, target=schedule.id, note=REMOVED_NOTE))
        else:
            steps.append(Step("schedule", key, UNCHANGED, target=schedule.id,
                              note=f"no longer declared; {schedule.status}"))
    return Plan(steps)


def upstreams(wanted: list[Wanted]) -> dict[str, str | None]:
    """Each declaration's key: the key or id of the schedule it follows (`follows`), or None."""
    return {w.key: (w.schedule.get("after") or {}).get("schedule") for w in wanted}


def _declared_step(want: Wanted, now: Current) -> Step:
    schedule = now.schedule
    assert schedule is not None
    changes, body = schedule_changes(want.schedule, schedule, now.upstream, whole=True)
    workflow_changed = workflow_changes(want.workflow, now.workflow, workflow_defaults())
    changes.update({f"workflow.{name}": change for name, change in workflow_changed.items()})
    paused_by_sync = schedule.status == ScheduleStatus.PAUSED.value and schedule.pause_note == REMOVED_NOTE
    return Step("schedule", want.key, RESUME if paused_by_sync else (UPDATE if changes else UNCHANGED), changes,
                body, schedule.id, workflow_body={name: new for name, (_, new) in workflow_changed.items()},
                workflow_id=schedule.workflow_id, note="declared again: resumed" if paused_by_sync else "")


def _follow_change(declared: dict[str, Any] | None, schedule: Schedule,
                   upstream: str | None) -> tuple[Any, Any] | None:
    """(the schedule's `after`, the declared one) with the upstream named by key, when they differ."""
    held = None if schedule.after_schedule_id is None else {
        "schedule": upstream or schedule.after_schedule_id, "on": schedule.after_on,
        "delay_seconds": schedule.after_delay_seconds, "within": schedule.after_within}
    wanted = None if declared is None else {  # as AfterIn loaded it: its defaults filled in
        "schedule": declared["schedule"], "on": declared["on"], "delay_seconds": declared["delay_seconds"],
        "within": declared["within"]}
    if held is not None and wanted is not None and wanted["schedule"] == schedule.after_schedule_id:
        wanted["schedule"] = held["schedule"]  # it named the upstream by its id
    return None if held == wanted else (held, wanted)


def _kind_of_row(schedule: Schedule) -> tuple[str, Any]:
    for kind in ("interval_seconds", "cron", "rrule", "at"):
        value = getattr(schedule, kind)
        if value is not None:
            return kind, value.strip() if isinstance(value, str) else value
    return "none", None


def _kind_wanted(body: dict[str, Any]) -> tuple[str, Any]:
    if body.get("every") is not None:
        return "interval_seconds", timing.parse_every(body["every"])
    if body.get("after_seconds") is not None:
        return "at", None
    if body.get("at") is not None:
        return "at", ceil_second(_utc(body["at"]))
    for kind in ("interval_seconds", "cron", "rrule"):
        if body.get(kind) is not None:
            value = body[kind]
            return kind, value.strip() if isinstance(value, str) else value
    return "none", None


def _row_value(schedule: Schedule, name: str) -> Any:
    if name == "anchor_date":
        return schedule.anchor_at if schedule.anchor_explicit else None
    return getattr(schedule, name)


def _comparable(name: str, value: Any) -> Any:
    if name in _INSTANTS and isinstance(value, datetime):
        return ceil_second(_utc(value))
    if name == "timezone" and value is None:
        return "UTC"
    return value


def _utc(instant: datetime) -> datetime:
    return instant.replace(tzinfo=UTC) if instant.tzinfo is None else instant.astimezone(UTC)


def _pair(kind: tuple[str, Any]) -> Any:
    return None if kind[0] == "none" else {kind[0]: kind[1]}


def shown(value: Any) -> Any:
    """`value` as JSON: an instant as the API writes it."""
    if isinstance(value, datetime):
        return timing.iso(_utc(value))
    if isinstance(value, dict):
        return {k: shown(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [shown(v) for v in value]
    return value
