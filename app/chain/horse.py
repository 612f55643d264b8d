"""A link the forking worker prepared (claimed, lease taken) before forking its work horse, handed to the
horse; or to the pool worker's persistent work process (app.chain.pool) through an executor.

Set by app.chain.workers around each job; read by the link's job (app.jobs) in the horse.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable

from app.chain.run import Prepared, complete, execute
from app.models import RunStatus

log = logging.getLogger(__name__)


class Handed:
    """A link the forking worker prepared (claimed, lease taken) before forking its work horse.

    The horse only runs the task and reports the outcome through a pipe; the worker, whose database and
    Redis connections are warm, records it and hands off. A horse forked from a parent that died on the
    way keeps the lease renewed and completes the run itself.
    """

    def __init__(self, job_id: str, prepared: Prepared | str, forks: bool = True) -> None:
        self.job_id = job_id
        self.prepared = prepared
        self.parent_pid = os.getpid()
        # The horse reports through a pipe; the pool worker runs run_in_horse itself and keeps the outcome.
        self._read, self._write = os.pipe() if forks else (-1, -1)
        if forks:
            os.set_blocking(self._read, False)
        self._outcome: tuple[RunStatus, str | None] | None = None
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
            status, error = _pool_executor(prepared)
            self._outcome = (status, error)
            return status.value
        prepared.lease.renew_here()  # so that a horse whose worker died is not written off while it runs
        with prepared.lease:
            status, error = execute(prepared)
            if os.getppid() != self.parent_pid:
                log.warning("worker %s is gone; run %s completes in its work horse", self.parent_pid,
                            prepared.claim.run_id)
                return complete(prepared, status, error)
            os.write(self._write, json.dumps([status.value, error]).encode())
            prepared.lease.forget()  # the worker releases it once the outcome is recorded
        return status.value

    def final_outcome(self) -> tuple[RunStatus, str | None]:
        """In the worker, once the horse has exited: what it reported, or else how it ended."""
        reported = self.outcome()
        if reported is not None:
            return reported
        if self.overran and isinstance(self.prepared, Prepared):
            stopped = "the task did not stop, so its work process was killed"
            return RunStatus.TIMED_OUT, f"timed out after {self.prepared.claim.timeout_seconds}s; {stopped}"
        return RunStatus.FAILED, self.death or "work process ended without reporting an outcome"

    def outcome(self) -> tuple[RunStatus, str | None] | None:
        """In the worker, once the horse has exited: what it reported, or None if it reported nothing."""
        if self._write >= 0:
            os.close(self._write)
            self._write = -1
            chunks = []
            try:  # non-blocking: a process the task forked may still hold the write end
                while chunk := os.read(self._read, 65536):
                    chunks.append(chunk)
            except BlockingIOError:
                pass
            if chunks:
                status, error = json.loads(b"".join(chunks))
                self._outcome = (RunStatus(status), error)
        return self._outcome

    def close(self) -> None:
        for fd in (self._read, self._write):
            if fd >= 0:
                os.close(fd)
        self._read = self._write = -1


# Set by the forking worker around the fork of the work horse for that job (the horse inherits it).
_handed: Handed | None = None
# Set by the pool worker: runs a prepared link's task in its persistent work process.
_pool_executor: Callable[[Prepared], tuple[RunStatus, str | None]] | None = None


def use_pool(executor: Callable[[Prepared], tuple[RunStatus, str | None]] | None) -> None:
    global _pool_executor
    _pool_executor = executor


def hand_to_horse(handed: Handed | None) -> None:
    global _handed
    _handed = handed


def handed_for(job_id: str) -> Handed | None:
    return _handed if _handed is not None and _handed.job_id == job_id else None
