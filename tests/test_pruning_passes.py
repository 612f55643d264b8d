"""How pruning passes run: in batches that stop at their limit and resume where they stopped, ties across a
batch all deleted, every statement through an index; the background pass one process at a time, once a
period, counted in metrics, and how long pruning has been behind. What a pass deletes: tests/test_retention.py."""

from __future__ import annotations

import re

import pytest
from sqlalchemy import event

from harness.retention_rows import (
    NOW,
    add_event,
    add_runs,
    add_schedule,
    add_workflow,
    ago,
    row_count,
    runs_left,
)
from recur_server.infra.extensions import db, get_redis
from recur_server.models import Run
from recur_server.notify.models import Event
from recur_server.policies.retention import Retention
from recur_server.services.retention import prune
from recur_server.workers.background import PRUNE_LOCK, PRUNED_KEY, prune_once


def test_a_pass_stops_after_its_batches_and_the_next_resumes_where_it_stopped(app) -> None:
    workflow_id = add_workflow()
    for name in ("s-a", "s-b", "s-c"):
        add_schedule(workflow_id, name)
        add_runs(name, *(100 + day for day in range(9)))  # 9 old runs each: 8 may go, the newest stays
    for number in range(12):
        add_event(f"evt_{number:02}", 30 + number)
    db.session.commit()
    retention = Retention(runs_days=30, runs_min=1, events_days=7)

    first = prune(NOW, retention, batch=5, max_batches=2)
    assert first.rows["runs"] == 8  # s-a's 8 in two batches (5, then 3): the pass's limit, s-b waits
    assert first.rows["events"] == 10  # the 10 oldest, in two batches of 5
    assert first.cursor == "s-b"
    assert len(runs_left("s-a")) == 1 and len(runs_left("s-b")) == 9 and len(runs_left("s-c")) == 9
    assert row_count(Event) == 2

    second = prune(NOW, retention, batch=5, max_batches=2, cursor=first.cursor)
    assert second.rows["runs"] == 8 and second.rows["events"] == 2 and second.cursor == "s-c"
    assert len(runs_left("s-b")) == 1 and len(runs_left("s-c")) == 9
    third = prune(NOW, retention, batch=5, max_batches=2, cursor=second.cursor)
    assert third.rows["runs"] == 8 and third.cursor is None  # the walk reached its end: the next starts over
    assert [len(runs_left(name)) for name in ("s-a", "s-b", "s-c")] == [1, 1, 1]
    assert row_count(Event) == 0


def test_batches_go_on_from_the_newest_start_deleted_and_ties_across_a_batch_are_all_deleted(app) -> None:
    workflow_id = add_workflow()
    add_schedule(workflow_id, "s-ties")
    old = ago(100)
    for number in range(12):  # twelve runs that started at the same instant: they straddle two batches
        db.session.add(Run(id=f"tie-{number:02}", schedule_id="s-ties", repeat_number=number, retry_number=0,
                           scheduled_for=old, started_at=old, finished_at=old, status="succeeded"))
    add_runs("s-ties", 101, 1)  # an older one, and the newest
    db.session.commit()
    statements: list[str] = []

    def seen(conn, cursor, statement, parameters, context, executemany) -> None:  # type: ignore[no-untyped-def]
        if statement.startswith("DELETE FROM runs"):
            statements.append(statement)

    event.listen(db.engine, "before_cursor_execute", seen)
    try:
        report = prune(NOW, Retention(runs_days=30, runs_min=1), batch=5, max_batches=10)
    finally:
        event.remove(db.engine, "before_cursor_execute", seen)
    assert report.rows["runs"] == 13 and runs_left("s-ties") == {"s-ties-1"}
    assert len(statements) == 3  # 5, 5, 3
    assert ">=" not in statements[0] and all(">=" in statement for statement in statements[1:])


