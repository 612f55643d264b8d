"""`recur schedules explain` against real processes (gunicorn serving the API): a tick ahead, in words; one
before the schedule's start_at, as the API's JSON; a bad --at refused naming the field."""

from __future__ import annotations

import pytest

from harness.recur_cli_runner import recur

pytestmark = pytest.mark.integration


def test_explain_through_the_cli(stack):  # type: ignore[no-untyped-def]
    url, token = stack.api.base, stack.api.token

    def run(*args: str, ok: bool = True):  # type: ignore[no-untyped-def]
        return recur(url, token, *args, ok=ok)

    flow = run("workflows", "create", "reports", "builtin.noop", "--json").json()["id"]
    made = run("schedules", "create", "--name", "weekdays", "--workflow", str(flow), "--cron", "0 9 * * *",
               "--start-at", "2031-01-01T00:00:00Z", "--json").json()
    run("schedules", "edit", made["id"], "--json", "--only-between", "08:00-18:00")
    told = run("schedules", "explain", made["id"], "--at", "2031-01-06T09:00:00Z").out.splitlines()
    assert told[0] == "will_run: it will run then" and "  next tick: 2031-01-06T09:00:00Z" in told
    before = run("schedules", "explain", made["id"], "--at", "2030-12-31T09:00:00Z", "--json").json()
    assert (before["kind"], before["reason"], before["next_tick"]) == (
        "not_a_tick", "before_start", "2031-01-01T09:00:00Z")
    refused = run("schedules", "explain", made["id"], "--at", "soon", ok=False)
    assert refused.code != 0 and "at" in refused.err
