"""Prometheus metrics: what every process counts (runs, lateness, durations, reconciler passes) and what is read
from the database and Redis at scrape time (schedules by status, queue depth, workers), served at GET /metrics.

With PROMETHEUS_MULTIPROC_DIR set (a directory shared by the web and worker processes of one host; the entry
points default it to instance/metrics, see recur_server.infra.metrics_files) prometheus-client keeps each process's
values in
files there and /metrics adds them up; without it, /metrics shows the answering process's own values.
Labels are bounded: status, trigger, reason, state, queue, workflow_id, table; never a schedule or run id,
and never a name an owner typed (/metrics may be open to anyone: it shows counts, not what owners called
their things).
"""

from __future__ import annotations

import hmac
import logging
import os
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

from flask import Blueprint, Flask, Response, current_app, request
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
    multiprocess,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector
from sqlalchemy import column, func, literal_column, select, table

from recur_server.infra import clock, metrics_files, worker_beats
from recur_server.infra.extensions import db, get_redis, queue_depths, queue_names
from recur_server.models import Schedule, ScheduleStatus, UTCDateTime, Workflow

log = logging.getLogger(__name__)

# prometheus-client writes each process's values into this directory from the first metric on: make sure it
# exists, or the first claim of a worker started with the setting but without the directory would fail.
if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
    os.makedirs(os.environ["PROMETHEUS_MULTIPROC_DIR"], exist_ok=True)

# Fire lateness: from a tick's nominal time to its claim. Sub-second is the normal case; minutes is a backlog.
_LATENESS_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600)
_DURATION_BUCKETS = (0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600, 4 * 3600, 24 * 3600)

RUNS = Counter("recur_runs_total", "Runs finished, by outcome and by what triggered them.", ["status", "trigger"])
LATENESS = Histogram("recur_run_lateness_seconds", "From a run's nominal time to its claim by a worker.",
                     buckets=_LATENESS_BUCKETS)
DURATION = Histogram("recur_run_duration_seconds", "From a run's claim to its recorded outcome.", ["status"],
                     buckets=_DURATION_BUCKETS)
LINKS_REPAIRED = Counter("recur_links_repaired_total", "Missing pending links the reconciler re-created.")
WRITTEN_OFF = Counter("recur_runs_written_off_total", "Runs the reconciler failed because their lease lapsed.")
INVALIDATED = Counter("recur_schedules_invalidated_total", "Schedules the reconciler marked invalid.")
RECONCILE_PASS = Histogram("recur_reconcile_pass_seconds", "Time one reconciler pass took.",
                           buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60))


NOT_RUN = Counter("recur_ticks_not_run_total",
                  "Ticks recorded as not run: missed by catch-up, skipped by overlap or a full workflow.",
                  ["status", "reason"])


ALERTS = Counter("recur_alerts_total", "Alerts emitted: run.long, run.late, schedule.failing, schedule.missed.",
                 ["type"])


def alerted(event_type: str) -> None:
    """`event_type`: one of the alerts' event types (a fixed set)."""
    ALERTS.labels(type=event_type).inc()


PRUNED = Counter("recur_pruned_rows_total", "Rows the retention pass deleted, by table.", ["table"])
# Since when (epoch seconds on the cluster clock: the start of the first such pass) every pruning pass has
# stopped at its limit with rows past retention left; written and deleted by recur_server.workers.background's pruning
# pass,
# read at scrape time as recur_pruning_behind_seconds.
PRUNE_BEHIND_KEY = "recur:prune-behind-since"


def pruned(rows: dict[str, int]) -> None:
    """`rows`: table -> rows deleted, from recur_server.services.retention (its TABLES: a fixed set of names)."""
    for name, count in rows.items():
        PRUNED.labels(table=name).inc(count)


def ticks_not_run(status: str, reason: str, ticks: int) -> None:
    NOT_RUN.labels(status=status, reason=reason).inc(ticks)


def run_claimed(scheduled_for: datetime, now: datetime) -> None:
    LATENESS.observe(max(0.0, (now - scheduled_for).total_seconds()))


def run_finished(status: str, trigger: str | None, started_at: datetime | None, now: datetime) -> None:
    RUNS.labels(status=status, trigger=trigger or "schedule").inc()
    if started_at is not None:
        DURATION.labels(status=status).observe(max(0.0, (now - started_at).total_seconds()))


