"""What the reconciler's index of due schedules (ix_scheduled_jobs_due) costs a link: scenario 1's Recur drain
(one worker as the Procfile starts it, every link due at once) with the index and with it dropped, rounds
interleaved on one PostgreSQL server so that drift hits both alike. A link moves next_run_at, an indexed
column, so its UPDATE of the schedule is no longer HOT: every index of the table gets an entry.

    python -m bench.due_index [--db postgres|sqlite] [--count 2000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import logging
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from sqlalchemy import text

from bench.stack import Bench, utc
from bench.stats import interleaved, rate
from harness.servers import wait_for
from recur_server.infra.extensions import db


def drain(bench: Bench, count: int, with_index: bool) -> tuple[float, float | None]:
    """Links a second, and on PostgreSQL the share of the schedules' UPDATEs that were HOT: `count` schedules
    due at once, drained by one default worker."""
    env = bench.recur("due-index")
    try:
        if not with_index:
            with env.context():
                db.session.execute(text("DROP INDEX ix_scheduled_jobs_due"))
                db.session.commit()
        workflow = env.workflow()
        env.start_workers(1)
        due = time.time() + 1.0
        env.insert_schedules(workflow, count, 3600, lambda _: utc(int(due)))
        env.reconcile()
        wait_for(lambda: env.finished_runs() >= count, 60 + count / 5, interval=0.5, what="the backlog")
        per_second = rate([started for _, started, _ in env.runs()])
        hot = None
        if bench.database == "postgres":
            time.sleep(1.0)  # the statistics collector reports a moment after the transactions end
            ((updates, hot_updates),) = env.query(
                "SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables WHERE relname = 'scheduled_jobs'")
            hot = round(hot_updates / updates, 3) if updates else None
        return per_second, hot
    finally:
        env.stop()


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(prog="python -m bench.due_index", description=__doc__)
    parser.add_argument("--db", default="postgres")
    parser.add_argument("--count", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    logging.disable(logging.WARNING)  # the in-process app's migrations and recovery lines
    bench = Bench(Path(tempfile.mkdtemp(prefix="recur-bench-")), args.db)
    try:
        seen = interleaved(args.rounds, {"with the index": lambda: drain(bench, args.count, True),
                                         "without it": lambda: drain(bench, args.count, False)})
    finally:
        bench.stop()
    rates = {label: [round(per_second, 1) for per_second, _ in values] for label, values in seen.items()}
    medians = {label: statistics.median(values) for label, values in rates.items()}
    print(f"median links/s on {args.db}, {args.count} links a round: {medians}; "
          f"with/without = {medians['with the index'] / medians['without it']:.3f}")
    return {"rates": rates, "medians": medians}


if __name__ == "__main__":
    main()
