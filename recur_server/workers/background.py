"""The loop each worker process runs beside RQ: move due links the moment they are due; beside it, each in a
thread of its own, the passes of the database (reconcile every few seconds, start parked and following runs)
and the pruning of the history past its retention (recur_server.services.retention). No pass holds up a link.

Reconciliation and pruning each run one at a time across all replicas under a Redis lock with an owner
token (only its owner can release it; nobody can extend another's). Moving needs no lock.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from collections.abc import Callable
from datetime import timedelta
from typing import TypeVar

from flask import Flask
from redis import Redis
from redis.exceptions import RedisError
from sqlalchemy.exc import SQLAlchemyError

from recur_server import metrics
from recur_server.chain.leases import pulse, pulse_every
from recur_server.chain.mover import Mover
from recur_server.chain.redis_links import queue_named
from recur_server.infra import clock, metrics_files, worker_beats
from recur_server.infra.extensions import db, get_queue, get_redis, queue_names
from recur_server.infra.locks import LockLost, hold_if_free
from recur_server.infra.threads import SignalledStop, start_daemon
from recur_server.notify import watch
from recur_server.services import retention
from recur_server.services.outside_runs import follow as triggered
from recur_server.services.outside_runs import waiting
from recur_server.services.reconcile import reconcile
from recur_server.services.reconcile_stats import count_pass
from recur_server.workers import beats

log = logging.getLogger(__name__)

RECONCILE_LOCK = "recur:reconcile-lock"
# Short, so that a holder killed mid-pass blocks the others briefly; its owner renews it between batches.
RECONCILE_LOCK_MS = 10_000

# Set for `every` seconds when a periodic pass ends: the other workers' loops skip theirs until it lapses.
RECONCILED_KEY = "recur:reconciled"
# Set for RECUR_RECONCILE_SWEEP_SECONDS when a full sweep ends: until it lapses, periodic passes read only the
# schedules due within their horizon.
SWEPT_KEY = "recur:reconcile-swept"
HORIZON_PERIODS = 3


def horizon_seconds(every: float) -> float:
    """How far ahead a periodic pass looks: three periods, so that a missing link is found by a pass before it
    comes due even when the pass before was skipped or late (a lock held, a slow database). A link already
    due is in every pass's reach."""
    return HORIZON_PERIODS * every
# Set by every background loop as it pulses, for a while longer than it pulses: a worker started without
# one (an `rq worker` whose background.py is not running) says so.
BACKGROUND_SEEN_KEY = "recur:background-seen"
BACKGROUND_SEEN_MS = 15_000


def background_seen(redis: Redis) -> bool:
    """Whether some background loop ran in the last BACKGROUND_SEEN_MS."""
    return bool(redis.exists(BACKGROUND_SEEN_KEY))


T = TypeVar("T")


def _exclusive_pass(redis: Redis, lock: str, lock_ms: int, done_key: str, every: float | None, what: str,
                    work: Callable[[Callable[[], None]], T]) -> T | None:
    """Run `work` if no other process is running this kind of pass (a Redis lock with an owner token) and,
    with `every`, none finished one less than `every` seconds ago (the cluster runs it once per period).
    `work` gets `renew`, to call between its steps: it extends the lock, or raises LockLost if another
    process took it over (the pass is then abandoned: None)."""
    if every is not None and redis.exists(done_key):
        return None
    with hold_if_free(redis, lock, lock_ms) as held:
        if held is None:
            return None
        try:
            result = work(held.renew)
        except LockLost:
            log.warning("%s lock lost mid-pass; another process carries on", what)
            return None
        if every is not None:
            redis.set(done_key, os.getpid(), px=max(1, int(every * 1000)))
        return result


def reconcile_once(app: Flask, every: float | None = None, at_start: bool = False) -> dict[str, object] | None:
    """One reconciliation pass if no other process is running one; returns its report or None.

    With `every` (the periodic passes), also None when any process finished a pass less than `every`
    seconds ago: the cluster reconciles once per period, not once per worker (with ten workers and
    100,000 schedules, ten passes of 3 s every 5 s would never stop). Startup passes always run.

    A periodic pass, and a worker's start (`at_start`), sweeps every active schedule only when no sweep has
    ended in the cluster for RECUR_RECONCILE_SWEEP_SECONDS (the key is gone with Redis's data too), and
    otherwise reads the schedules due within its horizon: a worker restarted among others does not read a
    million rows before it takes a link. Any other pass (`recover`) sweeps.
    """
    redis = get_redis(app)

    def work(renew: Callable[[], None]) -> dict[str, object]:
        sweep_seconds = app.config["RECUR_RECONCILE_SWEEP_SECONDS"]
        sweep = not redis.exists(SWEPT_KEY) if every is not None or at_start else True
        period = every if every is not None else app.config["RECUR_RECONCILE_SECONDS"]
        horizon = None if sweep else timedelta(seconds=horizon_seconds(period))
        with app.app_context():
            started = clock.monotonic()
            try:
                report = reconcile(clock.utcnow(), renew, horizon).as_dict()
            finally:
                db.session.remove()
            report["seconds"] = round(clock.monotonic() - started, 3)
        if report["sweep"]:
            redis.set(SWEPT_KEY, os.getpid(), px=max(1, int(sweep_seconds * 1000)))
        if report["links_repaired"] or report["runs_written_off"] or report["schedules_invalidated"]:
            log.warning("reconcile: %s", report)
        count_pass(redis, report)
        metrics.reconciled(report)
        return report

    return _exclusive_pass(redis, RECONCILE_LOCK, RECONCILE_LOCK_MS, RECONCILED_KEY, every, "reconcile", work)


