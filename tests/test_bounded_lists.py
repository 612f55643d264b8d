"""Every list other than a schedule's runs, bounded by the page: the audit trails, a webhook's delivery attempts,
a schedule's backfills, the schedules and workflows lists (and owners, tokens, webhooks) page after a cursor,
count `total` up to a cap and bound the offset; with a long list inserted in bulk, each page's statements
read a bounded number of rows, on both databases. /metrics and health read no history at all."""

from __future__ import annotations

import base64
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import func, select, text

from harness.console_signin import HTTPS, signed_in_browser
from harness.plans import assert_bounded, postgres_rows_read, reading, sqlite_plan
from harness.tokens import token_for_app
from recur_server.auth.models import OwnerEvent, ScheduleEvent
from recur_server.infra.extensions import db
from recur_server.models import Backfill, Schedule, Workflow
from recur_server.notify.models import Delivery, DeliveryAttempt, Event, Webhook
from recur_server.services.queries import MAX_OFFSET, TOTAL_CAP

START = datetime(2026, 1, 1, tzinfo=UTC)
LONG = TOTAL_CAP + 10_000  # beyond the cap, so every total is capped and a cursor goes deeper than an offset
PAGE = 50


def _schedule(client) -> str:
    workflow = client.post("/api/v1/workflows/", json={"name": "wf", "task": "builtin.noop"}).json["id"]
    created = client.post("/api/v1/schedules/", json={"name": "s", "workflow_id": workflow, "interval_seconds": 60})
    assert created.status_code == 201, created.json
    return str(created.json["id"])


def _webhook() -> int:
    webhook = Webhook(owner_id=1, url="https://hooks.example/in", event_types=["run.failed"],
                      secret="whsec_" + base64.b64encode(b"0" * 24).decode(), created_at=START)
    db.session.add(webhook)
    db.session.commit()
    return int(webhook.id)


def _delivery(webhook_id: int, number: int, status: str = "delivered") -> Delivery:
    event = Event(id=f"evt_{number:032x}", owner_id=1, type="run.failed", occurred_at=START, data={})
    delivery = Delivery(webhook_id=webhook_id, owner_id=1, event_id=event.id, status=status, attempts=1,
                        next_attempt_at=START, created_at=START)
    db.session.add(event)
    db.session.flush()  # no relationship orders the two inserts: the event first, for the foreign key
    db.session.add(delivery)
    db.session.flush()
    return delivery


def _attempt(delivery: Delivery, number: int, at: datetime) -> DeliveryAttempt:
    return DeliveryAttempt(delivery_id=delivery.id, webhook_id=delivery.webhook_id, event_id=delivery.event_id,
                           event_type="run.failed", attempt=number, at=at, status_code=500, duration_ms=3)


def _backfill(schedule_id: str, created: datetime, ident: str | None = None) -> Backfill:
    backfill = Backfill(schedule_id=schedule_id, start_at=START, end_at=START + timedelta(hours=1), overlap=None,
                        times=[START.isoformat()], total=1, started=1, status="done", created_at=created,
                        finished_at=created)
    if ident:
        backfill.id = ident
    return backfill


# --- copies of one row in bulk ------------------------------------------------------------------------

def _numbers() -> str:
    if db.engine.dialect.name == "postgresql":
        return "SELECT n FROM generate_series(1, :count) AS n"
    return ("WITH RECURSIVE numbers(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM numbers WHERE n < :count) "
            "SELECT n FROM numbers")


def moment_sql() -> str:
    """START + n seconds, as each database stores a UTCDateTime."""
    if db.engine.dialect.name == "postgresql":
        return "(TIMESTAMP '2026-01-01 00:00:00' + n * INTERVAL '1 second')"
    return "(datetime('2026-01-01 00:00:00', '+' || n || ' seconds') || '.000000')"


def ident_sql() -> str:
    """A UUID-shaped text id that sorts as n does."""
    if db.engine.dialect.name == "postgresql":
        return "(lpad(n::text, 8, '0') || '-0000-4000-8000-000000000000')"
    return "printf('%08d-0000-4000-8000-000000000000', n)"


