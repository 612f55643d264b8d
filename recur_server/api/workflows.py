"""/workflows/: what runs (a registered task and its policies), and each workflow's circuit breaker."""

from __future__ import annotations

from typing import Any

from flask.views import MethodView

from recur_server.api.blueprint import api
from recur_server.api.errors import not_found
from recur_server.auth.actor import acting
from recur_server.auth.scope import caller
from recur_server.infra import clock
from recur_server.models import Workflow
from recur_server.schemas.fields import Joined
from recur_server.schemas.workflows import BreakerOut, WorkflowIn, WorkflowOut, WorkflowPage, WorkflowPageIn
from recur_server.services import breaker as breakers
from recur_server.services import workflows
from recur_server.services.queries import Page, owned, workflow_page


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


def _breaker(workflow: Workflow) -> Joined:
    return Joined(workflow, history=breakers.history(workflow))


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
        breakers.reset(workflow, acting(), clock.utcnow())
        return _breaker(workflow)
