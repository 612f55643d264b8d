"""bench.cpu reads a process's CPU time from /proc: what it reads has to move with the work done."""

import os
import subprocess
import sys
import time

from bench.cpu import _cpu
from bench.procfs import children


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
