"""Which workers are alive, in Redis: each worker process (a `worker.py`, from its background process; an `rq worker`
of rq_worker.py, from a thread) writes its beat about once a second into one hash, and a worker whose beat is older
than RECUR_WORKER_GRACE_SECONDS is gone. RQ's own registrations cannot say it: they are one per slot, and an idle
slot refreshes its registration only when its blocking dequeue times out (every ~400 s), so a killed worker's
slots stayed listed, idle, for minutes.

Beside the beats, the record of the queues left without a live worker, written by the one process that watches
(recur_server.notify.workers_gone) and read by the console's banner and /metrics: one hash read.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass

from redis import Redis

BEATS_KEY = "recur:worker-beats"  # hash: worker name -> {"host", "pid", "queues", "tasks", "seen"}
UNSERVED_KEY = "recur:queues-unserved"  # hash: queue -> {"since", "owners"}
BEAT_EVERY_SECONDS = 1.0
# A gone worker's beat is dropped this long after it (the console lists it as gone until then); by then RQ's own
# registrations of its slots have expired too (worker_ttl + 60 s: 480 s).
FORGET_SECONDS = 600.0


@dataclass(frozen=True)
class Beat:
    """A worker process's last beat: its name (`--name`, or recur-{host}-{pid}), host, pid, the queues its slots
    listen on, when (epoch seconds on the cluster clock), and the tasks it can run (None: a beat of a version
    that did not say)."""

    name: str
    host: str
    pid: int
    queues: tuple[str, ...]
    seen: float
    tasks: frozenset[str] | None = None

    def alive(self, now: float, grace: float) -> bool:
        return now - self.seen <= grace


def beat(redis: Redis, name: str, host: str, pid: int, queues: Iterable[str], now: float,
         tasks: Iterable[str] = ()) -> None:
    redis.hset(BEATS_KEY, name, json.dumps({"host": host, "pid": pid, "queues": list(queues), "seen": now,
                                            "tasks": sorted(tasks)}))


def leave(redis: Redis, name: str) -> None:
    """A worker stopping: gone at once, without waiting for the grace."""
    redis.hdel(BEATS_KEY, name)


def read(redis: Redis) -> list[Beat]:
    beats = []
    for name, raw in sorted(redis.hgetall(BEATS_KEY).items()):
        try:
            value = json.loads(raw)
            tasks = value.get("tasks")
            beats.append(Beat(_text(name), str(value["host"]), int(value["pid"]), tuple(value["queues"]),
                              float(value["seen"]), None if tasks is None else frozenset(map(str, tasks))))
        except (ValueError, KeyError, TypeError):
            redis.hdel(BEATS_KEY, name)  # not a beat this code wrote
    return beats


def forget_gone(redis: Redis, beats: list[Beat], now: float) -> list[Beat]:
    """Drop the beats older than FORGET_SECONDS; the others."""
    old = [b.name for b in beats if now - b.seen > FORGET_SECONDS]
    if old:
        redis.hdel(BEATS_KEY, *old)
    return [b for b in beats if b.name not in old]


def live_per_queue(beats: Iterable[Beat], queues: Iterable[str], now: float, grace: float) -> dict[str, int]:
    """Each queue's live worker processes (a worker.py counts once, whatever its slots)."""
    live = [b for b in beats if b.alive(now, grace)]
    return {queue: sum(1 for b in live if queue in b.queues) for queue in queues}


def knowing(beats: Iterable[Beat], queue: str, task: str, now: float, grace: float) -> tuple[int, int]:
    """(live workers of `queue`, those of them that can run `task`); a beat that does not list its tasks is
    taken to know it."""
    live = [b for b in beats if b.alive(now, grace) and queue in b.queues]
    return len(live), sum(1 for b in live if b.tasks is None or task in b.tasks)


def last_seen(beats: Iterable[Beat], queue: str) -> float | None:
    """The newest beat of a worker that listened on `queue`, if any is still on record."""
    return max((b.seen for b in beats if queue in b.queues), default=None)


@dataclass(frozen=True)
class Unserved:
    """A queue that has had active schedules and no live worker since `since` (epoch seconds), and the owners told
    so (workers.gone), who are told when a worker is back."""

    queue: str
    since: float
    owners: tuple[int, ...]


def unserved(redis: Redis) -> dict[str, Unserved]:
    found = {}
    for queue, raw in redis.hgetall(UNSERVED_KEY).items():
        value = json.loads(raw)
        found[_text(queue)] = Unserved(_text(queue), float(value["since"]), tuple(value["owners"]))
    return found


def mark_unserved(redis: Redis, record: Unserved) -> None:
    redis.hset(UNSERVED_KEY, record.queue, json.dumps({"since": record.since, "owners": list(record.owners)}))


def served(redis: Redis, queue: str) -> None:
    redis.hdel(UNSERVED_KEY, queue)


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
