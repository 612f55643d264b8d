"""HTTP views: parse, call app.schedules, shape the answer. No chain logic here."""

from __future__ import annotations

import re
from functools import cache
from typing import Any

from flask import Blueprint, Response, g, jsonify, request
from marshmallow import Schema, ValidationError
from redis.exceptions import RedisError
from sqlalchemy import func, select
from sqlalchemy.exc import SQLAlchemyError

from app import clock, history, schedules
from app.api import bodies
from app.api.contract import documented
from app.api.errors import ApiError, not_found, validation_error
from app.api.schemas import (
    INT_MAX,
    BatchDeleteIn,
    BatchDeleteOut,
    HealthOut,
    OwnedPageIn,
    PageIn,
    PauseIn,
    PreviewIn,
    PreviewOut,
    RunBriefOut,
    RunPage,
    ScheduleDescribeOut,
    ScheduleDetailOut,
    ScheduleIn,
    ScheduleListIn,
    SchedulePage,
    WorkflowIn,
    WorkflowOut,
    WorkflowPage,
    dump,
    iso,
    run_out,
    schedule_out,
    workflow_out,
)
from app.auth.scope import caller, get_owned, scoped
from app.background import read_stats
from app.chain import planning
from app.extensions import db, get_redis
from app.models import Run, ScheduledJob, ScheduleStatus, Workflow
from app.tasks import get_task, task_names

api = Blueprint("api", __name__, url_prefix="/api/v1")


@cache
def _schema(cls: type[Schema]) -> Schema:
    """One instance per schema class, made on first use: building one costs more than a load with it."""
    return cls()


def _body(schema: Schema, partial: bool = False) -> dict[str, Any]:
    payload = bodies.json_object()
    try:
        data: dict[str, Any] = schema.load(payload, partial=partial)
    except ValidationError as exc:
        raise validation_error(_messages(exc)) from exc
    return data


def _query(schema: Schema) -> dict[str, Any]:
    try:
        data: dict[str, Any] = schema.load(request.args.to_dict())
    except ValidationError as exc:
        raise validation_error(_messages(exc), "The query string is invalid.") from exc
    return data


def _messages(exc: ValidationError) -> dict[str, Any]:
    messages = exc.messages
    return messages if isinstance(messages, dict) else {"_schema": messages}


def _created(body: dict[str, Any]) -> tuple[Response, int]:
    return jsonify(body), 201


# Schedule IDs are lower-case UUIDs; anything else (a NUL, 5,000 characters) names no schedule, and is
# never sent to the database, which may refuse it (PostgreSQL refuses NUL in text).
_SCHEDULE_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _is_schedule_id(text: str) -> bool:
    return _SCHEDULE_ID.fullmatch(text) is not None


def _known_shape(schedule_id: str) -> str:
    if not _is_schedule_id(schedule_id):
        raise not_found("schedule", schedule_id)
    return schedule_id


def _schedule_or_404(schedule_id: str) -> ScheduledJob:
    """The caller's schedule; another owner's is as absent as one that never was (404)."""
    schedule = get_owned(ScheduledJob, _known_shape(schedule_id))
    if schedule is None:
        raise not_found("schedule", schedule_id)
    return schedule


def _schedule_body(schedule: ScheduledJob) -> dict[str, Any]:
    """The detail of a schedule; a GET adds what its run history adds up to (stats, recent_runs)."""
    now = clock.utcnow()
    try:
        description = planning.spec_of(schedule).describe()
        upcoming = [iso(t) for t in schedules.next_runs(schedule, now)]
    except Exception as exc:  # a row stored before today's checks, or one made invalid: show it, never fail the read
        description, upcoming = f"invalid timing: {exc}", []
    if request.method == "GET":  # what the history adds up to: on a read, not after every change
        return schedule_out(schedule, {
            "timing_description": description, "next_runs": upcoming, "stats": history.stats(schedule),
            "recent_runs": [dump(RunBriefOut, run) for run in history.recent(schedule)]})
    return schedule_out(schedule, {"timing_description": description, "next_runs": upcoming})


def _service(call: Any, *args: Any) -> ScheduledJob:
    try:
        schedule: ScheduledJob = call(*args)
        return schedule
    except LookupError as exc:
        db.session.rollback()
        raise not_found("schedule", args[0]) from exc
    except schedules.Invalid as exc:
        db.session.rollback()
        raise ApiError(422, "validation_error", "The request body is invalid.", exc.errors) from exc
    except schedules.Conflict as exc:
        db.session.rollback()
        raise ApiError(400, "invalid_state", str(exc)) from exc
    except schedules.DuplicateKey as exc:
        db.session.rollback()
        raise ApiError(409, "conflict", str(exc), {"key": [str(exc)]}) from exc


# --- health ------------------------------------------------------------------------------------

@api.get("/health/")
@documented(summary="Health of Redis and the database", answer=HealthOut, auth=False,
            extra={503: ("Redis or the database is unreachable.", HealthOut)})
