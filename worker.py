"""Run one Recur worker: startup recovery, then an RQ worker for links plus a process that moves due
links onto the queue the moment they are due and reconciles every few seconds.

    python worker.py            # forking worker (a task that crashes its process cannot take the worker)
    python worker.py --simple   # run links in the worker process itself (faster, less isolated)
"""

from __future__ import annotations

import argparse
import gc
import logging
import multiprocessing
import os
import socket

from rq import SimpleWorker

import app.chain.link  # noqa: F401  (imported once here, not by every work horse)
from app import create_app, ensure_schema
from app.background import background_process_main, reconcile_once
from app.chain import state
from app.chain.worker import RecurWorker
from app.extensions import db, get_queue, get_redis

log = logging.getLogger("recur.worker")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--simple", action="store_true", help="run links in-process (rq SimpleWorker)")
    parser.add_argument("--burst", action="store_true", help="exit when the queue is empty")
    parser.add_argument("--name", default=None, help="worker name (default: host.pid)")
    args = parser.parse_args()

    app = create_app()
    ensure_schema(app)
    report = reconcile_once(app)
    log.info("startup recovery: %s", report if report is not None else "another process is reconciling")
    with app.app_context():
        state.warm_up()  # work horses inherit the rendered statements
        db.engine.dispose()

    helper = multiprocessing.get_context("fork").Process(
        target=background_process_main, args=(app, os.getpid()), name="recur-background", daemon=True
    )
    helper.start()

    if not args.simple:
        # Everything allocated so far is left out of the collector's passes: a work horse's collections
        # then stop touching (and copying) the pages the parent's objects live on.
        gc.freeze()
    worker_class = SimpleWorker if args.simple else RecurWorker
    name = args.name or f"recur-{socket.gethostname()}-{os.getpid()}"
    with app.app_context():
        worker = worker_class([get_queue(app)], connection=get_redis(app), name=name)
        try:
            worker.work(with_scheduler=False, burst=args.burst, logging_level="INFO")
        finally:
            helper.terminate()
            helper.join(timeout=5)


if __name__ == "__main__":
    main()
