"""The service itself: its health and the tasks its workers know."""

from __future__ import annotations

from typing import Any, NotRequired, TypedDict


class Health(TypedDict):
    """`database` and `redis` are "ok" or what is wrong; an admin also sees counts."""

    database: str
    redis: str
    schedules: NotRequired[dict[str, Any]]
    reconciler: NotRequired[dict[str, Any]]


class Task(TypedDict):
    name: str
    path: str
