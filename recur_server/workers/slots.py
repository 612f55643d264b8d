"""A worker's slots: `worker.py --concurrency N` runs up to N tasks at once as up to N RQ workers forked from
the warm worker process and supervised by RQ's own WorkerPool (what `rq worker-pool -n N` runs), each with its
own work process, so a task that crashes or overruns takes down only its own.

Slots may be elastic: a worker starts with `--min-slots` (by default all of them) and, each time it looks
(about once a second), adds slots while every slot it has is busy and links wait on its queues, up to N; a
slot beyond the minimum that has taken no task for `idle_seconds` (RECUR_WORKER_SLOT_IDLE_SECONDS) is stopped
(RQ's warm shutdown: it is idle, so it exits at once). One worker per core is then not N processes contending
for the cores when little is due.
The supervisor keeps its slots: one that exits (killed, or dead of an error RQ does not outlast) is replaced.
SIGTERM or SIGINT to it is passed on to every slot as RQ's warm shutdown (each finishes its link and hands
off its successor); a second one, RQ's cold shutdown. A slot dies with its supervisor (Linux's parent-death
signal), and its work process with it, so a SIGKILLed worker leaves no slot running a task whose run is
written off elsewhere. The reconciler, the mover, deliveries and pruning run once per worker process (its
background process), not once per slot.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from typing import Any

from redis.exceptions import RedisError
from rq.queue import Queue
from rq.worker import Worker
from rq.worker_pool import ForkProcess, WorkerData, WorkerPool

from recur_server.workers.pool import die_with_parent

# The slots of a worker left to its default on a machine of few cores. A link spends much of its time
# waiting on the database and Redis, so slots beyond the cores still add throughput (4 slots drained links
# 1.1-1.5 x faster than 2 on two cores, scenario 9), and three slots stay free for quick schedules while a
# slow task runs; each slot costs 33-42 MB (PSS).
AUTO_SLOTS = 4


def default_concurrency(setting: int) -> int:
    """The slots a worker runs: the setting, or with 0 AUTO_SLOTS, or one per core this process may use on a
    machine with more cores than that."""
    if setting > 0:
        return setting
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        cores = os.cpu_count() or 1
    return max(AUTO_SLOTS, cores)


class Slots(WorkerPool):
    """RQ's WorkerPool whose workers are Recur's: `run_slot(name, burst)` runs one slot's worker in the
    forked process (it opens its own connections there). Slot names are `{name}-{n}`, n counting every
    slot the pool started, so a replaced slot never takes the name of the one before it. Between
    `least` and `concurrency` slots (elastic, see above); a burst starts them all, each ending when the
    queues are empty."""

    def __init__(self, name: str, concurrency: int, run_slot: Callable[[str, bool], None], connection: Any,
                 queues: list[str], least: int = 1, idle_seconds: float = 60.0) -> None:
        self.least = max(1, min(least, concurrency))
        self.idle_seconds = idle_seconds
        super().__init__(queues, connection=connection, num_workers=self.least)
        self.most = concurrency
        self.name = name
        self._run_slot = run_slot
        self._started = 0
        self._retiring: set[str] = set()
        self._last_task: dict[str, tuple[float, Any]] = {}  # slot: (when its task count last moved, the count)

    def start(self, burst: bool = False, logging_level: str = "INFO") -> None:
        if burst:
            self.num_workers = self.most
        super().start(burst=burst, logging_level=logging_level)

    def check_workers(self, respawn: bool = True) -> None:
        super().check_workers(respawn)  # a slot that died is replaced
        if respawn and self.status != self.Status.STOPPED and self.least < self.most:  # a fixed pool never fits
            try:
                self.fit(time.monotonic())
            except RedisError as exc:  # the slots it has carry on; it looks again in a second
                self.log.debug("slots not fitted: %s", exc)

    def fit(self, now: float) -> None:
        """One slot more per link waiting while every slot is busy (up to the most); one slot fewer when one
        beyond the least has taken no task for `idle_seconds`."""
        names = [name for name in self.worker_dict if name not in self._retiring]
        with self.connection.pipeline(transaction=False) as pipe:
            for name in names:
                pipe.hmget(Worker.redis_worker_namespace_prefix + name,
                           "state", "successful_job_count", "failed_job_count")
            for queue in self._queue_names:
                pipe.llen(Queue.redis_queue_namespace_prefix + queue)
            answers = pipe.execute()
        states, waiting = answers[:len(names)], sum(int(n) for n in answers[len(names):])
        busy = 0
        for name, (state, succeeded, failed) in zip(names, states, strict=True):
            busy += state == b"busy"
            count = (succeeded, failed, state == b"busy")
            if name not in self._last_task or self._last_task[name][1] != count:
                self._last_task[name] = (now, count)
        if busy == len(names) and waiting and len(names) < self.most:
            more = min(waiting, self.most - len(names))
            self.log.info("slots: %d busy, %d link(s) waiting: starting %d more", busy, waiting, more)
            self.num_workers += more
            for _ in range(more):
                self.start_worker(burst=False)
            return
        idle = [name for name, (state, *_) in zip(names, states, strict=True)
                if state != b"busy" and now - self._last_task[name][0] >= self.idle_seconds]
        if idle and len(names) > self.least:
            name = idle[-1]  # the newest
            self.log.info("slot %s took no task for %.0f s: stopping it", name, self.idle_seconds)
            self.num_workers -= 1
            self._retiring.add(name)
            self.stop_worker(self.worker_dict[name])

    def start_worker(self, count: int | None = None, burst: bool = True, _sleep: float = 0,
                     logging_level: str = "INFO") -> None:
        self._started += 1
        name = f"{self.name}-{self._started}"
        process = ForkProcess(target=_slot_main, args=(self._run_slot, name, burst, os.getpid()), name=name)
        process.start()
        assert process.pid is not None
        self.worker_dict[name] = WorkerData(name=name, pid=process.pid, process=process)
        self.log.info("slot %s started with pid %d", name, process.pid)

    def handle_dead_worker(self, worker_data: WorkerData) -> None:
        code = worker_data.process.exitcode
        self._last_task.pop(worker_data.name, None)
        if worker_data.name in self._retiring:
            self._retiring.discard(worker_data.name)
            self.log.info("slot %s stopped (%s)", worker_data.name, _exit_text(code))
        elif self.status != self.Status.STOPPED and not self._burst:
            self.log.warning("slot %s (pid %d) ended with %s; starting another", worker_data.name, worker_data.pid,
                             _exit_text(code))
        super().handle_dead_worker(worker_data)


def _slot_main(run_slot: Callable[[str, bool], None], name: str, burst: bool, parent_pid: int) -> None:
    die_with_parent(parent_pid)
    # The supervisor's handlers were copied by the fork: RQ's worker installs its own in work().
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    run_slot(name, burst)


def _exit_text(code: int | None) -> str:
    if code is None:
        return "no exit status"
    if code < 0:
        return f"signal {-code} ({signal.Signals(-code).name})"
    return f"exit status {code}"
