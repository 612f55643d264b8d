"""RQ worker for links. The worker process claims each link before it forks the work horse and records
the outcome after the horse exits, so the horse only runs the task; when a horse dies under a link, the
attempt fails and the chain goes on. The worker hands the link it claimed to the code that runs it through
the link's RQ job (recur_server.workers.horse.HandedJob), not through the job's function."""

from __future__ import annotations

import contextlib
import logging
import signal
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import TYPE_CHECKING, Any

from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError
from rq import Queue, SimpleWorker, Worker, worker_registration
from rq.executions import Execution
from rq.worker.base import WorkerStatus

from recur_server.chain.finish import write_off
from recur_server.chain.handoff import hand_off
from recur_server.chain.ids import parse_link_id
from recur_server.chain.redis_links import LINK_FUNC, link_kwargs
from recur_server.chain.run import complete, prepare
from recur_server.infra import clock
from recur_server.infra.extensions import db
from recur_server.infra.threads import deaf_to_stop_signals
from recur_server.workers import horse
from recur_server.workers.dequeue import OneTripQueue
from recur_server.workers.pool import death_of, exits_before

log = logging.getLogger(__name__)

HEARTBEAT_EVERY_SECONDS = 1.0
# Redis unreachable: down, restarting, or a Sentinel failover under way (redis-py reports a demoted master's
# READONLY as a ConnectionError, so the next attempt asks the Sentinels again).
REDIS_AWAY = (RedisConnectionError, RedisTimeoutError)


if TYPE_CHECKING:
    from rq.worker.base import BaseWorker as _RQWorker
else:
    _RQWorker = object