def bulk_copies(table: str, template_id: object, count: int, values: dict[str, str | None]) -> None:
    """`count` copies of the row of `table` whose id is `template_id`, in one INSERT ... SELECT: a column in
    `values` gets that SQL expression of n (1..count), or is left to the database (None: an autoincrement
    id); every other column is the template's."""
    columns = [c.name for c in db.metadata.tables[table].columns if values.get(c.name, "") is not None]
    chosen = ", ".join(values.get(name) or f't."{name}"' for name in columns)
    names = ", ".join(f'"{name}"' for name in columns)
    db.session.execute(text(
        f"INSERT INTO {table} ({names}) SELECT {chosen} FROM {table} AS t, ({_numbers()}) AS numbered "
        "WHERE t.id = :template"), {"count": count, "template": template_id})
    db.session.commit()
    if db.engine.dialect.name == "postgresql":
        db.session.execute(text(f"ANALYZE {table}"))  # what autovacuum does after a bulk load
        db.session.commit()


# --- every row once, in the list's order, page by page after each cursor ---------------------------------

def _walk(client, path: str, **query) -> tuple[list[dict], int]:
    seen, cursor, pages = [], None, 0
    while True:
        page = client.get(path, query_string={"limit": 2, **query, **({"cursor": cursor} if cursor else {})})
        assert page.status_code == 200, page.json
        pages += 1
        seen += page.json["items"]
        assert page.json["total_capped"] is False
        cursor = page.json["next"]
        if cursor is None:
            return seen, pages


def _lists(client) -> dict[str, tuple[str, dict, str, list]]:
    """Each list with a few rows, some sharing their time: its path, query, the field each item is told
    apart by and the values it must show in order."""
    schedule_id = _schedule(client)  # makes one schedule event, its workflow and itself
    same = START + timedelta(hours=1)
    for number in range(4):
        db.session.add(ScheduleEvent(schedule_id=schedule_id, owner_id=1, actor_id=1, actor_name="a",
                                     action=f"act-{number}", at=same if number < 3 else START, changes=None))
        db.session.add(OwnerEvent(owner_id=1, owner_name="o", actor_id=1, actor_name="a", action=f"act-{number}",
                                  at=START))
        db.session.add(_backfill(schedule_id, same if number < 3 else START + timedelta(hours=2),
                                 f"0000000{number}-0000-4000-8000-000000000000"))
    webhook_id = _webhook()
    delivery = _delivery(webhook_id, 1)
    for number in range(5):
        db.session.add(_attempt(delivery, number, START))
    db.session.commit()
    trail = ["create", "act-2", "act-1", "act-0", "act-3"]  # the creation now, the others before it
    return {
        "schedule events": (f"/api/v1/schedules/{schedule_id}/events/", {}, "action", trail),
        "owner events": ("/api/v1/audit/owners/", {}, "action", ["act-3", "act-2", "act-1", "act-0"]),
        "backfills": (f"/api/v1/schedules/{schedule_id}/backfills/", {}, "id",
                      [f"0000000{n}-0000-4000-8000-000000000000" for n in (3, 2, 1, 0)]),
        "delivery attempts": (f"/api/v1/webhooks/{webhook_id}/deliveries/", {}, "attempt", [4, 3, 2, 1, 0]),
    }


