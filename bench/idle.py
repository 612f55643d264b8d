"""What a quiet worker costs: one worker.py as the Procfile starts it (four slots at most on this machine),
with nothing due, elastic (`--min-slots 1`: one slot until more are busy) beside the fixed pool (the
default). Its processes, their memory (PSS, which splits shared pages) and
the CPU they use in `--seconds` of idling; rounds interleaved.

    python -m bench.idle [--db sqlite|postgres] [--seconds 30] [--rounds 3]
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.procfs import stat, with_descendants
from bench.stack import Bench
from bench.stats import interleaved
from recur_server.workers.slots import default_concurrency

_TICKS = os.sysconf("SC_CLK_TCK")


def _cpu_seconds(pids: set[int]) -> float:
    total = 0
    for pid in pids:
        with contextlib.suppress(OSError):
            fields = stat(pid)
            total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / _TICKS


def _pss_mb(pids: set[int]) -> float:
    total = 0
    for pid in pids:
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total += int(line.split()[1])
    return round(total / 1024, 1)


def quiet(bench: Bench, seconds: float, fixed: bool) -> dict[str, Any]:
    env = bench.recur("idle")
    try:
        env.workflow()
        most = default_concurrency(env.app.config["RECUR_WORKER_CONCURRENCY"])
        env.start_workers(1, "default", "--min-slots", str(most if fixed else 1))
        time.sleep(5.0)  # its start (and the first reconcile) behind it
        pids = with_descendants(env.workers[0].pid)
        before = _cpu_seconds(pids)
        time.sleep(seconds)
        pids = with_descendants(env.workers[0].pid)
        return {"processes": len(pids), "pss_mb": _pss_mb(pids),
                "cpu_percent": round(100 * (_cpu_seconds(pids) - before) / seconds, 2)}
    finally:
        env.stop()


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(prog="python -m bench.idle", description=__doc__)
    parser.add_argument("--db", default="sqlite")
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    logging.disable(logging.WARNING)
    bench = Bench(Path(tempfile.mkdtemp(prefix="recur-bench-")), args.db)
    try:
        seen = interleaved(args.rounds, {"elastic (--min-slots 1)": lambda: quiet(bench, args.seconds, False),
                                         "fixed (the default)": lambda: quiet(bench, args.seconds, True)})
    finally:
        bench.stop()
    medians = {label: {key: statistics.median(r[key] for r in rounds) for key in rounds[0]}
               for label, rounds in seen.items()}
    print(f"medians over {args.rounds} rounds of {args.seconds:g} s idle on {args.db}: {medians}")
    return {"rounds": seen, "medians": medians}


if __name__ == "__main__":
    main()
