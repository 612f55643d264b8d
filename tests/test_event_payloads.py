"""Every event type's `data` declared once (recur_server.notify.events): every type has its schema,
docs/notifications.md's
table of the fields is rendered from them, payload() takes every field and shapes it, emit refuses data its type
does not declare (written or not), and a schedule.paused carries the same fields whoever paused the schedule.

To write the table again: .venv/bin/python -m tests.test_event_payloads"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from marshmallow import fields, validate
from sqlalchemy import select

from harness.chain_driver import make_schedule, step
from recur_server.infra import rawsql
from recur_server.infra.extensions import db
from recur_server.notify import events, outbox
from recur_server.notify.events import InvalidEvent, payload
from recur_server.notify.models import Delivery, Event, Webhook
from recur_server.notify.outbox import EventType
from recur_server.services import schedules

DOCS = Path(__file__).resolve().parent.parent / "docs" / "notifications.md"
BEGIN = "<!-- The tables below are rendered from recur_server/notify/events.py (tests/test_event_payloads.py). -->"
END = "<!-- End of the rendered tables. -->"
T0 = datetime(2026, 3, 1, 12, 0, 0, 250000, tzinfo=UTC)
_KIND_NAMES: dict[type[Any], str] = {
    events.Instant: "instant (ISO 8601, UTC, `Z`)", events.Seconds: "number (seconds, to the ms)",
    fields.Integer: "integer", fields.String: "string",
}


def _type_of(field: Any) -> str:
    kind = _KIND_NAMES[type(field)]
    if isinstance(field.validate, validate.OneOf):
        kind += ": " + ", ".join(f"`{choice}`" for choice in field.validate.choices)
    return kind


def render() -> str:
    """The tables of docs/notifications.md: one per schema, each row a field of `data`."""
    parts = [BEGIN]
    for types, schema in events.GROUPS:
        parts += ["", "**" + ", ".join(f"`{event_type}`" for event_type in types) + "**", "",
                  "| field | type | can be null | meaning |", "|---|---|---|---|"]
        parts += [f"| `{field.data_key or name}` | {_type_of(field)} | {'yes' if field.allow_none else 'no'} | "
                  f"{field.metadata['description']} |" for name, field in schema.fields.items()]
    return "\n".join([*parts, "", END])


def test_every_event_type_has_its_schema_and_every_schema_a_type() -> None:
    assert sorted(events.SCHEMAS) == sorted(event_type.value for event_type in EventType)
    grouped = [event_type for types, _schema in events.GROUPS for event_type in types]
    assert len(grouped) == len(set(grouped))


def test_every_field_is_required_and_says_in_one_line_what_it_is() -> None:
    for _types, schema in events.GROUPS:
        for name, field in schema.fields.items():
            meaning = field.metadata.get("description", "")
            assert field.required and meaning and "\n" not in meaning and "|" not in meaning, name


def test_the_docs_table_of_every_field_is_the_one_the_schemas_render() -> None:
    page = DOCS.read_text()
    found = re.search(re.escape(BEGIN) + ".*?" + re.escape(END), page, re.DOTALL)
    assert found is not None, f"docs/notifications.md has no rendered tables; they would be:\n{render()}"
    assert found.group(0) == render(), f"docs/notifications.md's tables differ from the schemas'; expected:\n{render()}"


def test_payload_takes_every_field_and_writes_instants_and_seconds_one_way() -> None:
    fields_ = {"schedule_id": "s1", "schedule_name": "nightly", "run_id": "r1", "scheduled_for": T0,
               "started_at": T0 + timedelta(seconds=8.3124), "late_seconds": 8.31249, "late_after_seconds": 2,
               "trigger": "schedule"}
    assert payload(EventType.RUN_LATE, **fields_) == {
        **fields_, "scheduled_for": "2026-03-01T12:00:00.250000Z", "started_at": "2026-03-01T12:00:08.562400Z",
        "late_seconds": 8.312}
    breaker = payload(EventType.BREAKER_CLOSED, workflow_id=7, workflow_name="w", from_="open", to="closed",
                      reason="reset by hand", failures=0)
    assert breaker["from"] == "open" and "from_" not in breaker
    with pytest.raises(InvalidEvent, match=r"missing \['trigger'\], unknown \[\]"):
        payload(EventType.RUN_LATE, **{k: v for k, v in fields_.items() if k != "trigger"})
    with pytest.raises(InvalidEvent, match=r"missing \[\], unknown \['extra'\]"):
        payload(EventType.RUN_LATE, **fields_, extra=1)
    with pytest.raises(InvalidEvent, match="aware datetime"):
        payload(EventType.RUN_LATE, **{**fields_, "started_at": datetime(2026, 3, 1, 12, 0, 8)})
    with pytest.raises(InvalidEvent, match="not an event type"):
        payload("run.exploded", **fields_)


def _subscribe(owner_id: int, *types: str) -> None:
    db.session.add(Webhook(owner_id=owner_id, url="https://hooks.example.com/recur", event_types=list(types),
                           secret="whsec_cmVjdXItZXhhbXBsZS1zZWNyZXQtMjRi", created_at=T0))
    db.session.commit()
    outbox.forget(owner_id)


def _data(event_type: str) -> list[dict[str, Any]]:
    found = [dict(data) for data in db.session.scalars(select(Event.data).where(Event.type == event_type)
                                                      .order_by(Event.occurred_at))]
    db.session.rollback()
    return found


def test_emit_refuses_data_its_type_does_not_declare_whether_written_or_not(app) -> None:
    _subscribe(1, "run.failed")
    good = payload(EventType.RUN_FAILED, schedule_id="s1", schedule_name="nightly", workflow_id=3, run_id="r1",
                   scheduled_for=T0, finished_at=T0, status="failed", trigger="retry", error="RuntimeError: boom",
                   triggered_by_run_id=None)
    bad = [{**good, "late": True}, {k: v for k, v in good.items() if k != "error"}, {**good, "workflow_id": "3"},
           {**good, "run_id": None}, {**good, "status": "running"}, {**good, "finished_at": "2026-03-01 12:00"},
           {**good, "trigger": "whim"}]
    for data in bad:
        for owner_id in (1, 2, None):  # subscribed, not subscribed, no owner: refused all the same
            with pytest.raises(InvalidEvent):
                outbox.emit(db.session, owner_id, "run.failed", data, T0)
        with rawsql.transaction(db.engine) as tx, pytest.raises(InvalidEvent):
            outbox.emit(tx, 1, "run.failed", data, T0)
    with pytest.raises(InvalidEvent, match="not an event type"):
        outbox.emit(db.session, 1, "run.exploded", good, T0)
    db.session.commit()
    assert _data("run.failed") == [] and db.session.scalar(select(Delivery.id)) is None
    outbox.emit(db.session, 1, "run.failed", good, T0)
    db.session.commit()
    assert _data("run.failed") == [good]


def test_a_schedule_paused_by_the_chain_or_by_a_caller_carries_the_same_fields(chain_app, fake_clock) -> None:
    """schedule.paused carried last_error only when the chain paused the schedule (on_exhausted: pause); a pause
    by a caller carries it too now: the schedule's last error, null when none."""
    _subscribe(1, "schedule.paused")
    by_chain = make_schedule(fake_clock.now, name="by-chain", task="builtin.fail", max_retries=1,
                             trigger_payload={"message": "boom"}, interval_seconds=10, on_exhausted="pause")
    step(chain_app, fake_clock)
    step(chain_app, fake_clock)
    by_caller = make_schedule(fake_clock.now, name="by-caller", task="builtin.noop", interval_seconds=10)
    schedules.pause(by_caller.id, fake_clock.now, "db migration tonight")
    chain_data, caller_data = _data("schedule.paused")
    assert chain_data == {"schedule_id": by_chain.id, "schedule_name": "by-chain", "status": "paused",
                          "from": "active", "last_error": "RuntimeError: boom",
                          "pause_note": "paused after retries ran out: RuntimeError: boom"}
    assert caller_data == {"schedule_id": by_caller.id, "schedule_name": "by-caller", "status": "paused",
                           "from": "active", "last_error": None, "pause_note": "db migration tonight"}


if __name__ == "__main__":
    print(render())
