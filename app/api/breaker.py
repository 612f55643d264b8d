"""A workflow's circuit breaker: its state and history, and closing it by hand."""

from __future__ import annotations

from flask import Response, g, jsonify
from sqlalchemy import select

from app import clock
from app.api.contract import documented
from app.api.schemas import BreakerOut, dump
from app.api.views import _workflow_or_404, api
from app.chain import breaker, driver
from app.extensions import db
from app.models import BreakerTransition, Workflow


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
    workflow = _workflow_or_404(workflow_id)
    db.session.rollback()
    by = f"{g.owner.name} (token {g.token.name})" if g.get("token") is not None else g.owner.name
    with driver.transaction(db.engine) as tx:
        breaker.reset(tx, workflow.id, by, clock.utcnow())
    return jsonify(_breaker_out(_workflow_or_404(workflow_id)))
