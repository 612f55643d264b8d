"""The audit trails: who changed a schedule (/schedules/{id}/events/), and who made or deleted an owner
(/audit/owners/, admins only)."""

from __future__ import annotations

from typing import Any

from flask.views import MethodView
from sqlalchemy import select

from recur_server.api.blueprint import api
from recur_server.api.errors import not_found
from recur_server.api.owners import admin_only
from recur_server.auth.models import OwnerEvent, ScheduleEvent
from recur_server.auth.scope import scoped
from recur_server.schemas.owners import EventPage, EventPageIn, OwnerEventPage, OwnerEventPageIn
from recur_server.services.queries import OWNER_EVENTS, SCHEDULE_EVENTS, Page, keyset_page, owned_schedule, schedule_ref


@api.route("/audit/owners/", endpoint="owner_audit")
class OwnerAudit(MethodView):
    @api.arguments(OwnerEventPageIn, location="query")
    @api.response(200, OwnerEventPage)
    @api.errors(403)
    def get(self, query: dict[str, Any]) -> Page:
        """Owners made and deleted, and by whom, newest first (admin)

        A page at a time after a cursor (`next`), through the primary key.
        """
        admin_only()
        return keyset_page(select(OwnerEvent), OWNER_EVENTS, query["limit"], query["offset"], query.get("cursor"))


@api.route("/schedules/<path:schedule_id>/events/", endpoint="schedule_events")
class ScheduleEvents(MethodView):
    @api.arguments(EventPageIn, location="query")
    @api.response(200, EventPage)
    @api.errors(404)
    def get(self, query: dict[str, Any], schedule_id: str) -> Page:
        """Who changed a schedule, newest first

        Kept after the schedule is deleted, so "who deleted it?" has an answer too. A page at a time after a
        cursor (`next`), one range of the index (schedule_id, at, id).
        """
        ident = schedule_ref(schedule_id)  # its id, or its key while it exists
        if ident is None:
            raise not_found("schedule", schedule_id)
        mine = scoped(select(ScheduleEvent), ScheduleEvent).where(ScheduleEvent.schedule_id == ident)
        found = keyset_page(mine, SCHEDULE_EVENTS, query["limit"], query["offset"], query.get("cursor"))
        if not found.total and owned_schedule(ident) is None:
            raise not_found("schedule", schedule_id)
        return found
