"""The loop every Recur process runs (web processes in a thread started by gunicorn.conf.py, workers in
their background process): deliver due webhooks, and, one process at a time (a Redis lock), mark late
schedules, long runs and queues left without a live worker. It never runs inside a link, so a slow receiver
never slows a chain."""

from __future__ import annotations

import logging
import threading

from flask import Flask

from recur_server.infra import clock
from recur_server.infra.extensions import db, get_redis
from recur_server.infra.locks import hold_if_free
from recur_server.infra.threads import start_daemon
from recur_server.notify import alerts, delivery, long_runs, workers_gone

log = logging.getLogger(__name__)

WATCH_LOCK = "recur:watch-lock"
WATCH_LOCK_MS = 10_000  # a holder killed mid-check holds the others off this long at most


def watch_once(app: Flask) -> None:
    with app.app_context():
        try:
            now = clock.utcnow()
            with hold_if_free(get_redis(app), WATCH_LOCK, WATCH_LOCK_MS) as lock:
                if lock is not None:
                    alerts.check(now)
                    long_runs.check(now)
                    workers_gone.check(now)
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
