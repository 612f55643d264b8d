"""A worker process's beat (recur_server.infra.worker_beats): sent by worker.py's background process for its worker,
and by
a thread of each `rq worker` of rq_worker.py, about once a second; removed when the worker stops."""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import threading
from dataclasses import dataclass

from flask import Flask
from redis import Redis
from redis.exceptions import RedisError

from recur_server.infra import clock, worker_beats
from recur_server.infra.extensions import connect_redis
from recur_server.infra.threads import start_daemon
from recur_server.tasks import task_names

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Identity:
    """What a worker's beat says of it: its name, pid and the queues it listens on."""

    name: str
    pid: int
    queues: tuple[str, ...]


def send(redis: Redis, identity: Identity) -> None:
    worker_beats.beat(redis, identity.name, socket.gethostname(), identity.pid, identity.queues,
                      clock.utcnow().timestamp(), task_names())


def leave(redis: Redis, identity: Identity) -> None:
    with contextlib.suppress(RedisError):
        worker_beats.leave(redis, identity.name)


def _beat_until(app: Flask, identity: Identity, stop: threading.Event) -> None:
    redis = connect_redis(app.config["REDIS_URL"], app.config["RECUR_REDIS_TIMEOUT_SECONDS"])
    while not stop.wait(worker_beats.BEAT_EVERY_SECONDS):
        try:
            send(redis, identity)
        except RedisError as exc:  # Redis away for a moment: the next beat tries again
            log.warning("could not send the worker's beat (%s)", exc)


def start_thread(app: Flask, name: str, queues: list[str]) -> threading.Event:
    """Beat for this process (an `rq worker`) in a daemon thread; set the returned event to stop it."""
    identity = Identity(name, os.getpid(), tuple(queues))
    redis = connect_redis(app.config["REDIS_URL"], app.config["RECUR_REDIS_TIMEOUT_SECONDS"])
    with contextlib.suppress(RedisError):
        send(redis, identity)  # alive from the start, not a second later
    stop = threading.Event()
    start_daemon(_beat_until, "recur-beat", app, identity, stop)
    return stop
