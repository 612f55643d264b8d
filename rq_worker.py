"""Recur's links on RQ's own `rq worker` command, for a team whose workers are `rq worker` processes (systemd
units, supervisor, rq's options):

    rq worker -w rq_worker.Worker --url "$REDIS_URL" recur       # each link's task in a persistent work process
    rq worker -w rq_worker.ForkWorker --url "$REDIS_URL" recur   # a work horse forked per link (rq's Worker)
    rq worker -w rq_worker.SimpleWorker --url "$REDIS_URL" recur # tasks in the worker process (rq's SimpleWorker)
    python background.py                                         # the background process, started on its own

Each class is the worker `python worker.py` runs (recur_server.workers.worker: the claim before the task, the outcome
recorded and the successor handed off after it, a dying task recorded as a failure, Redis going away outlived),
inside Recur's app, with worker.py's start: the schema brought up to date, the declarations synced when
RECUR_SYNC_ON_START asks, a recovery pass. What worker.py runs beside its RQ worker (moving due links,
reconciling, deliveries, pruning) is `python background.py`, started separately: links wait in Redis until
one runs (docs/operations.md).
"""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING, Any

from recur.host_metrics import use_host_directory

use_host_directory()  # before app imports prometheus-client

import recur_server.chain.link  # noqa: E402,F401  (imported once here, not by every work horse)
from recur_server import create_app  # noqa: E402
from recur_server.chain import rows  # noqa: E402
from recur_server.cli.declarations import sync_on_start  # noqa: E402
from recur_server.infra.extensions import connect_redis, db, get_redis, queue_names  # noqa: E402
from recur_server.infra.metrics_files import fold_ended  # noqa: E402
from recur_server.jobs import work_process_died  # noqa: E402
from recur_server.processes.former_names import answer_to_former_names  # noqa: E402
from recur_server.services.schema import ensure_schema  # noqa: E402
from recur_server.workers import beats  # noqa: E402
from recur_server.workers.background import BACKGROUND_SEEN_MS, background_seen, recover_at_start  # noqa: E402
from recur_server.workers.pool_worker import RecurPoolWorker  # noqa: E402
from recur_server.workers.worker import RecurSimpleWorker, RecurWorker  # noqa: E402

log = logging.getLogger("recur.rq_worker")

if TYPE_CHECKING:
    _RecurWorker = RecurWorker
else:
    _RecurWorker = object


class InRecurApp(_RecurWorker):
    """What worker.py does around its RQ worker, for a worker class `rq worker` builds. Mixed in before one
    of the classes of recur_server.workers.worker.

    The worker takes links through Recur's own Redis client on REDIS_URL (its timeouts, Sentinel, TLS), as
    the claim and the hand-off do: rq's connection (`--url`) only builds the queues' names here, so give rq
    worker the same Redis. At least one queue must be one of the cluster's (RECUR_QUEUE, RECUR_QUEUES);
    other queues' jobs run as rq runs them. RQ's own scheduler is not started (`--with-scheduler` is
    ignored): the background process moves due links, to the second and without RQ's scheduler lock."""

    def __init__(self, queues: Any, *args: Any, **kwargs: Any) -> None:
        answer_to_former_names()  # jobs queued by a version before 0.2.0
        self.recur_app = create_app()
        cluster = queue_names(self.recur_app)
        names = [q if isinstance(q, str) else q.name for q in (queues if isinstance(queues, list | tuple)
                                                              else [queues])]
        if not set(names) & set(cluster):
            raise ValueError(f"rq worker {' '.join(names)}: none of these is a queue of this Recur cluster "
                             f"(RECUR_QUEUE and RECUR_QUEUES name {', '.join(cluster)})")
        config = self.recur_app.config
        # As worker.py's: RQ raises its connection's socket timeout above its blocking dequeue, so the worker
        # dequeues on a client of its own, and the app's client keeps its short deadline.
        kwargs["connection"] = connect_redis(config["REDIS_URL"], config["RECUR_REDIS_TIMEOUT_SECONDS"])
        if not issubclass(type(self), RecurSimpleWorker):  # a forked work process's death is recorded
            kwargs["job_died"] = work_process_died
        super().__init__(names, *args, **kwargs)

    def work(self, *args: Any, **kwargs: Any) -> bool:
        if kwargs.get("with_scheduler"):
            log.warning("--with-scheduler ignored: Recur's background process (python background.py) moves "
                        "due links")
        kwargs["with_scheduler"] = False
        app = self.recur_app
        ensure_schema(app)
        sync_on_start(app)
        if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
            fold_ended(os.environ["PROMETHEUS_MULTIPROC_DIR"])
        recover_at_start(app)  # a sweep only if the cluster has not swept lately
        if not background_seen(get_redis(app)):
            log.warning("no Recur background process has run in the last %d s: links due later wait in Redis "
                        "until one runs (python background.py)", BACKGROUND_SEEN_MS // 1000)
        with app.app_context():
            rows.warm_up()
            db.engine.dispose()  # work horses open their own connections
        # This worker's beat (recur_server.infra.worker_beats): counted alive while it beats, gone at once when it
        # stops.
        listens = [name for name in self.queue_names() if name in queue_names(app)]
        beating = beats.start_thread(app, self.name, listens)
        try:
            with app.app_context():
                return bool(super().work(*args, **kwargs))
        finally:
            beating.set()
            beats.leave(get_redis(app), beats.Identity(self.name, os.getpid(), tuple(listens)))


class Worker(InRecurApp, RecurPoolWorker):
    """worker.py's default: each link's task in a persistent work process, replaced after 1,000 tasks (the
    defaults of worker.py's --max-tasks and --max-memory-mb)."""


class ForkWorker(InRecurApp, RecurWorker):
    """worker.py --fork: a work horse forked for each link, as rq's Worker does."""


class SimpleWorker(InRecurApp, RecurSimpleWorker):
    """worker.py --simple: every task in the worker process, as rq's SimpleWorker does (not isolated)."""
