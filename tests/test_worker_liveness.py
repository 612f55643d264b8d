"""Worker liveness on one app (fakeredis, a real database), with literal times: a worker is alive while its beat
is within the grace, a worker.py counts once whatever its slots, and a queue with active schedules and no live
worker is recorded once, with workers.gone to its owners, then workers.back once a worker beats again. End to end
with real processes: tests/test_worker_liveness_e2e.py."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from sqlalchemy import select, update

from harness.chain_driver import make_schedule
from recur_server.infra import clock, worker_beats
from recur_server.infra.extensions import db, get_redis, queue_names
from recur_server.models import Schedule
from recur_server.notify import outbox, workers_gone
from recur_server.notify.models import Event, Webhook

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
GRACE = 15.0  # RECUR_WORKER_GRACE_SECONDS' default


def _at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def _events(event_type: str) -> list[Event]:
    found = list(db.session.scalars(select(Event).where(Event.type == event_type).order_by(Event.occurred_at)))
    db.session.rollback()
    return found


def test_a_worker_is_alive_within_the_grace_and_counts_once_per_queue(app) -> None:
    redis = get_redis(app)
    worker_beats.beat(redis, "recur-a-1", "a", 1, ["recur", "exports"], _at(0).timestamp())
    worker_beats.beat(redis, "recur-b-2", "b", 2, ["recur"], _at(10).timestamp())
    beats = worker_beats.read(redis)
    assert [(b.name, b.queues) for b in beats] == [("recur-a-1", ("recur", "exports")), ("recur-b-2", ("recur",))]
    assert worker_beats.live_per_queue(beats, ["recur", "exports"], _at(15).timestamp(), GRACE) == {
        "recur": 2, "exports": 1}  # exactly at the grace: still alive
    assert worker_beats.live_per_queue(beats, ["recur", "exports"], _at(15.5).timestamp(), GRACE) == {
        "recur": 1, "exports": 0}
    kept = worker_beats.forget_gone(redis, beats, _at(600.5).timestamp())  # a's beat is past FORGET_SECONDS
    assert [b.name for b in kept] == [b.name for b in worker_beats.read(redis)] == ["recur-b-2"]
    worker_beats.leave(redis, "recur-b-2")
    assert worker_beats.read(redis) == []


def test_a_queue_without_a_live_worker_sends_workers_gone_once_and_workers_back_once(app) -> None:
    db.session.add(Webhook(owner_id=1, url="https://hooks.example.com/recur", event_types=["workers.gone",
                           "workers.back"], secret="whsec_cmVjdXItZXhhbXBsZS1zZWNyZXQtMjRi", created_at=T0))
    db.session.commit()
    outbox.forget(1)
    redis = get_redis(app)
    worker_beats.beat(redis, "recur-a-1", "a", 1, ["recur"], _at(0).timestamp())
    assert workers_gone.check(_at(5)) == {"gone": [], "back": []}  # no active schedule, and a live worker
    make_schedule(_at(5), interval_seconds=3600)
    assert workers_gone.check(_at(15)) == {"gone": [], "back": []}
    assert workers_gone.check(_at(16)) == {"gone": ["recur"], "back": []}
    for later in (17, 30, 300):  # not once per check
        assert workers_gone.check(_at(later)) == {"gone": [], "back": []}
    [gone] = _events("workers.gone")
    assert gone.data == {"queue": "recur", "live_workers": 0, "grace_seconds": GRACE,
                         "last_seen_at": "2026-03-01T12:00:00Z"}
    assert list(worker_beats.unserved(redis)) == ["recur"]

    worker_beats.beat(redis, "recur-b-2", "b", 2, ["recur"], _at(310).timestamp())
    assert workers_gone.check(_at(311)) == {"gone": [], "back": ["recur"]}
    assert workers_gone.check(_at(312)) == {"gone": [], "back": []}
    [back] = _events("workers.back")
    assert back.data == {"queue": "recur", "live_workers": 1, "gone_since": "2026-03-01T12:00:16Z"}
    assert worker_beats.unserved(redis) == {}


def test_health_is_degraded_while_a_queue_with_active_schedules_has_no_live_worker(app, client) -> None:
    redis = get_redis(app)
    make_schedule(clock.utcnow(), interval_seconds=3600)
    worker_beats.beat(redis, "recur-a-1", "a", 1, ["recur"], clock.utcnow().timestamp())
    anyone = app.test_client()
    for ready in ("", "?ready=1"):
        answer = anyone.get("/api/v1/health/" + ready)
        assert answer.status_code == 200 and answer.json["status"] == "ok", answer.json
        assert answer.json["workers"] == {"recur": 1} and answer.json["queues_without_workers"] == []
        assert "worker_processes" not in answer.json  # host names: admins only

    worker_beats.beat(redis, "recur-a-1", "a", 1, ["recur"], clock.utcnow().timestamp() - GRACE - 1)
    answer = anyone.get("/api/v1/health/")
    assert (answer.status_code, answer.json["status"]) == (200, "degraded"), answer.json
    assert answer.json["workers"] == {"recur": 0} and answer.json["queues_without_workers"] == ["recur"]
    assert anyone.get("/api/v1/health/?ready=1").status_code == 503
    [process] = client.get("/api/v1/health/").json["worker_processes"]  # the admin's
    assert (process["name"], process["host"], process["alive"]) == ("recur-a-1", "a", False)


def test_a_schedule_whose_task_no_live_worker_knows_is_answered_with_a_warning(app, client) -> None:
    """Workers list their tasks in their beats: a schedule on a task none of its queue's live workers lists is
    made (the workers may be deployed after it), with a warning in the answer; a worker that knows it, or a
    beat of an older worker that lists no tasks, clears it."""
    redis = get_redis(app)
    now = clock.utcnow().timestamp()
    worker_beats.beat(redis, "recur-a-1", "a", 1, ["recur"], now, ["builtin.noop"])
    flow = client.post("/api/v1/workflows/", json={"name": "s", "task": "builtin.sleep"}).json
    made = client.post("/api/v1/schedules/", json={"name": "s", "workflow_id": flow["id"], "every": "1h"})
    assert made.status_code == 201, made.json
    assert made.json["warnings"] == [
        "no live worker of queue 'recur' knows task 'builtin.sleep' (1 live without it): deploy its module "
        "(RECUR_TASK_MODULES) to them: its runs wait until a worker that knows it takes them"]
    worker_beats.beat(redis, "recur-b-2", "b", 2, ["recur"], now, ["builtin.noop", "builtin.sleep"])
    assert client.get(f"/api/v1/schedules/{made.json['id']}/").json["warnings"] == []
    worker_beats.leave(redis, "recur-b-2")
    worker_beats.beat(redis, "recur-c-3", "c", 3, ["recur"], now)  # no list: taken to know it
    redis.hset(worker_beats.BEATS_KEY, "recur-c-3", json.dumps({"host": "c", "pid": 3, "queues": ["recur"],
                                                                 "seen": now}))
    assert client.get(f"/api/v1/schedules/{made.json['id']}/").json["warnings"] == []
    for name in ("recur-a-1", "recur-c-3"):
        worker_beats.leave(redis, name)
    assert client.get(f"/api/v1/schedules/{made.json['id']}/").json["warnings"] == [
        "no live worker listens on queue 'recur': this schedule's runs wait until one starts"]


def test_a_process_that_does_not_serve_a_queue_leaves_its_outage_alone_while_schedules_use_it(app) -> None:
    """During a rolling change of RECUR_QUEUES, a process that does not list a queue must not end the outage a
    process that does recorded (it would be recorded again, and workers.gone sent again): the record of a queue
    this process does not know is dropped only once no active schedule uses that queue."""
    redis = get_redis(app)
    schedule = make_schedule(_at(0), interval_seconds=3600)
    db.session.execute(update(Schedule).where(Schedule.id == schedule.id).values(queue="exports"))
    db.session.commit()
    worker_beats.mark_unserved(redis, worker_beats.Unserved("exports", _at(0).timestamp(), (1,)))
    assert "exports" not in queue_names()
    workers_gone.check(_at(1))
    assert list(worker_beats.unserved(redis)) == ["exports"]  # schedules still wait on it: the outage stands
    db.session.execute(update(Schedule).where(Schedule.id == schedule.id).values(status="paused"))
    db.session.commit()
    workers_gone.check(_at(2))
    assert worker_beats.unserved(redis) == {}  # no queue of this cluster, and no schedule on it any more
