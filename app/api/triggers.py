"""Runs outside the chain, asked for over HTTP: trigger now, and backfill a range of nominal times."""

from __future__ import annotations

from typing import Any

from flask import Response, jsonify, request
from sqlalchemy import select

from app import clock, extra_runs
from app.api.contract import documented
from app.api.errors import ApiError, not_found, validation_error
from app.api.schemas import BackfillIn, BackfillOut, BackfillPage, BackfillPlanOut, TriggeredOut, TriggerIn, dump, iso
from app.api.views import _body, _is_schedule_id, _schedule_or_404, _schema, api
from app.auth.scope import caller
from app.extensions import db
from app.models import Backfill, RunTrigger

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
    try:
        run = extra_runs.trigger(schedule, caller().id, clock.utcnow(), overlap, key)
    except extra_runs.KeyReused as exc:
        raise ApiError(409, "conflict", "This Idempotency-Key was used for another schedule.",
                       {"Idempotency-Key": ["was used for another schedule."]}) from exc
    return jsonify(dump(TriggeredOut, {"run_id": run.run_id, "schedule_id": schedule.id,
                                       "scheduled_for": run.scheduled_for, "trigger": RunTrigger.MANUAL.value})), 202


@api.post("/schedules/<schedule_id>/backfill/")
@documented(summary="Run the schedule's nominal times in a range, in order", ok=202, answer=BackfillOut,
            body=BackfillIn, errors=[404, 409], extra={200: ("A dry run: the times it would run.", BackfillPlanOut)})
def backfill_schedule(schedule_id: str) -> tuple[Response, int]:
    """Every nominal time of the schedule's timing in [start, end), windows and exclusions applied, each
    run with its own scheduled_for and trigger `backfill`, one at a time unless `overlap` says otherwise
    (allow_all runs them side by side). At most 1,000 times; `dry_run` lists them and runs nothing."""
    schedule = _schedule_or_404(schedule_id)
    data = _body(_schema(BackfillIn))
    try:
        times = extra_runs.backfill_times(schedule, data["start"], data["end"])
    except extra_runs.TooMany as exc:
        raise validation_error({"end": [f"the range holds more than {extra_runs.MAX_BACKFILL_TIMES} nominal "
                                        "times of this schedule; backfill it in parts."]}) from exc
    except Exception as exc:
        raise ApiError(409, "conflict", f"The schedule's timing is invalid: {exc}") from exc
    if data["dry_run"]:
        return jsonify(dump(BackfillPlanOut, {"dry_run": True, "total": len(times),
                                              "times": [iso(t) for t in times]})), 200
    if not times:
        raise validation_error({"start": ["the range holds no nominal time of this schedule."]})
    backfill = extra_runs.start_backfill(schedule, data["start"], data["end"], times, data.get("overlap"),
                                         clock.utcnow())
    return jsonify(_backfill_out(backfill)), 202


def _backfill_out(backfill: Backfill) -> dict[str, Any]:
    return dump(BackfillOut, {
        "id": backfill.id, "schedule_id": backfill.schedule_id, "start": backfill.start_at, "end": backfill.end_at,
        "overlap": backfill.overlap, "status": backfill.status, "total": backfill.total,
        "done": extra_runs.backfill_done(backfill), "times": backfill.times, "created_at": backfill.created_at,
        "finished_at": backfill.finished_at,
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
    backfill = db.session.get(Backfill, backfill_id) if _is_schedule_id(backfill_id) else None  # a UUID too
    if backfill is None or backfill.schedule_id != schedule.id:
        raise not_found("backfill", backfill_id)
    extra_runs.cancel_backfill(backfill, clock.utcnow())
    return jsonify(_backfill_out(backfill))
