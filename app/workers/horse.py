"""A link the forking worker prepared (claimed, lease taken) before forking its work horse, handed to the
horse; or to the pool worker's persistent work process (app.workers.pool) through an executor.

Set by app.workers.worker around each job; read by the link's job (app.jobs) in the horse.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from collections.abc import Callable

from app.chain.attempt import Attempted
from app.chain.capture import Captured
from app.chain.run import Prepared, complete, execute
from app.models import RunStatus

log = logging.getLogger(__name__)


class Handed:
    """A link the forking worker prepared (claimed, lease taken) before forking its work horse.

    The horse only runs the task and reports the outcome in a report file (an unlinked temporary file the
    horse inherits: what the task left behind can pass a pipe's 64 KB buffer, and the worker reads only
    once the horse has exited); the worker, whose database and Redis connections are warm, records it and
    hands off. A horse forked from a parent that died on the way keeps the lease renewed and completes the
    run itself.
    """

    def __init__(self, job_id: str, prepared: Prepared | str, forks: bool = True) -> None:
        self.job_id = job_id
        self.prepared = prepared
        self.parent_pid = os.getpid()
        # The horse reports in the file; the pool worker runs run_in_horse itself and keeps the outcome.
        self._report = tempfile.TemporaryFile(buffering=0) if forks else None  # noqa: SIM115 - closed in close()
        self._outcome: Attempted | None = None
        self.overran = False  # the worker killed the horse at the deadline
        self.death: str | None = None  # how the horse died, when it did

    @property
    def deadline(self) -> float | None:
        return self.prepared.deadline if isinstance(self.prepared, Prepared) else None

    def run_in_horse(self) -> str:
        prepared = self.prepared
        if isinstance(prepared, str):
            return prepared
        if os.getpid() == self.parent_pid:  # the pool worker: the worker runs this, its work process the task
            assert _pool_executor is not None
            self._outcome = _pool_executor(prepared)
            return self._outcome[0].value
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


# Set by the forking worker around the fork of the work horse for that job (the horse inherits it).
_handed: Handed | None = None
# Set by the pool worker: runs a prepared link's task in its persistent work process.
_pool_executor: Callable[[Prepared], Attempted] | None = None


def use_pool(executor: Callable[[Prepared], Attempted] | None) -> None:
    global _pool_executor
    _pool_executor = executor


def hand_to_horse(handed: Handed | None) -> None:
    global _handed
    _handed = handed


def handed_for(job_id: str) -> Handed | None:
    return _handed if _handed is not None and _handed.job_id == job_id else None
