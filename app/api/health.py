"""/health/: whether Redis and the database answer; open to anyone, the detail only to an admin."""

from __future__ import annotations

from typing import Any

from flask import g
from flask.views import MethodView
from marshmallow import Schema, fields
from redis.exceptions import RedisError
from sqlalchemy import func, literal, select
from sqlalchemy.exc import SQLAlchemyError

from app.api.blueprint import api
from app.infra.extensions import db, get_redis
from app.models import Schedule, ScheduleStatus
from app.schemas.fields import out
from app.services.reconcile_stats import read_stats


class HealthOut(Schema):
    database = out(fields.String())
    redis = out(fields.String())
    schedules = fields.Dict(keys=fields.String(), values=fields.Integer(), metadata={
        "description": "schedules by status (admins only)"})
    reconciler = fields.Dict(metadata={"description": "the reconciler's running totals (admins only)"})


@api.route("/health/", endpoint="health")
class Health(MethodView):
    @api.response(200, HealthOut)
    @api.alt_response(503, schema=HealthOut, description="Redis or the database is unreachable.")
    def get(self) -> tuple[dict[str, Any], int]:
        """Health of Redis and the database

        Whether Redis and the database answer, schedules by status, and the reconciler's running totals.
        """
        body: dict[str, Any] = {"database": "ok", "redis": "ok"}
        detail = g.get("owner") is not None and g.owner.is_admin
        try:
            if detail:  # every schedule's entry of ix_scheduled_jobs_status_id; anyone else's request only pings
                counts = db.session.execute(select(Schedule.status, func.count())
                                            .group_by(Schedule.status)).all()
                body["schedules"] = {status.value: 0 for status in ScheduleStatus} | dict(counts)  # `invalid`: 0 too
            else:
                db.session.execute(select(literal(1)))
        except SQLAlchemyError as exc:
            body["database"] = f"unavailable: {type(exc).__name__}"
        try:
            stats = read_stats(get_redis())
            if detail:
                body["reconciler"] = stats
        except RedisError as exc:
            body["redis"] = f"unavailable: {type(exc).__name__}"
        healthy = body["database"] == "ok" and body["redis"] == "ok"
        return body, 200 if healthy else 503
