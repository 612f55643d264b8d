"""The work process of the default worker: one persistent process per worker that runs task after task.

The worker forks it once, from its warm state, and sends it one task at a time over a pipe; the claim,
the lease and the record of the outcome stay in the worker (recur_server.workers.worker.RecurPoolWorker). A task
that kills its process (a segfault, os._exit, the kernel's OOM killer), overruns its deadline (whatever
it did with the timeout exception) or grows the process past the memory limit fails that attempt; the
process is replaced before the next task. It is also recycled after `max_tasks` tasks, so a slow leak in
a task's libraries cannot grow without bound.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import math
import os
import select
import signal
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection, Pipe
from typing import Any

from flask import current_app, has_app_context

from recur_server.chain.attempt import Attempted, execute_task
from recur_server.chain.capture import Captured
from recur_server.infra import clock
from recur_server.infra.extensions import db, get_redis
from recur_server.models import RunStatus

log = logging.getLogger(__name__)

POLL_SECONDS = 0.05
_PR_SET_PDEATHSIG = 1  # linux/prctl.h
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


@dataclass
class Limits:
    max_tasks: int = 1000
    max_memory_mb: int | None = None


def rss_bytes(pid: int) -> int | None:
    """Resident set size of a process, from /proc (None where there is no /proc)."""
    try:
        with open(f"/proc/{pid}/statm") as statm:
            return int(statm.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return None


def _serve(conn: Connection) -> None:
    """The work process's loop: run each task sent, answer (status, error); None ends it."""
    # A signal to the whole process group (Ctrl-C, systemd's stop) is the worker's to handle: it lets the
    # running task finish (warm shutdown) and then ends this process itself.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return
        if message is None:
            return
        task, event, timeout = message
        status, error, captured = execute_task(task, event, timeout)
        conn.send((status.value, error, captured.as_dict() if captured is not None else None))