class QuietBetweenJobs(_RQWorker):
    """What every Recur worker changes in RQ's loop between jobs: the worker's heartbeat and the check for
    `rq suspend` at most once a second, and no second write of an unchanged state. Mixed in before an RQ
    worker class (RecurWorker, RecurSimpleWorker).

    And one thing RQ's loop does not do: outlast Redis going away. RQ retries its dequeue, but any Redis
    error anywhere else in the loop (the bookkeeping after a job, the heartbeat, cleaning registries) ends
    the worker, so a Redis restart or failover in the middle of a link left no worker running. Here such an
    error ends that job's bookkeeping only: the run's outcome is in the database (its truth), a successor
    that could not be put is put back by the reconciler, and the worker goes on to its next dequeue, which
    waits for Redis. Subclasses put what they do for a job in run_job."""

    queue_class = OneTripQueue  # a waiting job taken and read in one round trip
    _beat_at: float | None = None  # clock.monotonic() of the last heartbeat sent
    _state_unsaved = False  # the worker's state could not be written to Redis

    def validate_queues(self) -> None:
        """Any RQ Queue will do: the queue_class changes only how this worker takes jobs off them."""
        for queue in self.queues:
            if not isinstance(queue, Queue):
                raise TypeError(f"{queue} is not an RQ Queue")

    def execute_job(self, job: Any, queue: Any) -> None:
        try:
            self.run_job(job, queue)
        except REDIS_AWAY as exc:
            log.warning("Redis went away during job %s (%s): the worker goes on; the run is in the database and "
                        "the reconciler puts back a successor that could not be put", job.id, exc)
            self._state, self._state_unsaved = WorkerStatus.IDLE, True  # the next set_state writes it

    def run_job(self, job: Any, queue: Any) -> None:
        """RQ's execute_job; what a subclass does with a job instead."""
        super().execute_job(job, queue)

    def _while_redis_away(self, what: str, action: Any) -> bool:
        """Run `action`; False, with a warning, when Redis cannot be reached (the loop tries again later)."""
        try:
            action()
        except REDIS_AWAY as exc:
            log.warning("Redis cannot be reached for the worker's %s (%s); trying again", what, exc)
            return False
        return True

    # RQ's "result is kept for N seconds" line after every job: a link's result lifespan is the same for
    # every link (RECUR_LINK_RESULT_TTL), and the line was a quarter of a link's log output.
    log_result_lifespan = False

    def heartbeat(self, timeout: int | None = None, pipeline: Any = None) -> None:
        """RQ's worker heartbeat, sent at most once a second and in one round trip. RQ sends it three times
        for every job (before and after the dequeue, after the job), each as three commands (HSET, EXPIRE,
        EXPIRE): nine round trips per link, to keep alive a key whose time to live is minutes (worker_ttl +
        60 s). A heartbeat with its own timeout, or inside a caller's pipeline, is sent as RQ sends it."""
        if pipeline is not None:
            super().heartbeat(timeout, pipeline=pipeline)
            return
        now = clock.monotonic()
        if timeout is None and self._beat_at is not None and now - self._beat_at < HEARTBEAT_EVERY_SECONDS:
            return

        def beat() -> None:
            with self.connection.pipeline(transaction=False) as pipe:
                super(QuietBetweenJobs, self).heartbeat(timeout, pipeline=pipe)
                fields_added = pipe.execute()[0]  # the HSET of last_heartbeat
            if fields_added:  # the worker's hash had no last_heartbeat: Redis lost its registration
                self._register_again()

        if self._while_redis_away("heartbeat", beat):
            self._beat_at = now

    def _register_again(self) -> None:
        """Write back the registration RQ writes only at birth (the worker's hash and its place in the
        workers' sets), after a Redis restart or failover lost it: without it `rq info` and the console's
        list of slots no longer show a worker that is running."""
        with self.connection.pipeline() as pipe:
            pipe.hset(self.key, mapping=self.serialize())
            worker_registration.register(self, pipe)
            pipe.expire(self.key, self.worker_ttl + 60)
            pipe.execute()
        log.warning("Redis had lost worker %s's registration: written again", self.name)

    _suspension_checked_at: float | None = None

    def check_for_suspension(self, burst: bool) -> None:
        """RQ's check for `rq suspend`, made at most once a second rather than before every job (one round trip a
        link): a suspension takes effect within a second."""
        now = clock.monotonic()
        if self._suspension_checked_at is not None and now - self._suspension_checked_at < HEARTBEAT_EVERY_SECONDS:
            return
        self._suspension_checked_at = now
        self._while_redis_away("check for `rq suspend`",
                               lambda: super(QuietBetweenJobs, self).check_for_suspension(burst))

    def register_death(self) -> None:
        """RQ's record of the worker's end, which a worker stopped while Redis is away cannot write: its
        registration then expires by itself (worker_ttl + 60 s), and the worker exits as it was asked to."""
        self._while_redis_away("record of its end", super().register_death)

    def subscribe(self) -> None:
        """RQ's command channel, listened to by a thread of redis-py's that must not take the stop signals: a
        SIGTERM the kernel gave it would wait, unseen, for the main thread's blocking dequeue to time out
        (recur_server.infra.threads)."""
        with deaf_to_stop_signals():
            super().subscribe()  # type: ignore[no-untyped-call]

    def unsubscribe(self) -> None:
        """RQ's goodbye to its command channel (`rq` stop-job and shutdown commands), at exit."""
        self._while_redis_away("unsubscribe from commands", super().unsubscribe)

    def run_maintenance_tasks(self) -> None:
        """RQ's cleaning of registries, skipped while Redis cannot be reached."""
        self._while_redis_away("maintenance", super().run_maintenance_tasks)

    def set_state(self, state: str, pipeline: Any = None) -> None:
        """RQ's set_state, without the second write of the state the worker is already in (RQ writes IDLE
        after each job and again before the next dequeue)."""
        if pipeline is None and state == self._state and not self._state_unsaved:
            return
        if pipeline is not None:
            super().set_state(state, pipeline=pipeline)
        else:
            self._state_unsaved = not self._while_redis_away(
                "state", lambda: super(QuietBetweenJobs, self).set_state(state))


class RecurSimpleWorker(QuietBetweenJobs, SimpleWorker):
    """`worker.py --simple`: RQ's SimpleWorker (every task in the worker process), with the economies above."""


