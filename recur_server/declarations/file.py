"""An apply file (`recur apply`, the importers): make the caller's workflows (matched by name), webhooks (by
url), calendars (by name) and keyed schedules (by key) what the file says, planned by
recur_server.declarations.plan and carried out whole by recur_server.services.apply (all of it, or, when one
change is refused, none).

Only the fields the file gives are compared and changed: a field it leaves out keeps its value, except that
with prune a listed workflow's policies the file leaves out go back to their defaults (a file that stops
declaring a limit means no limit). With prune, the owner's keyed schedules the file does not list are deleted,
and so are the webhooks and calendars it does not list when it has a `webhooks` (`calendars`) entry. Schedules
without a key and workflows the file does not list are never touched.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any, TypeVar

from sqlalchemy import select

from recur_server.auth.scope import scoped
from recur_server.calendars.models import MAX_CALENDARS, Calendar
from recur_server.declarations.execute import keys_of
from recur_server.declarations.plan import (
    CREATE,
    DELETE,
    UNCHANGED,
    UPDATE,
    Plan,
    Step,
    schedule_changes,
    upstream_first,
    workflow_changes,
    workflow_defaults,
)
from recur_server.infra.extensions import db
from recur_server.infra.in_lists import in_batches
from recur_server.models import Schedule, Workflow
from recur_server.notify.models import Webhook
from recur_server.services import apply as applying
from recur_server.services.schedules import Invalid

M = TypeVar("M", Workflow, Schedule, Calendar)
PLURAL = {"workflow": "workflows", "webhook": "webhooks", "calendar": "calendars", "schedule": "schedules"}


def apply_file(owner_id: int, data: dict[str, Any], now: datetime) -> dict[str, Any]:
    """Plan `data` (as ApplyFileIn loads it) against the owner's objects and carry the plan out (a dry run:
    and roll it back). Answers the steps, each created object's id (a webhook's secret, shown this once) and
    the warnings of what was made or changed."""
    planner = _Planner(owner_id, data["file"], data["prune"])
    plan = planner.plan()
    db.session.rollback()  # the read ends here: each change takes its own locks
    changes, places = _changes(plan, planner.where)
    count = sum(len(items) for kinds in changes.values() for items in kinds.values())
    if count > applying.MAX_CHANGES:
        raise Invalid({"file": [f"{count} changes; at most {applying.MAX_CHANGES} in one apply: apply the file "
                                "in parts"]})
    warnings: list[str] = []
    if count:
        try:
            made = applying.apply(owner_id, {**changes, "dry_run": data["dry_run"]}, now)
        except applying.StepRefused as exc:
            where, label = places[exc.where]
            raise applying.StepRefused(where, exc.name, exc.cause, label) from exc.cause
        _note_made(plan, made)
        warnings = made["warnings"]
    return {"dry_run": data["dry_run"], "steps": [step.as_dict() for step in plan.steps], "warnings": warnings}


class _Planner:
    def __init__(self, owner_id: int, file: dict[str, Any], prune: bool) -> None:
        self.owner_id, self.file, self.prune = owner_id, file, prune
        self.where: dict[tuple[str, str], str] = {}  # (kind, name): its place in the file
        self.flows: dict[str, list[Workflow]] = {}  # the owner's workflows the file names, by name

    def plan(self) -> Plan:
        steps = [*self._workflows(), *self._webhooks(), *self._calendars()]
        specs = self.file.get("schedules") or []
        steps += upstream_first(self._schedules(specs), {s["key"]: (s.get("after") or {}).get("schedule")
                                                         for s in specs})
        if self.prune:
            listed = {spec["key"] for spec in specs}
            keyed = db.session.execute(self._owned(select(Schedule.key, Schedule.id), Schedule)
                                       .where(Schedule.key.is_not(None)).order_by(Schedule.key))
            steps += [Step("schedule", key, DELETE, target=id_) for key, id_ in keyed if key not in listed]
        if self.prune and "calendars" in self.file:
            listed = {spec["name"] for spec in self.file["calendars"]}
            steps += [Step("calendar", c.name, DELETE, target=c.id) for c in self._calendar_rows()
                      if c.name not in listed]
        return Plan(steps)

    def _owned(self, statement: Any, model: Any) -> Any:
        return scoped(statement, model, self.owner_id).where(model.owner_id == self.owner_id)

    def _named(self, model: type[M], column: Any, names: set[str]) -> Iterator[M]:
        for batch in in_batches(sorted(names)):
            yield from db.session.scalars(self._owned(select(model), model).where(column.in_(batch)))

    def _workflows(self) -> list[Step]:
        specs = self.file.get("workflows") or []
        names = {spec["name"] for spec in specs} | {spec["workflow"] for spec in self.file.get("schedules") or []}
        for workflow in self._named(Workflow, Workflow.name, names):
            self.flows.setdefault(workflow.name, []).append(workflow)
        steps = []
        for index, spec in enumerate(specs):
            where = self.where[("workflow", spec["name"])] = f"file.workflows.{index}"
            found = self.flows.get(spec["name"], [])
            if len(found) > 1:
                raise Invalid({f"{where}.name": [f"{len(found)} of your workflows are named {spec['name']!r}: "
                                                 "rename all but one"]})
            if not found:
                steps.append(Step("workflow", spec["name"], CREATE, body=dict(spec)))
                continue
            given = {name: value for name, value in spec.items() if name != "name"}
            changes = workflow_changes(given, found[0], workflow_defaults() if self.prune else {})
            steps.append(Step("workflow", spec["name"], UPDATE if changes else UNCHANGED, changes,
                              {name: new for name, (_, new) in changes.items()}, found[0].id))
        return steps

    def _webhooks(self) -> list[Step]:
        """Matched by url; a changed list of event types is one change (the secret and the delivery log stay)."""
        if "webhooks" not in self.file:
            return []
        rows = list(db.session.scalars(self._owned(select(Webhook), Webhook).order_by(Webhook.id)))
        steps = []
        for index, spec in enumerate(self.file["webhooks"]):
            where = self.where[("webhook", spec["url"])] = f"file.webhooks.{index}"
            found = [row for row in rows if row.url == spec["url"]]
            wanted = sorted(set(spec["event_types"]))
            if len(found) > 1:
                raise Invalid({f"{where}.url": [f"{len(found)} of your webhooks send to {spec['url']}: delete all "
                                                "but one (recur webhooks delete ID)"]})
            if not found:
                steps.append(Step("webhook", spec["url"], CREATE, body={"url": spec["url"], "event_types": wanted}))
                continue
            now = sorted(set(found[0].event_types))
            changes = {"event_types": (now, wanted)} if now != wanted else {}
            steps.append(Step("webhook", spec["url"], UPDATE if changes else UNCHANGED, changes,
                              {"event_types": wanted} if changes else {}, found[0].id))
        if self.prune:
            listed = {spec["url"] for spec in self.file["webhooks"]}
            steps += [Step("webhook", row.url, DELETE, target=row.id) for row in rows if row.url not in listed]
        return steps

    def _calendar_rows(self) -> list[Calendar]:
        return list(db.session.scalars(self._owned(select(Calendar), Calendar).order_by(Calendar.id)
                                       .limit(MAX_CALENDARS)))

    def _calendars(self) -> list[Step]:
        """Created or changed before the schedules, which may name them; only the fields given are compared."""
        if "calendars" not in self.file:
            return []
        rows = {row.name: row for row in self._calendar_rows()}
        steps = []
        for index, spec in enumerate(self.file["calendars"]):
            self.where[("calendar", spec["name"])] = f"file.calendars.{index}"
            found = rows.get(spec["name"])
            if found is None:
                steps.append(Step("calendar", spec["name"], CREATE, body=dict(spec)))
                continue
            changes = {name: (getattr(found, name), _as_stored(name, value)) for name, value in spec.items()
                       if name != "name" and getattr(found, name) != _as_stored(name, value)}
            steps.append(Step("calendar", spec["name"], UPDATE if changes else UNCHANGED, changes,
                              {name: spec[name] for name in changes}, found.id))
        return steps

    def _schedules(self, specs: list[dict[str, Any]]) -> list[Step]:
        declared = {spec["name"] for spec in self.file.get("workflows") or []}
        for index, spec in enumerate(specs):
            self.where[("schedule", spec["key"])] = f"file.schedules.{index}"
            found = len(self.flows.get(spec["workflow"], []))
            if spec["workflow"] not in declared and found != 1:
                raise Invalid({f"file.schedules.{index}.workflow": [
                    f"no single workflow named {spec['workflow']!r} in the file or among yours ({found or 'none'} "
                    "found)"]})
        rows = {row.key: row for row in self._named(Schedule, Schedule.key, {spec["key"] for spec in specs})}
        upstreams = keys_of(self.owner_id, {r.after_schedule_id for r in rows.values() if r.after_schedule_id})
        flow_ids = {name: found[0].id for name, found in self.flows.items() if len(found) == 1}
        flow_names = {id_: name for id_, name in db.session.execute(select(Workflow.id, Workflow.name).where(
            Workflow.id.in_({row.workflow_id for row in rows.values()})))} if rows else {}
        calendar_names = {c.id: c.name for c in self._calendar_rows()} \
            if any("calendar" in spec for spec in specs) else {}
        steps = []
        for spec in specs:
            key, row = spec["key"], rows.get(spec["key"])
            if row is None:
                steps.append(Step("schedule", key, CREATE, body={"name": key, **spec}, workflow=spec["workflow"]))
                continue
            given = {name: value for name, value in spec.items() if name not in ("key", "workflow", "calendar")}
            changes, body = schedule_changes(given, row, upstreams.get(row.after_schedule_id or ""), whole=False)
            if "calendar" in spec:
                now = calendar_names.get(row.calendar_id) if row.calendar_id is not None else None
                if now != spec["calendar"]:
                    changes["calendar"], body["calendar"] = (now, spec["calendar"]), spec["calendar"]
            if flow_ids.get(spec["workflow"]) != row.workflow_id:
                changes["workflow"] = (flow_names.get(row.workflow_id), spec["workflow"])
                body["workflow"] = spec["workflow"]
            steps.append(Step("schedule", key, UPDATE if changes else UNCHANGED, changes, body, row.id))
        return steps


def _as_stored(name: str, value: Any) -> Any:
    """A calendar's field as its row holds it (a country upper-case; no list of dates as an empty one)."""
    if name == "country" and isinstance(value, str):
        return value.strip().upper()
    if name in ("dates", "removed") and value is None:
        return []
    return value


