"""What a sync would do: the declarations compared with the owner's schedules, one step per key.

A declaration states a schedule whole: a field it leaves out means the API's default, so removing
`retries=5` from the code puts max_retries back to 3. Only the fields whose value differs are changed (an
unchanged schedule is not touched: no re-plan, its counters and history kept). Keys the owner holds
without a declaration mark were made through the API: never changed, and a declaration that wants one is a
conflict. A declared schedule whose declaration is gone is paused (deleted with prune).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from recur_server import timing
from recur_server.infra.clock import ceil_second
from recur_server.models import Schedule, ScheduleStatus, Workflow

CREATE, UPDATE, UNCHANGED, PAUSE, RESUME, DELETE, CONFLICT = (
    "create", "update", "unchanged", "pause", "resume", "delete", "conflict")
# The note a schedule paused by sync carries: a schedule paused so is resumed when its declaration returns;
# one paused by a person is left paused.
REMOVED_NOTE = "its declaration was removed from the code (declarations sync)"

# A schedule's fields as a create with none of them given leaves them (recur_server.services.schedules; tests check
# these
# against a real create).
SCHEDULE_DEFAULTS: dict[str, Any] = {
    "description": None, "trigger_node_id": None, "total_repeats": 0, "max_retries": 3, "timeout_seconds": 600,
    "trigger_payload": None, "on_exhausted": "dead", "catch_up": "latest", "catch_up_window_seconds": None,
    "catch_up_limit": 100, "overlap": "skip", "alert_after_seconds": None, "keep_runs_days": None,
    "long_after_seconds": None, "late_after_seconds": None, "failing_after": None,
    "timezone": "UTC", "day_or": True, "anchor_date": None, "start_at": None, "end_at": None,
    "only_between": None, "not_on": None, "jitter_seconds": 0, "calendar_id": None, "on_calendar": None,
}
WORKFLOW_DEFAULTS: dict[str, Any] = {
    "queue": None, "max_concurrent_runs": None, "concurrency_policy": "wait", "breaker_threshold": None,
    "breaker_reset_seconds": 300,
}
KINDS = ("interval_seconds", "every", "cron", "rrule", "at", "after_seconds")
_INSTANTS = ("start_at", "end_at", "anchor_date")


@dataclass
class Wanted:
    """One declaration, its fields checked by the API's schemas: `schedule` as ScheduleIn loads it (without
    workflow_id), `workflow` as WorkflowIn loads it."""

    key: str
    schedule: dict[str, Any]
    workflow: dict[str, Any]
    where: str = ""


@dataclass
class Step:
    key: str
    action: str
    changes: dict[str, tuple[Any, Any]] = field(default_factory=dict)  # field: (now, declared)
    schedule_body: dict[str, Any] = field(default_factory=dict)  # create / PATCH body
    workflow_body: dict[str, Any] = field(default_factory=dict)
    schedule_id: str | None = None
    workflow_id: int | None = None
    note: str = ""

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"key": self.key, "action": self.action}
        if self.schedule_id is not None:
            out["schedule_id"] = self.schedule_id
        if self.changes:
            out["changes"] = {name: {"from": _shown(old), "to": _shown(new)}
                              for name, (old, new) in self.changes.items()}
        if self.note:
            out["note"] = self.note
        return out


@dataclass
class Plan:
    owner_id: int
    steps: list[Step]

    def count(self, action: str) -> int:
        return sum(1 for step in self.steps if step.action == action)

    @property
    def changes_anything(self) -> bool:
        return any(step.action not in (UNCHANGED, CONFLICT) for step in self.steps)


@dataclass
class Current:
    """What the database holds for one key of the owner: the schedule, its workflow, and the mark."""

    schedule: Schedule | None
    workflow: Workflow | None
    declared: bool
    upstream: str | None = None  # the key (else the id) of the schedule it follows, when it follows one


def make_plan(owner_id: int, wanted: list[Wanted], current: dict[str, Current], prune: bool) -> Plan:
    """`current`: every key of the owner that is declared (marked) or wanted, with what the database holds."""
    steps: list[Step] = []
    for want in sorted(wanted, key=lambda w: w.key):
        now = current.get(want.key, Current(None, None, False))
        if now.schedule is None:
            steps.append(Step(want.key, CREATE, schedule_body=dict(want.schedule), workflow_body=dict(want.workflow)))
        elif not now.declared:
            steps.append(Step(want.key, CONFLICT, schedule_id=now.schedule.id,
                              note="a schedule made through the API holds this key: sync leaves it alone; "
                                   "delete it or give the declaration another key"))
        else:
            steps.append(_compared(want, now))
    steps = _upstream_first(steps, wanted)
    wanted_keys = {want.key for want in wanted}
    for key in sorted(set(current) - wanted_keys):
        now = current[key]
        if not now.declared or now.schedule is None:
            continue
        schedule = now.schedule
        if prune:
            steps.append(Step(key, DELETE, schedule_id=schedule.id, workflow_id=schedule.workflow_id))
        elif schedule.status == ScheduleStatus.ACTIVE.value:
            steps.append(Step(key, PAUSE, schedule_id=schedule.id, note=REMOVED_NOTE))
        else:
            steps.append(Step(key, UNCHANGED, schedule_id=schedule.id,
                              note=f"no longer declared; {schedule.status}"))
    return Plan(owner_id, steps)


def upstreams(wanted: list[Wanted]) -> dict[str, str | None]:
    """Each declaration's key: the key or id of the schedule it follows (`follows`), or None."""
    return {w.key: (w.schedule.get("after") or {}).get("schedule") for w in wanted}


