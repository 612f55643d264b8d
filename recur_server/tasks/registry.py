"""Named task callables. The API only ever names a registered task; nothing imports a path from HTTP."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypedDict

TaskFn = Callable[["TaskEvent"], Any]


class TaskEvent(TypedDict):
    scheduled_job_id: str
    scheduled_job_name: str
    repeat_number: int
    retry_number: int
    scheduled_for: str
    payload: Any
    # The same for every attempt (retry) of one tick, different for every tick of every schedule: a task
    # whose side effect must not repeat records it with its effect and skips a tick it has already done.
    idempotency_key: str


def idempotency_key(schedule_id: str, repeat: int) -> str:
    """Names the tick: its link IDs without the attempt (`sched-{id}-n{repeat}-rc{retry}`). Repeat numbers
    only grow, and schedule IDs are UUIDs, so no two ticks anywhere share a key."""
    return f"sched-{schedule_id}-n{repeat}"


_TASKS: dict[str, TaskFn] = {}


def task(name: str) -> Callable[[TaskFn], TaskFn]:
    """Register `fn` under `name`: `@task("reports.daily")`."""

    def register(fn: TaskFn) -> TaskFn:
        existing = _TASKS.get(name)
        if existing is not None and existing is not fn:
            raise ValueError(f"task {name!r} is already registered to {existing.__module__}")
        _TASKS[name] = fn
        return fn

    return register


def get_task(name: str) -> TaskFn | None:
    return _TASKS.get(name)


def name_of(fn: Callable[..., Any]) -> str | None:
    """The name `fn` itself is registered under, if it is (the first, should it be registered twice)."""
    return next((name for name, registered in _TASKS.items() if registered is fn), None)


def task_names() -> list[str]:
    return sorted(_TASKS)
