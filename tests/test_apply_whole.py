"""POST /apply/: many changes whole or not at all. The last change refused leaves nothing of the ones before it
(checked in the database and in Redis); a dry run meets the same refusal and keeps nothing either; a whole
apply names workflows and calendars it creates, and is handed off to Redis after its one commit."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select

from recur_server.calendars.models import Calendar
from recur_server.chain.redis_links import scheduled_key
from recur_server.infra.extensions import db, get_queue, get_redis
from recur_server.models import Schedule, Workflow
from recur_server.notify.models import Webhook


def counts() -> dict[str, int]:
    counted = {model.__name__: db.session.scalar(select(func.count()).select_from(model)) or 0
               for model in (Workflow, Webhook, Calendar, Schedule)}
    db.session.rollback()
    return counted


def links() -> list[bytes]:
    return sorted(get_redis().zrange(scheduled_key(get_queue()), 0, -1))  # the pending links


def changes(last_schedule: dict[str, Any]) -> dict[str, Any]:
    return {
        "workflows": {"create": [{"name": "reports", "task": "builtin.noop"}]},
        "webhooks": {"create": [{"url": "http://127.0.0.1:9/hook", "event_types": ["run.failed"]}]},
        "calendars": {"create": [{"name": "office", "dates": ["2030-12-24"]}]},
        "schedules": {"create": [
            {"name": "first", "key": "first", "workflow": "reports", "every": "1h", "calendar": "office"},
            {"name": "second", "key": "second", "workflow": "reports", "cron": "0 9 * * *",
             "after": {"schedule": "first"}},
            last_schedule,
        ]},
    }


def test_an_apply_whose_last_change_is_refused_keeps_nothing(app, client):
    app.config["RECUR_WEBHOOK_ALLOW_HOSTS"] = "127.0.0.1"
    before, links_before = counts(), links()
    # The schema passes it; the service refuses it: a cron that never comes.
    never = {"name": "third", "key": "third", "workflow": "reports", "cron": "0 0 31 2 *"}
    for dry_run in (True, False):
        answer = client.post("/api/v1/apply/", json={**changes(never), "dry_run": dry_run})
        assert answer.status_code == 422, answer.json
        assert answer.json["message"].startswith("schedules.create.2 (third): "), answer.json
        assert "Nothing of the apply was kept." in answer.json["message"]
        assert list(answer.json["errors"]) == ["schedules.create.2.cron"], answer.json
        assert counts() == before and links() == links_before
    # A reference to nothing is refused the same way, naming the field.
    answer = client.post("/api/v1/apply/", json=changes({"name": "third", "workflow": "nowhere", "every": "1h"}))
    assert answer.status_code == 422 and "schedules.create.2.workflow" in answer.json["errors"], answer.json
    assert counts() == before


def test_a_dry_run_keeps_nothing_and_a_whole_apply_is_handed_off_after_its_commit(app, client):
    app.config["RECUR_WEBHOOK_ALLOW_HOSTS"] = "127.0.0.1"
    good = changes({"name": "third", "key": "third", "workflow": "reports", "every": "15m"})
    dry = client.post("/api/v1/apply/", json={**good, "dry_run": True})
    assert dry.status_code == 200, dry.json
    assert [m["name"] for m in dry.json["schedules"]] == ["first", "second", "third"]
    assert {m["id"] for m in dry.json["schedules"]} == {None} and dry.json["webhooks"][0]["secret"] is None
    assert counts() == {"Workflow": 0, "Webhook": 0, "Calendar": 0, "Schedule": 0} and links() == []
    done = client.post("/api/v1/apply/", json=good)
    assert done.status_code == 200, done.json
    assert done.json["webhooks"][0]["secret"].startswith("whsec_")
    assert done.json["warnings"] == [  # no worker beats here: said of each schedule made, not refused
        f"{key}: no live worker listens on queue 'recur': this schedule's runs wait until one starts"
        for key in ("first", "second", "third")]
    assert counts() == {"Workflow": 1, "Webhook": 1, "Calendar": 1, "Schedule": 3}
    assert len(links()) == 3  # one link each, put after the commit
    rows = {s.key: s for s in db.session.scalars(select(Schedule))}
    assert rows["first"].calendar_id is not None and rows["second"].after_schedule_id == rows["first"].id
    db.session.rollback()
    # Changes and deletes by id or key, whole too: the refused delete of a schedule that is not there keeps
    # the change before it out.
    flow = done.json["workflows"][0]["id"]
    edit = {"workflows": {"update": [{"id": flow, "fields": {"max_concurrent_runs": 2}}]},
            "schedules": {"update": [{"id": "third", "fields": {"every": "30m"}}], "delete": ["nothing-so-named"]}}
    refused = client.post("/api/v1/apply/", json=edit)
    assert refused.status_code == 422 and list(refused.json["errors"]) == ["schedules.delete.0.id"], refused.json
    assert db.session.get(Workflow, flow).max_concurrent_runs is None
    assert db.session.scalar(select(Schedule.interval_seconds).where(Schedule.key == "third")) == 900
    db.session.rollback()
    edit["schedules"]["delete"] = ["second"]
    assert client.post("/api/v1/apply/", json=edit).status_code == 200
    assert db.session.scalar(select(Schedule.interval_seconds).where(Schedule.key == "third")) == 1800
    assert counts()["Schedule"] == 2


def test_an_apply_is_bounded_and_strict(client):
    many = {"schedules": {"delete": [f"k{i}" for i in range(100_001)]}}  # 1.3 MB: over the body limit of
    answer = client.post("/api/v1/apply/", json=many)  # other requests, under an apply's
    assert answer.status_code == 422 and "at most 100000" in str(answer.json["errors"]), answer.json
    answer = client.post("/api/v1/apply/", json={"schedules": {"create": [{"name": "x", "every": "1h"}]}})
    assert answer.status_code == 422 and "schedules.create.0.workflow" in answer.json["errors"], answer.json
    answer = client.post("/api/v1/apply/", json={"schedules": {"upsert": []}})
    assert answer.status_code == 422 and "schedules.upsert" in answer.json["errors"], answer.json
