"""A worker's slots: `worker.py --concurrency N` runs N tasks at once as N RQ workers forked from the warm
worker process and supervised by RQ's own WorkerPool (what `rq worker-pool -n N` runs), each with its own
work process, so a task that crashes or overruns takes down only its own.

The supervisor keeps N slots: one that exits (killed, or dead of an error RQ does not outlast) is replaced.
SIGTERM or SIGINT to it is passed on to every slot as RQ's warm shutdown (each finishes its link and hands
off its successor); a second one, RQ's cold shutdown. A slot dies with its supervisor (Linux's parent-death
signal), and its work process with it, so a SIGKILLed worker leaves no slot running a task whose run is
written off elsewhere. The reconciler, the mover, deliveries and pruning run once per worker process (its
background process), not once per slot.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from typing import Any

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
    slot the pool started, so a replaced slot never takes the name of the one before it."""

    def __init__(self, name: str, concurrency: int, run_slot: Callable[[str, bool], None], connection: Any,
                 queues: list[str]) -> None:
        super().__init__(queues, connection=connection, num_workers=concurrency)
        self.name = name
        self._run_slot = run_slot
        self._started = 0

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
        if self.status != self.Status.STOPPED and not self._burst:
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
