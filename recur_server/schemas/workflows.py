"""A workflow (what runs: a registered task and its policies) and its circuit breaker."""

from __future__ import annotations

from typing import Any

from marshmallow import RAISE, Schema, ValidationError, fields, validate

from recur_server.infra.extensions import queue_names
from recur_server.models import ConcurrencyPolicy
from recur_server.schemas.common import Cursor, OwnedPageIn, page_of
from recur_server.schemas.fields import Iso, defaulted, out, whole
from recur_server.services.queries import WORKFLOWS
from recur_server.tasks import get_task, task_names

MAX_CONCURRENT_RUNS = 10_000
MAX_BREAKER_THRESHOLD = 1000
MAX_BREAKER_RESET_SECONDS = 7 * 86400


class KnownTask(validate.Validator):
    """The name of a registered task (the OpenAPI document lists them as the field's enum)."""

    def __call__(self, value: str) -> str:
        if get_task(value) is None:
            raise ValidationError(f"unknown task {value!r}; registered tasks: {', '.join(task_names())}")
        return value


class KnownQueue(validate.Validator):
    """The name of one of the cluster's queues (RECUR_QUEUE, RECUR_QUEUES): a queue no worker is told of
    would hold its links for ever."""

    def __call__(self, value: str) -> str:
        names = queue_names()
        if value not in names:
            raise ValidationError(f"unknown queue {value!r}; this cluster's queues (RECUR_QUEUE, RECUR_QUEUES): "
                                  f"{', '.join(names)}")
        return value


class WorkflowIn(Schema):
    """Create body; PATCH loads it with partial=True. The console's form is loaded by it too."""

    class Meta:
        unknown = RAISE

    name = fields.String(required=True, validate=validate.Length(min=1, max=200))
    task = fields.String(required=True, validate=[validate.Length(min=1, max=200), KnownTask()])
    max_concurrent_runs = defaulted(whole(1, MAX_CONCURRENT_RUNS, allow_none=True), None)  # null: no limit
    concurrency_policy = defaulted(fields.String(validate=validate.OneOf([p.value for p in ConcurrencyPolicy])),
                                   ConcurrencyPolicy.WAIT.value)
    breaker_threshold = defaulted(whole(1, MAX_BREAKER_THRESHOLD, allow_none=True), None)  # null: no breaker
    breaker_reset_seconds = defaulted(whole(1, MAX_BREAKER_RESET_SECONDS), 300)
    # The RQ queue its schedules' links and runs go through; null: the default queue (RECUR_QUEUE).
    queue = defaulted(fields.String(allow_none=True, validate=[validate.Length(min=1, max=64), KnownQueue()]), None)


class WorkflowOut(Schema):
    id = out(fields.Integer())
    name = out(fields.String())
    task = out(fields.String())
    owner_id = out(fields.Integer())
    max_concurrent_runs = out(fields.Integer(allow_none=True))
    concurrency_policy = out(fields.String())
    breaker_threshold = out(fields.Integer(allow_none=True))
    breaker_reset_seconds = out(fields.Integer())
    breaker_state = out(fields.String())
    queue = out(fields.String(allow_none=True))
    created_at = out(Iso())


class WorkflowPageIn(OwnedPageIn):
    cursor = Cursor(WORKFLOWS)


WorkflowPage = page_of(WorkflowOut)


class BreakerTransitionOut(Schema):
    from_state = out(fields.String(data_key="from"))
    to_state = out(fields.String(data_key="to"))
    at = out(Iso())
    reason = out(fields.String())
    by = out(fields.String())


class BreakerOut(Schema):
    """A workflow's breaker, dumped from the workflow joined with its transitions (`history`)."""

    workflow_id = out(fields.Integer(attribute="id"))
    enabled = out(fields.Method("_enabled", metadata={"type": "boolean"}))
    threshold = out(fields.Integer(attribute="breaker_threshold", allow_none=True))
    reset_seconds = out(fields.Integer(attribute="breaker_reset_seconds"))
    state = out(fields.String(attribute="breaker_state"))
    consecutive_failures = out(fields.Integer(attribute="breaker_failures"))
    opened_at = out(Iso(attribute="breaker_opened_at", allow_none=True))
    probe_run_id = out(fields.String(attribute="breaker_probe_run_id", allow_none=True))
    history = out(fields.List(fields.Nested(BreakerTransitionOut)))

    def _enabled(self, workflow: Any) -> bool:
        return workflow.breaker_threshold is not None
