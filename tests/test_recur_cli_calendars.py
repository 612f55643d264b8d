"""`recur calendars` and a schedule's --calendar against real processes (gunicorn serving the API)."""

from __future__ import annotations

import pytest

from harness.recur_cli_runner import recur

pytestmark = pytest.mark.integration


def test_calendars_through_the_cli(stack):  # type: ignore[no-untyped-def]
    url, token = stack.api.base, stack.api.token

    def run(*args: str, ok: bool = True):  # type: ignore[no-untyped-def]
        return recur(url, token, *args, ok=ok)

    made = run("calendars", "create", "office", "--country", "DE", "--subdivision", "BY", "--first-year", "2031",
               "--last-year", "2031", "--date", "2031-12-24/2031-12-31", "--remove", "2031-12-26")
    assert made.out.startswith("created calendar ") and "office" in made.out
    listing = run("calendars", "list").out.splitlines()
    assert listing[0].split()[:5] == ["ID", "NAME", "COUNTRY", "YEARS", "DAYS"]
    assert listing[1].split()[1:4] == ["office", "DE/BY", "2031-2031"]
    assert run("calendars", "show", "office", "--json").json()["dates"] == ["2031-12-24/2031-12-31"]
    days = run("calendars", "days", "office", "--from", "2031-12-20", "--to", "2031-12-31").out.splitlines()
    assert days[0].split() == ["DATE", "NAME"] and [d.split()[0] for d in days[1:]] == [
        "2031-12-24", "2031-12-25", "2031-12-27", "2031-12-28", "2031-12-29", "2031-12-30", "2031-12-31"]

    flow = run("workflows", "create", "reports", "builtin.noop", "--json").json()["id"]
    preview = run("schedules", "preview", "--cron", "0 9 24 12 *", "--start-at", "2031-01-01T00:00:00Z",
                  "--calendar", "office", "--on-calendar", "shift_next", "--count", "1").out.splitlines()
    assert "2031-12-26T09:00:00" in preview[1], preview
    schedule = run("schedules", "create", "--name", "yearly", "--workflow", str(flow), "--cron", "0 9 24 12 *",
                   "--start-at", "2031-01-01T00:00:00Z", "--calendar", "office", "--on-calendar", "shift_previous",
                   "--json").json()
    assert schedule["next_run_at"] == "2031-12-23T09:00:00Z" and schedule["on_calendar"] == "shift_previous"

    run("calendars", "edit", "office", "--remove", "2031-12-26", "--remove", "2031-12-23")
    refused = run("calendars", "delete", "office", ok=False)
    assert refused.code == 1 and "yearly" in refused.err
    run("schedules", "edit", schedule["id"], "--calendar", "none")
    assert run("schedules", "show", schedule["id"], "--json").json()["calendar_id"] is None
    assert run("calendars", "delete", "office").out.startswith("deleted calendar ")
    bad = run("calendars", "create", "nowhere", "--country", "XX", ok=False)
    assert bad.code == 1 and "country" in bad.err
