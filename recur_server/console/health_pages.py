"""The console's Health page, and the banner every page shows while a queue with active schedules has no live
worker (recur_server.notify.workers_gone records it; the banner reads that record once a second per process)."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime
from typing import Any

from flask import g, render_template
from redis.exceptions import RedisError
from sqlalchemy.exc import SQLAlchemyError

from recur_server.console import session
from recur_server.console.views import Page, console
from recur_server.infra import clock, worker_beats
from recur_server.infra.extensions import get_redis, queue_depths
from recur_server.models import ScheduleStatus
from recur_server.notify.workers_gone import Liveness, liveness
from recur_server.services import queries
from recur_server.services.reconcile_stats import read_stats

BANNER_SECONDS = 1.0  # how long a process keeps the record it read
_banner: tuple[float, list[dict[str, Any]]] = (0.0, [])
_banner_lock = threading.Lock()


@console.app_template_global()
def queues_without_workers() -> list[dict[str, Any]]:
    """The queues the watch recorded as having active schedules and no live worker, each with since when: one
    Redis read per process a second at most. Nothing when Redis cannot be read (the page says so elsewhere)."""
    global _banner
    now = time.monotonic()
    with _banner_lock:
        read_at, record = _banner
    if now - read_at < BANNER_SECONDS:
        return record
    try:
        found = worker_beats.unserved(get_redis())
        record = [{"queue": q.queue, "since": datetime.fromtimestamp(q.since, UTC)}
                  for q in sorted(found.values(), key=lambda each: each.queue)]
    except RedisError:
        record = []
    with _banner_lock:
        _banner = (now, record)
    return record


@console.get("/health")
@session.signed_in
def health() -> Page:
    """The service's health. As the API's health, the detail that shows other owners' activity (workers' host
    names and current jobs, the queue, the reconciler's totals) only to an admin; to an owner, their own
    schedules' counts, and live workers per queue."""
    from rq import Worker

    detail = bool(g.owner.is_admin)
    redis_state, queues, stats = "ok", [], {}
    slots: list[Any] = []
    seen: Liveness | None = None
    try:
        redis = get_redis()
        seen = liveness(clock.utcnow())
        if detail:
            slots = sorted(Worker.all(connection=redis), key=lambda w: w.name)
            queues = queue_depths()
            stats = read_stats(redis)
    except (RedisError, SQLAlchemyError) as exc:
        redis_state = f"unavailable: {type(exc).__name__}"
    processes: list[dict[str, Any]] = [] if seen is None else [
        {"beat": b, "alive": seen.alive(b), "last_seen": datetime.fromtimestamp(b.seen, UTC)} for b in seen.beats]
    live_names = [b.name for b in seen.beats if seen.alive(b)] if seen is not None else []
    return render_template(
        "health.html", redis_state=redis_state, detail=detail, seen=seen, processes=processes,
        worker_count=None if seen is None else len(live_names),
        slots=[{"slot": w, "alive": _of_live(w.name, live_names)} for w in slots], queues=queues, stats=stats,
        counts=queries.status_counts(), statuses=[s.value for s in ScheduleStatus], owner=g.owner)


def _of_live(slot: str, live: list[str]) -> bool:
    """An RQ worker is a slot of a live worker process: named as it (`--concurrency 1`, an rq worker) or
    `{its name}-{n}`."""
    return any(slot == name or (slot.startswith(name + "-") and slot[len(name) + 1:].isdigit()) for name in live)
