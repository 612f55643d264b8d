"""gunicorn's settings for Recur's web processes: `recur server` passes this module
(`-c python:recur_server.processes.gunicorn_conf`), and a checkout's gunicorn.conf.py, which gunicorn reads from
the working directory, takes them from here. Each web process answers even gunicorn's own errors (request line
or headers over the limits) in the API's JSON error shape, also delivers webhooks and watches for late schedules,
and keeps its metrics beside the host's other processes (PROMETHEUS_MULTIPROC_DIR, set before this is read:
recur.host_metrics)."""

from __future__ import annotations

import os
from typing import Any

from recur.starting import started, starting
from recur_server.infra.metrics_files import fold_ended

worker_class = "recur_server.serving.JsonErrorWorker"
# What the Procfile gives on its command line: two web processes of four threads, 30 s to finish requests.
workers = 2
threads = 4
graceful_timeout = 30


def on_starting(server: Any) -> None:
    """The files of processes that ended before this start are folded into the host's archive."""
    fold_ended(os.environ["PROMETHEUS_MULTIPROC_DIR"])


def post_fork(server: Any, worker: Any) -> None:
    """A new web process starts as every Recur process does (recur.starting): the collector held while it imports
    the app."""
    starting()


def post_worker_init(worker: Any) -> None:
    """Each web process also delivers webhooks and watches for late schedules (recur_server.notify.watch): with
    every worker gone, the web processes still notice that runs stopped happening and say so. Imported here, in
    the web process, so that gunicorn's master (which reads this module and then only forks and watches its web
    processes) does not import the server: a master that did spent 1.3 s of CPU starting."""
    from recur_server.notify.watch import start_thread

    start_thread(worker.wsgi)
    started()
