"""The health answer (GET /api/v1/health/) and its one argument, `ready`: what a load balancer or a monitor reads."""

from __future__ import annotations

from marshmallow import EXCLUDE, Schema, fields, validate

from recur_server.schemas.fields import Iso, out

STATUSES = ("ok", "degraded", "unavailable")


class HealthIn(Schema):
    class Meta:
        unknown = EXCLUDE  # a load balancer's own query string is left alone, as it always was

    ready = fields.Boolean(load_default=False, metadata={
        "description": "the readiness form: 503 unless `status` is ok (also when a queue with active schedules "
                       "has no live worker)"})


class WorkerOut(Schema):
    name = out(fields.String())
    host = out(fields.String())
    pid = out(fields.Integer())
    queues = out(fields.List(fields.String()))
    last_seen_at = out(Iso())
    alive = out(fields.Boolean(metadata={"description": "its last beat is within RECUR_WORKER_GRACE_SECONDS"}))


class HealthOut(Schema):
    status = out(fields.String(validate=validate.OneOf(STATUSES), metadata={
        "description": "ok; degraded: a queue with active schedules has no live worker (queues_without_workers); "
                       "unavailable: Redis or the database does not answer"}))
    version = out(fields.String(metadata={"description": "the version of Recur this web process runs"}))
    database = out(fields.String())
    redis = out(fields.String())
    workers = out(fields.Dict(keys=fields.String(), values=fields.Integer(), metadata={
        "description": "live worker processes (a worker.py, or an rq worker) listening on each queue of the cluster; "
                       "a worker is live while its beat is within RECUR_WORKER_GRACE_SECONDS"}))
    queues_without_workers = out(fields.List(fields.String(), metadata={
        "description": "queues that have active schedules and no live worker: their schedules do not run"}))
    worker_grace_seconds = out(fields.Float())
    worker_processes = fields.List(fields.Nested(WorkerOut), metadata={
        "description": "every worker process on record, live or gone (admins only: host names)"})
    schedules = fields.Dict(keys=fields.String(), values=fields.Integer(), metadata={
        "description": "schedules by status (admins only)"})
    reconciler = fields.Dict(metadata={"description": "the reconciler's running totals (admins only)"})
