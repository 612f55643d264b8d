"""A team's plain job functions, as an rq cron config schedules them (harness/legacy_rq_cron.py): their own
arguments, no event. Each call is appended as a JSON line to the file RECUR_TEST_CALLS_FILE names, so a test
sees what real worker processes called."""

from __future__ import annotations

import json
import os
from typing import Any


def record(function: str, *args: Any, **kwargs: Any) -> None:
    path = os.environ.get("RECUR_TEST_CALLS_FILE")
    if path:
        with open(path, "a", encoding="utf-8") as out:
            out.write(json.dumps({"function": function, "args": list(args), "kwargs": kwargs}) + "\n")


def send_digest(account_id: int, *, dry_run: bool = False) -> None:
    record("send_digest", account_id, dry_run=dry_run)


def refresh() -> None:
    record("refresh")


def nightly_cleanup(days: int = 30) -> None:
    record("nightly_cleanup", days=days)


def archive(since: Any) -> None:
    record("archive", str(since))
