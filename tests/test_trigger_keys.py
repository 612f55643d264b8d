"""A trigger's Idempotency-Key has a lifetime: while it is remembered a retry answers the first answer and
starts nothing, even after the run itself was pruned; once it is forgotten, the same key starts a new run
with a new ID (a run ID is never reused)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from rq import SimpleWorker
from sqlalchemy import select, update

from harness.chain_driver import make_schedule
from harness.tokens import authorized_client, token_for_app
from recur_server.infra.extensions import db, get_queue, get_redis
from recur_server.models import Run, TriggerRequest
from recur_server.policies.retention import Retention
from recur_server.services.retention import prune


def _work(app) -> None:
    SimpleWorker([get_queue(app)], connection=get_redis(app)).work(burst=True, with_scheduler=False)
    db.session.remove()


def _trigger(client, schedule_id: str, key: str | None = None) -> str:
    headers = {"Idempotency-Key": key} if key else {}
    answer = client.post(f"/api/v1/schedules/{schedule_id}/trigger/", headers=headers)
    assert answer.status_code == 202, answer.json
    return str(answer.json["run_id"])


def _runs(schedule_id: str) -> list[str]:
    ids = list(db.session.scalars(select(Run.id).where((Run.schedule_id == schedule_id) & (Run.trigger == "manual"))))
    db.session.rollback()
    return ids


def test_a_retry_after_the_run_was_pruned_starts_nothing(real_app):
    client = authorized_client(real_app, token_for_app(real_app))
    schedule = make_schedule(datetime.now(UTC), cron="0 0 1 1 *")
    assert client.patch(f"/api/v1/schedules/{schedule.id}/", json={"keep_runs_days": 1}).status_code == 200
    first = _trigger(client, schedule.id, "deploy-42")
    _work(real_app)
    later = _trigger(client, schedule.id)  # the schedule's newest run, always kept
    _work(real_app)
    two_days_ago = datetime.now(UTC) - timedelta(days=2)  # the request and its run were two days ago
    db.session.execute(update(TriggerRequest).values(created_at=two_days_ago, scheduled_for=two_days_ago))
    db.session.execute(update(Run).where(Run.id == first).values(started_at=two_days_ago, finished_at=two_days_ago))
    db.session.commit()
    prune(datetime.now(UTC), Retention(runs_days=30, runs_min=1), batch=500, max_batches=10)
    assert _runs(schedule.id) == [later]  # the keyed run went with the schedule's one day

    assert _trigger(client, schedule.id, "deploy-42") == first  # the first answer
    _work(real_app)
    assert _runs(schedule.id) == [later]  # and nothing ran again


def test_a_key_forgotten_after_retention_starts_a_new_run_with_a_new_id(real_app):
    client = authorized_client(real_app, token_for_app(real_app))
    schedule = make_schedule(datetime.now(UTC), cron="0 0 1 1 *")
    first = _trigger(client, schedule.id, "deploy-43")
    _work(real_app)
    report = prune(datetime.now(UTC) + timedelta(days=31), Retention(runs_days=30, runs_min=100), batch=500,
                   max_batches=10)
    assert report.rows["trigger_requests"] == 1 and _runs(schedule.id) == [first]  # the run itself is kept

    again = _trigger(client, schedule.id, "deploy-43")
    _work(real_app)
    assert again != first and sorted(_runs(schedule.id)) == sorted([first, again])
    assert db.session.scalar(select(TriggerRequest.run_id)) == again
