"""One attempt of a task: run under its own timeout, and every way it can end becomes an outcome.

The task's own timeout runs inside RQ's job timeout without disarming it. RQ runs every job under one
SIGALRM timer (the job's `timeout`). A second SIGALRM death penalty nested inside it takes the timer over
and, when it ends, cancels it: a task that outlived its own timeout then had no timeout left at all. Here
the task's timer sets RQ's aside and puts it back, with what was left of it, the moment the task's timer
fires or the task ends.
"""

from __future__ import annotations

import ctypes
import signal
import threading
from types import FrameType
from typing import Any

from flask import current_app, has_app_context
from rq.timeouts import JobTimeoutException

from recur_server.chain.capture import DEFAULT_BYTES, Capture, Captured
from recur_server.models import RunStatus
from recur_server.tasks import TaskEvent, execution_log, get_task
from recur_server.tasks.context import bound


class TaskTimeout(BaseException):
    """Raised in a task that ran past its timeout. A BaseException, as KeyboardInterrupt is, so that a
    task's own `except Exception` does not swallow it."""


class TaskTimer:
    """`with TaskTimer(seconds) as timer:` runs the block under its timeout; afterwards `timer.expired`
    says whether the timeout fired, even if the block caught the exception."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.expired = False
        self._armed = False
        self._outer_handler: Any = signal.SIG_DFL
        self._outer_timer = (0.0, 0.0)
        self._thread_timer: _ThreadTimer | None = None

    def __enter__(self) -> TaskTimer:
        if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
            self._thread_timer = _ThreadTimer(self)
            return self
        self._outer_handler = signal.getsignal(signal.SIGALRM)
        self._outer_timer = signal.setitimer(signal.ITIMER_REAL, 0)
        if 0 < self._outer_timer[0] <= self.seconds:  # the outer timer fires first anyway: leave it be
            signal.setitimer(signal.ITIMER_REAL, *self._outer_timer)
            return self
        signal.signal(signal.SIGALRM, self._fire)
        self._armed = True
        signal.setitimer(signal.ITIMER_REAL, self.seconds)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._thread_timer is not None:
            self._thread_timer.stop()
        self._put_back()

    def _fire(self, signum: int, frame: FrameType | None) -> None:
        self.expired = True
        self._put_back()
        raise TaskTimeout(f"task exceeded its timeout ({self.seconds:g} s)")

    def _put_back(self) -> None:
        """Disarm this timer and re-arm the outer one (RQ's) with the time it had left."""
        if not self._armed:
            return
        self._armed = False
        ours_left, _ = signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, self._outer_handler if self._outer_handler is not None else signal.SIG_DFL)
        outer_left, interval = self._outer_timer
        if outer_left > 0:
            elapsed = self.seconds - ours_left
            signal.setitimer(signal.ITIMER_REAL, max(outer_left - elapsed, 0.001), interval)


# How an attempt ended: its status, its error in a line, and what the task left behind (None: nothing).
Attempted = tuple[RunStatus, str | None, Captured | None]


def output_limit() -> int:
    """Bytes kept of each thing a task leaves behind (RECUR_RUN_OUTPUT_BYTES)."""
    return int(current_app.config.get("RECUR_RUN_OUTPUT_BYTES", DEFAULT_BYTES)) if has_app_context() else DEFAULT_BYTES


def execute_task(task_name: str, event: TaskEvent, timeout_seconds: int) -> Attempted:
    """Run one attempt under its timeout; every way a task can end becomes an outcome, never an exception.

    A task that ran into its timeout is timed out, even if it caught the exception and returned. Whatever
    else it raises, KeyboardInterrupt, SystemExit or any other BaseException included, fails the attempt
    with that error; the worker goes on to its next job. What the body printed and logged, its traceback
    and its return value come back with the outcome (recur_server.chain.capture), to be written with it.
    """
    fn = get_task(task_name)
    if fn is None:
        return RunStatus.FAILED, f"unknown task {task_name!r}", None
    timer = TaskTimer(timeout_seconds)
    capture = Capture(output_limit())
    error: str | None = None
    failure: BaseException | None = None
    result = None
    try:
        with timer:
            execution_log.record_start(event)  # a failure to write it fails the attempt before its body
            with bound(event), capture:  # recur.context() inside the body; its output and logs kept
                result = fn(event)
    except JobTimeoutException as exc:  # RQ's own job timeout, the outer limit
        return RunStatus.TIMED_OUT, f"timed out after {timeout_seconds}s", _left(capture.captured(exc))
    except BaseException as exc:  # a task's own failure, whatever it raised (TaskTimeout: see below)
        error = f"{type(exc).__name__}: {exc}"[:2000]
        failure = exc
    if timer.expired:
        return RunStatus.TIMED_OUT, f"timed out after {timeout_seconds}s", _left(capture.captured(failure))
    if error is not None:
        return RunStatus.FAILED, error, _left(capture.captured(failure))
    execution_log.record_success(event)
    return RunStatus.SUCCEEDED, None, _left(capture.captured(result=result))


def _left(captured: Captured) -> Captured | None:
    """None when the task left nothing: most runs then write no row beside their outcome."""
    return None if captured.empty() else captured


class _ThreadTimer:
    """Outside the main thread, where there are no signals: a timer thread raises TaskTimeout in the
    task's thread at its next Python instruction."""

    def __init__(self, owner: TaskTimer) -> None:
        self._owner = owner
        self._target = threading.get_ident()
        self._lock = threading.Lock()
        self._stopped = False
        self._timer = threading.Timer(owner.seconds, self._fire)
        self._timer.daemon = True
        self._timer.start()

    def _fire(self) -> None:
        with self._lock:
            if self._stopped:
                return
            self._owner.expired = True
            ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(self._target), ctypes.py_object(TaskTimeout))

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
            if self._owner.expired:  # raised already, or about to be: take back one still pending
                ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(self._target), None)
        self._timer.cancel()
