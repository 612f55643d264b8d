"""Where the suite's time goes: with RECUR_TEST_CPU_REPORT set to a file, each test appends one line to it: the CPU
seconds it used (this pytest process and every process it started and reaped: web servers, workers, their forks,
those forked by harness/preloaded.py included), its wall seconds, the pass (`sqlite` or `postgres`, the shard) and
its node id, tab-separated. The suite on this 2-core machine is bound by CPU, not by waiting, so the CPU column is
what to cut.

    RECUR_TEST_CPU_REPORT=/tmp/cpu.tsv scripts/test -q
    sort -t$'\\t' -k1 -rn /tmp/cpu.tsv | head -30
"""

from __future__ import annotations

import os
import resource
import time
from collections.abc import Iterator

import pytest

from harness import preloaded
from harness.passes import this_pass


def _cpu() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime + preloaded.reaped_cpu()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    path = os.environ.get("RECUR_TEST_CPU_REPORT")
    if not path:
        yield
        return
    cpu, wall = _cpu(), time.monotonic()
    yield
    used, took = _cpu() - cpu, time.monotonic() - wall
    run = f"{this_pass()} {os.environ.get('RECUR_TEST_SHARD', 'all')}"
    with open(path, "a", encoding="utf-8") as report:
        report.write(f"{used:.2f}\t{took:.2f}\t{run}\t{item.nodeid}\n")
