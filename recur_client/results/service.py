"""The service itself: its health and the tasks its workers know."""

from __future__ import annotations

from typing import Any, NotRequired, TypedDict


class WorkerProcess(TypedDict):
    """A worker process on record (admins only): live while its beat is within the server's grace."""

    name: str
    host: str
    pid: int
    queues: list[str]
    last_seen_at: str
    alive: bool


class Health(TypedDict):
    """`status` is ok, degraded (a queue with active schedules has no live worker) or unavailable; `database`
    and `redis` are "ok" or what is wrong; `workers` counts live worker processes per queue; an admin also sees
    counts and every worker process."""

    status: str
    version: str  # the version of Recur the web process that answered runs
    database: str
    redis: str
    workers: dict[str, int]
    queues_without_workers: list[str]
    worker_grace_seconds: float
    worker_processes: NotRequired[list[WorkerProcess]]
    schedules: NotRequired[dict[str, Any]]
    reconciler: NotRequired[dict[str, Any]]


class Task(TypedDict):
    name: str
    path: str