def _upstream_first(steps: list[Step], wanted: list[Wanted]) -> list[Step]:
    """The steps in an order where a declaration's upstream (`follows`, another declaration) is created or
    changed before it; the others keep their order (declarations in a circle are refused before this)."""
    upstream = upstreams(wanted)

    def depth(key: str | None) -> int:
        seen: set[str] = set()
        while key is not None and upstream.get(key) in upstream and key not in seen:
            seen.add(key)
            key = upstream[key]
        return len(seen)

    return sorted(steps, key=lambda step: depth(step.key))


def _compared(want: Wanted, now: Current) -> Step:
    schedule, workflow = now.schedule, now.workflow
    assert schedule is not None
    changes: dict[str, tuple[Any, Any]] = {}
    body: dict[str, Any] = {}
    kind_now, kind_wanted = _kind_of_row(schedule), _kind_wanted(want.schedule)
    if kind_wanted[0] == "at" and kind_wanted[1] is None:  # after_seconds: fixed when created
        kind_wanted = ("at", schedule.at) if kind_now[0] == "at" else kind_wanted
    if kind_now != kind_wanted:
        same_kind = kind_now[0] == kind_wanted[0]
        changes[kind_wanted[0]] = (kind_now[1], kind_wanted[1]) if same_kind else (_pair(kind_now), _pair(kind_wanted))
        given = next(k for k in KINDS if want.schedule.get(k) is not None)
        body[given] = want.schedule[given]
    for name, default in {**SCHEDULE_DEFAULTS, "name": None}.items():
        declared = want.schedule.get(name, default)
        held = _row_value(schedule, name)
        if _comparable(name, declared) != _comparable(name, held):
            changes[name] = (held, declared)
            body[name] = declared
    follows = _follow_change(want.schedule.get("after"), schedule, now.upstream)
    if follows is not None:
        changes["after"] = follows
        body["after"] = want.schedule.get("after")
    workflow_body: dict[str, Any] = {}
    for name, default in {**WORKFLOW_DEFAULTS, "task": None, "name": None}.items():
        declared = want.workflow.get(name, default)
        held = getattr(workflow, name) if workflow is not None else None
        if declared != held:
            changes[f"workflow.{name}"] = (held, declared)
            workflow_body[name] = declared
    paused_by_sync = schedule.status == ScheduleStatus.PAUSED.value and schedule.pause_note == REMOVED_NOTE
    action = RESUME if paused_by_sync else (UPDATE if changes else UNCHANGED)
    note = "declared again: resumed" if paused_by_sync else ""
    return Step(want.key, action, changes, body, workflow_body, schedule.id, schedule.workflow_id, note)


def _follow_change(declared: dict[str, Any] | None, schedule: Schedule,
                   upstream: str | None) -> tuple[Any, Any] | None:
    """(the schedule's `after`, the declaration's) with the upstream named by key, when they differ."""
    held = None if schedule.after_schedule_id is None else {
        "schedule": upstream or schedule.after_schedule_id, "on": schedule.after_on,
        "delay_seconds": schedule.after_delay_seconds, "within": schedule.after_within}
    wanted = None if declared is None else {  # as AfterIn loaded it: its defaults filled in
        "schedule": declared["schedule"], "on": declared["on"], "delay_seconds": declared["delay_seconds"],
        "within": declared["within"]}
    if held is not None and wanted is not None and wanted["schedule"] == schedule.after_schedule_id:
        wanted["schedule"] = held["schedule"]  # the declaration named the upstream by its id
    return None if held == wanted else (held, wanted)


def _kind_of_row(schedule: Schedule) -> tuple[str, Any]:
    for kind in ("interval_seconds", "cron", "rrule", "at"):
        value = getattr(schedule, kind)
        if value is not None:
            return kind, value
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
            return kind, body[kind]
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


def _shown(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, dict):
        return {k: _shown(v) for k, v in value.items()}
    return value