def test_each_list_read_page_by_page_after_each_cursor_holds_every_row_once_in_its_order(app, client):
    for name, (path, query, field, expected) in _lists(client).items():
        seen, pages = _walk(client, path, **query)
        assert [item[field] for item in seen] == expected, name
        assert pages == -(-len(expected) // 2), name


def test_the_schedules_and_workflows_lists_walk_newest_and_oldest_first(app, client):
    workflows = [client.post("/api/v1/workflows/", json={"name": f"wf-{n}", "task": "builtin.noop"}).json["id"]
                 for n in range(3)]
    made = [client.post("/api/v1/schedules/", json={"name": f"s-{n}", "workflow_id": workflows[0],
                                                    "interval_seconds": 60}).json["id"] for n in range(5)]
    for schedule in db.session.scalars(select(Schedule)):  # ties on created_at are ordered by id
        schedule.created_at = START if schedule.id in made[:3] else START + timedelta(minutes=1)
    db.session.commit()
    expected = sorted(made, key=lambda i: (i not in made[:3], i), reverse=True)
    for query in ({}, {"owner_id": 1}):
        seen, _ = _walk(client, "/api/v1/schedules/", **query)
        assert [s["id"] for s in seen] == expected
        seen, _ = _walk(client, "/api/v1/workflows/", **query)
        assert [w["id"] for w in seen] == sorted(workflows)
    for path in ("/api/v1/owners/", "/api/v1/tokens/", "/api/v1/webhooks/"):
        assert client.get(path).json["total_capped"] is False


@pytest.mark.parametrize("path", [
    "/api/v1/audit/owners/", "/api/v1/schedules/", "/api/v1/workflows/", "/api/v1/owners/", "/api/v1/tokens/",
    "/api/v1/webhooks/", "events", "backfills", "deliveries",
])
@pytest.mark.parametrize("cursor", [
    "x", "a" * 201, base64.urlsafe_b64encode(b'["2026-01-01T00:00:00", "r"]').decode(),
    base64.urlsafe_b64encode(b'["2026-01-01T00:00:00+00:00", 1, 2]').decode(),
    base64.urlsafe_b64encode(b"[true]").decode(), base64.urlsafe_b64encode(b"[2147483648]").decode(),
])
def test_a_cursor_the_list_did_not_give_is_a_422_naming_it(client, path, cursor):
    if path in ("events", "backfills"):
        path = f"/api/v1/schedules/{_schedule(client)}/{path}/"
    elif path == "deliveries":
        path = f"/api/v1/webhooks/{_webhook()}/deliveries/"
    response = client.get(path, query_string={"cursor": cursor})
    assert response.status_code == 422 and "cursor" in response.json["errors"], response.json
    response = client.get(path, query_string={"offset": MAX_OFFSET + 1})
    assert response.status_code == 422 and "offset" in response.json["errors"], response.json


# --- a long list: each page's statements read a bounded number of rows ----------------------------------

def _long_lists(client) -> dict[str, tuple[str, str]]:
    """LONG rows in each list, copied in bulk from one real row: the list's path and the table it reads."""
    schedule_id = _schedule(client)
    [event_id] = db.session.scalars(select(ScheduleEvent.id).where(ScheduleEvent.schedule_id == schedule_id))
    bulk_copies("schedule_events", event_id, LONG, {"id": None, "at": moment_sql()})
    client.post("/api/v1/owners/", json={"name": "someone"})
    bulk_copies("owner_events", db.session.scalar(select(func.max(OwnerEvent.id))), LONG,
                {"id": None, "at": moment_sql()})
    db.session.add(_backfill(schedule_id, START, "00000000-0000-4000-8000-000000000000"))
    db.session.commit()
    bulk_copies("backfills", "00000000-0000-4000-8000-000000000000", LONG,
                {"id": ident_sql(), "created_at": moment_sql()})
    webhook_id = _webhook()
    delivery = _delivery(webhook_id, 0, status="pending")
    attempt = _attempt(delivery, 1, START)
    db.session.add(attempt)
    db.session.commit()
    bulk_copies("delivery_attempts", attempt.id, LONG, {"id": None, "at": moment_sql()})
    bulk_copies("scheduled_jobs", schedule_id, LONG, {"id": ident_sql(), "created_at": moment_sql(), "key": "NULL"})
    bulk_copies("workflows", db.session.scalar(select(Workflow.id)), LONG, {"id": None})
    return {"schedule events": (f"/api/v1/schedules/{schedule_id}/events/", "schedule_events"),
            "owner events": ("/api/v1/audit/owners/", "owner_events"),
            "backfills": (f"/api/v1/schedules/{schedule_id}/backfills/", "backfills"),
            "delivery attempts": (f"/api/v1/webhooks/{webhook_id}/deliveries/", "delivery_attempts"),
            "pending deliveries": (f"/api/v1/webhooks/{webhook_id}/deliveries/", "deliveries"),
            "schedules (admin)": ("/api/v1/schedules/", "scheduled_jobs"),
            "schedules (one owner's)": ("/api/v1/schedules/?owner_id=1", "scheduled_jobs"),
            "workflows (admin)": ("/api/v1/workflows/", "workflows"),
            "workflows (one owner's)": ("/api/v1/workflows/?owner_id=1", "workflows")}


def _with(path: str, **query: object) -> str:
    return path + ("&" if "?" in path else "?") + "&".join(f"{k}={v}" for k, v in query.items())


def test_each_list_page_reads_a_bounded_number_of_rows_with_a_long_list_behind_it(app, client):
    page_bound = 3 * (PAGE + 1)
    for name, (path, table) in _long_lists(client).items():
        first = client.get(_with(path, limit=PAGE)).json
        assert first["total"] == TOTAL_CAP and first["total_capped"] and len(first["items"]) == PAGE, name
        deep = client.get(_with(path, limit=1, offset=MAX_OFFSET)).json["next"]
        after = client.get(_with(path, limit=PAGE, cursor=deep)).json
        assert len(after["items"]) == PAGE and after["next"], name
        assert_bounded(reading(lambda p=path: client.get(_with(p, limit=PAGE)), table), page_bound, table)
        assert_bounded(reading(lambda p=path, d=deep: client.get(_with(p, limit=PAGE, cursor=d)), table),
                       page_bound, table)
        assert_bounded(reading(lambda p=path: client.get(_with(p, limit=PAGE, offset=100)), table),
                       page_bound + 100, table)
    browser = signed_in_browser(app, token_for_app(app, "console"))
    page = browser.get("/schedules", base_url=HTTPS)
    assert b"more than 10000" in page.data and b"Older" in page.data
    assert_bounded(reading(lambda: browser.get("/schedules", base_url=HTTPS), "scheduled_jobs"),
                   page_bound, "scheduled_jobs")


HISTORY = ("runs", "events", "deliveries", "delivery_attempts", "schedule_events", "owner_events", "backfills",
           "breaker_transitions", "trigger_requests")


def test_a_metrics_scrape_and_health_read_no_history(app, client):
    browser = signed_in_browser(app, token_for_app(app, "console"))
    for fetch in (lambda: client.get("/api/v1/health/"), lambda: app.test_client().get("/api/v1/health/"),
                  lambda: browser.get("/health", base_url=HTTPS)):
        assert reading(fetch, *HISTORY) == []
    # A scrape reads deliveries only to count those in trouble (recur_webhook_deliveries): two counts capped
    # at 10,000, each one range of ix_deliveries_due (status, next_attempt_at).
    scrape = reading(lambda: client.get("/metrics"), *HISTORY)
    assert len(scrape) == 2 and all("FROM deliveries" in statement and "LIMIT" in statement
                                    for statement, _ in scrape), scrape
    if db.engine.dialect.name == "sqlite":
        for statement, parameters in scrape:
            plan = sqlite_plan(statement, parameters)
            assert any(line.startswith("SEARCH deliveries USING") and "INDEX ix_deliveries_" in line
                       for line in plan), plan


def test_a_metrics_scrape_counts_late_and_failing_schedules_through_an_index(app, client):
    """recur_schedules_late and recur_schedules_failing count a handful of schedules among many: each count
    reads its own partial index, not every schedule (a scan of 100,000 took 27-29 ms a count on SQLite)."""
    schedule_id = _schedule(client)
    bulk_copies("scheduled_jobs", schedule_id, 5000, {"id": ident_sql(), "created_at": moment_sql(), "key": "NULL"})
    db.session.execute(text("UPDATE scheduled_jobs SET health = 'late' WHERE id IN "
                            "(SELECT id FROM scheduled_jobs ORDER BY id LIMIT 3)"))
    db.session.execute(text("UPDATE scheduled_jobs SET failing_since = :at WHERE id IN "
                            "(SELECT id FROM scheduled_jobs ORDER BY id DESC LIMIT 2)"), {"at": START})
    db.session.commit()
    if db.engine.dialect.name == "postgresql":
        db.session.execute(text("ANALYZE scheduled_jobs"))
        db.session.commit()
    scrape = reading(lambda: client.get("/metrics"), "scheduled_jobs")
    text_format = client.get("/metrics").get_data(as_text=True)
    assert "recur_schedules_late 3.0" in text_format and "recur_schedules_failing 2.0" in text_format
    counts = [(statement, parameters) for statement, parameters in scrape
              if "health" in statement or "failing_since" in statement]
    assert len(counts) == 2, scrape
    db.session.rollback()
    for statement, parameters in counts:
        if db.engine.dialect.name == "sqlite":
            on_table = [line for line in sqlite_plan(statement, parameters) if "scheduled_jobs" in line]
            assert on_table and all("INDEX ix_scheduled_jobs_late" in line or "INDEX ix_scheduled_jobs_failing" in line
                                    for line in on_table), (statement, on_table)
        else:
            assert postgres_rows_read(statement, parameters, "scheduled_jobs") <= 3, statement
    db.session.rollback()
