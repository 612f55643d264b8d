"""Runs outside the chain, asked for over HTTP: trigger now, and backfill a range of nominal times."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Any

from flask import Response, jsonify, request
from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError

from app import clock
from app.api.contract import documented
from app.api.errors import ApiError, not_found, validation_error
from app.api.schemas import (
    MAX_BACKFILL_TIMES,
    BackfillIn,
    BackfillOut,
    BackfillPage,
    BackfillPlanOut,
    TriggeredOut,
    TriggerIn,
    dump,
    iso,
)
from app.api.views import _body, _schedule_or_404, _schema, api
from app.auth.scope import caller
from app.chain import outside, planning
from app.extensions import db
from app.models import Backfill, Run, RunStatus, RunTrigger, TriggerRequest
from app.policies import ticks_between

IDEMPOTENCY_KEY_MAX = 200


def _idempotency_key() -> str | None:
    key = request.headers.get("Idempotency-Key")
    if key is None:
        return None
    if not 1 <= len(key) <= IDEMPOTENCY_KEY_MAX or not key.isprintable():
        raise validation_error({"Idempotency-Key": [f"must be 1 to {IDEMPOTENCY_KEY_MAX} printable characters."]},
                               "The request headers are invalid.")
    return key


@api.post("/schedules/<schedule_id>/trigger/")
@documented(summary="Start one run now, outside the chain", ok=202, answer=TriggeredOut, body=TriggerIn,
            body_optional=True, errors=[404, 409])
def trigger_schedule(schedule_id: str) -> tuple[Response, int]:
    """scheduled_for is now; trigger `manual`. It does not count against total_repeats, leaves next_run_at
    alone and works on a paused schedule. The schedule's overlap policy applies unless the body gives one.
    With an Idempotency-Key header, a retry of the request gets the first answer and starts nothing more."""
    schedule = _schedule_or_404(schedule_id)
    overlap = _body(_schema(TriggerIn)).get("overlap") if request.get_data(cache=True) else None
    key = _idempotency_key()
    owner_id = caller().id
    now = clock.utcnow()
    if key is not None:
        first = _first_answer(owner_id, key, schedule.id)
        if first is not None:
            return first
        run_id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"recur-trigger:{owner_id}:{key}"))
        db.session.add(TriggerRequest(owner_id=owner_id, idempotency_key=key, schedule_id=schedule.id,
                                      run_id=run_id, scheduled_for=now, created_at=now))
        try:
            db.session.commit()
        except IntegrityError:  # the same key, at the same moment, from another request: its answer stands
            db.session.rollback()
            first = _first_answer(owner_id, key, schedule.id)
            if first is None:
                raise
            return first
    else:
        run_id = str(uuid.uuid4())
    outside.enqueue(schedule.id, run_id, now, RunTrigger.MANUAL.value, overlap, schedule.timeout_seconds)
    return _triggered(schedule.id, run_id, now)


def _triggered(schedule_id: str, run_id: str, nominal: datetime) -> tuple[Response, int]:
    return jsonify(dump(TriggeredOut, {"run_id": run_id, "schedule_id": schedule_id, "scheduled_for": nominal,
                                       "trigger": RunTrigger.MANUAL.value})), 202


def _first_answer(owner_id: int, key: str, schedule_id: str) -> tuple[Response, int] | None:
    """The answer already given for this key, or None. Its run is enqueued again if it never started (the
    process that answered may have died before enqueueing): the run's ID makes a second start a no-op."""
    first = db.session.scalar(select(TriggerRequest).where(
        (TriggerRequest.owner_id == owner_id) & (TriggerRequest.idempotency_key == key)))
    if first is None:
        return None
    if first.schedule_id != schedule_id:
        raise ApiError(409, "conflict", "This Idempotency-Key was used for another schedule.",
                       {"Idempotency-Key": ["was used for another schedule."]})
    if db.session.get(Run, first.run_id) is None:
        schedule = _schedule_or_404(schedule_id)
        outside.enqueue(schedule_id, first.run_id, first.scheduled_for, RunTrigger.MANUAL.value, None,
                        schedule.timeout_seconds)
    return _triggered(schedule_id, first.run_id, first.scheduled_for)


