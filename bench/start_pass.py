"""`python -m bench.start_pass [--db sqlite|postgres] [--schedules N] [--rate R] [--seconds S]`: how late the runs
due just after a worker's start are, when that start sweeps every schedule (the first worker of a cluster, or the
first after RECUR_RECONCILE_SWEEP_SECONDS).

N active schedules inserted in bulk (scenario 10's mix: R links a second due), every link made by a pass, then
the cluster's marks of a recent pass and sweep deleted and one default worker.py started, as the Procfile starts
it. Reported for the runs due in the S seconds from the start: lateness p50/p99/max, none early, and when the
worker's slots listened and what its startup pass said."""

from __future__ import annotations

import argparse
import json
import logging
import math
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.estate import insert_mix, mix
from bench.stack import Bench, postgres_available
from bench.stats import lateness_summary
from recur_server.workers.background import RECONCILED_KEY, SWEPT_KEY


def measure(bench: Bench, count: int, rate: float, seconds: int) -> dict[str, Any]:
    counts = mix(count, rate)
    env = bench.recur(f"start{count}", RECUR_MAX_SCHEDULES_PER_OWNER=str(count + 10))
    try:
        workflow = env.workflow()
        origin = math.ceil(time.time() + 30 + count / 3000 + count / 10_000)  # after the insert and the links
        insert_mix(env, workflow, counts, origin)
        made = env.reconcile()
        time.sleep(max(0.0, origin - time.time()))
        bench.redis.delete(SWEPT_KEY, RECONCILED_KEY)  # no pass and no sweep lately: the start sweeps
        start = time.time()
        env.start_workers(1, "default")
        listening = time.time() - start
        time.sleep(max(0.0, start + seconds - time.time()) + 5)  # the window's last runs ended
        said = [line for line in (env.directory / "worker0.log").read_text().splitlines()
                if "startup recovery" in line]
        runs = env.runs()
    finally:
        env.stop()
    pairs = [(nominal, started) for nominal, started, _ in runs if start <= nominal < start + seconds]
    return {"schedules": count, "rate": rate, "seconds": seconds, "links_made": made["links_repaired"],
            "slots_listening_after_s": round(listening, 1), "startup_pass": said[-1] if said else None,
            **lateness_summary(pairs)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.start_pass", description=__doc__.split("\n")[0])
    parser.add_argument("--db", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--schedules", type=int, default=300_000)
    parser.add_argument("--rate", type=float, default=50)
    parser.add_argument("--seconds", type=int, default=60)
    parser.add_argument("--json", help="also write the figures here")
    args = parser.parse_args(argv)
    if args.db == "postgres" and not postgres_available():
        parser.error("PostgreSQL's server binaries are not installed")
    logging.disable(logging.WARNING)  # the in-process pass's line for every 1,000 links it makes
    bench = Bench(Path(tempfile.mkdtemp(prefix="recur-start-pass-")), args.db)
    try:
        figures = {"db": args.db, **measure(bench, args.schedules, args.rate, args.seconds)}
    finally:
        bench.stop()
    print(json.dumps(figures), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
