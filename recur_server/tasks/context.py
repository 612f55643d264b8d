"""The run a task body is running for, readable from anywhere inside it: `recur.context()`.

A plain function scheduled with its own arguments has no `event` parameter; it asks for the run's nominal
time, idempotency key and attempt here. The chain binds the context around each attempt (recur_server.chain.attempt);
outside an attempt there is none.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from recur_server.tasks.registry import TaskEvent


@dataclass(frozen=True)
class RunContext:
    """What a task may want to know about the run it is: the schedule, the tick and the attempt."""

    schedule_id: str
    schedule_name: str
    scheduled_for: datetime  # the nominal time this run stands for (not when it started)
    idempotency_key: str  # the same for every attempt of one tick, different for every tick
    repeat_number: int  # the tick: 0 for a schedule's first
    retry_number: int  # the attempt: 0 for the first, 1 for the first retry
    payload: Any

    @property
    def attempt(self) -> int:
        """1 for the first attempt of a tick, 2 for its first retry."""
        return self.retry_number + 1


_CURRENT: ContextVar[RunContext | None] = ContextVar("recur_run_context", default=None)


class NoRunContext(RuntimeError):
    """`context()` was called outside a run (at import, in a test calling the function directly)."""


def context() -> RunContext:
    """The run the calling task body is running for; raises NoRunContext outside a run."""
    current = _CURRENT.get()
    if current is None:
        raise NoRunContext("recur.context() is only available while Recur runs a task")
    return current


def context_of(event: TaskEvent) -> RunContext:
    return RunContext(
        schedule_id=event["scheduled_job_id"], schedule_name=event["scheduled_job_name"],
        scheduled_for=datetime.fromisoformat(event["scheduled_for"]),
        idempotency_key=event["idempotency_key"], repeat_number=event["repeat_number"],
        retry_number=event["retry_number"], payload=event.get("payload"),
    )


@contextmanager
def bound(event: TaskEvent) -> Iterator[RunContext]:
    """Make `event` the current run for the block (the attempt's body)."""
    token = _CURRENT.set(context_of(event))
    try:
        yield context()
    finally:
        _CURRENT.reset(token)