def reconciled(report: dict[str, Any]) -> None:
    LINKS_REPAIRED.inc(int(report.get("links_repaired", 0)))
    WRITTEN_OFF.inc(int(report.get("runs_written_off", 0)))
    INVALIDATED.inc(int(report.get("schedules_invalidated", 0)))
    RECONCILE_PASS.observe(float(report.get("seconds", 0.0)))


DELIVERY_CAP = 10_000
_DELIVERIES = table("deliveries", column("id"), column("status"), column("attempts"),
                    column("next_attempt_at", UTCDateTime()))


class StateCollector(Collector):
    """Read at scrape time, once for the cluster (not summed over processes): schedules by status from the
    database, and from Redis the links waiting in the queue and in RQ's scheduled registry, and live workers."""

    def __init__(self, app: Flask) -> None:
        self.app = app

    def collect(self) -> Iterator[GaugeMetricFamily]:
        schedules = GaugeMetricFamily("recur_schedules", "Schedules by status.", labels=["status"])
        counts = {status.value: 0 for status in ScheduleStatus}
        counts.update(dict(db.session.execute(  # type: ignore[arg-type,unused-ignore]
            select(Schedule.status, func.count()).group_by(Schedule.status)).all()))
        db.session.rollback()
        for status, count in sorted(counts.items()):
            schedules.add_metric([status], count)
        yield schedules

        breakers = GaugeMetricFamily("recur_breaker_state", "1 for the state each workflow's circuit breaker is in "
                                     "(workflows with a breaker only).", labels=["workflow_id", "state"])
        for workflow_id, state in db.session.execute(select(Workflow.id, Workflow.breaker_state)
                                                     .where(Workflow.breaker_threshold.is_not(None))
                                                     .order_by(Workflow.id)).all():
            for each in ("closed", "open", "half_open"):
                breakers.add_metric([str(workflow_id), each], 1 if state == each else 0)
        db.session.rollback()
        yield breakers
        alerts = GaugeMetricFamily("recur_schedules_late", "Schedules whose missed-run alert has fired.")
        # 'late' written inline: SQLite matches a partial index's WHERE (ix_scheduled_jobs_late) only to a literal.
        alerts.add_metric([], db.session.scalar(select(func.count()).select_from(Schedule)
                                                .where(Schedule.health == literal_column("'late'"))) or 0)
        db.session.rollback()
        yield alerts
        failing = GaugeMetricFamily("recur_schedules_failing", "Schedules whose failure-streak alert has fired "
                                    "(schedule.failing, until a run succeeds).")
        failing.add_metric([], db.session.scalar(select(func.count()).select_from(Schedule)
                                                 .where(Schedule.failing_since.is_not(None))) or 0)
        db.session.rollback()
        yield failing

        # Webhook deliveries in trouble (recur_server.notify's table, read by name: the two packages do not import
        # each other): still being retried after a failed attempt, and given up in the last day. Each is one
        # range of ix_deliveries_due (status, next_attempt_at), capped.
        day_ago = clock.utcnow() - timedelta(days=1)
        retrying = select(_DELIVERIES.c.id).where((_DELIVERIES.c.status == "pending") & (_DELIVERIES.c.attempts >= 1)
                                                  ).limit(DELIVERY_CAP).subquery()
        given_up = select(_DELIVERIES.c.id).where((_DELIVERIES.c.status == "failed")
                                                  & (_DELIVERIES.c.next_attempt_at >= day_ago)).limit(DELIVERY_CAP
                                                                                                      ).subquery()
        deliveries = GaugeMetricFamily("recur_webhook_deliveries", "Webhook deliveries in trouble: retrying (pending "
                                       "after a failed attempt) and given_up_24h (failed in the last day), each "
                                       f"counted up to {DELIVERY_CAP:,}.", labels=["state"])
        deliveries.add_metric(["retrying"], db.session.scalar(select(func.count()).select_from(retrying)) or 0)
        deliveries.add_metric(["given_up_24h"], db.session.scalar(select(func.count()).select_from(given_up)) or 0)
        db.session.rollback()
        yield deliveries

        # Every queue of the cluster (RECUR_QUEUE and RECUR_QUEUES: a fixed, configured set of labels).
        depth = GaugeMetricFamily("recur_queue_depth", "Links and runs waiting in an RQ queue for a worker.",
                                  labels=["queue"])
        scheduled = GaugeMetricFamily("recur_links_scheduled", "Links waiting for their time in RQ's scheduled "
                                      "registry.", labels=["queue"])
        for waiting in queue_depths(self.app):
            depth.add_metric([waiting.name], waiting.queued)
            scheduled.add_metric([waiting.name], waiting.scheduled)
        yield depth
        yield scheduled
        # Worker processes (a worker.py, whatever its slots; an rq worker) whose beat is within the grace
        # (recur_server.infra.worker_beats), not RQ's registrations, which outlive a killed worker by minutes.
        redis = get_redis(self.app)
        now, grace = clock.utcnow().timestamp(), float(self.app.config["RECUR_WORKER_GRACE_SECONDS"])
        beats = worker_beats.read(redis)
        workers = GaugeMetricFamily("recur_workers", "Live worker processes: their beat is within "
                                    "RECUR_WORKER_GRACE_SECONDS (a worker.py counts once, whatever its slots).")
        workers.add_metric([], sum(1 for beat in beats if beat.alive(now, grace)))
        yield workers
        alive = GaugeMetricFamily("recur_workers_alive", "Live worker processes listening on each queue.",
                                  labels=["queue"])
        unserved = GaugeMetricFamily("recur_queue_without_worker", "1 while a queue that has active schedules has "
                                     "had no live worker (as the watch last recorded it; workers.gone).",
                                     labels=["queue"])
        gone = worker_beats.unserved(redis)
        for queue, count in worker_beats.live_per_queue(beats, queue_names(self.app), now, grace).items():
            alive.add_metric([queue], count)
            unserved.add_metric([queue], 1 if queue in gone else 0)
        yield alive
        yield unserved
        behind = GaugeMetricFamily("recur_pruning_behind_seconds", "Seconds since the first of the pruning passes "
                                   "that have all stopped at their limit with history past retention left (0: the "
                                   "last pass deleted all of it).")
        since = redis.get(PRUNE_BEHIND_KEY)
        behind.add_metric([], 0.0 if since is None else max(0.0, clock.utcnow().timestamp() - float(since)))
        yield behind


