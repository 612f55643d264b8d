"""Recur for user code: everything a task module or a script imports, from one place.

    import recur

    @recur.task("reports.daily")                      # an event task: called as fn(event)
    @recur.cron("0 9 * * *", tz="Europe/Paris", retries=3)
    def daily(event): ...

    def send_report(account_id, *, dry_run=False):    # a plain function: called with its own arguments
        ...

    recur.schedule(send_report, every="15m", args=[42], kwargs={"dry_run": True}, key="reports-42")

    client = recur.Client("https://recur.example.com", token="recur_...")   # the API, from a script

Declarations take effect when `flask declarations sync` (or a worker started with RECUR_SYNC_ON_START=1)
brings the database in line with them; docs/declarations.md lists every option and the API field it sets.
Names are imported on first use: a script that only needs the client does not import the server's code.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from recur.declare import after, at, cron, every, register, rrule, schedule, task
    from recur_client import ApiError, Client
    from recur_server.tasks.context import NoRunContext, RunContext, context
    from recur_server.tasks.declarations import Declaration, DeclarationError
    from recur_server.tasks.registry import TaskEvent

_WHERE = {
    **dict.fromkeys(("NoRunContext", "RunContext", "context"), "recur_server.tasks.context"),
    "Declaration": "recur_server.tasks.declarations", "DeclarationError": "recur_server.tasks.declarations",
    "TaskEvent": "recur_server.tasks.registry",
    **dict.fromkeys(("after", "at", "cron", "every", "register", "rrule", "schedule", "task"), "recur.declare"),
    "ApiError": "recur_client", "Client": "recur_client",
}
__all__ = [
    "ApiError", "Client", "Declaration", "DeclarationError", "NoRunContext", "RunContext", "TaskEvent", "after",
    "at", "context", "cron", "every", "register", "rrule", "schedule", "task",
]


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'recur' has no attribute {name!r}")
    value = getattr(importlib.import_module(_WHERE[name]), name)
    globals()[name] = value
    return value
