"""Runs outside the chain that must wait (the overlap policy, the workflow's concurrency limit) are parked
in Redis, oldest first, and their jobs end; one pass at a time starts those that now may, in order."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select

from recur_server.chain.running import OUTSIDE_KEY
from recur_server.infra.extensions import db, get_redis
from recur_server.infra.locks import hold_if_free
from recur_server.models import Backfill, ConcurrencyPolicy, Run, RunStatus, Schedule, Workflow
from recur_server.policies.overlap import waits_for_running
from recur_server.services.outside_runs.queueing import QUEUED_KEY, WAITING_ARGS_KEY, WAITING_KEY, enqueue

WAITING_LOCK = "recur:outside-waiting-lock"
WAITING_LOCK_MS = 10_000  # a holder killed mid-pass holds the others off this long at most
WAITING_PASS_SECONDS = 1.0  # how often the background loop looks for parked runs that may start
WAITING_BATCH = 200  # the oldest parked runs one pass considers

_RUNS = Run.__table__
_SCHEDULES = Schedule.__table__
_BACKFILLS = Backfill.__table__


@dataclass(frozen=True)
class Parked:
    """A run that must wait, as WAITING_ARGS_KEY keeps it: what its next job needs."""

    run_id: str
    schedule_id: str
    scheduled_for: str
    trigger: str
    overlap: str | None
    backfill_id: str | None
    attempt: int
    since: float  # when it first had to wait: its place in the line, kept across attempts

    def dumps(self) -> str:
        return json.dumps({k: v for k, v in self.__dict__.items() if k != "run_id"})

    @classmethod
    def loads(cls, run_id: str, raw: bytes) -> Parked:
        return cls(run_id=run_id, **json.loads(raw))


def park(parked: Parked) -> None:
    """One transaction: in the line (a copy of a run already there keeps the first place), its arguments,
    and no longer listed as starting. The job that parked it then ends."""
    with get_redis().pipeline() as pipe:
        pipe.zadd(WAITING_KEY, {parked.run_id: parked.since}, nx=True)
        pipe.hset(WAITING_ARGS_KEY, parked.run_id, parked.dumps())
        pipe.hdel(OUTSIDE_KEY, parked.run_id)
        pipe.execute()


def start_waiting() -> list[str]:
    """Start the parked runs that may start now, oldest first; returns their run IDs.

    One process at a time (WAITING_LOCK); a process that finds the line empty or the lock held does
    nothing more. The decision is read from the database without locking anything: the started job
    decides again in its own transaction (_start), and a run that still must wait goes back to its place.
    Redis commands: one to look at the line; with runs parked, four more and one pipeline of the starts.
    """
    redis = get_redis()
    heads: list[bytes] = redis.zrange(WAITING_KEY, 0, WAITING_BATCH - 1)  # type: ignore[assignment]
    if not heads:
        return []
    with hold_if_free(redis, WAITING_LOCK, WAITING_LOCK_MS) as lock:
        if lock is None:
            return []
        run_ids = [head.decode() for head in heads]
        raw: list[bytes | None] = redis.hmget(WAITING_ARGS_KEY, run_ids)  # type: ignore[assignment]
        parked = [Parked.loads(run_id, args) for run_id, args in zip(run_ids, raw, strict=True) if args]
        to_start, rows, gone = _may_start(parked, _in_flight(redis))
        with redis.pipeline() as pipe:
            for run in to_start:
                enqueue(run.schedule_id, run.run_id, datetime.fromisoformat(run.scheduled_for), run.trigger,
                        run.overlap, rows[run.schedule_id].timeout_seconds, run.backfill_id, run.attempt + 1,
                        run.since, pipe, rows[run.schedule_id].queue)
            done = [run.run_id for run in to_start] + gone + [r for r, args in zip(run_ids, raw, strict=True)
                                                                if not args]
            if done:
                pipe.zrem(WAITING_KEY, *done)
                pipe.hdel(WAITING_ARGS_KEY, *done)
            pipe.execute()
        return [run.run_id for run in to_start]


def _in_flight(redis: Any) -> dict[str, str]:
    """Outside runs on their way to a row (queued, or starting), by run ID: their schedule IDs. A pass
    counts them as running: a run it started a moment ago may have no row yet."""
    listed: dict[bytes, bytes] = {**redis.hgetall(QUEUED_KEY), **redis.hgetall(OUTSIDE_KEY)}
    return {run_id.decode(): entry.decode().split(" ", 1)[0] for run_id, entry in listed.items()}


def _may_start(parked: list[Parked], in_flight: dict[str, str]) -> tuple[list[Parked], dict[str, Any], list[str]]:
    """Of parked runs (oldest first), those that may start now by the overlap policy and the concurrency
    limit, each schedule's and each workflow's in order; their schedules' rows (timeout, queue); and the run IDs
    to forget (schedule deleted, backfill no longer running). Runs `in_flight` count as running."""
    schedule_ids = sorted({run.schedule_id for run in parked} | set(in_flight.values()))
    backfill_ids = sorted({run.backfill_id for run in parked if run.backfill_id})
    schedules = {row.id: row for row in db.session.execute(
        select(_SCHEDULES.c.id, _SCHEDULES.c.overlap, _SCHEDULES.c.timeout_seconds, _SCHEDULES.c.workflow_id,
               Workflow.max_concurrent_runs, Workflow.concurrency_policy, _SCHEDULES.c.queue)
        .select_from(_SCHEDULES.join(Workflow.__table__, Workflow.id == _SCHEDULES.c.workflow_id))
        .where(_SCHEDULES.c.id.in_(schedule_ids)))}
    running_backfills = set(db.session.scalars(
        select(_BACKFILLS.c.id).where(_BACKFILLS.c.id.in_(backfill_ids) & (_BACKFILLS.c.status == "running"))))
    workflow_ids = sorted({row.workflow_id for row in schedules.values() if row.max_concurrent_runs is not None})
    # Each running run once, whether the database or Redis (or both) shows it: (run ID, schedule, workflow).
    going = {(run_id, sid, schedules[sid].workflow_id) for run_id, sid in in_flight.items() if sid in schedules}
    going |= {tuple(row) for row in db.session.execute(
        select(_RUNS.c.id, _RUNS.c.schedule_id, _SCHEDULES.c.workflow_id)
        .select_from(_RUNS.join(_SCHEDULES, _RUNS.c.schedule_id == _SCHEDULES.c.id))
        .where((_RUNS.c.schedule_id.in_(schedule_ids) | _SCHEDULES.c.workflow_id.in_(workflow_ids))
               & (_RUNS.c.status == RunStatus.RUNNING.value)))}
    db.session.rollback()
    running = Counter[str](sid for _, sid, _ in going)
    in_workflow = Counter[int](wid for _, _, wid in going)

    to_start: list[Parked] = []
    gone: list[str] = []
    held_schedules: set[str] = set()
    held_workflows: set[int] = set()
    for run in parked:
        row = schedules.get(run.schedule_id)
        if row is None or (run.backfill_id and run.backfill_id not in running_backfills):
            gone.append(run.run_id)
            continue
        if run.schedule_id in held_schedules or row.workflow_id in held_workflows:
            continue
        policy = run.overlap or row.overlap
        if waits_for_running(policy) and running[run.schedule_id]:
            held_schedules.add(run.schedule_id)
            continue
        limited = row.max_concurrent_runs is not None and row.concurrency_policy != ConcurrencyPolicy.SKIP.value
        if limited and in_workflow[row.workflow_id] >= row.max_concurrent_runs:
            held_workflows.add(row.workflow_id)
            continue
        to_start.append(run)
        running[run.schedule_id] += 1
        in_workflow[row.workflow_id] += 1
    return to_start, schedules, gone
