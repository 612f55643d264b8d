"""A workflow's own queue: its schedules' links go through it, a worker takes links from the queues it is
given, and moving a workflow to another queue moves each pending link (the same link, so no tick is lost
or doubled); a copy left behind in the old queue is found by the reconciler. Real redis-server (and, in the
last test, gunicorn and two worker.py)."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from redis import Redis
from rq.registry import ScheduledJobRegistry
from sqlalchemy import update

from harness.chain_driver import make_schedule
from harness.servers import wait_for
from harness.stack import Stack
from harness.tokens import authorized_client, token_for_app
from recur_server.chain.ids import link_id
from recur_server.chain.link_lookup import pending_revisions
from recur_server.chain.redis_links import HEADS_KEY, LinkPlan, put_link, queue_named
from recur_server.infra.extensions import db, get_queue, get_redis
from recur_server.models import Schedule
from recur_server.services.reconcile import reconcile

DUE = datetime(2030, 3, 2, 12, 0, 10, tzinfo=UTC)


@pytest.fixture
def stack_env() -> dict[str, str]:
    return {"RECUR_QUEUES": "slow"}  # every process of the stack knows the second queue


def _registry(app, name: str) -> list[str]:  # type: ignore[no-untyped-def]
    queue = queue_named(get_queue(app), name)
    return [i.decode() for i in get_redis(app).zrange(ScheduledJobRegistry(queue=queue).key, 0, -1)]


def test_a_link_put_through_another_queue_leaves_no_copy_in_the_one_it_was_in(real_app):
    queue = get_queue(real_app)
    plan = LinkPlan("0b7c2a64-3d2e-4f0e-9a55-3f1d2c3b4a59", 2, 5, 1, DUE, DUE, 30)
    put_link(queue, plan)
    assert _registry(real_app, "recur") == [plan.job_id]
    moved = LinkPlan(**{**plan.__dict__, "queue": "slow"})
    put_link(queue, moved)  # the same link, through the workflow's new queue
    assert _registry(real_app, "recur") == [] and _registry(real_app, "slow") == [plan.job_id]
    redis = get_redis(real_app)
    assert redis.hget(HEADS_KEY, plan.schedule_id).split(b"\n")[3] == b"slow"  # the head names its queue
    now = DUE.timestamp()
    assert pending_revisions(redis, queue, [plan.job_id], now, queues=["slow"]) == [2]
    # Where its row expects the default queue, a copy waiting in "slow" is not the pending link.
    assert pending_revisions(redis, queue, [plan.job_id], now, queues=[None]) == [None]
    put_link(queue, plan)  # and back
    assert _registry(real_app, "slow") == [] and _registry(real_app, "recur") == [plan.job_id]


def test_a_workflow_moved_to_another_queue_moves_its_pending_links_and_refuses_an_unknown_queue(real_app):
    real_app.config["RECUR_QUEUES"] = "slow"
    client = authorized_client(real_app, token_for_app(real_app))
    schedule = make_schedule(datetime.now(UTC), cron="0 0 1 1 *")
    expected = link_id(schedule.id, schedule.current_repeat, schedule.current_retry)
    assert _registry(real_app, "recur") == [expected]

    refused = client.patch(f"/api/v1/workflows/{schedule.workflow_id}/", json={"queue": "exports"})
    assert refused.status_code == 422 and "unknown queue 'exports'" in refused.json["errors"]["queue"][0]
    moved = client.patch(f"/api/v1/workflows/{schedule.workflow_id}/", json={"queue": "slow"})
    assert moved.status_code == 200 and moved.json["queue"] == "slow"
    assert _registry(real_app, "recur") == [] and _registry(real_app, "slow") == [expected]
    scrape = client.get("/metrics").get_data(as_text=True)  # every queue's depth, by name
    assert 'recur_links_scheduled{queue="slow"} 1.0' in scrape and 'recur_links_scheduled{queue="recur"} 0.0' in scrape
    back = client.patch(f"/api/v1/workflows/{schedule.workflow_id}/", json={"queue": None})
    assert back.status_code == 200 and back.json["queue"] is None
    assert _registry(real_app, "slow") == [] and _registry(real_app, "recur") == [expected]


def test_the_reconciler_moves_a_link_left_in_the_queue_its_workflow_left(real_app):
    """The workflow's move committed, and Redis failed before the links were put again."""
    real_app.config["RECUR_QUEUES"] = "slow"
    schedule = make_schedule(datetime.now(UTC), cron="0 0 1 1 *")
    expected = link_id(schedule.id, schedule.current_repeat, schedule.current_retry)
    db.session.execute(update(Schedule).where(Schedule.id == schedule.id).values(queue="slow"))
    db.session.commit()
    assert _registry(real_app, "recur") == [expected]
    report = reconcile(datetime.now(UTC))
    assert report.links_repaired == [expected]
    assert _registry(real_app, "recur") == [] and _registry(real_app, "slow") == [expected]
    assert reconcile(datetime.now(UTC)).links_repaired == []  # and then it is where it belongs


def _executions(log: Path) -> Counter[str]:
    return Counter(line.split()[3] for line in log.read_text().splitlines()) if log.exists() else Counter()


@pytest.mark.integration
def test_a_workflow_moved_to_another_queue_mid_run_keeps_every_tick_exactly_once(stack: Stack) -> None:
    log = stack.tmp_path / "executions.log"
    stack.env["RECUR_EXECUTION_LOG"] = str(log)
    stack.start_worker("--queues", "recur", "--name", "quick")
    stack.start_worker("--queues", "slow", "--name", "slow")
    stack.wait_workers_ready()
    workflow = stack.api.ok("POST", "/api/v1/workflows/", {"name": "w", "task": "builtin.noop"})
    schedule = stack.api.ok("POST", "/api/v1/schedules/", {
        "name": "s", "workflow_id": workflow["id"], "interval_seconds": 1})
    wait_for(lambda: len([r for r in stack.api.runs(schedule["id"]) if r["status"] == "succeeded"]) >= 3, 30,
             what="three runs on the default queue")
    moved_at = datetime.now(UTC)
    stack.api.ok("PATCH", f"/api/v1/workflows/{workflow['id']}/", {"queue": "slow"})
    wait_for(lambda: len([r for r in stack.api.runs(schedule["id"]) if _worker_of(r) == "slow"]) >= 3, 30,
             what="three runs on the slow queue's worker")
    runs = stack.api.runs(schedule["id"])
    after = [r for r in runs if datetime.fromisoformat(r["started_at"].replace("Z", "+00:00"))
             > moved_at + timedelta(seconds=2)]
    assert after and {_worker_of(r) for r in after} == {"slow"}  # once moved, only the slow queue's worker
    ticks = Counter((r["repeat_number"], r["retry_number"]) for r in runs if r["reason"] is None)
    assert max(ticks.values()) == 1, ticks  # no tick claimed twice
    assert max(_executions(log).values()) == 1  # and no body ran twice
    # (a tick passed over while a run went on, by the overlap policy, skip, is a row with no repeat number)
    repeats = sorted(r["repeat_number"] for r in runs if r["repeat_number"] is not None)
    assert repeats == list(range(repeats[0], repeats[0] + len(repeats))), repeats  # none lost: every repeat has a row
    assert Redis.from_url(stack.env["REDIS_URL"]).llen("rq:queue:recur") == 0


def _worker_of(run: dict[str, Any]) -> str:
    """The worker.py that ran `run`: its slot's name (`{name}-{n}`) less the slot's number."""
    return run["worker"].rsplit("-", 1)[0]