def recover_at_start(app: Flask) -> None:
    """A process's startup pass (reconcile_once's at_start), and its line in the log."""
    report = reconcile_once(app, at_start=True)
    log.info("startup recovery: %s", report if report is not None else "another process is reconciling")


PRUNE_LOCK = "recur:prune-lock"
PRUNE_LOCK_MS = 10_000  # renewed before each batch: a holder killed mid-pass blocks the others briefly
# Set for `every` seconds when a pruning pass ends (the cluster prunes once per period), and where the next
# pass's walk over schedules starts when the last one stopped at its limit.
PRUNED_KEY = "recur:pruned"
PRUNE_CURSOR_KEY = "recur:prune-cursor"
# How often each worker's pruning thread looks whether the period is over.
PRUNE_LOOK_SECONDS = 10.0


def prune_once(app: Flask, every: float | None = None) -> dict[str, int] | None:
    """One pruning pass if no other process is running one (and, with `every`, none ended less than `every`
    seconds ago); returns the rows deleted per table, or None."""
    redis = get_redis(app)

    def work(renew: Callable[[], None]) -> dict[str, int]:
        cursor = redis.get(PRUNE_CURSOR_KEY)
        started = clock.utcnow()
        with app.app_context():
            try:
                report = retention.prune(started, retention.retention_from(app.config),
                                         int(app.config["RECUR_PRUNE_BATCH"]),
                                         int(app.config["RECUR_PRUNE_MAX_BATCHES"]),
                                         cursor.decode() if isinstance(cursor, bytes) else None, renew)
            finally:
                db.session.remove()
        if report.cursor is None:
            redis.delete(PRUNE_CURSOR_KEY)
        else:
            redis.set(PRUNE_CURSOR_KEY, report.cursor)
        if report.behind:
            if redis.set(metrics.PRUNE_BEHIND_KEY, started.timestamp(), nx=True):
                log.warning("pruning is behind: the pass stopped at its limit (RECUR_PRUNE_MAX_BATCHES) with "
                            "rows past retention left in %s", ", ".join(report.behind))
        else:
            redis.delete(metrics.PRUNE_BEHIND_KEY)
        metrics.pruned(report.rows)
        if any(report.rows.values()):
            log.info("pruned: %s", report.rows)
        return report.rows

    return _exclusive_pass(redis, PRUNE_LOCK, PRUNE_LOCK_MS, PRUNED_KEY, every, "prune", work)


def run_pruning(app: Flask, stop: threading.Event) -> None:
    """Prune once per RECUR_PRUNE_SECONDS across the cluster, in a thread of its own: a pass of many
    batches never delays the mover."""
    every = float(app.config["RECUR_PRUNE_SECONDS"])
    while not stop.wait(min(every, PRUNE_LOOK_SECONDS)):
        try:
            prune_once(app, every)
        except Exception as exc:  # noqa: BLE001 - Redis or the database away for a moment, or a bug: go on
            log.warning("pruning pass failed (%s: %s); retrying", type(exc).__name__, exc)


def start_waiting(app: Flask) -> None:
    with app.app_context():
        try:
            waiting.start_waiting()
            triggered.dispatch_due(clock.utcnow())  # runs that follow other runs, once due
        finally:
            db.session.remove()


FOLD_SECONDS = 600.0  # how often a worker folds the metric files of its host's ended processes


PASS_JOIN_SECONDS = 60.0  # how long a loop that ends waits for the pass going in its passes' thread


def run_background(app: Flask, stop: threading.Event, parent_pid: int | None = None,
                   identity: beats.Identity | None = None, at_start: bool = False) -> None:
    """Loop until `stop` is set (or the parent worker is gone): move due links the moment they are due, answer
    Redis's lease pulse, and with `identity` (worker.py's) beat for the worker about once a second
    (recur_server.infra.worker_beats). The passes of the database run beside it, in a thread of their own
    (run_passes), the startup pass first `at_start`: a sweep of a million schedules takes 15-19 s (a minute at a
    worker's start), and with one worker its mover is the only one."""
    ended = threading.Event()
    passes = start_daemon(run_passes, "recur-passes", app, ended, at_start)
    try:
        _move(app, stop, parent_pid, identity)
    finally:
        ended.set()
        passes.join(PASS_JOIN_SECONDS)


