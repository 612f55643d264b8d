"""POST /apply/ and a declarations sync make their schedules in bulk (recur_server.services.create_many): a
thousand schedules cost a few statements more than ten, not a statement or two each, and their links are in
Redis after the commit.
The refusals are those of one create after another: the first refused, in the file's order, is the one
named, whether a timing, a workflow, a key or the quota refuses it, and nothing is kept."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import event, func, select

from harness import declared_tasks
from harness.declaring import no_declarations  # noqa: F401  (autouse: no declaration left behind)
from recur_server.auth.models import ScheduleEvent
from recur_server.chain.ids import link_id
from recur_server.chain.redis_links import scheduled_key
from recur_server.declarations import execute
from recur_server.declarations.sync import sync
from recur_server.infra.extensions import db, get_queue, get_redis
from recur_server.models import Schedule
from recur_server.services import apply as applying
from recur_server.tasks import declarations
from tests.conftest import authorized_client, token_for_app


@contextmanager
def statements() -> Iterator[Counter[str]]:
    """The SQL statements sent meanwhile, by their first words (an executemany counts once)."""
    seen: Counter[str] = Counter()

    def count(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        seen[" ".join(statement.split()[:3])] += 1

    event.listen(db.engine, "before_cursor_execute", count)
    try:
        yield seen
    finally:
        event.remove(db.engine, "before_cursor_execute", count)


def apply(client: Any, schedules: list[dict[str, Any]]) -> Any:
    return client.post("/api/v1/apply/", json={"schedules": {"create": schedules}})


def hourly(prefix: str, count: int) -> list[dict[str, Any]]:
    return [{"name": f"{prefix}{i}", "key": f"{prefix}{i}", "workflow": "w", "cron": "0 * * * *"}
            for i in range(count)]


def test_a_thousand_schedules_cost_a_few_statements_more_than_ten_and_each_has_its_link(real_app):
    client = authorized_client(real_app, token_for_app(real_app))
    assert client.post("/api/v1/workflows/", json={"name": "w", "task": "builtin.noop"}).status_code == 201
    with statements() as few:
        assert apply(client, hourly("a", 10)).status_code == 200
    with statements() as many:
        answer = apply(client, hourly("b", 1000))
    assert answer.status_code == 200, answer.json
    # Before: two or more statements a schedule (its insert, its event, its workflow and key checks), 6,000 in all.
    assert sum(many.values()) <= sum(few.values()) + 10, (few, many)
    made = {item["name"]: item["id"] for item in answer.json["schedules"]}
    assert len(made) == 1000
    assert db.session.scalar(select(func.count()).select_from(Schedule)) == 1010
    assert db.session.scalar(select(func.count()).select_from(ScheduleEvent)
                             .where(ScheduleEvent.action == "create", ScheduleEvent.actor_name == "admin")) == 1010
    pending = set(get_redis().zrange(scheduled_key(get_queue()), 0, -1))
    assert {link_id(ident, 0, 0).encode() for ident in made.values()} <= pending


def test_the_first_refusal_in_order_is_named_and_nothing_is_kept(app, client):
    assert client.post("/api/v1/workflows/", json={"name": "w", "task": "builtin.noop"}).status_code == 201
    good = hourly("s", 4)
    cases = [
        # a workflow refused before a timing refused later
        ({1: {"workflow": "nowhere"}, 3: {"cron": "0 0 31 2 *"}}, "schedules.create.1", 422),
        # a timing refused before a workflow refused later
        ({1: {"cron": "0 0 31 2 *"}, 3: {"workflow": "nowhere"}}, "schedules.create.1", 422),
        # a key given twice: the second is refused
        ({2: {"key": "s0"}}, "schedules.create.2", 409),
    ]
    for edits, named, status in cases:
        bodies = [{**body, **edits.get(i, {})} for i, body in enumerate(good)]
        answer = apply(client, bodies)
        assert answer.status_code == status and answer.json["message"].startswith(named), (edits, answer.json)
        assert db.session.scalar(select(func.count()).select_from(Schedule)) == 0
        db.session.rollback()


def test_an_apply_made_in_chunks_names_the_same_refusals_and_keeps_all_or_nothing(real_app, monkeypatch):
    # An apply makes its schedules CREATE_CHUNK at a time and lets each chunk's rows go (its memory does not
    # grow with its size: 100,000 schedules took 1 GB in one piece, 0.36 GB in chunks of 5,000).
    monkeypatch.setattr(applying, "CREATE_CHUNK", 3)
    client = authorized_client(real_app, token_for_app(real_app))
    assert client.post("/api/v1/workflows/", json={"name": "w", "task": "builtin.noop"}).status_code == 201
    refusals = [({7: {"key": "s1"}}, "schedules.create.7 (s1)", 409),  # a key taken in an earlier chunk
                ({4: {"cron": "0 0 31 2 *"}}, "schedules.create.4 (s4)", 422),
                ({2: {"after": {"schedule": "s5"}}}, "schedules.create.2 (s2)", 422)]  # one made after it
    for edits, named, status in refusals:
        bodies = [{**body, **edits.get(i, {})} for i, body in enumerate(hourly("s", 8))]
        answer = apply(client, bodies)
        assert answer.status_code == status and answer.json["message"].startswith(named), (edits, answer.json)
        assert db.session.scalar(select(func.count()).select_from(Schedule)) == 0
        db.session.rollback()
    bodies = hourly("s", 8)
    bodies[6]["after"] = {"schedule": "s1"}  # follows one made in an earlier chunk
    answer = apply(client, bodies)
    assert answer.status_code == 200, answer.json
    made = [item["id"] for item in answer.json["schedules"]]
    assert [item["name"] for item in answer.json["schedules"]] == [f"s{i}" for i in range(8)]
    follower = db.session.get(Schedule, made[6])
    assert follower is not None and follower.after_schedule_id == made[1]
    pending = set(get_redis().zrange(scheduled_key(get_queue()), 0, -1))
    assert {link_id(ident, 0, 0).encode() for ident in made if ident != made[6]} <= pending


@contextmanager
def sequence() -> Iterator[list[str]]:
    """The SQL statements sent meanwhile, in order, by their first words."""
    seen: list[str] = []

    def note(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        seen.append(" ".join(statement.replace('"', "").split()[:4]))

    event.listen(db.engine, "before_cursor_execute", note)
    try:
        yield seen
    finally:
        event.remove(db.engine, "before_cursor_execute", note)


def _keys_read_after_an_insert(seen: list[str]) -> list[int]:
    first = next(i for i, words in enumerate(seen) if words.startswith("INSERT INTO scheduled_jobs"))
    return [i for i, words in enumerate(seen[first:], first)
            if words.startswith(("SELECT scheduled_jobs.key", "SELECT declared_keys.key"))]


def test_the_owners_keys_are_read_before_the_first_schedule_is_written(real_app, monkeypatch):
    # Read between batches, PostgreSQL planned the read against a table the transaction was filling and
    # scanned it: 0.2 s a read at 30,000 schedules, an apply of 50,000 taking 101 s instead of 55.
    monkeypatch.setattr(applying, "CREATE_CHUNK", 4)
    monkeypatch.setattr(execute, "CREATE_BATCH", 4)
    client = authorized_client(real_app, token_for_app(real_app))
    assert client.post("/api/v1/workflows/", json={"name": "w", "task": "builtin.noop"}).status_code == 201
    with sequence() as seen:
        assert apply(client, hourly("a", 10)).status_code == 200
    assert _keys_read_after_an_insert(seen) == [], seen
    for i in range(10):
        declarations.declare(declared_tasks.tick, {"cron": f"{i} * * * *"}, key=f"d{i}")
    with sequence() as seen:
        assert sync(real_app).plan.count("create") == 10
    assert _keys_read_after_an_insert(seen) == [], seen


def test_the_quota_refuses_the_first_schedule_past_it_and_nothing_is_kept(app, client):
    app.config["RECUR_MAX_SCHEDULES_PER_OWNER"] = 5
    assert client.post("/api/v1/workflows/", json={"name": "w", "task": "builtin.noop"}).status_code == 201
    assert apply(client, hourly("held", 3)).status_code == 200
    answer = apply(client, hourly("s", 4))
    assert answer.status_code == 422, answer.json
    assert answer.json["message"].startswith("schedules.create.2 (s2): "), answer.json
    assert "3 of 5" in str(answer.json["errors"]), answer.json
    assert db.session.scalar(select(func.count()).select_from(Schedule)) == 3


def test_a_sync_of_many_declarations_makes_them_in_bulk(real_app):
    def declare(count: int) -> None:
        for i in range(count):
            declarations.declare(declared_tasks.tick, {"cron": f"{i % 60} * * * *"}, key=f"d{i}")

    declare(5)
    with statements() as few:
        assert sync(real_app).plan.count("create") == 5
    declarations.forget()
    declare(500)
    with statements() as many:
        assert sync(real_app).plan.count("create") == 495
    # Before: about eight statements a declaration (its workflow, mark, checks, schedule, event), 4,000 in all.
    # Each declaration's own workflow is still an INSERT of its own on SQLite (its RETURNING of many rows is not
    # trusted to keep their order); PostgreSQL inserts them together.
    own = "INSERT INTO workflows"
    assert sum(many.values()) - many[own] <= sum(few.values()) - few[own] + 40, (few, many)
    assert many[own] <= (495 if db.engine.dialect.name == "sqlite" else 5), many
    ids = list(db.session.scalars(select(Schedule.id)))
    db.session.rollback()
    pending = set(get_redis().zrange(scheduled_key(get_queue()), 0, -1))
    assert len(ids) == 500 and {link_id(ident, 0, 0).encode() for ident in ids} <= pending