metrics = Blueprint("metrics", __name__)


@metrics.get("/metrics")
def scrape() -> Response:
    """The Prometheus text format; with RECUR_METRICS_TOKEN set, only for `Authorization: Bearer <it>`."""
    expected = current_app.config.get("RECUR_METRICS_TOKEN")
    if expected:
        scheme, _, given = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode(), expected.encode()):
            return Response("metrics need 'Authorization: Bearer <RECUR_METRICS_TOKEN>'\n", 401,
                            {"WWW-Authenticate": 'Bearer realm="recur-metrics"', "Content-Type": "text/plain"})
    counted = host_registry()
    if counted is None:
        counted = CollectorRegistry()
        counted.register(_Forward(REGISTRY))
    state = CollectorRegistry()
    state.register(StateCollector(current_app._get_current_object()))  # type: ignore[attr-defined]
    return Response(generate_latest(counted) + generate_latest(state), 200, {"Content-Type": CONTENT_TYPE_LATEST})


class _HostFiles(multiprocess.MultiProcessCollector):
    """Every process of this host, read from PROMETHEUS_MULTIPROC_DIR while no fold changes it."""

    def collect(self) -> Any:
        with metrics_files.reading(self._path):
            return list(super().collect())  # type: ignore[no-untyped-call]


def host_registry() -> CollectorRegistry | None:
    """A registry of what this host's processes counted (None without PROMETHEUS_MULTIPROC_DIR): served by
    /metrics, and by a worker's own port (RECUR_METRICS_PORT)."""
    directory = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if not directory:
        return None
    registry = CollectorRegistry()
    _HostFiles(registry, path=directory)  # type: ignore[no-untyped-call]
    return registry


class _Forward(Collector):
    """This process's own registry inside a scrape's registry (single-process mode)."""

    def __init__(self, source: CollectorRegistry) -> None:
        self.source = source

    def collect(self) -> Iterator[Any]:
        yield from self.source.collect()


def init_app(app: Flask) -> None:
    app.register_blueprint(metrics)
    # recur_server.notify's watch counts the alerts it emits through this (the two layers do not import each other).
    app.extensions["recur.on_alert"] = alerted