class RecurWorker(QuietBetweenJobs, Worker):
    """`worker.py --fork`: a work horse forked for each job. A link claimed here is run by the executor
    attached to its job (_running), which RQ's perform calls in the horse. `job_died(job, worker, reason,
    now)`, given by the entry point (recur_server.jobs.work_process_died), records a job that is not a link whose
    horse died; links are recorded here."""

    job_class = horse.HandedJob
    _handed: horse.Handed | None = None  # the link whose task runs now, when this worker prepared it
    _recording = False  # a link's outcome is being recorded (_complete)

    def __init__(self, *args: Any, job_died: Callable[[Any, str, str, datetime], None] | None = None,
                 **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # `rq worker` passes its --job-class (rq.job.Job unless told otherwise) over the class's own.
        self.job_class = horse.handed_job_class(self.job_class)
        self.job_died = job_died

    def run_job(self, job: Any, queue: Any) -> None:
        """RQ's own execute_job (prepare the execution, fork, monitor, go idle), with the link's database
        and Redis work done here, on this process's warm connections, around the horse: a horse that had
        to open its own connections and fill its own caches spent most of its time doing so."""
        self._killed_for = None
        execution, handed = self._begin(job, forks=True)
        with self._running(job, handed):
            self.fork_work_horse(job, queue)
            try:
                self.monitor_work_horse(job, queue, execution)
            except REDIS_AWAY:
                if self._horse_pid:  # Redis went away while the horse runs: it goes on; wait for it
                    self.wait_for_horse()  # (cut short at the link's deadline, as ever)
                    self._horse_pid = 0
                raise
        self.set_state(WorkerStatus.IDLE)

    @contextlib.contextmanager
    def _running(self, job: Any, handed: horse.Handed | None,
                 finished: Callable[[Any], None] | None = None) -> Iterator[None]:
        """The frame around a link's task, wherever it runs: the link prepared here is the one running
        (for the death handler and the deadline), its job carries the executor that runs it (RQ's perform
        calls it, in the horse or here), and at the end its outcome is recorded and its successor handed
        off, whatever happened (with `finished`: see _complete)."""
        self._handed = handed
        if handed is not None:
            job.executor = self._executor(handed)
        try:
            yield
        finally:
            self._handed = None
            if handed is not None:
                job.executor = None
                self._complete(handed, finished)

    def _executor(self, handed: horse.Handed) -> Callable[[], str]:
        """What runs a link prepared here: its forked work horse runs the task."""
        return handed.run_in_horse

    def _begin(self, job: Any, forks: bool) -> tuple[Any, horse.Handed | None]:
        """RQ's prepare_execution, with the link claimed here (see _prepare). The worker counts as BUSY
        from the start, so a SIGTERM that comes during the claim waits for the link; RQ's writes of the
        execution and the BUSY state go in the round trip that takes the lease."""
        if job.func_name != LINK_FUNC or parse_link_id(job.id) is None or not isinstance(job, horse.HandedJob):
            return self.prepare_execution(job), None
        self._state = WorkerStatus.BUSY
        executions: list[Any] = []
        handed = self._prepare(job, forks, lambda pipe: executions.append(self._record_execution(job, pipe)))
        return (executions[0] if executions else self.prepare_execution(job)), handed

    def _record_execution(self, job: Any, pipeline: Any) -> Any:
        """What RQ's prepare_execution (rq.executions) writes, into the caller's pipeline."""
        execution = Execution.create(job, self.get_heartbeat_ttl(job), pipeline=pipeline, worker_name=self.name)
        self.executions[execution.id] = execution
        self.set_state(WorkerStatus.BUSY, pipeline=pipeline)
        return execution

    def _prepare(self, job: Any, forks: bool, along: Any) -> horse.Handed | None:
        """Claim the link here; None (the horse then runs the whole link itself) when the claim could not
        be made here."""
        try:
            kwargs = link_kwargs(job)
            prepared = prepare(kwargs["schedule_id"], kwargs["revision"], kwargs["repeat"], kwargs["retry"],
                                    datetime.fromisoformat(kwargs["scheduled_for"]), self.name, along)
        except Exception:
            log.exception("could not prepare link %s here; its work horse runs it whole", job.id)
            return None
        finally:
            db.session.remove()
        return horse.Handed(job.id, prepared, forks=forks)

    def _complete(self, handed: horse.Handed, finished: Callable[[Any], None] | None = None) -> None:
        """Record the outcome and hand off; the worker's return to IDLE (and `finished`, RQ's end of the job
        when the worker keeps it: link_jobs) goes in the same round trip."""
        prepared = handed.prepared
        self._recording = True

        def along(pipe: Any) -> None:
            self.set_state(WorkerStatus.IDLE, pipeline=pipe)
            if finished is not None:
                finished(pipe)

        try:
            if isinstance(prepared, str):
                return
            complete(prepared, *handed.final_outcome(), along=along)  # a run already written off is left as it is
        except Exception:  # the lease lapses and the reconciler writes the run off
            log.exception("could not complete link %s", handed.job_id)
            if finished is not None:  # RQ's view of the job and the worker, all the same
                with contextlib.suppress(*REDIS_AWAY), self.connection.pipeline() as pipe:
                    along(pipe)
                    pipe.execute()
        finally:
            self._recording = False
            handed.close()
            db.session.remove()

    def _shutdown(self) -> None:
        """RQ's answer to SIGTERM, except while a link's outcome is being recorded: the stop then waits for
        the record, as it waits for a running task. The worker is IDLE from the moment the record's pipeline
        is built, and RQ raises StopRequested wherever an IDLE worker is: raised inside the record, it lost
        the outcome (the run left for the reconciler to write off) and the stop (the worker ran on until
        it was killed)."""
        if self._recording:
            self._stop_requested = True
            return
        super()._shutdown()  # type: ignore[no-untyped-call]

    def wait_for_horse(self) -> tuple[int | None, int | None, Any]:
        """RQ's wait for the horse, cut short at the running link's deadline (its timeout plus the grace):
        a horse still running then is killed, whatever its task did with the timeout exception, and the
        attempt is recorded as timed out."""
        handed = self._handed
        deadline = handed.deadline if handed is not None else None
        if handed is not None and deadline is not None and not exits_before(self.horse_pid, deadline):
            handed.overran = True
            log.warning("link %s ran past its timeout and grace; killing its work horse", handed.job_id)
            self.kill_horse()
        return super().wait_for_horse()

    def setup_work_horse_signals(self) -> None:
        """A SIGTERM sent to the whole process group (systemd, Heroku, Ctrl-C in a shell) must not kill a
        running link: the worker's warm shutdown lets it finish and hand off; a second signal kills it."""
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)

    _killed_for: str | None = None  # why this worker killed the running horse itself, when it did

    def handle_work_horse_killed(self, job: Any, retpid: int, ret_val: int, rusage: Any) -> None:
        super().handle_work_horse_killed(job, retpid, ret_val, rusage)  # type: ignore[no-untyped-call]
        reason, self._killed_for = self._killed_for or death_of(ret_val), None
        parsed = parse_link_id(job.id)
        if parsed is None:
            if self.job_died is not None:
                db.session.remove()
                try:
                    self.job_died(job, self.name, reason, clock.utcnow())
                except Exception:  # the reconciler writes the run off when its lease lapses
                    log.exception("could not record the death of job %s", job.id)
                finally:
                    db.session.remove()
            return
        handed = self._handed if self._handed is not None and self._handed.job_id == job.id else None
        if handed is not None:  # prepared here: _complete records the run it claimed, and only that one
            handed.death = reason
            return
        schedule_id, repeat, retry = parsed
        db.session.remove()  # start from the database as the work horse left it
        try:
            # Only a run this worker's horse claimed: a horse that lost the fence must not end another's.
            schedule = write_off(schedule_id, repeat, retry, reason, clock.utcnow(), worker=self.name)
            if schedule is not None:
                hand_off(schedule)
        except Exception:  # the reconciler repairs what this could not
            log.exception("could not record the death of link %s", job.id)
        finally:
            db.session.remove()
