"""rq-scheduler's jobs as Recur schedules. rq-scheduler keeps each job in RQ's job hash, its next time as its
score in the sorted set `rq:scheduler:scheduled_jobs`, and its timing in the job's meta: `interval`
(seconds), `cron_string` (with `use_local_timezone`), `repeat` (runs left; None for ever)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from recur_cli.importers.common import Imported, TaskMap, key_for
from recur_client.fields import iso

SCHEDULED_JOBS = "rq:scheduler:scheduled_jobs"
MAX_TIMEOUT_SECONDS = 7 * 86400  # the API's limit on timeout_seconds


def read_jobs(redis_url: str) -> list[tuple[Any, datetime | None, str | None]]:
    """(job, next time, None) for each scheduled job, or (job id, None, why) for one that cannot be read."""
    from redis import Redis
    from rq.job import Job

    connection = Redis.from_url(redis_url)
    found: list[tuple[Any, datetime | None, str | None]] = []
    entries: list[tuple[bytes, float]] = connection.zrange(SCHEDULED_JOBS, 0, -1, withscores=True)  # type: ignore[assignment]
    for raw_id, score in entries:
        job_id = raw_id.decode()
        try:
            job = Job.fetch(job_id, connection=connection)
            job.func_name  # noqa: B018  (reads, and unpickles, the call: a failure is reported here)
        except Exception as exc:  # a job whose data is gone, or pickled with classes this machine lacks
            found.append((job_id, None, f"cannot read the job: {type(exc).__name__}: {exc}"))
            continue
        found.append((job, datetime.fromtimestamp(score, UTC), None))
    return found


def import_jobs(jobs: list[tuple[Any, datetime | None, str | None]], tasks: TaskMap, now: datetime,
                timezone: str = "UTC") -> Imported:
    imported = Imported()
    for job, next_time, problem in jobs:
        if problem is not None:
            imported.unmapped.append((str(job), problem))
            continue
        schedule, why = _schedule(job, next_time, tasks, now, timezone)
        if schedule is None:
            imported.unmapped.append((f"{job.id} ({job.func_name})", why or "?"))
        else:
            imported.schedules.append(schedule)
    return imported


def _schedule(job: Any, next_time: datetime | None, tasks: TaskMap, now: datetime,
              timezone: str) -> tuple[dict[str, Any] | None, str | None]:
    task = tasks.task_for(job.func_name)
    if task is None:
        return None, f"no registered task for {job.func_name} (add --map {job.func_name}=TASK)"
    meta = job.meta or {}
    schedule: dict[str, Any] = {"key": key_for("rq-scheduler", str(job.id)), "workflow": task,
                                "name": _name(job)}
    if meta.get("cron_string"):
        schedule["cron"] = meta["cron_string"]
        # rq-scheduler reads a cron in UTC, or with use_local_timezone in its host's zone (--timezone says which)
        schedule["timezone"] = timezone if meta.get("use_local_timezone") else "UTC"
    elif meta.get("interval"):
        schedule["interval_seconds"] = int(meta["interval"])
        if next_time is not None:  # keep the phase: the next run stays where rq-scheduler had it
            schedule["anchor_date"] = iso(next_time)
            if next_time > now:  # and none comes before it (an anchor only sets the phase)
                schedule["start_at"] = iso(next_time)
    elif next_time is not None and next_time > now:
        schedule["at"] = iso(next_time)
    else:
        return None, "a one-off job already due: run it by hand (recur schedules trigger) if it still matters"
    repeat = meta.get("repeat")
    if repeat is not None:  # rq-scheduler runs a job `repeat` more times (at least once)
        schedule["total_repeats"] = max(int(repeat), 1)
    payload, why = _payload(job)
    if why is not None:
        return None, why
    if payload is not None:
        schedule["trigger_payload"] = payload
    if isinstance(job.timeout, int) and 0 < job.timeout <= MAX_TIMEOUT_SECONDS:
        schedule["timeout_seconds"] = job.timeout
    return schedule, None


def _name(job: Any) -> str:
    text = str(job.description or job.func_name)
    return text if len(text) <= 200 else text[:197] + "..."


def _payload(job: Any) -> tuple[Any, str | None]:
    """The job's arguments as the run's payload: its kwargs, with positional args under `args`."""
    args, kwargs = list(job.args or ()), dict(job.kwargs or {})
    if not args and not kwargs:
        return None, None
    payload: dict[str, Any] = {"args": args, "kwargs": kwargs} if args else kwargs
    try:
        return json.loads(json.dumps(payload)), None
    except (TypeError, ValueError):
        return None, "its arguments are not JSON values (a task's payload must be JSON)"
