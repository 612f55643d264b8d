"""Named calendars through the API: create, list, edit, delete, their days; schedules that skip or shift off
them, their preview and describe, the re-plan an edit makes, and scoping. Both databases."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from harness.chain_driver import next_due, runs_of, scheduled_ids, step
from harness.tokens import authorized_client, new_owner_token
from recur_server.calendars.expansion import MAX_DAYS, MAX_ENTRIES
from recur_server.infra.extensions import db
from recur_server.models import Schedule

API = "/api/v1"


@pytest.fixture
def clock_2026(fake_clock):  # type: ignore[no-untyped-def]
    fake_clock.set(datetime(2026, 12, 20, 12, 0, tzinfo=UTC))
    return fake_clock


def _ok(response, status=200):  # type: ignore[no-untyped-def]
    assert response.status_code == status, response.json
    return response.json


def _calendar(client, **body):  # type: ignore[no-untyped-def]
    return _ok(client.post(f"{API}/calendars/", json={"name": "office", **body}), 201)


def _workflow(client) -> int:  # type: ignore[no-untyped-def]
    return int(_ok(client.post(f"{API}/workflows/", json={"name": "wf", "task": "builtin.noop"}), 201)["id"])


def test_a_country_calendar_with_dates_by_hand(client, clock_2026) -> None:  # type: ignore[no-untyped-def]
    made = _calendar(client, country="de", subdivision="BY", first_year=2026, last_year=2027,
                     dates=["2026-12-24/2026-12-31"], removed=["2026-12-26"])
    assert made["country"] == "DE" and made["first_year"] == 2026 and made["dates"] == ["2026-12-24/2026-12-31"]
    days = _ok(client.get(f"{API}/calendars/{made['id']}/days/?from=2026-12-20&to=2027-01-06"))
    listed = {d["date"]: d["name"] for d in days["days"]}
    assert "2026-12-26" not in listed and listed["2026-12-27"] == "listed by hand"
    assert listed["2026-12-25"] != "listed by hand" and "2027-01-06" in listed  # Epiphany: Bavaria only
    assert (days["from"], days["to"]) == ("2026-12-20", "2027-01-06")
    page = _ok(client.get(f"{API}/calendars/?name=office"))
    assert [c["id"] for c in page["items"]] == [made["id"]] and page["next"] is None
    default = _ok(client.get(f"{API}/calendars/{made['id']}/days/"))  # a year from today
    assert default["from"] == "2026-12-20" and default["to"] == "2028-01-23"


@pytest.mark.parametrize(("body", "field"), [
    ({"country": "XX"}, "country"),
    ({"country": "US", "subdivision": "ZZ"}, "subdivision"),
    ({"subdivision": "NY"}, "subdivision"),
    ({"dates": ["2026-02-30"]}, "dates"),
    ({"dates": ["2026-12-31/2026-12-01"]}, "dates"),
    ({"dates": ["2026-01-01/2027-06-01"]}, "dates"),
    ({"dates": ["2026-01-01"] * (MAX_ENTRIES + 1)}, "dates"),
    ({"dates": [f"{year}-01-01/{year}-12-31" for year in range(2000, 2000 + MAX_DAYS // 365 + 1)]}, "dates"),
    ({"first_year": 2026, "last_year": 2050}, "last_year"),
    ({"first_year": 2026, "last_year": 2025}, "last_year"),
    ({"removed": ["soon"]}, "removed"),
])
def test_bad_calendars_get_a_422_naming_the_field(client, body, field) -> None:  # type: ignore[no-untyped-def]
    response = client.post(f"{API}/calendars/", json={"name": "bad", **body})
    assert response.status_code == 422, response.json
    assert [name for name in response.json["errors"] if name.split(".")[0] == field], response.json


def test_the_days_query_is_bounded(client) -> None:  # type: ignore[no-untyped-def]
    made = _calendar(client, dates=["2026-12-25"])
    for query in ("from=2026-01-01&to=2027-12-31", "from=2026-02-01&to=2026-01-01", "from=tomorrow"):
        response = client.get(f"{API}/calendars/{made['id']}/days/?{query}")
        assert response.status_code == 422, (query, response.json)
        assert set(response.json["errors"]) & {"from", "to"}, response.json


def test_names_are_an_owners_own_and_another_owners_calendar_is_not_there(app, client) -> None:  # type: ignore[no-untyped-def]
    mine = _calendar(client, dates=["2026-12-25"])
    assert client.post(f"{API}/calendars/", json={"name": "office"}).status_code == 409
    other = authorized_client(app, new_owner_token(app, "other"))
    for method, path in (("get", ""), ("get", "days/"), ("patch", ""), ("delete", "")):
        response = getattr(other, method)(f"{API}/calendars/{mine['id']}/{path}",
                                          **({"json": {"dates": []}} if method == "patch" else {}))
        assert response.status_code == 404, (method, path, response.json)
    assert _ok(other.get(f"{API}/calendars/"))["items"] == []
    theirs = _ok(other.post(f"{API}/calendars/", json={"name": "office"}), 201)  # the same name: their own
    flow = _ok(other.post(f"{API}/workflows/", json={"name": "wf", "task": "builtin.noop"}), 201)["id"]
    for path, body in (("/schedules/", {"name": "s", "workflow_id": flow}), ("/schedules/preview/", {})):
        response = other.post(f"{API}{path}", json={**body, "cron": "0 9 * * *", "calendar_id": mine["id"]})
        assert response.status_code == 422 and "calendar_id" in response.json["errors"], response.json
    assert _ok(other.post(f"{API}/schedules/", json={"name": "s", "workflow_id": flow, "cron": "0 9 * * *",
                                                     "calendar_id": theirs["id"]}), 201)["calendar_id"] == theirs["id"]
    owner_id = theirs["owner_id"]  # deleting the owner takes its calendar in use with its schedules
    assert client.delete(f"{API}/owners/{owner_id}/").status_code == 204
    assert client.get(f"{API}/calendars/{theirs['id']}/").status_code == 404


def test_an_unknown_calendar_is_a_422_naming_calendar_id(client) -> None:  # type: ignore[no-untyped-def]
    flow = _workflow(client)
    response = client.post(f"{API}/schedules/", json={"name": "s", "workflow_id": flow, "cron": "0 9 * * *",
                                                      "calendar_id": 999})
    assert response.status_code == 422 and "calendar_id" in response.json["errors"], response.json
    response = client.post(f"{API}/schedules/", json={"name": "s", "workflow_id": flow, "cron": "0 9 * * *",
                                                      "on_calendar": "sideways"})
    assert response.status_code == 422 and "on_calendar" in response.json["errors"], response.json


def test_preview_and_describe_honour_the_calendar(client, clock_2026) -> None:  # type: ignore[no-untyped-def]
    calendar = _calendar(client, dates=["2026-12-24/2026-12-26"])
    preview = _ok(client.post(f"{API}/schedules/preview/", json={
        "cron": "0 9 * * 4", "timezone": "Europe/Berlin", "calendar_id": calendar["id"], "on_calendar": "shift_next",
        "not_on": ["sun"], "count": 2}))
    assert [t["local"] for t in preview["next_runs"]] == ["2026-12-28T09:00:00+01:00", "2026-12-31T09:00:00+01:00"]
    assert "moved to the next day off the calendar (3 dates)" in preview["description"]
    flow = _workflow(client)
    made = _ok(client.post(f"{API}/schedules/", json={"name": "s", "workflow_id": flow, "cron": "0 9 * * *",
                                                      "calendar_id": calendar["id"]}), 201)
    assert made["next_run_at"] == "2026-12-21T09:00:00Z" and made["on_calendar"] is None
    described = _ok(client.get(f"{API}/schedules/{made['id']}/"))
    assert described["next_runs"][3:5] == ["2026-12-27T09:00:00Z", "2026-12-28T09:00:00Z"]  # 24-26 skipped
    assert "except on calendar days (3 dates)" in described["timing_description"]
    planned = _ok(client.post(f"{API}/schedules/{made['id']}/backfill/", json={
        "start": "2026-12-01T00:00:00Z", "end": "2026-12-31T00:00:00Z", "dry_run": True}))
    assert planned["total"] == 27 and "2026-12-25T09:00:00Z" not in planned["times"]


def test_editing_a_calendar_replans_the_schedules_that_use_it(client, clock_2026) -> None:  # type: ignore[no-untyped-def]
    calendar = _calendar(client, dates=["2026-12-25"])
    flow = _workflow(client)
    monthly = _ok(client.post(f"{API}/schedules/", json={"name": "m", "workflow_id": flow, "cron": "0 9 21 * *",
                                                         "calendar_id": calendar["id"],
                                                         "on_calendar": "shift_next"}), 201)
    assert monthly["next_run_at"] == "2026-12-21T09:00:00Z"
    other = _ok(client.post(f"{API}/schedules/", json={"name": "plain", "workflow_id": flow,
                                                       "cron": "0 9 21 * *"}), 201)
    _ok(client.patch(f"{API}/calendars/{calendar['id']}/", json={"dates": ["2026-12-21/2026-12-22"]}))
    moved = _ok(client.get(f"{API}/schedules/{monthly['id']}/"))
    assert moved["next_run_at"] == "2026-12-23T09:00:00Z" and moved["revision"] == monthly["revision"] + 1
    assert _ok(client.get(f"{API}/schedules/{other['id']}/"))["revision"] == other["revision"]
    events = _ok(client.get(f"{API}/schedules/{monthly['id']}/events/"))["items"]
    assert events[0]["action"] == "calendar_changed", events[0]
    unchanged = _ok(client.patch(f"{API}/calendars/{calendar['id']}/", json={"name": "renamed"}))
    assert unchanged["name"] == "renamed"
    assert _ok(client.get(f"{API}/schedules/{monthly['id']}/"))["revision"] == moved["revision"]  # days kept
    with db.session.no_autoflush:
        row = db.session.get(Schedule, monthly["id"])
        assert row is not None and row.calendar_id == calendar["id"]


def test_a_calendar_in_use_cannot_be_deleted(client) -> None:  # type: ignore[no-untyped-def]
    calendar = _calendar(client, dates=["2026-12-25"])
    flow = _workflow(client)
    schedule = _ok(client.post(f"{API}/schedules/", json={"name": "daily", "workflow_id": flow,
                                                          "cron": "0 9 * * *", "calendar_id": calendar["id"]}), 201)
    refused = client.delete(f"{API}/calendars/{calendar['id']}/")
    assert refused.status_code == 409 and "daily" in refused.json["message"], refused.json
    _ok(client.patch(f"{API}/schedules/{schedule['id']}/", json={"calendar_id": None}))
    assert client.delete(f"{API}/calendars/{calendar['id']}/").status_code == 204
    assert client.get(f"{API}/calendars/{calendar['id']}/").status_code == 404


def test_the_chain_runs_the_moved_ticks(app, client, clock_2026) -> None:  # type: ignore[no-untyped-def]
    """Real RQ machinery in-process: each run plans its successor through the calendar, in the worker's path."""
    calendar = _calendar(client, dates=["2026-12-24/2026-12-26"])
    made = _ok(client.post(f"{API}/schedules/", json={
        "name": "daily", "workflow_id": _workflow(client), "cron": "0 9 * * *", "timezone": "Europe/Berlin",
        "calendar_id": calendar["id"], "on_calendar": "shift_next"}), 201)
    due = [step(app, clock_2026) for _ in range(5)]
    assert due == [datetime(2026, 12, day, 8, tzinfo=UTC) for day in (21, 22, 23, 27, 28)]  # 24-26 onto the 27th
    assert [r.scheduled_for.day for r in runs_of(made["id"])] == [21, 22, 23, 27, 28]
    _ok(client.patch(f"{API}/calendars/{calendar['id']}/", json={"dates": ["2026-12-29"]}))
    assert next_due(app) == datetime(2026, 12, 30, 8, tzinfo=UTC)
    assert len([i for i in scheduled_ids(app) if i.startswith(f"sched-{made['id']}-")]) == 1


def test_catch_up_runs_only_the_ticks_the_calendar_leaves(app, client, clock_2026) -> None:  # type: ignore[no-untyped-def]
    """A link run two and a half days late under catch_up=all: the missed ticks it works through are the
    spec's, so the calendar's day is not among them."""
    calendar = _calendar(client, dates=["2026-12-22"])
    made = _ok(client.post(f"{API}/schedules/", json={
        "name": "daily", "workflow_id": _workflow(client), "cron": "0 9 * * *", "calendar_id": calendar["id"],
        "catch_up": "all"}), 201)
    step(app, clock_2026, extra_seconds=2.5 * 86400)  # the 21st's link, at 21:00 on the 23rd
    for _ in range(3):
        step(app, clock_2026)
    ran = sorted((r.scheduled_for, r.trigger) for r in runs_of(made["id"]) if r.status == "succeeded")
    assert [(t.day, trigger) for t, trigger in ran][:2] == [(21, "catch_up"), (23, "catch_up")], ran
    assert [t.day for t, _ in ran] == [21, 23, 24, 25], ran
