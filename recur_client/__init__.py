"""Recur's Python client: every operation of the HTTP API as a method, answers as typed dicts, errors as
exceptions. Standard library only; it never imports the server.

    from recur_client import Client, NotFound

    recur = Client("https://recur.example.com", token="recur_...")
    workflow = recur.workflows.create("reports", "builtin.noop")
    schedule = recur.schedules.create(name="nightly", workflow_id=workflow["id"], cron="0 2 * * *",
                                      timezone="Europe/Berlin")
    for run in recur.schedules.iterate_runs(schedule["id"]):
        print(run["status"], run["scheduled_for"])

docs/client.md has every method."""

from recur_client.client import DEFAULT_URL, Client
from recur_client.errors import (
    ApiError,
    BadRequest,
    Conflict,
    Forbidden,
    NotFound,
    TooLarge,
    Unauthorized,
    Unavailable,
    Unreachable,
    ValidationFailed,
)
from recur_client.fields import (
    CalendarFields,
    QuotaFields,
    ScheduleFields,
    TimingFields,
    WorkflowFields,
    WorkflowPolicies,
)
from recur_client.results import (
    Backfill,
    BackfillPlan,
    BatchDeleted,
    Breaker,
    BreakerTransition,
    Calendar,
    CalendarDay,
    CalendarDays,
    CreatedOwner,
    CreatedToken,
    CreatedWebhook,
    Delivery,
    DeliveryAttempt,
    DeliveryAttemptPage,
    ExplainRun,
    Explanation,
    Health,
    Owner,
    OwnerEvent,
    Page,
    Preview,
    PreviewTime,
    Quota,
    Quotas,
    Run,
    RunBrief,
    RunDetail,
    Schedule,
    ScheduleDescription,
    ScheduleDetail,
    ScheduleEvent,
    ScheduleStats,
    Task,
    Token,
    Triggered,
    Webhook,
    WorkerProcess,
    Workflow,
)

__all__ = [
    "DEFAULT_URL", "ApiError", "Backfill", "BackfillPlan", "BadRequest", "BatchDeleted", "Breaker",
    "BreakerTransition", "Calendar", "CalendarDay", "CalendarDays", "CalendarFields",
    "Client", "Conflict", "CreatedOwner", "CreatedToken", "CreatedWebhook", "Delivery",
    "DeliveryAttempt", "DeliveryAttemptPage", "ExplainRun", "Explanation", "Forbidden", "Health", "NotFound",
    "WorkerProcess",
    "Owner", "OwnerEvent", "Page",
    "Preview", "PreviewTime", "Quota", "QuotaFields", "Quotas", "Run", "RunBrief", "RunDetail", "Schedule",
    "ScheduleDescription", "ScheduleDetail", "ScheduleEvent", "ScheduleFields", "ScheduleStats", "Task",
    "TimingFields", "Token", "TooLarge", "Triggered", "Unauthorized", "Unavailable", "Unreachable",
    "ValidationFailed", "Webhook", "Workflow", "WorkflowFields", "WorkflowPolicies",
]
