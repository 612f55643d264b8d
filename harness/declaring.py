"""Declarations made inside a test's own process (not by a task module a worker loads): the registry emptied
around each test, and the two declarations the sync tests start from."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from harness import declared_tasks
from recur_server.tasks import declarations


@pytest.fixture(autouse=True)
def no_declarations() -> Iterator[None]:
    """Autouse in a module that imports it: each test starts and ends with no declaration registered."""
    declarations.forget()
    yield
    declarations.forget()


def declare_both(cron: str = "0 9 * * *") -> None:
    declarations.declare(declared_tasks.tick, {"cron": cron, "tz": "Europe/Paris", "retries": 2,
                                               "payload": {"from": "cron"}}, key="tick-cron")
    declarations.declare(declared_tasks.send_report, {"every": "15m", "timeout": 30}, key="reports-42",
                         args=[42], kwargs={"dry_run": True})