def health() -> tuple[Response, int]:
    """Whether Redis and the database answer, schedules by status, and the reconciler's running totals."""
    body: dict[str, Any] = {"database": "ok", "redis": "ok"}
    detail = g.get("owner") is not None and g.owner.is_admin  # open to anyone; the detail only to an admin
    try:
        counts = db.session.execute(select(ScheduledJob.status, func.count()).group_by(ScheduledJob.status)).all()
        if detail:
            body["schedules"] = {status.value: 0 for status in ScheduleStatus} | dict(counts)  # `invalid`: 0 too
    except SQLAlchemyError as exc:
        body["database"] = f"unavailable: {type(exc).__name__}"
    try:
        stats = read_stats(get_redis())
        if detail:
            body["reconciler"] = stats
    except RedisError as exc:
        body["redis"] = f"unavailable: {type(exc).__name__}"
    healthy = body["database"] == "ok" and body["redis"] == "ok"
    return jsonify(body), 200 if healthy else 503


# --- workflows ---------------------------------------------------------------------------------

@api.post("/workflows/")
@documented(summary="Create a workflow", ok=201, answer=WorkflowOut, body=WorkflowIn)
def create_workflow() -> tuple[Response, int]:
    data = _body(_schema(WorkflowIn))
    _known_task(data)
    workflow = Workflow(owner_id=caller().id, created_at=clock.utcnow(), **data)
    db.session.add(workflow)
    db.session.commit()
    return _created(workflow_out(workflow))


def _known_task(data: dict[str, Any]) -> None:
    if "task" in data and get_task(data["task"]) is None:
        raise validation_error(
            {"task": [f"unknown task {data['task']!r}; registered tasks: {', '.join(task_names())}"]}
        )


@api.get("/workflows/")
@documented(summary="List workflows", answer=WorkflowPage, query=OwnedPageIn)
def list_workflows() -> Response:
    page = _query(_schema(OwnedPageIn))
    owner_id = page.get("owner_id")
    total = db.session.scalar(scoped(select(func.count()).select_from(Workflow), Workflow, owner_id))
    rows = db.session.scalars(
        scoped(select(Workflow), Workflow, owner_id).order_by(Workflow.id).limit(page["limit"]).offset(page["offset"]))
    return jsonify({"items": [workflow_out(w) for w in rows], "total": total})


def _workflow_or_404(workflow_id: int, for_update: bool = False) -> Workflow:
    # IDs beyond INTEGER's range name no workflow, and the databases refuse to compare with them
    workflow = get_owned(Workflow, workflow_id, for_update) if workflow_id <= INT_MAX else None
    if workflow is None:
        raise not_found("workflow", workflow_id)
    return workflow


@api.get("/workflows/<int:workflow_id>/")
@documented(summary="Get a workflow", answer=WorkflowOut, errors=[404])
def get_workflow(workflow_id: int) -> Response:
    return jsonify(workflow_out(_workflow_or_404(workflow_id)))


@api.patch("/workflows/<int:workflow_id>/")
@documented(summary="Edit a workflow: its name, task and policies", answer=WorkflowOut, body=WorkflowIn,
            errors=[404])
def update_workflow(workflow_id: int) -> Response:
    """A changed task or limit applies to the next run that starts; runs going on are left alone."""
    workflow = _workflow_or_404(workflow_id)
    data = _body(_schema(WorkflowIn), partial=True)
    _known_task(data)
    for name, value in data.items():
        setattr(workflow, name, value)
    db.session.commit()
    return jsonify(workflow_out(workflow))


@api.delete("/workflows/<int:workflow_id>/")
@documented(summary="Delete a workflow and its schedules", ok=204, errors=[404])
def delete_workflow(workflow_id: int) -> tuple[str, int]:
    _workflow_or_404(workflow_id)
    schedule_ids = list(db.session.scalars(select(ScheduledJob.id).where(ScheduledJob.workflow_id == workflow_id)))
    schedules.remove(schedule_ids, clock.utcnow())
    db.session.delete(db.session.get(Workflow, workflow_id))
    db.session.commit()
    return "", 204


# --- schedules ---------------------------------------------------------------------------------

@api.get("/schedules/")
@documented(summary="List schedules", answer=SchedulePage, query=ScheduleListIn)
def list_schedules() -> Response:
    query = _query(_schema(ScheduleListIn))
    where = []
    if "status" in query:
        where.append(ScheduledJob.status == query["status"])
    if "workflow_id" in query:
        where.append(ScheduledJob.workflow_id == query["workflow_id"])
    if "key" in query:
        where.append(ScheduledJob.key == query["key"])
    owner_id = query.get("owner_id")
    total = db.session.scalar(scoped(select(func.count()).select_from(ScheduledJob), ScheduledJob, owner_id)
                              .where(*where))
    rows = db.session.scalars(
        scoped(select(ScheduledJob), ScheduledJob, owner_id).where(*where)
        .order_by(ScheduledJob.created_at.desc(), ScheduledJob.id)
        .limit(query["limit"]).offset(query["offset"])
    )
    return jsonify({"items": [schedule_out(s) for s in rows], "total": total})


