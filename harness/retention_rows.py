"""Rows for the retention tests, inserted with literal times relative to NOW (`ago(days)`): workflows,
schedules, runs, events and webhook deliveries, and reads of what a pruning pass left."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import func, select

from recur_server.infra.extensions import db
from recur_server.models import Run, Schedule, Workflow
from recur_server.notify.models import Delivery, DeliveryAttempt, Event

NOW = datetime(2026, 6, 1, 12, 0, 0, tzinfo=UTC)


def ago(days: float) -> datetime:
    return NOW - timedelta(days=days)


def add_workflow() -> int:
    workflow = Workflow(name="w", task="noop", owner_id=1, created_at=ago(400))
    db.session.add(workflow)
    db.session.flush()
    return int(workflow.id)


def add_schedule(workflow_id: int, schedule_id: str, keep_runs_days: int | None = None) -> Schedule:
    schedule = Schedule(id=schedule_id, name=schedule_id, workflow_id=workflow_id, owner_id=1,
                        interval_seconds=60, created_at=ago(400), updated_at=ago(400),
                        keep_runs_days=keep_runs_days)
    db.session.add(schedule)
    db.session.flush()
    return schedule


def add_runs(schedule_id: str, *days_ago: float, status: str = "succeeded",
             backfill_id: str | None = None) -> list[str]:
    ids = []
    for days in days_ago:
        run = Run(id=f"{schedule_id}-{days}", schedule_id=schedule_id, repeat_number=None, retry_number=0,
                  scheduled_for=ago(days), started_at=ago(days),
                  finished_at=None if status == "running" else ago(days) + timedelta(seconds=1),
                  status=status, backfill_id=backfill_id)
        db.session.add(run)
        ids.append(run.id)
    db.session.flush()
    return ids


def runs_left(schedule_id: str) -> set[str]:
    """The schedule's runs; the read's transaction ended (on SQLite it holds the write lock)."""
    left = set(db.session.scalars(select(Run.id).where(Run.schedule_id == schedule_id)))
    db.session.rollback()
    return left


def row_count(model: type) -> int:
    count = int(db.session.scalar(select(func.count()).select_from(model)) or 0)
    db.session.rollback()
    return count


def add_event(event_id: str, days_ago: float) -> None:
    db.session.add(Event(id=event_id, owner_id=1, type="run.failed", occurred_at=ago(days_ago), data={}))
    db.session.flush()


def add_delivery(event_id: str, webhook_id: int, status: str, days_ago: float, attempts: int) -> int:
    delivery = Delivery(webhook_id=webhook_id, owner_id=1, event_id=event_id, status=status, attempts=attempts,
                        next_attempt_at=ago(days_ago), created_at=ago(days_ago),
                        delivered_at=ago(days_ago) if status == "delivered" else None)
    db.session.add(delivery)
    db.session.flush()
    for attempt in range(1, attempts + 1):
        db.session.add(DeliveryAttempt(delivery_id=delivery.id, webhook_id=webhook_id, event_id=event_id,
                                       event_type="run.failed", attempt=attempt, at=ago(days_ago), status_code=500,
                                       duration_ms=3))
    db.session.flush()
    return int(delivery.id)
