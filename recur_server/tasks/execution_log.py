"""An optional log of every task body start and success, kept outside the database and Redis.

The runs table records claims; this records executions, so a check (the chaos run's) can count how often
a body really started, and whether every body that succeeded was recorded as succeeded. With
RECUR_EXECUTION_LOG naming a file, each start appends one line `schedule_id repeat retry scheduled_for pid`
to it, and each attempt whose task succeeded (before its outcome is committed) the same line to the file
of that name plus `.ok`, in one O_APPEND write: atomic for a line this short, from any number of processes.
Unset (the default), it costs a config lookup.
"""

from __future__ import annotations

import os

from flask import current_app, has_app_context

from recur_server.tasks.registry import TaskEvent

SUCCESS_SUFFIX = ".ok"


def record_start(event: TaskEvent) -> None:
    _append(event, "")


def record_success(event: TaskEvent) -> None:
    _append(event, SUCCESS_SUFFIX)


def _append(event: TaskEvent, suffix: str) -> None:
    path = current_app.config.get("RECUR_EXECUTION_LOG") if has_app_context() else None
    if not path:
        return
    path = path + suffix
    line = (f"{event['scheduled_job_id']} {event['repeat_number']} {event['retry_number']} "
            f"{event['scheduled_for']} {os.getpid()}\n")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)
