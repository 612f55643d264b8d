"""/schedules/: a schedule's life over HTTP (create, read, edit, pause, resume, delete) and the preview of a
timing. The rules are recur_server.services.schedules' (the console calls the same service); its refusals are answered
in
recur_server.api.errors."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar, cast

from flask.views import MethodView

from recur_server.api.blueprint import api
from recur_server.api.errors import not_found
from recur_server.auth.scope import caller
from recur_server.infra import clock
from recur_server.models import Schedule
from recur_server.schemas.fields import Joined, iso
from recur_server.schemas.schedules import (
    BatchDeleteIn,
    BatchDeleteOut,
    PauseIn,
    PreviewIn,
    PreviewOut,
    ScheduleDescribeOut,
    ScheduleDetailOut,
    ScheduleIn,
    ScheduleListIn,
    SchedulePage,
)
from recur_server.services import history, known_tasks, schedules
from recur_server.services.queries import (
    Page,
    ScheduleFilter,
    owned_schedule,
    owned_schedule_ids,
    schedule_named,
    schedule_page,
    timing_text,
)
from recur_server.services.queries import upcoming as next_times

F = TypeVar("F", bound=Callable[..., Any])


def with_schedule(for_update: bool = False) -> Callable[[F], F]:
    """A view method's outermost decorator: the URL's schedule_id (an id, or a key: a `<path:...>` segment, as a
    key may hold `/`) becomes the caller's schedule, read once and before anything of the request (an unknown
    schedule is not found whatever the body says; another owner's is as absent as one that never was). The view
    answers with that row, and a service changes it: locked FOR UPDATE with `for_update`."""

    def decorate(view: F) -> F:
        @wraps(view)
        def found(*args: Any, schedule_id: str, **kwargs: Any) -> Any:
            schedule = owned_schedule(schedule_id, for_update)
            if schedule is None:
                raise not_found("schedule", schedule_id)
            return view(*args, schedule=schedule, **kwargs)

        return cast(F, found)

    return decorate


def detail(schedule: Schedule, with_history: bool = False) -> Joined:
    """A schedule joined with what its timing says and its next nominal times (ScheduleDetailOut), and, for a
    read, what its run history adds up to (ScheduleDescribeOut)."""
    description, now = timing_text(schedule), clock.utcnow()
    upcoming = [iso(t) for t in next_times(schedule, now)]
    warnings = known_tasks.warnings_for(schedule, now)
    if with_history:
        return Joined(schedule, timing_description=description, next_runs=upcoming, stats=history.stats(schedule),
                      recent_runs=history.recent(schedule), warnings=warnings)
    return Joined(schedule, timing_description=description, next_runs=upcoming, warnings=warnings)


@api.route("/schedules/", endpoint="schedules")
class Schedules(MethodView):
    @api.arguments(ScheduleListIn, location="query")
    @api.response(200, SchedulePage)
    def get(self, query: dict[str, Any]) -> Page:
        """List schedules, newest first

        A page at a time after a cursor (`next`), one range of the index (owner_id, created_at, id), or
        (created_at, id) for an admin's whole list; `status`, `workflow_id` and `key` are checked on the
        rows read along it.
        """
        filters = ScheduleFilter(status=query.get("status"), workflow_id=query.get("workflow_id"),
                                 key=query.get("key"), owner_id=query.get("owner_id"))
        return schedule_page(filters, query["limit"], query["offset"], query.get("cursor"))

    @api.arguments(ScheduleIn)
    @api.response(201, ScheduleDetailOut)
    @api.errors(409)
    def post(self, data: dict[str, Any]) -> Joined:
        """Create a schedule"""
        return detail(schedules.create({**data, "owner_id": caller().id}, clock.utcnow()))


@api.route("/schedules/preview/", endpoint="schedule_preview")
class SchedulePreview(MethodView):
    @api.arguments(PreviewIn)
    @api.response(200, PreviewOut)
    def post(self, data: dict[str, Any]) -> dict[str, Any]:
        """Describe a timing and list its next nominal times"""
        count = data.pop("count")
        spec, times = schedules.preview({**data, "owner_id": caller().id}, clock.utcnow(), count)
        return {"description": spec.describe(), "timezone": spec.tz.key,
                "next_runs": [{"utc": iso(t), "local": t.astimezone(spec.tz).isoformat()} for t in times]}


@api.route("/schedules/<path:schedule_id>/", endpoint="schedule")
class ScheduleItem(MethodView):
    @with_schedule()
    @api.response(200, ScheduleDescribeOut)
    @api.errors(404)
    def get(self, schedule: Schedule) -> Joined:
        """Get a schedule, with what its run history adds up to"""
        return detail(schedule, with_history=True)

    @with_schedule(for_update=True)
    @api.arguments(ScheduleIn(partial=True))
    @api.response(200, ScheduleDetailOut)
    @api.errors(404, 409)
    def patch(self, data: dict[str, Any], schedule: Schedule) -> Joined:
        """Edit a schedule (a timing change re-plans it)"""
        return detail(schedules.update(schedule, data, clock.utcnow()))

    @api.response(204)
    @api.errors(404)
    def delete(self, schedule_id: str) -> None:
        """Delete a schedule"""
        if not schedules.remove_selected(schedule_named(schedule_id), clock.utcnow()):  # by its id or its key
            raise not_found("schedule", schedule_id)


@api.route("/schedules/<path:schedule_id>/pause/", endpoint="schedule_pause")
class SchedulePause(MethodView):
    @with_schedule(for_update=True)
    @api.arguments(PauseIn, required=False)
    @api.response(200, ScheduleDetailOut)
    @api.errors(404, 409)
    def post(self, data: dict[str, Any], schedule: Schedule) -> Joined:
        """Pause a schedule, with an optional note

        No body, {} and an empty note all pause without a note.
        """
        return detail(schedules.pause(schedule, clock.utcnow(), data.get("note") or None))


@api.route("/schedules/<path:schedule_id>/resume/", endpoint="schedule_resume")
class ScheduleResume(MethodView):
    @with_schedule(for_update=True)
    @api.response(200, ScheduleDetailOut)
    @api.errors(404, 409, 422)
    def post(self, schedule: Schedule) -> Joined:
        """Resume a paused schedule, or revive a dead one

        Planned from now: its next tick is the first after now. A dead schedule (its last tick's retries ran
        out) starts its retries over, keeps its counters, and is recorded as `revive` in its audit trail. A
        schedule whose timing has no run after now, or one neither paused nor dead, is not resumed (409).
        """
        return detail(schedules.resume(schedule, clock.utcnow()))


@api.route("/schedules/batch-delete/", endpoint="schedule_batch_delete")
class ScheduleBatchDelete(MethodView):
    @api.arguments(BatchDeleteIn)
    @api.response(200, BatchDeleteOut)
    def post(self, data: dict[str, Any]) -> dict[str, list[str]]:
        """Delete several schedules

        Each is a schedule's id or key. Another owner's are left alone and reported as not found, like ids that
        never were; each is reported as it was given.
        """
        found = owned_schedule_ids(data["schedule_ids"])
        deleted = set(schedules.remove(list(dict.fromkeys(found.values())), clock.utcnow()))
        return {"deleted": [i for i in dict.fromkeys(data["schedule_ids"]) if found.get(i) in deleted],
                "not_found": [i for i in data["schedule_ids"] if found.get(i) not in deleted]}
