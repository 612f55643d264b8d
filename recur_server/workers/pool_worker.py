"""The default worker (`worker.py`, `recur worker`): RecurWorker with each link's task run in a persistent work
process (recur_server.workers.pool) instead of a work horse forked for it, and RQ's bookkeeping of a link it
claimed written in the link's own round trips (recur_server.workers.link_jobs)."""

from __future__ import annotations

import logging
import signal
from typing import Any

from rq.worker.base import WorkerStatus

from recur_server.chain.attempt import Attempted
from recur_server.chain.ids import parse_link_id
from recur_server.chain.redis_links import LINK_FUNC
from recur_server.chain.run import Prepared
from recur_server.infra import clock
from recur_server.workers import horse, link_jobs
from recur_server.workers.pool import POLL_SECONDS, Limits, WorkProcess, exits_before, rss_bytes
from recur_server.workers.worker import RecurWorker

log = logging.getLogger(__name__)


class RecurPoolWorker(RecurWorker):
    """The default worker: each link's task runs in a persistent work process (recur_server.workers.pool) instead of
    a process forked for it. The worker claims, runs RQ's bookkeeping and records the outcome, as the
    forking worker does; the task is isolated as it is there (a crash, a hang past the deadline, a leak
    past the memory limit ends that attempt and the process, not the worker), without a fork per link.
    Jobs that are not links (runs outside the chain, other RQ jobs) get a work horse forked as before."""

    def __init__(self, *args: Any, limits: Any = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.work_process = WorkProcess(limits or Limits())

    def run_job(self, job: Any, queue: Any) -> None:
        if job.func_name != LINK_FUNC or parse_link_id(job.id) is None:
            super().run_job(job, queue)
            return
        execution, handed = self._begin(job, forks=False)
        if handed is not None and isinstance(handed.prepared, Prepared):
            self._run_claimed(job, execution, handed)
            return
        with self._running(job, handed):  # nothing to run (stale, skipped) or not claimed here: RQ's own path
            self.perform_job(job, queue, execution)
        self.set_state(WorkerStatus.IDLE)

    def _run_claimed(self, job: Any, execution: Any, handed: horse.Handed) -> None:
        """A link claimed here: its task in the work process, then its outcome recorded and handed off, with
        RQ's end of the job in that round trip (link_jobs; its start went with the lease)."""
        def finished(pipe: Any) -> None:
            link_jobs.finished(self, job, execution, handed.final_outcome()[0].value, pipe)

        with self._running(job, handed, finished):
            try:
                handed.run_through(self._run_in_work_process)
            except Exception:  # its outcome then says the work process ended without reporting one
                log.exception("link %s's task could not be run in the work process", job.id)

    def _record_execution(self, job: Any, pipeline: Any) -> Any:
        """RQ's record of the execution and, unlike the forking worker's horse, RQ's start of the job too."""
        execution = super()._record_execution(job, pipeline)
        link_jobs.started(self, job, pipeline)
        return execution

    def _run_in_work_process(self, prepared: Prepared) -> Attempted:
        return self.work_process.run(prepared.claim.task, dict(prepared.event), prepared.claim.timeout_seconds,
                                     prepared.deadline)

    def kill_horse(self, sig: Any = signal.SIGKILL) -> None:
        """RQ's stop-job command (and overlap cancel_other): stop the task, in whichever process runs it."""
        if self.work_process.busy:
            self.work_process.kill()
            return
        super().kill_horse(sig)

    def wait_for_horse(self) -> tuple[int | None, int | None, Any]:
        """For a job that is not a link (its work horse forked as RQ forks it), the memory limit holds as it
        does for the work process (--max-memory-mb): the horse is watched every POLL_SECONDS and killed past
        it, and its run fails saying so."""
        limit = self.work_process.limits.max_memory_mb
        if self._handed is None and limit is not None and self.horse_pid:
            while not exits_before(self.horse_pid, clock.monotonic() + POLL_SECONDS):
                rss = rss_bytes(self.horse_pid)
                if rss is not None and rss > limit * 1024 * 1024:
                    self._killed_for = (f"work process used {rss // (1024 * 1024)} MB, over the limit of {limit} MB "
                                        "(--max-memory-mb); it was killed")
                    self.kill_horse()
                    break
        return super().wait_for_horse()

    def teardown(self) -> None:
        self.work_process.stop()
        super().teardown()  # type: ignore[no-untyped-call]
