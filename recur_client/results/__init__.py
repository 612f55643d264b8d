"""What the API answers, as typed dicts: each is the JSON the API sent, key for key (tests/test_recur_client.py
checks every one against the OpenAPI document), so `print(json.dumps(result))` shows exactly the answer and a
field the server adds later passes through. Instants are ISO 8601 strings in UTC, as the API writes them.
One module per resource; a list's page is recur_client.pages.Page."""

from recur_client.pages import Page
from recur_client.results.accounts import CreatedOwner, CreatedToken, Owner, OwnerEvent, Quota, Quotas, Token
from recur_client.results.calendars import Calendar, CalendarDay, CalendarDays
from recur_client.results.runs import Backfill, BackfillPlan, Run, RunDetail, Triggered
from recur_client.results.schedules import (
    After,
    BatchDeleted,
    ExplainRun,
    Explanation,
    Preview,
    PreviewTime,
    RunBrief,
    Schedule,
    ScheduleDescription,
    ScheduleDetail,
    ScheduleEvent,
    ScheduleStats,
)
from recur_client.results.service import Health, Task, WorkerProcess
from recur_client.results.webhooks import CreatedWebhook, Delivery, DeliveryAttempt, DeliveryAttemptPage, Webhook
from recur_client.results.workflows import Breaker, BreakerTransition, Workflow

__all__ = [
    "After", "Backfill", "BackfillPlan", "BatchDeleted", "Breaker", "BreakerTransition", "Calendar", "CalendarDay",
    "CalendarDays", "CreatedOwner", "CreatedToken", "CreatedWebhook", "Delivery", "DeliveryAttempt",
    "DeliveryAttemptPage", "ExplainRun", "Explanation", "Health", "Owner", "OwnerEvent", "Page", "Preview",
    "PreviewTime", "Quota", "Quotas", "Run", "RunBrief", "RunDetail", "Schedule", "ScheduleDescription",
    "ScheduleDetail", "ScheduleEvent", "ScheduleStats", "Task", "Token", "Triggered", "Webhook",
    "WorkerProcess", "Workflow",
]
