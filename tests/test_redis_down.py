"""With Redis unreachable, calls that must enqueue answer 503 and change nothing; the rest still work."""

from __future__ import annotations

from redis import Redis
from sqlalchemy import func, select

from harness.chain_driver import fresh, make_schedule, scheduled_ids
from harness.servers import free_port
from recur_server.infra.extensions import connect_redis, db, get_redis
from recur_server.models import Schedule
from recur_server.services.reconcile import reconcile


def _unreachable() -> Redis:
    return connect_redis(f"redis://127.0.0.1:{free_port()}/0")


def test_calls_that_enqueue_get_503_and_leave_the_database_as_it_was(app, client, fake_clock):
    reachable = get_redis(app)
    schedule = make_schedule(fake_clock.now, interval_seconds=60)
    paused = make_schedule(fake_clock.now, interval_seconds=60)
    client.post(f"/api/v1/schedules/{paused.id}/pause/")
    app.extensions["recur.redis"] = _unreachable()

    response = client.post("/api/v1/schedules/", json={"name": "n", "workflow_id": schedule.workflow_id,
                                                       "interval_seconds": 5})
    assert response.status_code == 503 and response.json["code"] == "redis_unavailable"
    assert db.session.scalar(select(func.count()).select_from(Schedule)) == 2

    response = client.patch(f"/api/v1/schedules/{schedule.id}/", json={"interval_seconds": 5})
    assert response.status_code == 503
    assert (fresh(schedule.id).interval_seconds, fresh(schedule.id).revision) == (60, 0)

    assert client.post(f"/api/v1/schedules/{paused.id}/resume/").status_code == 503
    assert fresh(paused.id).status == "paused"

    # Reading, pausing and deleting need no enqueue: the committed row fences any link left in Redis.
    assert client.get(f"/api/v1/schedules/{schedule.id}/").status_code == 200
    assert client.post(f"/api/v1/schedules/{schedule.id}/pause/").status_code == 200

    # Redis comes back (empty): one reconciliation pass brings every active chain back.
    reachable.flushall()
    app.extensions["recur.redis"] = reachable
    client.post(f"/api/v1/schedules/{schedule.id}/resume/")
    reachable.flushall()
    report = reconcile(fake_clock.now)
    assert report.links_repaired == [f"sched-{schedule.id}-n1-rc0"]  # the resume started tick n1
    assert scheduled_ids(app) == [f"sched-{schedule.id}-n1-rc0"]