def test_every_statement_of_a_pass_reads_through_an_index(app) -> None:
    if db.engine.dialect.name != "sqlite":
        pytest.skip("PostgreSQL's planner picks by table statistics; the indexes themselves are in the migrations")
    workflow_id = add_workflow()
    add_schedule(workflow_id, "s-plan")
    add_runs("s-plan", 90, 80, 70)
    db.session.commit()
    statements: list[tuple[str, object]] = []

    def seen(conn, cursor, statement, parameters, context, executemany) -> None:  # type: ignore[no-untyped-def]
        if statement.startswith(("SELECT", "DELETE")):
            statements.append((statement, parameters))

    event.listen(db.engine, "before_cursor_execute", seen)
    try:
        prune(NOW, Retention(runs_min=1), batch=500, max_batches=2)
    finally:
        event.remove(db.engine, "before_cursor_execute", seen)
    deletes = [statement for statement, _ in statements if statement.startswith("DELETE")]
    assert {statement.split()[2] for statement in deletes} == {
        "runs", "backfills", "delivery_attempts", "deliveries", "events", "schedule_events", "owner_events",
        "console_sessions", "breaker_transitions", "trigger_requests", "follow_triggers"}
    with db.engine.connect() as connection:
        for statement, parameters in statements:
            plan = [row[3] for row in connection.exec_driver_sql("EXPLAIN QUERY PLAN " + statement, parameters)]
            # The walk over schedules goes along their primary key's index, a page at a time; nothing else
            # scans a table or sorts.
            scans = [step for step in plan if step.startswith("SCAN") and step != (
                "SCAN scheduled_jobs USING INDEX sqlite_autoindex_scheduled_jobs_1")]
            assert not scans and not any("TEMP B-TREE" in step for step in plan), (statement, plan)


# --- the background pass ------------------------------------------------------------------------

def _pruned_metric(client, table: str) -> float:  # type: ignore[no-untyped-def]
    text = client.get("/metrics").get_data(as_text=True)
    match = re.search(rf'^recur_pruned_rows_total\{{table="{table}"\}} (\S+)$', text, re.M)
    return float(match.group(1)) if match else 0.0


def test_the_background_pass_runs_one_process_at_a_time_once_a_period_and_counts_in_metrics(app, fake_clock) -> None:
    fake_clock.set(NOW)
    workflow_id = add_workflow()
    add_schedule(workflow_id, "s-bg")
    add_runs("s-bg", *(200 + day for day in range(150)))  # 150 runs older than the default 30 days
    db.session.commit()
    redis = get_redis(app)
    client = app.test_client()
    before = _pruned_metric(client, "runs")

    # Another process holds the lock: this one prunes nothing and leaves the lock alone.
    redis.set(PRUNE_LOCK, "another-process", px=10_000)
    assert prune_once(app, every=60) is None
    assert redis.get(PRUNE_LOCK) == b"another-process"
    assert len(runs_left("s-bg")) == 150
    redis.delete(PRUNE_LOCK)

    report = prune_once(app, every=60)
    assert report is not None and report["runs"] == 50  # the default keeps the newest 100
    assert len(runs_left("s-bg")) == 100
    assert not redis.exists(PRUNE_LOCK)
    assert 59_000 < redis.pttl(PRUNED_KEY) <= 60_000
    # Within the period, another worker's turn is skipped.
    assert prune_once(app, every=60) is None
    assert _pruned_metric(client, "runs") == before + 50


def _behind_seconds(client) -> float:  # type: ignore[no-untyped-def]
    text = client.get("/metrics").get_data(as_text=True)
    match = re.search(r"^recur_pruning_behind_seconds (\S+)$", text, re.M)
    assert match, "recur_pruning_behind_seconds is not exposed"
    return float(match.group(1))


@pytest.mark.parametrize("table", ["runs", "events"])
def test_passes_that_stop_at_their_limit_say_how_long_pruning_has_been_behind_until_one_catches_up(
        chain_app, fake_clock, table) -> None:
    """A history written faster than the passes prune it grows past its retention for ever unless someone
    is told: from the first pass that stops at its limit with rows left until one deletes everything past
    retention, recur_pruning_behind_seconds counts (on the cluster clock); then it is 0 again. On fakeredis
    and on a real redis-server, where the mark lives."""
    app = chain_app
    fake_clock.set(NOW)
    workflow_id = add_workflow()
    add_schedule(workflow_id, "s-behind")
    if table == "runs":
        add_runs("s-behind", *(200 + day for day in range(150)))  # 50 past the newest 100 kept
    else:
        for index in range(50):
            add_event(f"e-behind-{index}", 30 + index)  # past the default 7 days
    db.session.commit()
    app.config.update(RECUR_PRUNE_BATCH=10, RECUR_PRUNE_MAX_BATCHES=2)  # 20 rows of each table a pass
    client = app.test_client()
    assert _behind_seconds(client) == 0

    assert prune_once(app)[table] == 20  # stopped at its limit: 30 left
    fake_clock.advance(seconds=60)
    assert _behind_seconds(client) == 60
    assert prune_once(app)[table] == 20  # still behind since the first pass
    fake_clock.advance(seconds=60)
    assert _behind_seconds(client) == 120
    assert prune_once(app)[table] == 10  # the rest: caught up
    fake_clock.advance(seconds=60)
    assert _behind_seconds(client) == 0
