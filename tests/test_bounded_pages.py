"""Pages bounded by the page, not by the history: a schedule's runs read a page at a time after a cursor,
`total` counted up to a cap, an offset bounded; with a big history inserted in bulk, on both databases."""

from __future__ import annotations

import base64
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import text

from harness.console_signin import HTTPS, signed_in_browser
from harness.plans import assert_bounded, reading
from harness.tokens import token_for_app
from recur_server.infra import cursors
from recur_server.infra.extensions import db
from recur_server.models import Run
from recur_server.services.history import STATS_WINDOW
from recur_server.services.queries import MAX_RUN_OFFSET, TOTAL_CAP

START = datetime(2026, 1, 1, tzinfo=UTC)


def _schedule(client) -> str:
    workflow = client.post("/api/v1/workflows/", json={"name": "wf", "task": "builtin.noop"}).json["id"]
    created = client.post("/api/v1/schedules/", json={"name": "s", "workflow_id": workflow, "interval_seconds": 60})
    assert created.status_code == 201, created.json
    return str(created.json["id"])


def bulk_runs(schedule_id: str, count: int) -> None:
    """`count` succeeded runs of the schedule, one a second from START, run n with id n (zero-padded), in one
    INSERT ... SELECT: no row travels from Python."""
    if db.engine.dialect.name == "postgresql":
        numbers = "SELECT n FROM generate_series(1, :count) AS n"
        moment = "(TIMESTAMP '2026-01-01 00:00:00' + n * INTERVAL '1 second')"
        ident = "lpad(n::text, 8, '0') || '-0000-4000-8000-000000000000'"
    else:
        numbers = ("WITH RECURSIVE numbers(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM numbers WHERE n < :count) "
                   "SELECT n FROM numbers")
        moment = "(datetime('2026-01-01 00:00:00', '+' || n || ' seconds') || '.000000')"
        ident = "printf('%08d-0000-4000-8000-000000000000', n)"
    db.session.execute(text(
        "INSERT INTO runs (id, schedule_id, repeat_number, retry_number, scheduled_for, started_at, finished_at, "
        f"status, trigger) SELECT {ident}, :schedule, n, 0, {moment}, {moment}, {moment}, 'succeeded', 'schedule' "
        f"FROM ({numbers}) AS numbered"), {"count": count, "schedule": schedule_id})
    db.session.commit()


def _error_names(response, field: str) -> None:
    assert response.status_code == 422, response.json
    assert field in response.json["errors"], response.json


def test_a_history_read_page_by_page_after_each_cursor_holds_every_run_once_newest_first(app, client):
    schedule_id = _schedule(client)
    same = START + timedelta(hours=1)  # three runs that started at the same instant: ordered by id
    for number, started in enumerate([START, same, same, same, START + timedelta(hours=2),
                                      START + timedelta(hours=3, microseconds=7)]):
        db.session.add(Run(id=f"run-{number}", schedule_id=schedule_id, repeat_number=number, retry_number=0,
                           scheduled_for=started, started_at=started, status="succeeded"))
    db.session.commit()
    seen, cursor, pages = [], None, 0
    while True:
        page = client.get(f"/api/v1/schedules/{schedule_id}/runs/", query_string={
            "limit": 2, **({"cursor": cursor} if cursor else {})}).json
        pages += 1
        seen += [item["id"] for item in page["items"]]
        assert page["total"] == 6 and page["total_capped"] is False
        cursor = page["next"]
        if cursor is None:
            break
    assert seen == ["run-5", "run-4", "run-3", "run-2", "run-1", "run-0"] and pages == 3
    assert client.get(f"/api/v1/schedules/{schedule_id}/runs/?limit=6").json["next"] is None
    assert [r["id"] for r in client.get(f"/api/v1/schedules/{schedule_id}/runs/?limit=2&offset=3").json["items"]] \
        == ["run-2", "run-1"]


