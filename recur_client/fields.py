"""What the API takes, as typed keyword arguments (`client.schedules.create(name=..., cron=...)`). Each name is
the API's field name (docs/api.md, /api/docs/); a field left out is left out of the request, so the server's
default or the schedule's current value stands. The server checks every value: a bad one raises
ValidationFailed naming the field."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, TypedDict


def iso(instant: datetime) -> str:
    """An instant as the API takes and answers it: UTC ISO 8601 with a Z, e.g. "2026-12-01T08:00:00Z" (the
    server's own copy is recur_server.timing.iso: this package never imports the server)."""
    return instant.astimezone(UTC).isoformat().replace("+00:00", "Z")


class TimingFields(TypedDict, total=False):
    """When a schedule runs: one of interval_seconds / every / cron / rrule / at / after_seconds, and where
    and within what its ticks fall."""

    interval_seconds: int
    every: str
    cron: str
    day_or: bool
    rrule: str
    at: str
    after_seconds: int
    anchor_date: str
    timezone: str
    start_at: str | None
    end_at: str | None
    only_between: str | None
    not_on: list[str]
    jitter_seconds: int
    calendar_id: int | None
    on_calendar: str | None


class AfterFields(TypedDict, total=False):
    """A schedule's `after` (docs/follows.md): the upstream schedule's id or key (required), on which of its
    runs' ends (succeeded, failed, ended), how many seconds after, and a local window ("HH:MM-HH:MM")."""

    schedule: str
    on: str
    delay_seconds: int
    within: str | None


class ScheduleFields(TimingFields, total=False):
    """Every field of a schedule a client may set."""

    name: str
    key: str | None
    description: str | None
    workflow_id: int
    trigger_node_id: str | None
    total_repeats: int
    max_retries: int
    timeout_seconds: int | None
    trigger_payload: Any
    on_exhausted: str
    catch_up: str
    catch_up_window_seconds: int | None
    catch_up_limit: int
    overlap: str
    alert_after_seconds: int | None
    keep_runs_days: int | None
    long_after_seconds: int | None
    late_after_seconds: int | None
    failing_after: int | None
    after: AfterFields | None


class WorkflowPolicies(TypedDict, total=False):
    """A workflow's concurrency limit, breaker and queue."""

    max_concurrent_runs: int | None
    concurrency_policy: str
    breaker_threshold: int | None
    breaker_reset_seconds: int
    queue: str | None


class WorkflowFields(WorkflowPolicies, total=False):
    """Every field of a workflow a client may set."""

    name: str
    task: str


class QuotaFields(TypedDict, total=False):
    """An owner's quotas: a number is the owner's own limit, None goes back to the server's default
    (RECUR_MAX_*_PER_OWNER); a quota left out is left as it is."""

    schedules: int | None
    webhooks: int | None
    tokens: int | None


class CalendarFields(TypedDict, total=False):
    """Every field of a calendar a client may set: its days are the country's (and subdivision's) public
    holidays of first_year..last_year, plus `dates`, minus `removed` ("YYYY-MM-DD" or "YYYY-MM-DD/YYYY-MM-DD")."""

    name: str
    country: str | None
    subdivision: str | None
    first_year: int
    last_year: int
    dates: list[str]
    removed: list[str]
