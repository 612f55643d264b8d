"""A schedule's runs: the list, and the runs outside the chain asked for over HTTP (trigger now, backfill a
range of nominal times), with the backfills' progress."""

from __future__ import annotations

from typing import Any

from flask import Response, jsonify
from flask.views import MethodView

from recur_server.api.blueprint import api
from recur_server.api.errors import ApiError, not_found, validation_error
from recur_server.api.schedules import with_schedule
from recur_server.auth.scope import caller
from recur_server.infra import clock
from recur_server.infra.extensions import db
from recur_server.models import Backfill, RunTrigger, Schedule
from recur_server.schemas.fields import iso
from recur_server.schemas.runs import (
    BackfillIn,
    BackfillOut,
    BackfillPage,
    BackfillPageIn,
    BackfillPlanOut,
    IdempotencyIn,
    RunDetailOut,
    RunPage,
    RunPageIn,
    TriggeredOut,
    TriggerIn,
)
from recur_server.services.outside_runs import requests
from recur_server.services.queries import Page, RunDetail, backfill_page, is_schedule_id, run_detail, run_page

_PLAN = BackfillPlanOut()


@api.route("/schedules/<path:schedule_id>/runs/", endpoint="schedule_runs")
class ScheduleRuns(MethodView):
    @with_schedule()
    @api.arguments(RunPageIn, location="query")
    @api.response(200, RunPage)
    @api.errors(404)
    def get(self, query: dict[str, Any], schedule: Schedule) -> Page:
        """A schedule's runs, newest first

        Each page is read through an index, however long the history: `next` is the cursor of the page
        after it (null on the last), `total` counts at most 10,000 runs (`total_capped` says when there are
        more), and `offset` goes at most 10,000 runs deep.
        """
        return run_page(schedule, query["limit"], query["offset"], query.get("cursor"))


@api.route("/schedules/<path:schedule_id>/runs/<run_id>/", endpoint="schedule_run")
class ScheduleRun(MethodView):
    @with_schedule()
    @api.response(200, RunDetailOut)
    @api.errors(404)
    def get(self, schedule: Schedule, run_id: str) -> RunDetail:
        """One run, with what its task left behind

        The run's fields as the list gives them, and its error's traceback, the task's captured stdout and
        stderr (`output`), its log lines (`logs`) and its return value (`result`), each kept within
        RECUR_RUN_OUTPUT_BYTES as its head and tail; they go with the run when retention deletes it.
        """
        found = run_detail(schedule, run_id)
        if found is None:
            raise not_found("run", run_id)
        return found


@api.route("/schedules/<path:schedule_id>/trigger/", endpoint="schedule_trigger")
class ScheduleTrigger(MethodView):
    @with_schedule()
    @api.arguments(TriggerIn, required=False)
    @api.arguments(IdempotencyIn, location="headers")
    @api.response(202, TriggeredOut)
    @api.errors(404, 409)
    def post(self, body: dict[str, Any], headers: dict[str, Any], schedule: Schedule) -> dict[str, Any]:
        """Start one run now, outside the chain

        scheduled_for is now; trigger `manual`. It does not count against total_repeats, leaves next_run_at
        alone and works on a paused schedule. The schedule's overlap policy applies unless the body gives one.
        With an Idempotency-Key header, a retry of the request gets the first answer and starts nothing more.
        """
        run = requests.trigger(schedule, caller().id, clock.utcnow(), body.get("overlap"), headers.get("key"))
        return {"run_id": run.run_id, "schedule_id": schedule.id, "scheduled_for": run.scheduled_for,
                "trigger": RunTrigger.MANUAL.value}


@api.route("/schedules/<path:schedule_id>/backfill/", endpoint="schedule_backfill")
class ScheduleBackfill(MethodView):
    @with_schedule()
    @api.arguments(BackfillIn)
    @api.response(202, BackfillOut)
    @api.alt_response(200, schema=BackfillPlanOut, description="A dry run: the times it would run.", success=True)
    @api.errors(404, 409)
    def post(self, data: dict[str, Any], schedule: Schedule) -> Backfill | Response:
        """Run the schedule's nominal times in a range, in order

        Every nominal time of the schedule's timing in [start, end), windows and exclusions applied, each
        run with its own scheduled_for and trigger `backfill`, one at a time unless `overlap` says otherwise
        (allow_all runs them side by side). At most 1,000 times; `dry_run` lists them and runs nothing.
        """
        try:
            times = requests.backfill_times(schedule, data["start"], data["end"])
        except requests.TooMany:
            raise  # a refusal, answered in recur_server.api.errors
        except Exception as exc:  # the stored timing no longer builds (or cannot be walked): this operation's 409
            raise ApiError(409, "conflict", f"The schedule's timing is invalid: {exc}") from exc
        if data["dry_run"]:  # the other answer this operation declares, dumped through its schema
            return jsonify(_PLAN.dump({"dry_run": True, "total": len(times), "times": [iso(t) for t in times]}))
        if not times:
            raise validation_error({"start": ["the range holds no nominal time of this schedule."]})
        return requests.start_backfill(schedule, data["start"], data["end"], times, data.get("overlap"),
                                         clock.utcnow())


@api.route("/schedules/<path:schedule_id>/backfills/", endpoint="schedule_backfills")
class ScheduleBackfills(MethodView):
    @with_schedule()
    @api.arguments(BackfillPageIn, location="query")
    @api.response(200, BackfillPage)
    @api.errors(404)
    def get(self, query: dict[str, Any], schedule: Schedule) -> Page:
        """A schedule's backfills, newest first, with their progress

        A page at a time after a cursor (`next`), one range of the index (schedule_id, created_at, id).
        """
        return backfill_page(schedule, query["limit"], query["offset"], query.get("cursor"))


@api.route("/schedules/<path:schedule_id>/backfills/<backfill_id>/", endpoint="schedule_backfill_item")
class ScheduleBackfillItem(MethodView):
    @with_schedule()
    @api.response(200, BackfillOut)
    @api.errors(404)
    def delete(self, schedule: Schedule, backfill_id: str) -> Backfill:
        """Cancel a backfill: no more of its runs start

        The run going on, if any, is left to end; the times not started are not run.
        """
        backfill = db.session.get(Backfill, backfill_id) if is_schedule_id(backfill_id) else None  # a UUID too
        if backfill is None or backfill.schedule_id != schedule.id:
            raise not_found("backfill", backfill_id)
        requests.cancel_backfill(backfill, clock.utcnow())
        return backfill
