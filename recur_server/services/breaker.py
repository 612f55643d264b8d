"""A workflow's circuit breaker as people see it: its newest transitions, and closing it by hand. The API and
the console both go through here, so a reset is recorded and announced the same way whoever asks."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import select

from recur_server.infra.extensions import db
from recur_server.models import BreakerTransition, Workflow
from recur_server.notify.events import payload
from recur_server.notify.outbox import EventType, emit
from recur_server.policies import breaker as policy

HISTORY = 100  # the newest transitions shown (older ones go with the audit trail)


def history(workflow: Workflow) -> list[BreakerTransition]:
    """The breaker's newest HISTORY transitions, oldest first (one backward read of its index)."""
    newest = db.session.scalars(select(BreakerTransition).where(BreakerTransition.workflow_id == workflow.id)
                                .order_by(BreakerTransition.id.desc()).limit(HISTORY))
    return list(reversed(list(newest)))


def reset(workflow: Workflow, by: str, now: datetime) -> None:
    """Close the breaker of `workflow` (locked by the caller) by hand, and commit. Recorded in the history
    even when it was closed already: an operator's action belongs there; breaker.closed is emitted only when
    it changed."""
    db.session.add(BreakerTransition(workflow_id=workflow.id, from_state=workflow.breaker_state,
                                     to_state=policy.CLOSED, at=now, reason="reset by hand", by=by))
    if workflow.breaker_state != policy.CLOSED:
        emit(db.session, workflow.owner_id, EventType.BREAKER_CLOSED.value, payload(
            EventType.BREAKER_CLOSED, workflow_id=workflow.id, workflow_name=workflow.name,
            from_=workflow.breaker_state, to=policy.CLOSED, reason="reset by hand", failures=0), now)
    workflow.breaker_state, workflow.breaker_failures = policy.CLOSED, 0
    workflow.breaker_opened_at = workflow.breaker_probe_run_id = None
    db.session.commit()
