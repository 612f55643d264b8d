"""Threads a process starts beside its main thread, deaf to SIGTERM and SIGINT.

The kernel gives a signal sent to a process to any one of its threads that does not block it; CPython runs
the handler in the main thread, and only once the main thread runs Python again. A main thread waiting in
poll() (a worker's blocking dequeue, until its timeout) for a signal the kernel gave to another thread waits
on: a SIGTERM to a whole process group (systemd's stop) left idle slots of `worker.py --fork` running until
the SIGKILL. Threads started here block the two signals, so the kernel gives them to the main thread, whose
wait they interrupt.
"""

from __future__ import annotations

import contextlib
import math
import os
import select
import signal
import threading
from collections.abc import Callable, Iterator
from typing import Any

STOP_SIGNALS = {signal.SIGTERM, signal.SIGINT}


@contextlib.contextmanager
def deaf_to_stop_signals() -> Iterator[None]:
    """Threads started inside inherit a mask that blocks SIGTERM and SIGINT; the caller's mask is restored."""
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def start_daemon(target: Callable[..., Any], name: str, *args: Any) -> threading.Thread:
    """A daemon thread running target(*args) that never takes SIGTERM or SIGINT from the main thread."""
    with deaf_to_stop_signals():
        thread = threading.Thread(target=target, args=args, name=name, daemon=True)
        thread.start()
    return thread


class SignalledStop(threading.Event):
    """An Event that a signal handler may set: `request` (the handler) writes a byte to a pipe, which takes no
    lock, and every wait watches that pipe as well as the Event.

    Event.set takes the Event's lock, and CPython runs a handler in the main thread between two of its
    bytecodes: often inside that thread's own `wait()`, which holds the lock on its way out of each wait. A
    handler that set the Event there waited for itself forever (a worker's background process outlived its
    worker so, its watch thread still checking and delivering)."""

    def __init__(self) -> None:
        super().__init__()
        self._read, self._write = os.pipe()
        os.set_blocking(self._write, False)

    def request(self, *_: object) -> None:
        """The stop, from a signal handler (or anywhere): one write to the pipe."""
        with contextlib.suppress(BlockingIOError):  # full: a stop is already there to read
            os.write(self._write, b"\0")

    def set(self) -> None:
        super().set()
        self.request()  # wakes a wait in another thread that watches the pipe

    def is_set(self) -> bool:
        return self.wait(0)

    def wait(self, timeout: float | None = None) -> bool:
        if not super().is_set():
            watch = select.poll()
            watch.register(self._read, select.POLLIN)
            if watch.poll(None if timeout is None else max(0, math.ceil(timeout * 1000))):
                super().set()
        return super().is_set()
