"""RQ's bookkeeping of a link's job, written in the round trips the link makes anyway.

RQ's perform_job spends four round trips of its own on every job around its function: the start
(prepare_job_execution), a heartbeat once it returns, and its success, which WATCHes the job's dependents
and reads them before its MULTI/EXEC. A link the pool worker claimed has no dependents, callbacks, repeats
or rate-limit slot, and its task runs in the work process, not in RQ's perform; so the same writes go with
the link's own two round trips: started() beside the lease and RQ's record of the execution, finished()
beside the lease's release and the hand-off of the successor.

What is written is what RQ writes for a job that returned (rq 3: Worker.prepare_job_execution and
handle_job_success with Job._handle_success, which saves the whole hash again: a job whose hash was removed
while its link ran, a detached run's, is whole again afterwards, not three fields RQ cannot read). So
`rq info`, RQ's registries, its dashboard and job.return_value() see a link as they see any job.
tests/test_link_jobs.py compares the two on a real redis-server key by key: an RQ that writes otherwise
fails there, not in production.
"""

from __future__ import annotations

from typing import Any

from rq.intermediate_queue import IntermediateQueue
from rq.job import JobStatus
from rq.utils import now


def started(worker: Any, job: Any, pipeline: Any) -> None:
    """What RQ's prepare_job_execution writes as a job starts (the worker's heartbeat, the job's started
    state, its key kept, its entry taken off the queue's intermediate list), into `pipeline`."""
    worker.heartbeat(worker.get_heartbeat_ttl(job), pipeline=pipeline)
    job.prepare_for_execution(worker.name, pipeline=pipeline)  # sets last_heartbeat with the started state
    pipeline.persist(job.key)
    if len(worker.queues) == 1:  # as RQ's perform_job: with several queues its maintenance cleans the list
        pipeline.lrem(IntermediateQueue.get_intermediate_queue_key(worker.queues[0].key), 1, job.id)


def finished(worker: Any, job: Any, execution: Any, result: str, pipeline: Any) -> None:
    """What RQ's perform_job writes once a job returned `result` (the end, the result kept for the job's
    result_ttl, the finished registry, the execution cleared, the worker's counters), into `pipeline`."""
    job.ended_at = job.last_heartbeat = now()
    job._result = result
    job._status = JobStatus.FINISHED
    worker.increment_successful_job_count(pipeline=pipeline)
    worker.increment_total_working_time(job.ended_at - job.started_at, pipeline)
    result_ttl = job.get_result_ttl(worker.default_result_ttl)
    if result_ttl != 0:  # its save of the whole hash writes back a hash deleted while the link ran, as RQ does
        job._handle_success(result_ttl, pipeline=pipeline, worker_name=worker.name, execution_id=execution.id,
                            execution_started_at=execution.created_at, execution_ended_at=job.ended_at)
    job.cleanup(result_ttl, pipeline=pipeline, remove_from_queue=False)
    worker.cleanup_execution(job, pipeline=pipeline, execution=execution)
