"""Runs that follow other runs: `after` through the API (its shape, the owner's own schedules only, cycles
refused with a 422 naming the field), and the triggers in-process on real RQ machinery: written with the
upstream outcome, dispatched once, retried by the follower's max_retries, skipped while it is paused or
outside its window, and the overlap policy for a trigger that comes while the follower runs."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from rq import SimpleWorker
from sqlalchemy import select

from harness.chain_driver import make_schedule, runs_of, step
from harness.tokens import authorized_client, new_owner_token
from recur_server.chain.follow import follow_run_id
from recur_server.infra.extensions import db, get_queue, get_redis
from recur_server.models import FollowTrigger, RunTrigger
from recur_server.services.outside_runs import follow as triggered
from recur_server.services.reconcile import reconcile

API = "/api/v1/schedules/"


def _workflow(client) -> int:  # type: ignore[no-untyped-def]
    return client.post("/api/v1/workflows/", json={"name": "wf", "task": "builtin.noop"}).json["id"]


def _schedule(client, workflow_id: int, name: str, **fields) -> dict:  # type: ignore[no-untyped-def,type-arg]
    response = client.post(API, json={"name": name, "key": name, "workflow_id": workflow_id, "interval_seconds": 3600,
                                      **fields})
    assert response.status_code == 201, response.json
    return response.json


def test_after_names_the_upstream_by_id_or_key_and_is_shown_and_cleared(client):
    workflow = _workflow(client)
    a = _schedule(client, workflow, "a")
    assert a["after"] is None
    b = _schedule(client, workflow, "b", after={"schedule": "a"})
    assert b["after"] == {"schedule_id": a["id"], "on": "succeeded", "delay_seconds": 0, "within": None}
    c = _schedule(client, workflow, "c", after={"schedule": b["id"], "on": "ended", "delay_seconds": 30,
                                                "within": "06:00-22:00"})
    assert c["after"] == {"schedule_id": b["id"], "on": "ended", "delay_seconds": 30, "within": "06:00-22:00"}
    assert client.get(f"{API}{c['id']}/").json["after"]["schedule_id"] == b["id"]
    patched = client.patch(f"{API}{c['id']}/", json={"after": None})
    assert patched.status_code == 200, patched.json
    assert patched.json["after"] is None
    assert client.patch(f"{API}{c['id']}/", json={"after": {"schedule": "a", "on": "failed"}}).json["after"][
        "on"] == "failed"


@pytest.mark.parametrize("after", [
    {"schedule": "a", "on": "sometimes"},
    {"schedule": "a", "delay_seconds": -1},
    {"schedule": "a", "delay_seconds": 8 * 86400},
    {"schedule": "a", "within": "8-18"},
    {"schedule": "a", "within": "08:00-08:00"},
    {"schedule": "a", "when": "later"},
    {"on": "succeeded"},
    {"schedule": ""},
    "a",
    {"schedule": "nope"},
])
def test_a_bad_after_is_a_422_naming_the_field(client, after):
    workflow = _workflow(client)
    _schedule(client, workflow, "a")
    for response in (client.post(API, json={"name": "b", "workflow_id": workflow, "interval_seconds": 60,
                                            "after": after}),
                     client.patch(f"{API}{_schedule(client, workflow, 'x')['id']}/", json={"after": after})):
        assert response.status_code == 422, response.json
        assert any(field.split(".")[0] == "after" for field in response.json["errors"]), response.json


def test_another_owners_schedule_is_no_schedule_and_leaks_nothing(app, client):
    bob = authorized_client(app, new_owner_token(app, "bob"))
    bobs = _schedule(bob, _workflow(bob), "bobs")
    workflow = _workflow(client)
    refused = client.post(API, json={"name": "b", "workflow_id": workflow, "interval_seconds": 60,
                                     "after": {"schedule": bobs["id"]}})
    missing = client.post(API, json={"name": "b", "workflow_id": workflow, "interval_seconds": 60,
                                     "after": {"schedule": "00000000-0000-0000-0000-000000000000"}})
    assert refused.status_code == missing.status_code == 422
    assert refused.json["errors"]["after"][0].replace(bobs["id"], "X") == \
        missing.json["errors"]["after"][0].replace("00000000-0000-0000-0000-000000000000", "X")
    by_key = client.post(API, json={"name": "b", "workflow_id": workflow, "interval_seconds": 60,
                                    "after": {"schedule": "bobs"}})  # bob's key: not the admin's schedule either
    assert by_key.status_code == 422 and "after" in by_key.json["errors"]
    mine = _schedule(client, workflow, "mine")
    assert bob.post(API, json={"name": "x", "workflow_id": bobs["workflow_id"], "interval_seconds": 60,
                               "after": {"schedule": mine["id"]}}).status_code == 422


def test_cycles_are_refused_with_a_422_naming_after(client):
    workflow = _workflow(client)
    a = _schedule(client, workflow, "a")
    for name, body in (("self", {"schedule": "a"}),):
        response = client.patch(f"{API}{a['id']}/", json={"after": body})
        assert response.status_code == 422, (name, response.json)
        assert "cycle" in response.json["errors"]["after"][0]
    _schedule(client, workflow, "b", after={"schedule": "a"})
    c = _schedule(client, workflow, "c", after={"schedule": "b"})
    for upstream in ("b", "c"):  # a after b after a; a after c after b after a
        response = client.patch(f"{API}{a['id']}/", json={"after": {"schedule": upstream}})
        assert response.status_code == 422, response.json
        assert "cycle" in response.json["errors"]["after"][0]
    assert client.get(f"{API}{a['id']}/").json["after"] is None  # nothing was changed
    d = _schedule(client, workflow, "d")
    assert client.patch(f"{API}{a['id']}/", json={"after": {"schedule": "d"}}).status_code == 200  # no cycle
    assert client.patch(f"{API}{d['id']}/", json={"after": {"schedule": c["id"]}}).status_code == 422  # d->c->b->a->d


def _run_outside_jobs(app) -> None:  # type: ignore[no-untyped-def]
    SimpleWorker([get_queue(app)], connection=get_redis(app)).work(burst=True, with_scheduler=False)
    db.session.remove()


def _triggers() -> list[FollowTrigger]:
    rows = list(db.session.scalars(select(FollowTrigger).order_by(FollowTrigger.id)))
    db.session.rollback()
    return rows


def test_a_success_triggers_its_follower_once_and_the_run_names_the_upstream_run(app, client, fake_clock, tmp_path):
    from recur_server.notify import outbox
    from recur_server.notify.models import Event, Webhook

    db.session.add(Webhook(owner_id=1, url="https://hooks.example.com/recur", event_types=["run.succeeded"],
                           secret="whsec_cmVjdXItZXhhbXBsZS1zZWNyZXQtMjRi", created_at=fake_clock.now))
    db.session.commit()
    outbox.forget(1)
    path = tmp_path / "calls.log"
    a = make_schedule(fake_clock.now, task="tests.follow_step", name="a", key="a", interval_seconds=60,
                      trigger_payload={"path": str(path)})
    b = make_schedule(fake_clock.now, task="tests.follow_step", name="b", interval_seconds=86400,
                      trigger_payload={"path": str(path)}, after={"schedule": "a", "delay_seconds": 5})
    step(app, fake_clock)  # a's first tick
    upstream = runs_of(a.id)[0]
    upstream_id, upstream_finished = upstream.id, upstream.finished_at
    (trigger,) = _triggers()
    assert (trigger.downstream_id, trigger.upstream_run_id, trigger.status) == (b.id, upstream_id, "pending")
    assert trigger.due_at == upstream_finished + timedelta(seconds=5)
    assert triggered.dispatch_due(fake_clock.now) == []  # not due yet
    fake_clock.advance(seconds=5)
    assert triggered.dispatch_due(fake_clock.now) == [follow_run_id(b.id, upstream_id, 0)]
    assert triggered.dispatch_due(fake_clock.now) == []  # queued: not again
    _run_outside_jobs(app)
    (run,) = runs_of(b.id)
    assert (run.status, run.trigger, run.triggered_by_run_id) == ("succeeded", RunTrigger.AFTER.value, upstream_id)
    assert _triggers()[0].status == "done"
    run_id, run_for = run.id, run.scheduled_for
    events = {e.data["run_id"]: e.data for e in db.session.scalars(select(Event).where(Event.type == "run.succeeded"))}
    db.session.rollback()
    assert events[run_id]["triggered_by_run_id"] == upstream_id and events[run_id]["trigger"] == "after"
    assert events[upstream_id]["triggered_by_run_id"] is None
    listed = client.get(f"{API}{b.id}/runs/").json["items"][0]
    assert listed["triggered_by_run_id"] == upstream_id and listed["trigger"] == "after"
    # A second job of the same run (a process that died after its enqueue, before marking it queued) starts nothing.
    from recur_server.services.outside_runs.queueing import enqueue

    enqueue(b.id, run_id, run_for, RunTrigger.AFTER.value, None, 60)
    _run_outside_jobs(app)
    assert len(runs_of(b.id)) == 1
    assert len(Path(path).read_text().splitlines()) == 2  # a once, b once


def test_a_failed_triggered_run_is_retried_by_the_followers_max_retries(app, fake_clock, tmp_path):
    path, marker = tmp_path / "calls.log", tmp_path / "marker"
    a = make_schedule(fake_clock.now, name="a", key="a", interval_seconds=60)
    b = make_schedule(fake_clock.now, task="tests.follow_step", name="b", interval_seconds=86400, max_retries=1,
                      trigger_payload={"path": str(path), "marker": str(marker), "fail_first": True},
                      after={"schedule": "a"})
    step(app, fake_clock)
    triggered.dispatch_due(fake_clock.now)
    _run_outside_jobs(app)
    (trigger,) = _triggers()
    assert (trigger.status, trigger.attempt) == ("pending", 1)
    assert [r.status for r in runs_of(b.id)] == ["failed"]
    fake_clock.advance(seconds=10)  # RETRY_BASE_SECONDS
    triggered.dispatch_due(fake_clock.now)
    _run_outside_jobs(app)
    assert sorted(r.status for r in runs_of(b.id)) == ["failed", "succeeded"]
    assert {r.triggered_by_run_id for r in runs_of(b.id)} == {runs_of(a.id)[0].id}
    assert _triggers()[0].status == "done"


def test_a_paused_follower_or_a_time_outside_its_window_records_the_trigger_skipped(app, client, fake_clock):
    a = make_schedule(fake_clock.now, name="a", key="a", interval_seconds=60)
    paused = make_schedule(fake_clock.now, name="p", interval_seconds=86400, after={"schedule": "a"})
    assert client.post(f"{API}{paused.id}/pause/").status_code == 200
    hour = fake_clock.now.hour  # 12:00 UTC: a window of 00:00-01:00 leaves it out
    assert hour == 12
    windowed = make_schedule(fake_clock.now, name="w", interval_seconds=86400,
                             after={"schedule": "a", "within": "00:00-01:00"})
    step(app, fake_clock)
    by = {t.downstream_id: t for t in _triggers()}
    assert (by[paused.id].status, by[paused.id].reason) == ("skipped", "paused")
    assert (by[windowed.id].status, by[windowed.id].reason) == ("skipped", "outside_window")
    for schedule_id, reason in ((paused.id, "paused"), (windowed.id, "outside_window")):
        (run,) = runs_of(schedule_id)
        assert (run.status, run.reason, run.triggered_by_run_id) == ("skipped", reason, runs_of(a.id)[0].id)
    assert triggered.dispatch_due(fake_clock.now) == []


def test_a_trigger_while_the_follower_runs_follows_its_overlap_policy(app, fake_clock):
    make_schedule(fake_clock.now, name="a", key="a", interval_seconds=60)
    b = make_schedule(fake_clock.now, name="b", interval_seconds=86400, overlap="skip", after={"schedule": "a"})
    step(app, fake_clock)
    # b is running (a row of its own, as a run that has not ended), when a's trigger comes
    from recur_server.models import Run

    db.session.add(Run(id="00000000-0000-4000-8000-000000000001", schedule_id=b.id, repeat_number=None,
                       retry_number=0, scheduled_for=fake_clock.now, started_at=fake_clock.now, status="running",
                       trigger="manual"))
    db.session.commit()
    triggered.dispatch_due(fake_clock.now)
    _run_outside_jobs(app)
    skipped = [r for r in runs_of(b.id) if r.trigger == "after"]
    assert [(r.status, r.reason) for r in skipped] == [("skipped", "overlap")]
    reconcile(fake_clock.now)  # the reconciler closes the trigger whose run was skipped
    assert (_triggers()[0].status, _triggers()[0].reason) == ("skipped", "skipped")


def test_a_trigger_whose_job_was_lost_is_enqueued_again_by_the_reconciler(app, fake_clock):
    make_schedule(fake_clock.now, name="a", key="a", interval_seconds=60)
    b = make_schedule(fake_clock.now, name="b", interval_seconds=86400, after={"schedule": "a"})
    step(app, fake_clock)
    (run_id,) = triggered.dispatch_due(fake_clock.now)
    get_redis(app).flushall()  # Redis lost the job (and everything else)
    assert reconcile(fake_clock.now) is not None
    _run_outside_jobs(app)
    assert [(r.id, r.status) for r in runs_of(b.id) if r.trigger == "after"] == [(run_id, "succeeded")]
    assert _triggers()[0].status == "done"


def test_closed_triggers_go_with_the_runs_of_their_time_and_open_ones_stay(app, fake_clock):
    from recur_server.policies.retention import Retention
    from recur_server.services.retention import prune

    make_schedule(fake_clock.now, name="a", key="a", interval_seconds=60)
    follower = make_schedule(fake_clock.now, name="b", interval_seconds=86400, after={"schedule": "a"})
    old = fake_clock.now - timedelta(days=40)
    for index, status in enumerate(("done", "skipped", "pending", "queued", "done")):
        db.session.add(FollowTrigger(downstream_id=follower.id, upstream_schedule_id="x", upstream_run_id=f"u{index}",
                                     upstream_status="succeeded", due_at=old, status=status, attempt=0,
                                     run_id=f"r{index}", created_at=old if index < 4 else fake_clock.now))
    db.session.commit()
    report = prune(fake_clock.now, Retention(runs_days=30), batch=500, max_batches=10)
    assert report.rows["follow_triggers"] == 2
    assert sorted(t.status for t in _triggers()) == ["done", "pending", "queued"]


def test_one_process_dispatches_at_a_time(app, fake_clock):
    make_schedule(fake_clock.now, name="a", key="a", interval_seconds=60)
    make_schedule(fake_clock.now, name="b", interval_seconds=86400, after={"schedule": "a"})
    step(app, fake_clock)
    get_redis(app).set(triggered.DISPATCH_LOCK, "another process", px=10_000)
    assert triggered.dispatch_due(fake_clock.now) == []  # the other holds it: nothing twice
    assert _triggers()[0].status == "pending"
    get_redis(app).delete(triggered.DISPATCH_LOCK)
    assert len(triggered.dispatch_due(fake_clock.now)) == 1
    assert get_redis(app).get(triggered.DISPATCH_LOCK) is None  # released
