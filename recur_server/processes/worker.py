"""One Recur worker, as `recur worker [options]` runs it (and a checkout's `python worker.py`): an RQ worker for
links plus a process that moves due links onto the queue the moment they are due and, beside that, recovers
(the startup pass) and reconciles every few seconds.

    recur worker                  # tasks run in a persistent work process: isolated, without a fork per link
    recur worker --fork           # a work process forked for each link (RQ's Worker): isolated, slower
    recur worker --simple         # tasks run in the worker process itself (RQ's SimpleWorker): not isolated
    recur worker --concurrency 8  # eight tasks at once: eight RQ workers forked from this one (slots);
                                  # the default is four, or one per core on a machine with more
"""

from __future__ import annotations

import argparse
import logging
import multiprocessing
import os
import socket
from typing import Any

from prometheus_client import start_http_server
from rq import Queue

import recur_server.chain.link  # noqa: F401  (imported once here, not by every work horse)
from recur.starting import started
from recur_server import create_app
from recur_server.chain import rows
from recur_server.cli.declarations import sync_on_start
from recur_server.infra.extensions import connect_redis, db, queue_names
from recur_server.infra.metrics_files import fold_ended
from recur_server.jobs import work_process_died
from recur_server.metrics import host_registry
from recur_server.processes.former_names import answer_to_former_names
from recur_server.services.schema import ensure_schema
from recur_server.workers.background import background_process_main, recover_at_start
from recur_server.workers.beats import Identity
from recur_server.workers.pool import Limits
from recur_server.workers.pool_worker import RecurPoolWorker
from recur_server.workers.slots import Slots, default_concurrency
from recur_server.workers.worker import RecurSimpleWorker, RecurWorker

log = logging.getLogger("recur.worker")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--simple", action="store_true", help="run tasks in the worker process (rq SimpleWorker)")
    mode.add_argument("--fork", action="store_true", help="fork a work process per link (rq Worker)")
    parser.add_argument("--max-tasks", type=int, default=1000,
                        help="replace the work process after this many tasks (default 1000)")
    parser.add_argument("--max-memory-mb", type=int, default=None,
                        help="kill a work process whose resident memory passes this (its task fails)")
    parser.add_argument("--concurrency", type=int, default=None,
                        help="tasks run at once, each in a slot of its own (default: RECUR_WORKER_CONCURRENCY; "
                             "0: four, or one per core on a machine with more; 1: no slots, tasks run in this worker)")
    parser.add_argument("--min-slots", type=int, default=None,
                        help="slots kept while little is due (default: RECUR_WORKER_MIN_SLOTS; 0: all, a fixed "
                             "pool); more are added, up to --concurrency, while every slot is busy and links wait")
    parser.add_argument("--queues", default=None,
                        help="comma-separated queues to take links and runs from, first first (default: every queue "
                             "of the cluster, RECUR_QUEUE then RECUR_QUEUES)")
    parser.add_argument("--burst", action="store_true", help="exit when the queue is empty")
    parser.add_argument("--name", default=None, help="worker name (default: host.pid)")
    args = parser.parse_args()

    answer_to_former_names()  # jobs queued by a version before 0.2.0
    app = create_app()
    cluster = queue_names(app)
    listens = cluster if args.queues is None else [q.strip() for q in args.queues.split(",") if q.strip()]
    unknown = [q for q in listens if q not in cluster]
    if unknown or not listens:
        parser.error(f"--queues: {', '.join(unknown) or 'none given'}: not a queue of this cluster "
                     f"(RECUR_QUEUE and RECUR_QUEUES name {', '.join(cluster)})")
    ensure_schema(app)
    sync_on_start(app)  # RECUR_SYNC_ON_START: the declared schedules, before this worker takes links
    fold_ended(os.environ["PROMETHEUS_MULTIPROC_DIR"])  # what this host's ended processes counted, kept in one file
    if args.burst:  # a drain of the queue: what the startup pass puts back is in it
        recover_at_start(app)
    with app.app_context():
        rows.warm_up()  # work horses inherit the rendered statements
        db.engine.dispose()

    name = args.name or f"recur-{socket.gethostname()}-{os.getpid()}"
    identity = Identity(name, os.getpid(), tuple(listens))  # what its background process beats for it
    helper = multiprocessing.get_context("fork").Process(
        # Its startup pass goes beside its mover and this worker's slots (a sweep of a million schedules takes
        # a minute): links already in Redis run meanwhile, and the worker beats from the start.
        target=background_process_main, args=(app, os.getpid(), identity, not args.burst), name="recur-background",
        daemon=True
    )
    helper.start()
    if app.config["RECUR_METRICS_PORT"]:  # a host with no web process: its counts are scraped here
        registry = host_registry()
        assert registry is not None  # use_host_directory() set PROMETHEUS_MULTIPROC_DIR
        try:
            start_http_server(app.config["RECUR_METRICS_PORT"], app.config["RECUR_METRICS_ADDRESS"], registry=registry)
        except OSError as exc:  # another worker of this host serves them (the directory is the host's)
            log.warning("metrics port %s not served here (%s)", app.config["RECUR_METRICS_PORT"], exc)

    # Everything allocated so far is left out of the collector's passes, and the collector, held while the
    # worker started, runs again (recur.starting): a work process's collections then stop touching (and
    # copying) the pages the parent's objects live on.
    started()
    concurrency = default_concurrency(
        args.concurrency if args.concurrency is not None else app.config["RECUR_WORKER_CONCURRENCY"])

    def run_slot(slot_name: str, burst: bool) -> None:
        with app.app_context():
            # RQ raises its connection's socket timeout above its blocking dequeue (a BLPOP of worker_ttl - 15 s,
            # its socket timeout 10 s more): on a client of its own, so that the app's client, which claims,
            # leases and hands off links here and in the work processes, keeps its short deadline
            # (RECUR_REDIS_TIMEOUT_SECONDS).
            redis = connect_redis(app.config["REDIS_URL"], app.config["RECUR_REDIS_TIMEOUT_SECONDS"])
            queues = [Queue(listen, connection=redis) for listen in listens]
            if args.simple:
                worker: Any = RecurSimpleWorker(queues, connection=redis, name=slot_name)
            elif args.fork:
                worker = RecurWorker(queues, connection=redis, name=slot_name, job_died=work_process_died)
            else:
                worker = RecurPoolWorker(queues, connection=redis, name=slot_name, job_died=work_process_died,
                                         limits=Limits(max_tasks=args.max_tasks, max_memory_mb=args.max_memory_mb))
            worker.work(with_scheduler=False, burst=burst, logging_level="INFO")

    try:
        if concurrency == 1:
            run_slot(name, args.burst)
        else:
            with app.app_context():
                redis = connect_redis(app.config["REDIS_URL"], app.config["RECUR_REDIS_TIMEOUT_SECONDS"])
            least = args.min_slots if args.min_slots is not None else app.config["RECUR_WORKER_MIN_SLOTS"]
            least = concurrency if least <= 0 else min(least, concurrency)
            log.info("worker %s runs %d to %d slots on %s", name, least, concurrency,
                     ", ".join(listens))
            Slots(name, concurrency, run_slot, redis, listens, least,
                  app.config["RECUR_WORKER_SLOT_IDLE_SECONDS"]).start(burst=args.burst)
    finally:
        helper.terminate()
        helper.join(timeout=5)



if __name__ == "__main__":  # recur worker: python -m recur_server.processes.worker
    main()
