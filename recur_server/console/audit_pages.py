"""A schedule's audit trail in the console: who created, changed, paused, resumed or deleted it, newest first,
a page at a time by cursor through one range of the index (schedule_id, at, id), as the API's
/schedules/{id}/events/. Kept after the schedule is deleted, so its page answers "who deleted it?"."""

from __future__ import annotations

from flask import abort, render_template
from sqlalchemy import select

from recur_server.auth.models import ScheduleEvent
from recur_server.auth.scope import scoped
from recur_server.console import session
from recur_server.console.paging import after_of
from recur_server.console.views import PAGE, Page, console
from recur_server.services import queries


@console.get("/schedules/<schedule_id>/events")
@session.signed_in
def schedule_events(schedule_id: str) -> Page:
    if not queries.is_schedule_id(schedule_id):
        abort(404, description=f"schedule {schedule_id} does not exist")
    after = after_of(queries.SCHEDULE_EVENTS)
    mine = scoped(select(ScheduleEvent), ScheduleEvent).where(ScheduleEvent.schedule_id == schedule_id)
    found = queries.keyset_page(mine, queries.SCHEDULE_EVENTS, PAGE, after=after)
    schedule = queries.owned_schedule(schedule_id)
    if not found.total and schedule is None:
        abort(404, description=f"schedule {schedule_id} does not exist")
    return render_template("schedule_events.html", s=schedule, schedule_id=schedule_id, events=found.items,
                           total=found.total, total_capped=found.total_capped, older=found.next,
                           newest=after is not None)
