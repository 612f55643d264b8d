"""Tasks for tests only, registered when a test app lists this module in RECUR_TASK_MODULES."""

from __future__ import annotations

import os
import time

from recur_server.tasks import TaskEvent, task


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


@task("tests.record_key")
def record_key(event: TaskEvent) -> None:
    """Records (repeat, retry, idempotency key) of every attempt, then fails while retry < `failures`."""
    payload = event["payload"] or {}
    with open(payload["path"], "a") as fh:
        fh.write(f"{event['repeat_number']} {event['retry_number']} {event.get('idempotency_key')}\n")
    if event["retry_number"] < payload.get("failures", 0):
        raise RuntimeError("fails on purpose, to be retried")


@task("tests.ignore_timeout")
def ignore_timeout(event: TaskEvent) -> None:
    """Ignores its timeout: catches whatever interrupts its sleep (BaseException included) and goes on.

    Payload: `stuck_attempts` (attempts whose retry_number is below it ignore their timeout; later ones
    return at once; default 1), `sleep` (seconds to sleep, then return; default an hour), `swallow` (how
    many interruptions to ignore before letting one through; default all), `then` ("sleep", the
    default: sleep again; or "return" right after ignoring one), `path` (a file that each
    interruption's exception name is appended to).
    """
    payload = event["payload"] or {}
    if event["retry_number"] >= payload.get("stuck_attempts", 1):
        return
    swallowed = 0
    while True:
        try:
            time.sleep(payload.get("sleep", 3600))
            return
        except BaseException as exc:
            if payload.get("path"):
                with open(payload["path"], "a") as fh:
                    fh.write(f"{type(exc).__name__}\n")
            if swallowed >= payload.get("swallow", float("inf")):
                raise
            swallowed += 1
            if payload.get("then") == "return":
                return


class TaskBaseError(BaseException):
    """A BaseException of a task's own, outside the Exception hierarchy."""


_BASE_EXCEPTIONS: dict[str, type[BaseException]] = {
    "KeyboardInterrupt": KeyboardInterrupt, "SystemExit": SystemExit, "GeneratorExit": GeneratorExit,
    "TaskBaseError": TaskBaseError,
}


@task("tests.raise_base")
def raise_base(event: TaskEvent) -> None:
    """Raises the BaseException named by the payload's `raise`, with the message `message`."""
    payload = event["payload"] or {}
    raise _BASE_EXCEPTIONS[payload["raise"]](payload.get("message", "raised by the task"))


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


@task("tests.segfault")
def segfault(event: TaskEvent) -> None:
    """Dies of SIGSEGV, as a crashing C extension does, on attempts whose retry_number is below `crashes`
    (default: every attempt)."""
    import ctypes

    if event["retry_number"] < (event["payload"] or {}).get("crashes", 1_000_000):
        ctypes.string_at(0)


@task("tests.hog")
def hog(event: TaskEvent) -> None:
    """Allocates without bound (10 MB a step, touched so that it is resident) on the first attempt."""
    if event["retry_number"] >= (event["payload"] or {}).get("hogging_attempts", 1):
        return
    chunks = []
    while True:
        chunks.append(bytearray(10 * 1024 * 1024))
        time.sleep(0.01)


@task("tests.pid_then_sleep")
def pid_then_sleep(event: TaskEvent) -> None:
    """Appends `retry pid` to the payload's `path`, then sleeps `sleep` seconds on the first attempt (later
    attempts return at once)."""
    payload = event["payload"] or {}
    with open(payload["path"], "a") as fh:
        fh.write(f"{event['retry_number']} {os.getpid()}\n")
    if event["retry_number"] == 0:
        time.sleep(payload.get("sleep", 30))


@task("tests.hold")
def hold(event: TaskEvent) -> None:
    """Holds its slot until the file the payload's `release` names exists (at most `seconds`, 120): a run
    that lasts exactly as long as a test needs, however loaded the machine."""
    payload = event["payload"] or {}
    deadline = time.monotonic() + float(payload.get("seconds", 120))
    while not os.path.exists(payload["release"]) and time.monotonic() < deadline:
        time.sleep(0.05)


@task("tests.noisy")
def noisy(event: TaskEvent) -> object:
    """Prints to stdout and stderr, logs a line, then raises (payload `raise`, the default) or returns
    payload `result`; payload `lines` prints that many more lines of `width` characters first."""
    import logging
    import sys

    payload = event["payload"] or {}
    for n in range(payload.get("lines", 0)):
        print(f"line {n} " + "x" * payload.get("width", 100))
    print("printed to stdout")
    print("printed to stderr", file=sys.stderr)
    logging.getLogger("tests.noisy").warning("logged a warning")
    if payload.get("raise", True):
        raise ValueError("noisy task fails on purpose")
    return payload.get("result")


@task("tests.follow_step")
def follow_step(event: TaskEvent) -> None:
    """Appends `schedule_id scheduled_for pid` to payload `path`; with `hold` (seconds) and `marker` (a
    file), the first call that finds no marker makes it and sleeps `hold` (a run to kill), later ones return;
    with `fail_first`, that first call raises instead."""
    payload = event["payload"] or {}
    with open(payload["path"], "a") as fh:
        fh.write(f"{event['scheduled_job_id']} {event['scheduled_for']} {os.getpid()}\n")
    marker = payload.get("marker")
    if marker and not os.path.exists(marker):
        with open(marker, "w") as fh:
            fh.write(str(os.getpid()))
        if payload.get("fail_first"):
            raise RuntimeError("fails on purpose, the first time")
        time.sleep(payload.get("hold", 0))
