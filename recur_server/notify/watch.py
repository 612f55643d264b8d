"""The loop every Recur process runs (web processes in a thread started by gunicorn.conf.py, workers in
their background process): deliver due webhooks, and, once a period across the cluster (a Redis lock, kept
for the period by the process that checked first), mark late schedules, long runs and queues left without a
live worker. It never runs inside a link, so a slow receiver never slows a chain."""

from __future__ import annotations

import logging
import threading

from flask import Flask

from recur_server.infra import clock
from recur_server.infra.extensions import db, get_redis
from recur_server.infra.locks import ClusterLock
from recur_server.infra.threads import start_daemon
from recur_server.notify import alerts, delivery, long_runs, workers_gone

log = logging.getLogger(__name__)

WATCH_LOCK = "recur:watch-lock"
WATCH_LOCK_MS = 10_000  # a holder killed mid-check holds the others off this long at most
KEPT_OF_A_PERIOD = 0.9  # of RECUR_WATCH_SECONDS, the lock kept after a check


def watch_once(app: Flask) -> None:
    with app.app_context():
        try:
            now = clock.utcnow()
            lock = ClusterLock(get_redis(app), WATCH_LOCK, WATCH_LOCK_MS)
            if lock.acquire(blocking=False):
                try:
                    alerts.check(now)
                    long_runs.check(now)
                    workers_gone.check(now)
                finally:
                    # Kept for most of a period rather than let go: the next process's pass would check again
                    # at once, and every process of the cluster did each period what one needs to. (Most, not
                    # all: this process's own next pass, a period from the end of this one, finds it free.)
                    lock.keep_for(KEPT_OF_A_PERIOD * float(app.config["RECUR_WATCH_SECONDS"]))
            delivery.deliver_due(clock.utcnow())
        finally:
            db.session.remove()


def run(app: Flask, stop: threading.Event) -> None:
    every = float(app.config["RECUR_WATCH_SECONDS"])
    while not stop.is_set():
        try:
            watch_once(app)
        except Exception as exc:  # noqa: BLE001 - Redis or the database away for a moment, or a bug: go on
            log.warning("watch pass failed (%s: %s); retrying", type(exc).__name__, exc)
        stop.wait(every)


def start_thread(app: Flask) -> threading.Event:
    """Start the loop in a daemon thread of this process; set the returned event to stop it."""
    stop = threading.Event()
    start_daemon(run, "recur-watch", app, stop)
    return stop
