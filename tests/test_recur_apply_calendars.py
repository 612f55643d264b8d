"""`recur apply` with calendars, against a real server: created and matched by name, a schedule naming its
calendar by name, a second apply changing nothing, an edit re-planning, --dry-run, and --prune deleting the
calendar the file stops listing after the schedule that used it."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from harness.recur_cli_runner import recur

pytestmark = pytest.mark.integration

WORKFLOWS = [{"name": "reports", "task": "builtin.noop"}]
SCHEDULE = {"key": "reports/yearly", "workflow": "reports", "name": "Yearly", "cron": "0 9 24 12 *",
            "start_at": "2031-01-01T00:00:00Z", "calendar": "office", "on_calendar": "shift_next"}


def _write(path: Path, calendars: list[dict], schedules: list[dict]) -> Path:  # type: ignore[type-arg]
    path.write_text(yaml.safe_dump({"workflows": WORKFLOWS, "calendars": calendars, "schedules": schedules},
                                   sort_keys=False))
    return path


def test_apply_calendars(stack, tmp_path):  # type: ignore[no-untyped-def]
    url, token, api = stack.api.base, stack.api.token, stack.api
    office = {"name": "office", "country": "de", "first_year": 2031, "last_year": 2031,
              "dates": ["2031-12-24/2031-12-27"]}
    path = _write(tmp_path / "recur.yaml", [office, {"name": "spare", "dates": ["2031-01-02"]}], [SCHEDULE])

    plan = recur(url, token, "apply", str(path), "--dry-run").out
    assert "create    calendar office" in plan and "calendars: 2 create" in plan
    assert api.ok("GET", "/api/v1/calendars/")["items"] == []  # a dry run changes nothing
    recur(url, token, "apply", str(path))
    schedule = api.ok("GET", "/api/v1/schedules/?key=reports/yearly")["items"][0]
    calendar = api.ok("GET", "/api/v1/calendars/?name=office")["items"][0]
    assert schedule["calendar_id"] == calendar["id"] and calendar["country"] == "DE"
    assert schedule["next_run_at"] == "2031-12-28T09:00:00Z"

    again = recur(url, token, "apply", str(path), "--json").json()
    assert {s["action"] for s in again["steps"]} == {"unchanged"}, again["steps"]  # "de" is "DE" on the server

    office["removed"] = ["2031-12-27"]
    _write(path, [office, {"name": "spare", "dates": ["2031-01-02"]}], [SCHEDULE])
    changed = recur(url, token, "apply", str(path)).out
    assert "update    calendar office" in changed and "calendars: 0 created, 1 updated" in changed
    assert api.ok("GET", f"/api/v1/schedules/{schedule['id']}/")["next_run_at"] == "2031-12-27T09:00:00Z"

    _write(path, [{"name": "spare", "dates": ["2031-01-02"]}], [{**SCHEDULE, "calendar": None}])
    pruned = recur(url, token, "apply", str(path), "--prune").out
    assert "delete    calendar office" in pruned and "update    schedule reports/yearly" in pruned
    assert [c["name"] for c in api.ok("GET", "/api/v1/calendars/")["items"]] == ["spare"]
    assert api.ok("GET", f"/api/v1/schedules/{schedule['id']}/")["calendar_id"] is None

    (tmp_path / "bad.yaml").write_text(yaml.safe_dump({"schedules": [{**SCHEDULE, "calendar_id": 1}]}))
    refused = recur(url, token, "apply", str(tmp_path / "bad.yaml"), ok=False)
    assert refused.code == 1 and "file.schedules.0.calendar_id: name the calendar with `calendar: NAME`" in refused.err