@api.post("/schedules/<schedule_id>/backfill/")
@documented(summary="Run the schedule's nominal times in a range, in order", ok=202, answer=BackfillOut,
            body=BackfillIn, errors=[404], extra={200: ("A dry run: the times it would run.", BackfillPlanOut)})
def backfill_schedule(schedule_id: str) -> tuple[Response, int]:
    """Every nominal time of the schedule's timing in [start, end), windows and exclusions applied, each
    run with its own scheduled_for and trigger `backfill`, one at a time unless `overlap` says otherwise
    (allow_all runs them side by side). At most 1,000 times; `dry_run` lists them and runs nothing."""
    schedule = _schedule_or_404(schedule_id)
    data = _body(_schema(BackfillIn))
    try:
        spec = planning.spec_of(schedule)
    except Exception as exc:
        raise ApiError(409, "conflict", f"The schedule's timing is invalid: {exc}") from exc
    start, end = data["start"], data["end"]
    first = spec.next_after(start - _MICROSECOND)
    times = [] if first is None or first >= end else [first] + ticks_between(
        spec.next_after, first, end, limit=MAX_BACKFILL_TIMES, inclusive_end=False)
    if len(times) >= MAX_BACKFILL_TIMES and (len(times) > MAX_BACKFILL_TIMES or _more_after(spec, times[-1], end)):
        raise validation_error({"end": [f"the range holds more than {MAX_BACKFILL_TIMES} nominal times; "
                                        "backfill it in parts."]})
    if data["dry_run"]:
        return jsonify(dump(BackfillPlanOut, {"dry_run": True, "total": len(times),
                                              "times": [iso(t) for t in times]})), 200
    if not times:
        raise validation_error({"start": ["the range holds no nominal time of this schedule."]})
    now = clock.utcnow()
    backfill = Backfill(schedule_id=schedule.id, start_at=start, end_at=end, overlap=data.get("overlap"),
                        times=[t.isoformat() for t in times], total=len(times), started=0, status="running",
                        created_at=now)
    db.session.add(backfill)
    db.session.commit()
    outside.start_backfill(backfill.id)
    return jsonify(_backfill_out(backfill)), 202


def _more_after(spec: Any, last: datetime, end: datetime) -> bool:
    following = spec.next_after(last)
    return following is not None and following < end


_MICROSECOND = timedelta(microseconds=1)


def _backfill_out(backfill: Backfill) -> dict[str, Any]:
    done = db.session.scalar(select(func.count()).select_from(Run).where(
        (Run.backfill_id == backfill.id) & (Run.status != RunStatus.RUNNING.value)))
    return dump(BackfillOut, {
        "id": backfill.id, "schedule_id": backfill.schedule_id, "start": backfill.start_at, "end": backfill.end_at,
        "overlap": backfill.overlap, "status": backfill.status, "total": backfill.total, "done": done,
        "times": backfill.times, "created_at": backfill.created_at, "finished_at": backfill.finished_at,
    })


@api.get("/schedules/<schedule_id>/backfills/")
@documented(summary="A schedule's backfills, newest first, with their progress", answer=BackfillPage, errors=[404])
def list_backfills(schedule_id: str) -> Response:
    schedule = _schedule_or_404(schedule_id)
    rows = db.session.scalars(
        select(Backfill).where(Backfill.schedule_id == schedule.id).order_by(Backfill.created_at.desc()).limit(100))
    return jsonify({"items": [_backfill_out(b) for b in rows]})


@api.delete("/schedules/<schedule_id>/backfills/<backfill_id>/")
@documented(summary="Cancel a backfill: no more of its runs start", answer=BackfillOut, errors=[404])
def cancel_backfill(schedule_id: str, backfill_id: str) -> Response:
    """The run going on, if any, is left to end; the times not started are not run."""
    schedule = _schedule_or_404(schedule_id)
    backfill = db.session.get(Backfill, backfill_id) if len(backfill_id) <= 36 else None
    if backfill is None or backfill.schedule_id != schedule.id:
        raise not_found("backfill", backfill_id)
    if backfill.status == "running":
        backfill.status = "cancelled"
        backfill.finished_at = clock.utcnow()
        db.session.commit()
    return jsonify(_backfill_out(backfill))