def _changes(plan: Plan, where: dict[tuple[str, str], str]
             ) -> tuple[dict[str, dict[str, list[Any]]], dict[str, tuple[str, str]]]:
    """The plan as services.apply takes it (per kind: create, update by id, delete), and each change's place
    there (schedules.create.0) mapped to its place in the file and how the answer names it."""
    changes: dict[str, dict[str, list[Any]]] = {}
    places: dict[str, tuple[str, str]] = {}
    for step in plan.steps:
        if step.action == UNCHANGED:
            continue
        listed = changes.setdefault(PLURAL[step.kind], {}).setdefault(step.action, [])
        place = f"{PLURAL[step.kind]}.{step.action}.{len(listed)}"
        places[place] = (where.get((step.kind, step.name), place), f"{step.kind} {step.name}")
        if step.action == CREATE:
            listed.append(step.body)
        elif step.action == UPDATE:
            listed.append({"id": step.target, "changed": step.body})
        else:
            listed.append(step.target)
    return changes, places


def _note_made(plan: Plan, made: dict[str, Any]) -> None:
    """Each created step's id (a webhook's secret too), from the answer's lists, which keep the plan's order."""
    for kind, plural in PLURAL.items():
        created = [step for step in plan.steps if step.kind == kind and step.action == CREATE]
        for step, answer in zip(created, made[plural], strict=True):
            step.target, step.secret = answer.id, answer.secret
