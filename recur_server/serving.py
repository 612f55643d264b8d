"""gunicorn's worker for Recur: gunicorn answers some requests before Flask sees them (a request line or a
header over its limits, a malformed request line). Its own pages are HTML; this worker writes them in the
API's one error shape instead, so a client never parses an HTML error page.

It also holds each request to a deadline (RECUR_REQUEST_DEADLINE_SECONDS). gunicorn's own `timeout` only
restarts a worker whose main loop stops; with threads, a request that runs for ever in one of them leaves
the loop alive, and it holds that thread (and its share of the process) indefinitely. A watchdog thread of
this worker looks every half second: a request past its deadline has RequestDeadline raised in its thread
(Python code stops at its next instruction; the request answers 503 `request_timeout` and its transaction
is rolled back), and one still running a grace period later (stuck in C code, where no exception reaches)
ends the process, which gunicorn's master replaces at once. Either way the API goes on answering.

Used through gunicorn.conf.py (`worker_class`), which gunicorn reads from the working directory.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import logging
import os
import re
import socket
import threading
import time
from typing import Any

from gunicorn import util
from gunicorn.workers.gthread import ThreadWorker

from recur_server.infra.config import Settings
from recur_server.infra.request_deadline import RequestDeadline
from recur_server.infra.threads import start_daemon

log = logging.getLogger("recur.serving")
GRACE_SECONDS = 5.0  # after the deadline, for a request to end once RequestDeadline is raised in it
LOOK_SECONDS = 0.5
# Held to RECUR_APPLY_DEADLINE_SECONDS instead: an apply may carry up to 100,000 changes (its work is bounded
# by that, not by the request deadline meant for one object's change). Matched at the path's end, so that an
# app mounting Recur's API under a prefix of its own keeps it.
APPLY_PATHS = ("/api/v1/apply", "/api/v1/apply/file")


def write_json_error(sock: socket.socket, status_int: int, reason: str, mesg: str) -> None:
    code = re.sub(r"[^a-z0-9]+", "_", reason.lower()).strip("_") or "error"
    body = json.dumps({"code": code, "status": status_int, "message": mesg[:500], "errors": {}}).encode()
    head = (f"HTTP/1.1 {status_int} {reason}\r\nConnection: close\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n").encode("latin-1")
    util.write_nonblock(sock, head + body)


class Deadlines:
    """The requests in flight in this process: thread -> (started, what), and the watchdog that holds them
    to `seconds` (time.monotonic, this process's own: a deadline is no decision other hosts share)."""

    def __init__(self, seconds: float, on_stuck: Any = None) -> None:
        self.seconds = seconds
        self.on_stuck = on_stuck or (lambda: os._exit(1))
        self._running: dict[int, tuple[float, str, float]] = {}
        self._interrupted: set[int] = set()
        self._lock = threading.Lock()

    def begin(self, what: str, seconds: float | None = None) -> None:
        """A request starts in this thread, held to `seconds` if given, else to the process's deadline."""
        with self._lock:
            self._running[threading.get_ident()] = (time.monotonic(), what, seconds or self.seconds)

    def end(self) -> None:
        with self._lock:
            ident = threading.get_ident()
            self._running.pop(ident, None)
            if ident in self._interrupted:  # an exception set but not yet raised is withdrawn
                self._interrupted.discard(ident)
                ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(ident), None)

    def start_watching(self) -> None:
        start_daemon(self._watch, "recur-request-deadline")

    def _watch(self) -> None:
        while True:
            time.sleep(LOOK_SECONDS)
            self.look(time.monotonic())

    def look(self, now: float) -> None:
        with self._lock:  # held while raising: a request that has ended (end() took the lock) is never hit
            late = [(ident, now - started - seconds, what, seconds)
                    for ident, (started, what, seconds) in self._running.items() if now - started > seconds]
            for ident, _, what, seconds in late:
                if ident not in self._interrupted:
                    self._interrupted.add(ident)
                    log.error("request past its deadline of %g s, stopped: %s", seconds, what)
                    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(ident),
                                                               ctypes.py_object(RequestDeadline))
        for ident, past, what, _ in late:
            if ident in self._interrupted and past > GRACE_SECONDS:
                log.error("request still running %g s past its deadline, ending this web process (gunicorn "
                          "starts another): %s", GRACE_SECONDS, what)
                self.on_stuck()


class JsonErrorWorker(ThreadWorker):  # type: ignore[misc]
    """gunicorn's threaded worker, answering its own errors as JSON and holding requests to a deadline."""

    def init_process(self) -> None:
        # gunicorn's handle_error calls util.write_error; this process is a gunicorn worker and nothing else,
        # so its error writer is replaced for the process's lifetime.
        util.write_error = write_json_error
        settings = Settings.from_env()
        self.deadlines = Deadlines(settings.RECUR_REQUEST_DEADLINE_SECONDS)
        self.apply_seconds = settings.RECUR_APPLY_DEADLINE_SECONDS
        self.deadlines.start_watching()
        super().init_process()

    def handle_request(self, req: Any, conn: Any) -> bool:
        seconds = self.apply_seconds if (req.path or "").rstrip("/").endswith(APPLY_PATHS) else None
        self.deadlines.begin(f"{req.method} {req.path}", seconds)
        try:
            return bool(super().handle_request(req, conn))
        finally:
            with contextlib.suppress(RequestDeadline):  # raised just as the request ended: nothing to stop
                self.deadlines.end()
