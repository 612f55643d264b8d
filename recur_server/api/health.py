"""/health/: whether Redis and the database answer, and which queues have a live worker; open to anyone, the
detail only to an admin. `?ready=1` is the readiness form: 503 unless all is well, workers included."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from flask import current_app, g
from flask.views import MethodView
from redis.exceptions import RedisError
from sqlalchemy import func, literal, select
from sqlalchemy.exc import SQLAlchemyError

from recur_server.api.blueprint import api
from recur_server.infra import clock
from recur_server.infra.extensions import db, get_redis
from recur_server.infra.version import version
from recur_server.models import Schedule, ScheduleStatus
from recur_server.notify.workers_gone import liveness
from recur_server.schemas.health import HealthIn, HealthOut
from recur_server.services.reconcile_stats import read_stats


@api.route("/health/", endpoint="health")
class Health(MethodView):
    @api.arguments(HealthIn, location="query")
    @api.response(200, HealthOut)
    @api.alt_response(503, schema=HealthOut, description="Redis or the database is unreachable; with `ready`, "
                      "also when a queue with active schedules has no live worker (`status: degraded`).")
    def get(self, args: dict[str, Any]) -> tuple[dict[str, Any], int]:
        """Health of Redis, the database and the workers

        Whether Redis and the database answer, live workers per queue and the queues with active schedules but
        no live worker; for an admin, every worker process on record, schedules by status and the reconciler's
        running totals. With `ready=1`, a 503 unless `status` is ok.
        """
        body: dict[str, Any] = {"version": version(), "database": "ok", "redis": "ok", "workers": {},
                                "queues_without_workers": []}
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
        body["worker_grace_seconds"] = float(current_app.config["RECUR_WORKER_GRACE_SECONDS"])
        healthy = body["database"] == "ok" and body["redis"] == "ok"
        if healthy:
            try:
                _workers(body, detail)
            except RedisError as exc:
                body["redis"], healthy = f"unavailable: {type(exc).__name__}", False
            except SQLAlchemyError as exc:
                body["database"], healthy = f"unavailable: {type(exc).__name__}", False
        status = "unavailable" if not healthy else "degraded" if body["queues_without_workers"] else "ok"
        body["status"] = status
        return body, 200 if status == "ok" or (healthy and not args["ready"]) else 503


def _workers(body: dict[str, Any], detail: bool) -> None:
    """Live workers per queue (one read of the beats; the database only for a queue without one)."""
    seen = liveness(clock.utcnow())
    body["workers"], body["queues_without_workers"] = seen.live, seen.unserved
    if detail:
        body["worker_processes"] = [
            {"name": b.name, "host": b.host, "pid": b.pid, "queues": list(b.queues), "alive": seen.alive(b),
             "last_seen_at": datetime.fromtimestamp(b.seen, UTC)} for b in seen.beats]
