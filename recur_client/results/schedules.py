"""Schedules: as lists show them, as create and GET answer them, their preview, explanations and audit
trail."""

from __future__ import annotations

from typing import Any, TypedDict


class After(TypedDict):
    """The schedule whose runs' ends trigger this one (docs/follows.md)."""

    schedule_id: str
    on: str
    delay_seconds: int
    within: str | None


class Schedule(TypedDict):
    """A schedule as lists show it."""

    id: str
    name: str
    key: str | None
    description: str | None
    workflow_id: int
    owner_id: int
    trigger_node_id: str | None
    interval_seconds: int | None
    cron: str | None
    day_or: bool | None
    rrule: str | None
    at: str | None
    anchor_date: str | None
    timezone: str | None
    start_at: str | None
    end_at: str | None
    only_between: str | None
    not_on: list[Any] | None
    jitter_seconds: int | None
    calendar_id: int | None
    on_calendar: str | None
    total_repeats: int
    max_retries: int
    timeout_seconds: int | None
    trigger_payload: Any | None
    on_exhausted: str
    catch_up: str
    catch_up_window_seconds: int | None
    catch_up_limit: int
    overlap: str
    alert_after_seconds: int | None
    keep_runs_days: int | None
    after: After | None
    health: str
    late_since: str | None
    long_after_seconds: int | None
    late_after_seconds: int | None
    failing_after: int | None
    failing_streak: int
    failing_since: str | None
    status: str
    pause_note: str | None
    paused_at: str | None
    waiting: str | None  # why its due tick waits instead of running (a worker that knows its task, a slot)
    current_repeat: int
    current_retry: int
    last_run_at: str | None
    next_run_at: str | None
    overdue: bool
    overdue_seconds: float | None
    run_count: int
    error_count: int
    last_error: str | None
    revision: int
    created_at: str
    updated_at: str | None


class ScheduleDetail(Schedule):
    """A schedule as create, edit, pause and resume answer: with its timing in words and its next runs."""

    timing_description: str
    next_runs: list[str]
    warnings: list[str]  # no live worker on its queue, or none that knows its task: not an error


class RunBrief(TypedDict):
    id: str
    scheduled_for: str
    started_at: str
    status: str
    trigger: str


class ScheduleStats(TypedDict):
    runs: int
    runs_by_trigger: dict[str, int]
    runs_by_status: dict[str, int]
    ticks_missed: dict[str, Any]
    ticks_skipped: dict[str, Any]
    running: int
    buffered: int
    window: int
    window_full: bool


class ScheduleDescription(ScheduleDetail):
    """One schedule as GET answers it: its detail with its recent runs and their counts."""

    stats: ScheduleStats
    recent_runs: list[RunBrief]


class PreviewTime(TypedDict):
    utc: str
    local: str


class Preview(TypedDict):
    description: str
    timezone: str
    next_runs: list[PreviewTime]


class ExplainRun(TypedDict):
    """A run or gap row as an explanation names it (the run's own GET has the rest)."""

    id: str
    status: str
    trigger: str
    scheduled_for: str
    started_at: str
    finished_at: str | None
    reason: str | None
    ticks: int | None
    error: str | None


class Explanation(TypedDict):
    """Why a schedule did or didn't run at a time (docs/explain.md): `kind` and a one-line `summary`, the tick
    explained (`nominal`), and the facts that answer it."""

    kind: str
    summary: str
    asked: str
    nominal: str | None
    run: ExplainRun | None
    attempts: int
    late_seconds: float | None
    reason: str | None
    held_by: ExplainRun | None
    paused_by: str | None
    paused_at: str | None
    pause_note: str | None
    breaker_since: str | None
    moved_to: str | None
    next_tick: str | None
    notes: list[str]


class BatchDeleted(TypedDict):
    deleted: list[str]
    not_found: list[str]


class ScheduleEvent(TypedDict):
    """An entry of a schedule's audit trail: who created, changed, paused, ... it, and what changed."""

    id: int
    schedule_id: str
    actor_id: int | None
    actor: str | None
    action: str
    at: str
    changes: Any | None