@api.post("/schedules/")
@documented(summary="Create a schedule", ok=201, answer=ScheduleDetailOut, body=ScheduleIn, errors=[409])
def create_schedule() -> tuple[Response, int]:
    data = _body(_schema(ScheduleIn))
    data["owner_id"] = caller().id
    schedule = _service(schedules.create, data, clock.utcnow())
    return _created(_schedule_body(schedule))


@api.post("/schedules/preview/")
@documented(summary="Describe a timing and list its next nominal times", answer=PreviewOut, body=PreviewIn)
def preview_schedule() -> Response:
    data = _body(_schema(PreviewIn))
    count = data.pop("count")
    try:
        spec, times = schedules.preview(data, clock.utcnow(), count)
    except schedules.Invalid as exc:
        raise ApiError(422, "validation_error", "The request body is invalid.", exc.errors) from exc
    return jsonify({
        "description": spec.describe(),
        "timezone": spec.tz.key,
        "next_runs": [{"utc": iso(t), "local": t.astimezone(spec.tz).isoformat()} for t in times],
    })


@api.get("/schedules/<schedule_id>/")
@documented(summary="Get a schedule, with what its run history adds up to", answer=ScheduleDescribeOut,
            errors=[404])
def get_schedule(schedule_id: str) -> Response:
    return jsonify(_schedule_body(_schedule_or_404(schedule_id)))


@api.patch("/schedules/<schedule_id>/")
@documented(summary="Edit a schedule (a timing change re-plans it)", answer=ScheduleDetailOut,
            body=ScheduleIn, errors=[404, 409])
def update_schedule(schedule_id: str) -> Response:
    _schedule_or_404(schedule_id)
    data = _body(_schema(ScheduleIn), partial=True)
    return jsonify(_schedule_body(_service(schedules.update, schedule_id, data, clock.utcnow())))


@api.delete("/schedules/<schedule_id>/")
@documented(summary="Delete a schedule", ok=204, errors=[404])
def delete_schedule(schedule_id: str) -> tuple[str, int]:
    if not schedules.remove([_schedule_or_404(schedule_id).id], clock.utcnow()):
        raise not_found("schedule", schedule_id)
    return "", 204


@api.post("/schedules/<schedule_id>/pause/")
@documented(summary="Pause a schedule, with an optional note", answer=ScheduleDetailOut, body=PauseIn,
            body_optional=True, errors=[404])
def pause_schedule(schedule_id: str) -> Response:
    schedule_id = _schedule_or_404(schedule_id).id
    # The body is optional: none at all (as before) pauses without a note; so do {} and an empty note.
    note = _body(_schema(PauseIn)).get("note") if request.get_data(cache=True) else None
    return jsonify(_schedule_body(_service(schedules.pause, schedule_id, clock.utcnow(), note or None)))


@api.post("/schedules/<schedule_id>/resume/")
@documented(summary="Resume a schedule", answer=ScheduleDetailOut, errors=[404])
def resume_schedule(schedule_id: str) -> Response:
    return jsonify(_schedule_body(_service(schedules.resume, _schedule_or_404(schedule_id).id, clock.utcnow())))


@api.post("/schedules/batch-delete/")
@documented(summary="Delete several schedules", answer=BatchDeleteOut, body=BatchDeleteIn)
def batch_delete() -> Response:
    data = _body(_schema(BatchDeleteIn))
    shaped = [i for i in data["schedule_ids"] if _is_schedule_id(i)]
    # Another owner's ids are left alone and reported as not found, like ids that never were.
    owned = list(db.session.scalars(scoped(select(ScheduledJob.id), ScheduledJob).where(ScheduledJob.id.in_(shaped))))
    deleted = schedules.remove(owned, clock.utcnow())
    missing = [i for i in data["schedule_ids"] if i not in set(deleted)]
    return jsonify({"deleted": deleted, "not_found": missing})


@api.get("/schedules/<schedule_id>/runs/")
@documented(summary="A schedule's runs, newest first", answer=RunPage, query=PageIn, errors=[404])
def list_runs(schedule_id: str) -> Response:
    _schedule_or_404(schedule_id)
    page = _query(_schema(PageIn))
    total = db.session.scalar(select(func.count()).select_from(Run).where(Run.schedule_id == schedule_id))
    rows = db.session.scalars(
        select(Run).where(Run.schedule_id == schedule_id)
        .order_by(Run.started_at.desc(), Run.repeat_number.desc(), Run.retry_number.desc())
        .limit(page["limit"]).offset(page["offset"])
    )
    return jsonify({"items": [run_out(r) for r in rows], "total": total})