@pytest.mark.parametrize("cursor", [
    "x", "%%%", "a" * 201, base64.urlsafe_b64encode(b"[1, 2]").decode(),
    base64.urlsafe_b64encode(b'["2026-01-01T00:00:00", "r"]').decode(),  # no offset: not one we wrote
    base64.urlsafe_b64encode(b'["0001-01-01T00:00:00+00:00", "r"]').decode(),
    base64.urlsafe_b64encode(b'["2026-01-01T00:00:00+00:00", "r\\u0000"]').decode(),
])
def test_a_cursor_the_list_did_not_give_is_a_422_naming_it(client, cursor):
    schedule_id = _schedule(client)
    _error_names(client.get(f"/api/v1/schedules/{schedule_id}/runs/", query_string={"cursor": cursor}), "cursor")


def test_an_offset_is_bounded_and_total_is_capped_through_the_index(app, client):
    schedule_id = _schedule(client)
    bulk_runs(schedule_id, TOTAL_CAP + 5)
    path = f"/api/v1/schedules/{schedule_id}/runs/"
    first = client.get(f"{path}?limit=3").json
    assert first["total"] == TOTAL_CAP and first["total_capped"] is True
    assert [r["repeat_number"] for r in first["items"]] == [TOTAL_CAP + 5, TOTAL_CAP + 4, TOTAL_CAP + 3]
    deepest = client.get(f"{path}?limit=1&offset={MAX_RUN_OFFSET}").json
    assert [r["repeat_number"] for r in deepest["items"]] == [5]
    _error_names(client.get(f"{path}?offset={MAX_RUN_OFFSET + 1}"), "offset")
    after = client.get(path, query_string={"limit": 3, "cursor": deepest["next"]}).json
    assert [r["repeat_number"] for r in after["items"]] == [4, 3, 2]
    last = client.get(path, query_string={"limit": 3, "cursor": after["next"]}).json
    assert [r["repeat_number"] for r in last["items"]] == [1] and last["next"] is None


# --- a big history: each page's statements read a bounded number of rows ---------------------------------

BIG = 200_000
PAGE = 50


def test_each_page_reads_a_bounded_number_of_rows_with_200_000_runs_behind_one_schedule(app, client):
    big = _schedule(client)
    bulk_runs(big, BIG)
    others = [_schedule(client) for _ in range(3)]
    for number, other in enumerate(others):
        db.session.add(Run(id=f"other-{number}", schedule_id=other, repeat_number=1, retry_number=0,
                           scheduled_for=START, started_at=START, status="succeeded"))
    db.session.commit()
    if db.engine.dialect.name == "postgresql":
        db.session.execute(text("ANALYZE runs"))  # what autovacuum does after a bulk load
        db.session.commit()
    runs = f"/api/v1/schedules/{big}/runs/"
    deep = cursors.encode(START + timedelta(seconds=BIG // 2), f"{BIG // 2:08d}-0000-4000-8000-000000000000")
    first = client.get(f"{runs}?limit={PAGE}").json
    assert first["total"] == TOTAL_CAP and first["total_capped"] and len(first["items"]) == PAGE
    page_bound = 3 * (PAGE + 1)
    assert_bounded(reading(lambda: client.get(f"{runs}?limit={PAGE}"), "runs"), page_bound)
    deep_page = client.get(runs, query_string={"limit": PAGE, "cursor": deep}).json
    assert deep_page["items"][0]["repeat_number"] == BIG // 2 - 1
    assert_bounded(reading(lambda: client.get(runs, query_string={"limit": PAGE, "cursor": deep}), "runs"),
                    page_bound)
    assert_bounded(reading(lambda: client.get(f"{runs}?limit={PAGE}&offset=100"), "runs"), page_bound + 100)
    detail = client.get(f"/api/v1/schedules/{big}/").json
    assert detail["stats"]["window"] == STATS_WINDOW and detail["stats"]["window_full"] is True
    assert detail["stats"]["runs"] == STATS_WINDOW and len(detail["recent_runs"]) == 10
    assert_bounded(reading(lambda: client.get(f"/api/v1/schedules/{big}/"), "runs"), page_bound)

    browser = signed_in_browser(app, token_for_app(app, "console"))
    assert_bounded(reading(lambda: browser.get("/schedules", base_url=HTTPS), "runs"), page_bound)
    page = browser.get(f"/schedules/{big}", base_url=HTTPS)
    assert b"more than 10000" in page.data and b"Older" in page.data
    assert_bounded(reading(lambda: browser.get(f"/schedules/{big}", base_url=HTTPS), "runs"), page_bound)