def _move(app: Flask, stop: threading.Event, parent_pid: int | None, identity: beats.Identity | None) -> None:
    redis = get_redis(app)
    # Every queue's due links, whichever queues this worker's slots listen to: any worker moves them all.
    movers = [Mover(redis, queue_named(get_queue(app), name), result_ttl=app.config["RECUR_LINK_RESULT_TTL"])
              for name in queue_names(app)]
    max_sleep = app.config["RECUR_MOVER_MAX_SLEEP"]
    every = app.config["RECUR_RECONCILE_SECONDS"]
    lease_seconds, redis_timeout = app.config["RECUR_LEASE_SECONDS"], app.config["RECUR_REDIS_TIMEOUT_SECONDS"]
    next_pulse = next_beat = 0.0
    while not stop.is_set():
        if parent_pid is not None and os.getppid() != parent_pid:
            return
        if identity is not None and clock.monotonic() >= next_beat:
            next_beat = clock.monotonic() + worker_beats.BEAT_EVERY_SECONDS
            try:
                beats.send(redis, identity)
            except RedisError as exc:  # the pass below says so too
                log.debug("beat not sent (%s)", exc)
        try:
            # clock.utcnow() is the cluster clock: what is due, and how long to sleep, do not depend on the host.
            if clock.monotonic() >= next_pulse:  # Redis answers: a lease it lets lapse is a lost worker's
                next_pulse = clock.monotonic() + pulse_every(lease_seconds)
                pulse(redis, lease_seconds, redis_timeout)
                redis.set(BACKGROUND_SEEN_KEY, os.getpid(), px=max(BACKGROUND_SEEN_MS, int(every * 2000)))
            for mover in movers:
                mover.move_due(clock.utcnow())
            heads = [due for due in (mover.next_due() for mover in movers) if due is not None]
            head = min(heads) if heads else None
        except (RedisError, OSError) as exc:  # Redis away for a moment
            log.warning("moving due links failed (%s); retrying", exc)
            head = None
            stop.wait(1.0)
        except Exception:  # anything else is a bug: log it whole, but never stop moving every other link
            log.exception("moving due links failed; retrying")
            head = None
            stop.wait(1.0)
        wait = max_sleep if head is None else min(max_sleep, max(0.0, head - clock.utcnow().timestamp()))
        stop.wait(wait)


def run_passes(app: Flask, ended: threading.Event, at_start: bool = False) -> None:
    """The passes of the database, until `ended`: reconcile once per period across the cluster (`at_start`, a
    process's startup pass first: reconcile_once's at_start), start the manual and backfill runs parked until
    they may, and the runs that follow others, about once a second, and now and then fold the metric files of
    this host's ended processes."""
    every = app.config["RECUR_RECONCILE_SECONDS"]
    next_reconcile = next_waiting = next_fold = 0.0
    while not ended.is_set():
        try:
            if at_start:  # until it ends: a pass that failed (the database away) is a startup pass again
                recover_at_start(app)
                at_start, next_reconcile = False, clock.monotonic() + every
            if clock.monotonic() >= next_reconcile:
                next_reconcile = clock.monotonic() + every
                reconcile_once(app, every)
            if clock.monotonic() >= next_fold and os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
                next_fold = clock.monotonic() + FOLD_SECONDS  # files of this host's ended processes, into one
                metrics_files.fold_ended(os.environ["PROMETHEUS_MULTIPROC_DIR"])
            if clock.monotonic() >= next_waiting:
                next_waiting = clock.monotonic() + waiting.WAITING_PASS_SECONDS
                start_waiting(app)
        except (RedisError, SQLAlchemyError, OSError) as exc:  # Redis or the database away for a moment
            log.warning("background pass failed (%s); retrying", exc)
            ended.wait(1.0)
            continue
        except Exception:  # anything else is a bug: log it whole, and go on passing
            log.exception("background pass failed; retrying")
            ended.wait(1.0)
            continue
        ended.wait(max(0.0, min(next_reconcile, next_waiting) - clock.monotonic()))


def background_process_main(app: Flask, parent_pid: int | None, identity: beats.Identity | None = None,
                            at_start: bool = False) -> None:
    """Entry of the forked helper process: exits on SIGTERM/SIGINT or when its worker dies (with no
    `parent_pid`, a process started on its own: background.py, beside `rq worker` processes). With `identity`,
    it beats for its worker, and takes the beat away when the worker is stopped (SIGTERM, Ctrl-C); a worker that
    died without a word is gone once its last beat is older than the grace. `at_start`: its process's startup
    pass comes first among the passes, beside the mover (run_passes)."""
    stop = SignalledStop()  # its handler sets it without a lock (recur_server/infra/threads.py)
    signal.signal(signal.SIGTERM, stop.request)
    signal.signal(signal.SIGINT, stop.request)
    get_redis(app).connection_pool.reset()
    watching = watch.start_thread(app)  # webhooks and late schedules, beside the mover: never in its way
    start_daemon(run_pruning, "recur-prune", app, stop)
    try:
        run_background(app, stop, parent_pid, identity, at_start)
    finally:
        watching.set()
        if identity is not None and stop.is_set():  # a worker stopped; a killed one's beat lapses after the grace
            beats.leave(get_redis(app), identity)
