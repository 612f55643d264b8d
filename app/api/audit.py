"""The audit trails: who changed a schedule (/schedules/{id}/events/), and who made or deleted an owner
(/audit/owners/, admins only)."""

from __future__ import annotations

from typing import Any

from flask.views import MethodView
from sqlalchemy import select

from app.api.blueprint import api
from app.api.errors import not_found
from app.api.owners import admin_only
from app.api.schemas.common import PageIn
from app.api.schemas.owners import EventPage, OwnerEventPage
from app.auth.models import OwnerEvent, ScheduleEvent
from app.auth.scope import scoped
from app.queries import Page, is_schedule_id, owned_schedule, page


@api.route("/audit/owners/", endpoint="owner_audit")
class OwnerAudit(MethodView):
    @api.arguments(PageIn, location="query")
    @api.response(200, OwnerEventPage)
    @api.errors(403)
    def get(self, query: dict[str, Any]) -> Page:
        """Owners made and deleted, and by whom, newest first (admin)"""
        admin_only()
        return page(select(OwnerEvent).order_by(OwnerEvent.id.desc()), query["limit"], query["offset"])


@api.route("/schedules/<schedule_id>/events/", endpoint="schedule_events")
class ScheduleEvents(MethodView):
    @api.arguments(PageIn, location="query")
    @api.response(200, EventPage)
    @api.errors(404)
    def get(self, query: dict[str, Any], schedule_id: str) -> Page:
        """Who changed a schedule, newest first

        Kept after the schedule is deleted, so "who deleted it?" has an answer too.
        """
        if not is_schedule_id(schedule_id):
            raise not_found("schedule", schedule_id)
        mine = scoped(select(ScheduleEvent), ScheduleEvent).where(ScheduleEvent.schedule_id == schedule_id)
        found = page(mine.order_by(ScheduleEvent.at.desc(), ScheduleEvent.id.desc()), query["limit"], query["offset"])
        if not found.total and owned_schedule(schedule_id) is None:
            raise not_found("schedule", schedule_id)
        return found
