"""bench.cpu reads a process's CPU time from /proc: what it reads has to move with the work done."""

import os
import subprocess
import sys
import time
from typing import Any

import fakeredis
from rq import Queue

from bench.cpu import _cpu, _feed, arrivals, sample
from bench.procfs import children
from bench.tasks import noop


def _busy(seconds: float) -> None:
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


def test_cpu_time_counts_own_work() -> None:
    before = _cpu(os.getpid(), reaped=False)
    _busy(0.3)
    assert _cpu(os.getpid(), reaped=False) - before >= 0.2


def test_a_reaped_childs_cpu_time_is_counted_with_reaped() -> None:
    def reaped() -> float:
        return _cpu(os.getpid()) - _cpu(os.getpid(), reaped=False)

    before = reaped()
    child = subprocess.Popen([sys.executable, "-c", "import time\nend = time.process_time() + 0.3\n"
                              "while time.process_time() < end: pass\ntime.sleep(0.3)"])
    time.sleep(0.1)
    assert child.pid in children(os.getpid())
    child.wait(30)
    assert reaped() - before >= 0.2


def test_arrivals_come_at_the_rate_from_the_lead() -> None:
    start = time.time()
    due = arrivals(5, 100.0, 2.0)
    assert len(due) == 5 and start + 2.0 <= due[0] <= time.time() + 2.0
    assert [round(later - earlier, 6) for earlier, later in zip(due, due[1:], strict=False)] == [0.01] * 4


def test_the_feed_enqueues_no_job_before_its_time() -> None:
    queue = Queue("feed", connection=fakeredis.FakeRedis())
    due = arrivals(20, 100.0, 0.05)
    seen: list[float] = []
    real = queue.enqueue_many

    def enqueue_many(jobs: list[Any]) -> Any:
        seen.extend([time.time()] * len(jobs))
        return real(jobs)

    queue.enqueue_many = enqueue_many  # type: ignore[method-assign]
    _feed(queue, [Queue.prepare_data(noop) for _ in range(20)], due)
    assert len(queue) == 20 and all(at >= when for at, when in zip(seen, due, strict=True))


def test_on_sqlite_no_postgresql_server_is_counted() -> None:
    counted = sample([os.getpid()], os.getpid(), "sqlite")
    assert counted["PostgreSQL server processes"] == 0.0 and counted["worker processes"] > 0
