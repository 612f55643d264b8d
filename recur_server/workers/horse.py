"""A link its worker prepared (claimed, lease taken) before its task runs, and the RQ job that carries it
to the code that runs the task.

The worker attaches the link's executor to the job it dequeued (HandedJob.executor): RQ's perform, in the
forked work horse (Handed.run_in_horse) or in the pool worker itself, whose work process runs the task
(Handed.run_through), then calls it instead of the job's function. recur_server.jobs.run_link, the function that
queued links name, runs only a link no worker prepared (a bare `rq worker`, the simple worker, a claim that
could not be made before the fork).
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from collections.abc import Callable
from typing import Any

from rq.job import Job

from recur_server.chain.attempt import Attempted
from recur_server.chain.capture import Captured
from recur_server.chain.run import Prepared, complete, execute
from recur_server.models import RunStatus

log = logging.getLogger(__name__)


class HandedJob(Job):
    """The RQ job of Recur's forking and pool workers (their job_class): one whose worker attached an
    executor, the link it prepared, is performed by that executor instead of the job's function."""

    executor: Callable[[], str] | None = None

    # RQ's perform() sets the current job (rq.get_current_job(), which a task may read) and keeps the result
    # around _execute(), its call of the job's function: the executor takes the place of that call only. An
    # override of perform() itself would have to set RQ's private _current_job. tests/test_horse.py fails if
    # RQ renames _execute or perform stops calling it.
    def _execute(self) -> Any:
        if self.executor is None:
            return super()._execute()
        return self.executor()


def handed_job_class(job_class: type[Job]) -> type[HandedJob]:
    """`job_class` able to carry an executor: HandedJob for RQ's Job, else a subclass of the two."""
    if issubclass(job_class, HandedJob):
        return job_class
    if job_class is Job:
        return HandedJob
    return type(f"Handed{job_class.__name__}", (HandedJob, job_class), {"__module__": __name__})


class Handed:
    """A link the worker prepared (claimed, lease taken) before its task runs.

    A forked horse only runs the task and reports the outcome in a report file (an unlinked temporary file
    the horse inherits: what the task left behind can pass a pipe's 64 KB buffer, and the worker reads only
    once the horse has exited); the worker, whose database and Redis connections are warm, records it and
    hands off. A horse forked from a parent that died on the way keeps the lease renewed and completes the
    run itself.
    """

    def __init__(self, job_id: str, prepared: Prepared | str, forks: bool = True) -> None:
        self.job_id = job_id
        self.prepared = prepared
        self.parent_pid = os.getpid()
        # The horse reports in the file; the pool worker runs run_through itself and keeps the outcome.
        self._report = tempfile.TemporaryFile(buffering=0) if forks else None  # noqa: SIM115 - closed in close()
        self._outcome: Attempted | None = None
        self.overran = False  # the worker killed the horse at the deadline
        self.death: str | None = None  # how the horse died, when it did

    @property
    def deadline(self) -> float | None:
        return self.prepared.deadline if isinstance(self.prepared, Prepared) else None

    def run_in_horse(self) -> str:
        """The executor of a forking worker's link, in its work horse: run the task, report the outcome."""
        prepared = self.prepared
        if isinstance(prepared, str):
            return prepared
        prepared.lease.renew_here()  # so that a horse whose worker died is not written off while it runs
        with prepared.lease:
            status, error, captured = execute(prepared)
            if os.getppid() != self.parent_pid:
                log.warning("worker %s is gone; run %s completes in its work horse", self.parent_pid,
                            prepared.claim.run_id)
                return complete(prepared, status, error, captured)
            assert self._report is not None
            left = captured.as_dict() if captured is not None else None
            self._report.write(json.dumps([status.value, error, left]).encode())
            prepared.lease.forget()  # the worker releases it once the outcome is recorded
        return status.value

    def run_through(self, runner: Callable[[Prepared], Attempted]) -> str:
        """The executor of a pool worker's link, in the worker: `runner` runs the task (in the work process);
        the outcome is kept for the worker to record."""
        prepared = self.prepared
        if isinstance(prepared, str):
            return prepared
        self._outcome = runner(prepared)
        return self._outcome[0].value

    def final_outcome(self) -> Attempted:
        """In the worker, once the horse has exited: what it reported, or else how it ended."""
        reported = self.outcome()
        if reported is not None:
            return reported
        if self.overran and isinstance(self.prepared, Prepared):
            stopped = "the task did not stop, so its work process was killed"
            return RunStatus.TIMED_OUT, f"timed out after {self.prepared.claim.timeout_seconds}s; {stopped}", None
        return RunStatus.FAILED, self.death or "work process ended without reporting an outcome", None

    def outcome(self) -> Attempted | None:
        """In the worker, once the horse has exited: what it reported, or None if it reported nothing (or
        died writing it)."""
        if self._report is not None:
            report, self._report = self._report, None
            with report:
                written = os.pread(report.fileno(), os.fstat(report.fileno()).st_size, 0)
            try:
                status, error, left = json.loads(written) if written else (None, None, None)
            except ValueError:  # cut short: the horse died as it wrote
                status = None
            if status is not None:
                self._outcome = (RunStatus(status), error, Captured.of(left))
        return self._outcome

    def close(self) -> None:
        if self._report is not None:
            self._report.close()
            self._report = None
