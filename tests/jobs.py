"""Tasks for tests only, registered when a test app lists this module in RECUR_TASK_MODULES."""

from __future__ import annotations

import os

from app.tasks import TaskEvent, task


@task("tests.die")
def die(event: TaskEvent) -> None:
    """Kills its own process, as a segfaulting extension would."""
    os._exit(13)


@task("tests.record")
def record(event: TaskEvent) -> None:
    path = (event["payload"] or {}).get("path")
    if path:
        with open(path, "a") as fh:
            fh.write(f"{event['scheduled_job_id']} {event['repeat_number']} {event['retry_number']}\n")


@task("tests.cluster_stamp")
def cluster_stamp(event: TaskEvent) -> None:
    """Appends "<schedule id> <scheduled_for> <Redis TIME>" to the Redis list named in the payload: when the
    task really began by the cluster clock, whatever its host's own clock says. One round trip on the
    connection of the RQ job it runs in."""
    from rq import get_current_job

    job = get_current_job()
    assert job is not None
    entry = f"{event['scheduled_job_id']} {event['scheduled_for']}"
    job.connection.eval(_STAMP, 1, (event["payload"] or {})["key"], entry)


_STAMP = """
local t = redis.call('TIME')
return redis.call('RPUSH', KEYS[1], ARGV[1] .. ' ' .. t[1] .. '.' .. string.format('%06d', tonumber(t[2])))
"""
