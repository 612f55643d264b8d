"""/workflows/: what runs (a registered task and its policies), and each workflow's circuit breaker."""

from __future__ import annotations

from typing import Any

from flask import g
from flask.views import MethodView
from sqlalchemy import select

from app import clock, workflows
from app.api.blueprint import api
from app.api.errors import not_found
from app.api.schemas.fields import Joined
from app.api.schemas.workflows import BreakerOut, WorkflowIn, WorkflowOut, WorkflowPage, WorkflowPageIn
from app.auth.scope import caller
from app.extensions import db
from app.models import BreakerTransition, Workflow
from app.notify.outbox import EventType, emit_in_session
from app.policies import breaker as policy
from app.queries import Page, owned, workflow_page


def workflow_or_404(workflow_id: int, for_update: bool = False) -> Workflow:
    workflow = owned(Workflow, workflow_id, for_update)
    if workflow is None:
        raise not_found("workflow", workflow_id)
    return workflow


@api.route("/workflows/", endpoint="workflows")
class Workflows(MethodView):
    @api.arguments(WorkflowPageIn, location="query")
    @api.response(200, WorkflowPage)
    def get(self, query: dict[str, Any]) -> Page:
        """List workflows, oldest first

        A page at a time after a cursor (`next`), one range of the index (owner_id, id).
        """
        return workflow_page(query["limit"], query["offset"], query.get("cursor"), query.get("owner_id"))

    @api.arguments(WorkflowIn)
    @api.response(201, WorkflowOut)
    def post(self, data: dict[str, Any]) -> Workflow:
        """Create a workflow"""
        return workflows.create(caller().id, data, clock.utcnow())


@api.route("/workflows/<int:workflow_id>/", endpoint="workflow")
class WorkflowItem(MethodView):
    @api.response(200, WorkflowOut)
    @api.errors(404)
    def get(self, workflow_id: int) -> Workflow:
        """Get a workflow"""
        return workflow_or_404(workflow_id)

    @api.arguments(WorkflowIn(partial=True))
    @api.response(200, WorkflowOut)
    @api.errors(404)
    def patch(self, data: dict[str, Any], workflow_id: int) -> Workflow:
        """Edit a workflow: its name, task and policies

        A changed task or limit applies to the next run that starts; runs going on are left alone.
        """
        return workflows.update(workflow_or_404(workflow_id), data)

    @api.response(204)
    @api.errors(404)
    def delete(self, workflow_id: int) -> None:
        """Delete a workflow and its schedules"""
        workflows.delete(workflow_or_404(workflow_id), clock.utcnow())


BREAKER_HISTORY = 100  # the newest transitions a breaker's answer lists (older ones go with the audit trail)


def _breaker(workflow: Workflow) -> Joined:
    newest = db.session.scalars(select(BreakerTransition).where(BreakerTransition.workflow_id == workflow.id)
                                .order_by(BreakerTransition.id.desc()).limit(BREAKER_HISTORY))
    return Joined(workflow, history=list(reversed(list(newest))))


@api.route("/workflows/<int:workflow_id>/breaker/", endpoint="breaker")
class Breaker(MethodView):
    @api.response(200, BreakerOut)
    @api.errors(404)
    def get(self, workflow_id: int) -> Joined:
        """A workflow's circuit breaker: state, consecutive failures, transitions"""
        return _breaker(workflow_or_404(workflow_id))


@api.route("/workflows/<int:workflow_id>/breaker/reset/", endpoint="breaker_reset")
class BreakerReset(MethodView):
    @api.response(200, BreakerOut)
    @api.errors(404)
    def post(self, workflow_id: int) -> Joined:
        """Close a workflow's circuit breaker by hand

        Recorded in the history with who did it (the owner and the token's name).
        """
        workflow = workflow_or_404(workflow_id, for_update=True)
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
        return _breaker(workflow)
