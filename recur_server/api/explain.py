"""GET /schedules/{id}/explain/?at=...: why a schedule did or didn't run at a time (recur_server.services.explain
gathers
the facts, recur_server.policies.explain decides)."""

from __future__ import annotations

from typing import Any

from flask.views import MethodView

from recur_server import timing
from recur_server.api.blueprint import api
from recur_server.api.errors import ApiError
from recur_server.api.schedules import with_schedule
from recur_server.infra import clock
from recur_server.models import Schedule
from recur_server.policies.explain import Explanation
from recur_server.schemas.explain import ExplainIn, ExplainOut
from recur_server.services.explain import explain_at


@api.route("/schedules/<path:schedule_id>/explain/", endpoint="schedule_explain")
class ScheduleExplain(MethodView):
    @with_schedule()
    @api.arguments(ExplainIn, location="query")
    @api.response(200, ExplainOut)
    @api.errors(404, 409)
    def get(self, query: dict[str, Any], schedule: Schedule) -> dict[str, Any]:
        """Why a schedule did or didn't run at a time

        For the schedule's tick at `at`, or its timing's nearest tick to it: it ran (which run, how late, its
        outcome), it was missed or skipped (the reason, the run that held it), it was not a tick (a constraint
        or its calendar passed over it), the schedule was paused then (by whom) or its breaker open, or when it
        will run. Reads a few rows around the tick from the run history, the audit trail and the breaker's
        history, never the whole of them.
        """
        now = clock.utcnow()
        at = query.get("at") or now
        try:
            answer = explain_at(schedule, at, now)
        except timing.TimingError as exc:  # its stored timing no longer builds (status invalid)
            raise ApiError(409, "conflict", f"The schedule's stored timing does not build: {exc}") from exc
        return shape(answer, at)


def shape(answer: Explanation, asked: Any) -> dict[str, Any]:
    """The answer as ExplainOut dumps it."""
    return {**answer.__dict__, "asked": asked, "notes": list(answer.notes)}
