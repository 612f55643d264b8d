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
