"""A task module as a team would write one, for the real processes of tests/test_declarations_e2e.py: a
cron schedule on a decorated task, an interval schedule on a plain function with args and kwargs, and a
schedule that follows it. What it
declares follows the environment, so that a test can change a declaration and restart a worker."""

from __future__ import annotations

import os

import recur
from harness.declared_tasks import archive, send_report, tick

recur.cron(os.environ.get("TEST_DECLARED_CRON", "*/2 * * * * *"), tz="Europe/Paris", retries=2,
           payload={"from": "cron"}, key="tick-cron")(tick)

if os.environ.get("TEST_DECLARE_REPORT", "1") == "1":
    recur.schedule(send_report, every="3s", args=[42], kwargs={"dry_run": True, "channels": ["mail"]},
                   key="reports-42", timeout=30)
    # Runs only when a run of send_report succeeds: its own timing does not come round in practice.
    recur.schedule(archive, every="3650d", follows=send_report, args=["reports"], key="archive-reports")
