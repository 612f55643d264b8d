"""Every way a link goes, on the Procfile's worker (`worker.py`, whose worker writes RQ's start and end of a
link it claimed in the link's own round trips: recur_server.workers.link_jobs) with gunicorn and redis-server,
on each database: on time; late (catch-up decides); its workflow full (skipped); its workflow's breaker open
(skipped); a follower started by another's run; detached (overlap allow_all); its schedule edited while it
runs. Each ends as its policy says, and RQ's registries end as they do for any job: every link's job
finished with its outcome as its return value, none left started, none failed, no execution left."""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

import pytest
from redis import Redis
from rq import Queue
from rq.exceptions import NoSuchJobError
from rq.job import Job
from rq.registry import FailedJobRegistry, FinishedJobRegistry, StartedJobRegistry

from harness.servers import wait_for
from harness.stack import Stack

pytestmark = pytest.mark.integration

OUTCOMES = {"succeeded", "failed", "timed_out", "skipped", "missed", "stale", "deferred"}


def _workflow(stack: Stack, name: str, task: str, **settings: Any) -> int:
    return int(stack.api.ok("POST", "/api/v1/workflows/", {"name": name, "task": task, **settings})["id"])


def _schedule(stack: Stack, name: str, workflow: int, **settings: Any) -> str:
    body = {"name": name, "workflow_id": workflow, "interval_seconds": 1, "max_retries": 0, **settings}
    return str(stack.api.ok("POST", "/api/v1/schedules/", body)["id"])


def _statuses(stack: Stack, schedule_id: str) -> Counter[str]:
    return Counter(run["status"] for run in stack.api.runs(schedule_id))


def _reasons(stack: Stack, schedule_id: str) -> set[str]:
    return {run.get("reason") or "" for run in stack.api.runs(schedule_id) if run["status"] == "skipped"}


@pytest.mark.log_lines(2000)  # the whole of each log: which link ran what, and when
def test_each_way_a_link_goes_on_the_default_worker(stack: Stack, redis_server: Any) -> None:
    noop = _workflow(stack, "noop", "builtin.noop")
    late = _schedule(stack, "late", noop)  # made before any worker listens: its first link is seconds late
    time.sleep(3.5)
    stack.start_worker("--concurrency", "4")
    stack.wait_workers_ready()
    on_time = _schedule(stack, "on-time", noop)
    full = _workflow(stack, "full", "builtin.sleep", max_concurrent_runs=1, concurrency_policy="skip")
    limited = [_schedule(stack, f"limited{i}", full, trigger_payload={"seconds": 1.5}) for i in range(2)]
    broken = _workflow(stack, "broken", "builtin.fail", breaker_threshold=1, breaker_reset_seconds=600)
    breaker = _schedule(stack, "breaker", broken, on_exhausted="continue")
    upstream = _schedule(stack, "upstream", noop, interval_seconds=2)
    follower = _schedule(stack, "follower", noop, interval_seconds=3600, after={"schedule": upstream})
    slow = _workflow(stack, "slow", "builtin.sleep")
    detached = _schedule(stack, "detached", slow, overlap="allow_all", trigger_payload={"seconds": 2.5})
    edited = _schedule(stack, "edited", slow, trigger_payload={"seconds": 2})

    wait_for(lambda: any(r["status"] == "running" for r in stack.api.runs(edited)), 20, what="edited's run")
    stack.api.ok("PATCH", f"/api/v1/schedules/{edited}/", {"interval_seconds": 2})  # a new revision, mid-run
    cases = {
        "edited ran again": lambda: _statuses(stack, edited)["succeeded"] >= 2,
        "on time ran": lambda: _statuses(stack, on_time)["succeeded"] >= 5,
        "the follower followed": lambda: _statuses(stack, follower)["succeeded"] >= 2,
        "detached runs overlapped": lambda: _statuses(stack, detached)["succeeded"] >= 2,
        "the breaker skipped": lambda: any("breaker" in reason for reason in _reasons(stack, breaker)),
        "the full workflow skipped": lambda: any("concurrency" in _reasons(stack, s) for s in limited),
    }
    unmet: list[str] = []
    redis = Redis.from_url(redis_server.url)
    unreadable: set[str] = set()  # a running link's job, as `rq info -R` or the dashboard would fetch it

    def every_case_went_its_way() -> bool:
        unreadable.update(_unreadable_links(redis, detached))
        unmet[:] = [name for name, went in cases.items() if not went()]
        return not unmet

    try:
        wait_for(every_case_went_its_way, 40, interval=0.5, what="every case to go its way")
    except AssertionError as exc:
        raise AssertionError(f"{exc}; not yet: {unmet}") from None
    for worker in stack.workers:
        worker.stop()  # SIGTERM: a warm stop, the links running finish first

    assert _statuses(stack, late)["missed"] >= 1
    # Missed: a link that started late. Skipped for overlap: the link of the next tick (handed off when the run
    # began, a second later) found this run still going, as on a CI machine whose shards took 22 minutes a
    # run's finish can come more than a second after its claim. Nothing else skips a tick here.
    on_time_runs = stack.api.runs(on_time)  # whole, in the message
    assert {(r["status"], r["reason"] if r["status"] == "skipped" else None) for r in on_time_runs} <= {
        ("succeeded", None), ("running", None), ("missed", None), ("skipped", "overlap")}, on_time_runs
    assert {r["trigger"] for r in stack.api.runs(follower) if r["status"] == "succeeded"} == {"after"}
    assert _statuses(stack, breaker)["failed"] == 1  # one failure opened it; every later tick was skipped
    overlapping = [r for r in stack.api.runs(detached) if r["status"] == "succeeded"]
    assert len(overlapping) >= 2
    after_edit = stack.api.ok("GET", f"/api/v1/schedules/{edited}/")
    assert (after_edit["status"], after_edit["revision"] >= 1) == ("active", True)
    assert unreadable == set()
    _assert_rq_saw_jobs(redis)


def _unreadable_links(redis: Redis, schedule_id: str) -> list[str]:
    unreadable = []
    for key in redis.keys(f"rq:job:sched-{schedule_id}-*"):
        job_id = key.decode().removeprefix("rq:job:")
        try:
            Job.fetch(job_id, connection=redis)
        except NoSuchJobError:
            if redis.exists(key):  # not one that just finished and expired between the two reads
                unreadable.append(job_id)
    return unreadable


def _assert_rq_saw_jobs(redis: Redis) -> None:
    queue = Queue("recur", connection=redis)
    assert StartedJobRegistry(queue=queue).get_job_ids() == []
    assert FailedJobRegistry(queue=queue).get_job_ids() == []
    assert redis.keys("rq:execution:*") == []
    finished = FinishedJobRegistry(queue=queue).get_job_ids()
    links = [job_id for job_id in finished if job_id.startswith("sched-")]
    assert len(links) >= 20
    returned = Counter(Job.fetch(job_id, connection=redis).return_value() for job_id in links)
    assert set(returned) <= OUTCOMES, returned
    assert returned["succeeded"] >= 10 and returned["skipped"] >= 1, returned
