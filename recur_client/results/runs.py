"""A schedule's runs, manual runs and backfills."""

from __future__ import annotations

from typing import TypedDict


class Run(TypedDict):
    id: str
    schedule_id: str
    repeat_number: int | None
    retry_number: int
    scheduled_for: str | None
    started_at: str | None
    finished_at: str | None
    status: str
    error: str | None
    worker: str | None
    trigger: str
    reason: str | None
    ticks: int | None
    backfill_id: str | None
    triggered_by_run_id: str | None


class RunDetail(Run):
    """One run as its own GET answers it: with what its task left behind, each bounded (null: nothing)."""

    traceback: str | None
    output: str | None
    logs: str | None
    result: str | None


class Triggered(TypedDict):
    run_id: str
    schedule_id: str
    scheduled_for: str
    trigger: str


class BackfillPlan(TypedDict):
    """A backfill's dry run: the nominal times it would run."""

    dry_run: bool
    total: int
    times: list[str]


class Backfill(TypedDict):
    id: str
    schedule_id: str
    start: str
    end: str
    overlap: str | None
    status: str
    total: int
    done: int
    times: list[str]
    created_at: str
    finished_at: str | None
