"""The seam between Recur's workers and the code that runs a link: the worker attaches an executor to the RQ
job of a link it prepared (recur_server.workers.horse.HandedJob), and RQ's perform calls it, in the forked work horse
or in the pool worker, instead of the job's function (recur_server.jobs.run_link, for links no worker prepared)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from redis import Redis
from rq import Queue, get_current_job
from rq.job import Job

from harness.chain_driver import make_schedule, next_due, runs_of
from recur_server.chain.mover import Mover
from recur_server.infra.extensions import get_queue, get_redis
from recur_server.workers.horse import HandedJob, handed_job_class
from recur_server.workers.pool import Limits
from recur_server.workers.pool_worker import RecurPoolWorker
from recur_server.workers.worker import RecurSimpleWorker, RecurWorker


def test_a_handed_job_is_performed_by_its_executor_with_rqs_current_job_set(redis_server) -> None:
    """HandedJob overrides RQ's private Job._execute (the call of the job's function inside perform, which
    sets the current job around it). Should RQ rename it or perform stop calling it, the executor would no
    longer run, or no longer see its job through rq.get_current_job(): this fails."""
    assert "_execute" in vars(Job)
    job = HandedJob.create("builtins.len", args=("abc",), connection=Redis.from_url(redis_server.url))
    assert job.perform() == 3  # no executor: the job's function, as RQ runs it

    seen: list[Job | None] = []

    def executor() -> str:
        seen.append(get_current_job())
        return "succeeded"

    job.executor = executor
    assert job.perform() == "succeeded"
    assert seen == [job]
    assert get_current_job() is None


class _TeamsJob(Job):
    """A job class a team passes to `rq worker --job-class`."""


def test_every_recur_worker_dequeues_jobs_that_can_carry_an_executor(redis_server) -> None:
    """`rq worker -w rq_worker.Worker` passes its --job-class, rq.job.Job unless told otherwise, over the
    worker's own: the worker still takes HandedJobs, of the team's class when it has one."""
    redis = Redis.from_url(redis_server.url)
    queues = [Queue("recur", connection=redis)]
    assert RecurWorker(queues, connection=redis).job_class is HandedJob
    assert RecurPoolWorker(queues, connection=redis, job_class="rq.job.Job").job_class is HandedJob
    teams = RecurWorker(queues, connection=redis, job_class=_TeamsJob).job_class
    assert issubclass(teams, HandedJob) and issubclass(teams, _TeamsJob)
    assert handed_job_class(teams) is teams


@pytest.mark.parametrize("mode", ["default", "fork"])
def test_a_link_the_worker_prepared_is_run_by_its_executor_not_by_the_jobs_function(
        real_app, fake_clock, monkeypatch, mode) -> None:
    """The default and forking workers run the links they claimed through the executor they attach to the
    job: the function the link's job names (recur_server.chain.link.run_link) is never called (here, it would fail
    the link)."""
    called = _replace_run_link(monkeypatch)
    schedules = _links_due_now(real_app, fake_clock, 3)
    queues, redis = [get_queue(real_app)], get_redis(real_app)
    if mode == "default":
        worker: RecurWorker = RecurPoolWorker(queues, connection=redis, limits=Limits())
    else:
        worker = RecurWorker(queues, connection=redis)
    worker.work(burst=True, with_scheduler=False)
    assert [run.status for schedule in schedules for run in runs_of(schedule.id)] == ["succeeded"] * 3
    assert called == []


def test_a_link_no_worker_prepared_is_run_by_the_jobs_function(real_app, fake_clock, monkeypatch) -> None:
    """The simple worker prepares nothing: RQ calls the link's function, the one replaced above (so the test
    above would see it called if the executor were not used)."""
    called = _replace_run_link(monkeypatch)
    _links_due_now(real_app, fake_clock, 1)
    RecurSimpleWorker([get_queue(real_app)], connection=get_redis(real_app)).work(burst=True, with_scheduler=False)
    assert len(called) == 1


def _replace_run_link(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    import recur_server.chain.link

    called: list[str] = []

    def run_link(**link: object) -> str:  # a link the mover made carries no arguments
        called.append(str(link))
        raise AssertionError("the link's function ran")

    monkeypatch.setattr(recur_server.chain.link, "run_link", run_link)
    return called


def _links_due_now(app, fake_clock, count):  # type: ignore[no-untyped-def]
    now = datetime.now(UTC)
    fake_clock.set(now)
    schedules = [make_schedule(now, interval_seconds=3600) for _ in range(count)]
    due = next_due(app)
    fake_clock.set(due)
    assert Mover(get_redis(app), get_queue(app)).move_due(due) == count
    return schedules
