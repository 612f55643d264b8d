"""Profile the chain in one process: `python -m bench.profile [N] [--no-profile] [--all]`.

N schedules due now are drained by an RQ SimpleWorker in this process (its mover pass included) under
pyinstrument, on a fresh SQLite file and the bench's own redis-server; prints where the time went.
"""

from __future__ import annotations

import logging
import sys
import tempfile
import time
from pathlib import Path

from rq import SimpleWorker


def main() -> None:
    from pyinstrument import Profiler

    from bench.stack import Bench, utc
    from recur_server.chain.mover import Mover
    from recur_server.infra import clock
    from recur_server.infra.extensions import db, get_queue, get_redis

    logging.disable(logging.WARNING)
    args = [a for a in sys.argv[1:] if not a.startswith("-")]
    count = int(args[0]) if args else 500
    profiling = "--no-profile" not in sys.argv
    bench = Bench(Path(tempfile.mkdtemp(prefix="recur-profile-")))
    try:
        env = bench.recur("profile")
        workflow = env.workflow()
        env.insert_schedules(workflow, count, 3600, lambda _: utc(int(time.time())))
        print("recovery:", env.reconcile())
        with env.app.app_context():
            queue = get_queue()
            Mover(get_redis(), queue).move_due(clock.utcnow())
            worker = SimpleWorker([queue], connection=get_redis())
            profiler = Profiler(interval=0.0005)
            started, cpu = time.monotonic(), time.process_time()
            if profiling:
                profiler.start()
            worker.work(burst=True, with_scheduler=False, logging_level="WARNING")
            if profiling:
                profiler.stop()
            seconds, cpu = time.monotonic() - started, time.process_time() - cpu
            db.session.remove()
        print(f"{count} fires in {seconds:.2f}s: {count / seconds:.0f}/s; CPU {cpu / count * 1000:.2f} ms per fire "
              "in this process (Redis and SQLite's own work aside)")
        if profiling:
            print(profiler.output_text(unicode=False, color=False, show_all="--all" in sys.argv))
        env.stop()
    finally:
        bench.stop()


if __name__ == "__main__":
    main()
