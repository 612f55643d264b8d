"""The console's pages of one workflow: its edit form (name, task, limits, queue, breaker settings, loaded by
the API's WorkflowIn), deleting it, and its circuit breaker (state, transitions, reset by hand through
recur_server.services.breaker)."""

from __future__ import annotations

from typing import Any

from flask import abort, flash, redirect, render_template, request, url_for
from sqlalchemy import select
from werkzeug.datastructures import MultiDict
from werkzeug.wrappers import Response as BaseResponse

from recur_server.auth.actor import acting
from recur_server.console import forms, session
from recur_server.console.views import Page, console
from recur_server.infra import clock
from recur_server.infra.extensions import queue_names
from recur_server.models import ConcurrencyPolicy, Schedule, Workflow
from recur_server.schemas.workflows import WorkflowIn, WorkflowOut
from recur_server.services import breaker as breakers
from recur_server.services import queries, workflows
from recur_server.tasks import task_names

FIELDS = ("name", "task", "max_concurrent_runs", "concurrency_policy", "breaker_threshold", "breaker_reset_seconds",
          "queue")
NULLABLE = ("max_concurrent_runs", "breaker_threshold", "queue")  # empty: no limit, no breaker, the default queue
INTEGERS = ("max_concurrent_runs", "breaker_threshold", "breaker_reset_seconds")
_PARTIAL = WorkflowIn(partial=True)
_OUT = WorkflowOut()


def owned_workflow(workflow_id: int, for_update: bool = False) -> Workflow:
    workflow = queries.owned(Workflow, workflow_id, for_update)
    if workflow is None:
        abort(404, description=f"workflow {workflow_id} does not exist")
    return workflow


def workflow_body(form: MultiDict[str, str]) -> tuple[dict[str, Any], dict[str, list[str]]]:
    """The edit form as a PATCH body (every field; empty ones null or left out), and what the form can tell."""
    body: dict[str, Any] = {}
    errors: dict[str, list[str]] = {}
    for name in FIELDS:
        text = (form.get(name) or "").strip()
        if not text:
            if name in NULLABLE:
                body[name] = None
            continue
        if name in INTEGERS:
            try:
                body[name] = int(text)
            except ValueError:
                errors[name] = ["must be a whole number"]
                continue
        else:
            body[name] = text
    return body, errors


@console.route("/workflows/<int:workflow_id>/edit", methods=["GET", "POST"])
@session.signed_in
def workflow_edit(workflow_id: int) -> Page:
    workflow = owned_workflow(workflow_id)
    shown = _OUT.dump(workflow)
    values = {k: "" if shown.get(k) is None else shown[k] for k in FIELDS}
    errors: dict[str, list[str]] = {}
    if request.method == "POST":
        values = request.form.to_dict()
        body, errors = workflow_body(request.form)
        changed = {k: v for k, v in body.items() if shown.get(k) != v}
        data, schema_errors = forms.loaded(_PARTIAL, changed, partial=True)
        errors |= schema_errors
        if not errors:
            if changed:
                workflows.update(owned_workflow(workflow_id, for_update=True), data)
                flash(f"Saved {', '.join(sorted(changed))}.")
            else:
                flash("Nothing changed.")
            return redirect(url_for("console.workflow_list"))
    page = render_template("workflow_form.html", w=workflow, v=values, errors=errors, tasks=task_names(),
                           queues=queue_names(), policies=[p.value for p in ConcurrencyPolicy])
    return (page, 422) if errors else page


@console.route("/workflows/<int:workflow_id>/delete", methods=["GET", "POST"])
@session.signed_in
def workflow_delete(workflow_id: int) -> Page:
    """After a page that says what goes with it: the workflow, its schedules, their runs and pending runs."""
    workflow = owned_workflow(workflow_id)
    if request.method == "GET":
        count, capped = queries.capped_count(select(Schedule).where(Schedule.workflow_id == workflow.id),
                                             queries.SCHEDULES)
        return render_template("confirm.html", title=f"Delete workflow {workflow.name}?",
                               text=f"Its {'more than ' if capped else ''}{count} schedule{'' if count == 1 else 's'} "
                                    "go with it, with their run history and pending runs. It cannot be undone.",
                               button="Delete it", back=url_for("console.workflow_edit", workflow_id=workflow.id))
    workflows.delete(workflow, clock.utcnow())
    flash(f"Deleted workflow {workflow.name}.")
    return redirect(url_for("console.workflow_list"))


@console.get("/workflows/<int:workflow_id>/breaker")
@session.signed_in
def breaker_page(workflow_id: int) -> Page:
    workflow = owned_workflow(workflow_id)
    return render_template("breaker.html", w=workflow, history=list(reversed(breakers.history(workflow))),
                           shown=breakers.HISTORY)


@console.post("/workflows/<int:workflow_id>/breaker/reset")
@session.signed_in
def breaker_reset(workflow_id: int) -> BaseResponse:
    workflow = owned_workflow(workflow_id, for_update=True)
    was = workflow.breaker_state
    breakers.reset(workflow, acting(), clock.utcnow())
    flash(f"Breaker reset: closed (it was {was}).")
    return redirect(url_for("console.breaker_page", workflow_id=workflow.id))
