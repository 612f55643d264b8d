"""Workflows: made, edited and deleted the same way whoever asks (the API, the console). Their fields are
checked before they get here, by the API's WorkflowIn (the console's form is loaded by it too)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import select

from app import schedules
from app.extensions import db
from app.models import ScheduledJob, Workflow


def create(owner_id: int, data: dict[str, Any], now: datetime) -> Workflow:
    workflow = Workflow(owner_id=owner_id, created_at=now, **data)
    db.session.add(workflow)
    db.session.commit()
    return workflow


def update(workflow: Workflow, data: dict[str, Any]) -> Workflow:
    """A changed task or limit applies to the next run that starts; runs going on are left alone."""
    for name, value in data.items():
        setattr(workflow, name, value)
    db.session.commit()
    return workflow


def delete(workflow: Workflow, now: datetime) -> None:
    """The workflow and its schedules, with their runs and pending links."""
    schedule_ids = list(db.session.scalars(select(ScheduledJob.id).where(ScheduledJob.workflow_id == workflow.id)))
    schedules.remove(schedule_ids, now)
    db.session.delete(db.session.get(Workflow, workflow.id))
    db.session.commit()