class WorkProcess:
    """The persistent work process, started on first use and replaced when it dies or is recycled."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.pid: int | None = None
        self._conn: Connection | None = None
        self._tasks = 0
        self.busy = False

    def _start(self) -> None:
        parent, child = Pipe()
        parent_pid = os.getpid()
        pid = os.fork()
        if pid == 0:  # the work process
            parent.close()
            _become_work_process(parent_pid)
            _forget_parent_connections()
            code = 0
            try:
                _serve(child)
            except BaseException:  # noqa: BLE001 - it must never return into the worker's code
                code = 1
            finally:
                os._exit(code)
        child.close()
        self.pid, self._conn, self._tasks = pid, parent, 0
        log.info("work process %s started", pid)

    def run(self, task: str, event: Any, timeout: int, deadline: float) -> Attempted:
        """Run one task in the work process; every way it can end becomes an outcome (with what the task
        left behind when it reported one)."""
        if self.pid is None:
            self._start()
        assert self._conn is not None and self.pid is not None
        limit = self.limits.max_memory_mb
        self.busy = True
        try:
            self._conn.send((task, event, timeout))
            while True:
                if self._conn.poll(POLL_SECONDS):
                    try:
                        status, error, left = self._conn.recv()
                    except (EOFError, OSError):
                        return RunStatus.FAILED, self._reap("work process died"), None
                    self._tasks += 1
                    self._recycle_if_due()
                    return RunStatus(status), error, Captured.of(left)
                if clock.monotonic() >= deadline:
                    self._kill()
                    return (RunStatus.TIMED_OUT, f"timed out after {timeout}s; the task did not stop, so its work "
                                                 "process was killed", None)
                if limit is not None:
                    rss = rss_bytes(self.pid)
                    if rss is not None and rss > limit * 1024 * 1024:
                        self._kill()
                        return RunStatus.FAILED, (f"work process used {rss // (1024 * 1024)} MB, over the limit of "
                                                  f"{limit} MB (--max-memory-mb); it was killed"), None
        finally:
            self.busy = False

    def kill(self) -> None:
        """Stop the task running now (RQ's stop-job command, overlap cancel_other)."""
        if self.pid is not None and self.busy:
            _kill_group(self.pid)

    def stop(self) -> None:
        """End the work process (the worker is leaving, or it is recycled)."""
        if self.pid is None or self._conn is None:
            return
        with contextlib.suppress(OSError, ValueError):
            self._conn.send(None)
        pid = self.pid
        self._forget()
        with contextlib.suppress(ChildProcessError):
            for _ in range(100):
                done, _status = os.waitpid(pid, os.WNOHANG)
                if done:
                    return
                time.sleep(0.02)
            _kill_group(pid)
            os.waitpid(pid, 0)

    def _recycle_if_due(self) -> None:
        limit = self.limits.max_memory_mb
        rss = rss_bytes(self.pid) if self.pid is not None and limit is not None else None
        if self._tasks >= self.limits.max_tasks or (rss is not None and limit is not None
                                                     and rss > limit * 1024 * 1024):
            log.info("recycling work process %s after %s tasks", self.pid, self._tasks)
            self.stop()

    def _kill(self) -> None:
        if self.pid is not None:
            _kill_group(self.pid)
            self._reap("killed")

    def _reap(self, what: str) -> str:
        pid = self.pid
        self._forget()
        if pid is None:
            return what
        try:
            _pid, status = os.waitpid(pid, 0)
        except ChildProcessError:
            return what
        return death_of(status, what)

    def _forget(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(OSError):
                self._conn.close()
        self.pid, self._conn = None, None


def exits_before(pid: int, deadline: float) -> bool:
    """Wait for the child `pid` to exit, at most until `deadline` (on clock.monotonic()); False if it is
    still running then. Does not reap it. Where pidfds are missing (not Linux), waits without a limit:
    RQ's own monitor then remains the only one."""
    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        return True
    try:
        poller = select.poll()
        poller.register(pidfd, select.POLLIN)
        # poll() resumes after a signal whose handler returns; RQ's monitor alarm raises through it.
        return bool(poller.poll(max(0, math.ceil((deadline - clock.monotonic()) * 1000))))
    finally:
        os.close(pidfd)


def death_of(wait_status: int, what: str = "work process died") -> str:
    """How a work process ended, from its wait status: `work process died by signal 9 (SIGKILL)`, `work process
    died with exit status 13` (the persistent work process's, and a forked work horse's:
    recur_server.workers.worker)."""
    if os.WIFSIGNALED(wait_status):
        number = os.WTERMSIG(wait_status)
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = "unknown signal"
        return f"{what} by signal {number} ({name})"
    if os.WIFEXITED(wait_status):
        return f"{what} with exit status {os.WEXITSTATUS(wait_status)}"
    return f"{what} (wait status {wait_status})"


def _kill_group(pid: int) -> None:
    """SIGKILL the work process and whatever its task started (its process group)."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def die_with_parent(parent_pid: int) -> None:
    """SIGKILL this forked process when its parent dies (Linux's parent-death signal); exit at once if the
    parent died before the signal was armed."""
    with contextlib.suppress(Exception):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent_pid:
        os._exit(0)


def _become_work_process(parent_pid: int) -> None:
    """A process group of its own (the worker kills the task with whatever it started; a Ctrl-C to the
    worker's group is the worker's to handle), death with the worker (Linux's parent-death signal: a
    SIGKILLed worker leaves no orphan running a task whose run is written off elsewhere), and first in
    line for the kernel's OOM killer (a leaking task's process goes before its worker)."""
    os.setpgrp()
    die_with_parent(parent_pid)
    with contextlib.suppress(OSError), open("/proc/self/oom_score_adj", "w") as fh:
        fh.write("1000")


def _forget_parent_connections() -> None:
    """The work process must not use the worker's pooled database and Redis connections (two processes on
    one socket corrupt both conversations): it drops its copies and opens its own when a task needs them."""
    if not has_app_context():
        return
    with contextlib.suppress(Exception):
        db.engine.dispose(close=False)
    with contextlib.suppress(Exception):
        get_redis(current_app).connection_pool.reset()
