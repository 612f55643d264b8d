"""Workflows and their circuit breakers."""

from __future__ import annotations

from typing import TypedDict


class Workflow(TypedDict):
    id: int
    name: str
    task: str
    owner_id: int
    max_concurrent_runs: int | None
    concurrency_policy: str
    breaker_threshold: int | None
    breaker_reset_seconds: int
    breaker_state: str
    queue: str | None
    created_at: str


# "from" is a Python keyword: the functional form
BreakerTransition = TypedDict("BreakerTransition", {"from": str, "to": str, "at": str, "reason": str, "by": str})


class Breaker(TypedDict):
    """A workflow's circuit breaker; `history` holds its newest 100 transitions, oldest first."""

    workflow_id: int
    enabled: bool
    threshold: int | None
    reset_seconds: int
    state: str
    consecutive_failures: int
    opened_at: str | None
    probe_run_id: str | None
    history: list[BreakerTransition]
