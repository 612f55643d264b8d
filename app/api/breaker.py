"""A workflow's circuit breaker: its state and history, and closing it by hand."""

from __future__ import annotations

from flask import Response, g, jsonify
from sqlalchemy import select

from app import clock
from app.api.contract import documented
from app.api.schemas import BreakerOut, dump
from app.api.views import _workflow_or_404, api
from app.extensions import db
from app.models import BreakerTransition, Workflow
from app.notify.outbox import EventType, emit_in_session
from app.policies import breaker as policy


def _breaker_out(workflow: Workflow) -> dict[str, object]:
    history = db.session.scalars(select(BreakerTransition).where(BreakerTransition.workflow_id == workflow.id)
                                 .order_by(BreakerTransition.id))
    return dump(BreakerOut, {
        "workflow_id": workflow.id, "enabled": workflow.breaker_threshold is not None,
        "threshold": workflow.breaker_threshold, "reset_seconds": workflow.breaker_reset_seconds,
        "state": workflow.breaker_state, "consecutive_failures": workflow.breaker_failures,
        "opened_at": workflow.breaker_opened_at, "probe_run_id": workflow.breaker_probe_run_id,
        "history": list(history),
    })


@api.get("/workflows/<int:workflow_id>/breaker/")
@documented(summary="A workflow's circuit breaker: state, consecutive failures, transitions", answer=BreakerOut,
            errors=[404])
def get_breaker(workflow_id: int) -> Response:
    return jsonify(_breaker_out(_workflow_or_404(workflow_id)))


@api.post("/workflows/<int:workflow_id>/breaker/reset/")
@documented(summary="Close a workflow's circuit breaker by hand", answer=BreakerOut, errors=[404])
def reset_breaker(workflow_id: int) -> Response:
    """Recorded in the history with who did it (the owner and the token's name)."""
    workflow = _workflow_or_404(workflow_id, for_update=True)
    by = f"{g.owner.name} (token {g.token.name})" if g.get("token") is not None else g.owner.name
    now = clock.utcnow()
    # Recorded even when it was closed already: an operator's action belongs in the history.
    db.session.add(BreakerTransition(workflow_id=workflow.id, from_state=workflow.breaker_state,
                                     to_state=policy.CLOSED, at=now, reason="reset by hand", by=by))
    if workflow.breaker_state != policy.CLOSED:
        emit_in_session(workflow.owner_id, EventType.BREAKER_CLOSED.value, {
            "workflow_id": workflow.id, "workflow_name": workflow.name, "from": workflow.breaker_state,
            "to": policy.CLOSED, "reason": "reset by hand", "failures": 0}, now)
    workflow.breaker_state, workflow.breaker_failures = policy.CLOSED, 0
    workflow.breaker_opened_at = workflow.breaker_probe_run_id = None
    db.session.commit()
    return jsonify(_breaker_out(workflow))
