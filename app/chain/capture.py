"""What a task leaves behind, captured where its body runs: its error's traceback, what it wrote to stdout and
stderr, the log lines it emitted and its return value, each kept within a bound (RECUR_RUN_OUTPUT_BYTES).

Output and log lines are kept as head and tail: the first half of the bound and the last half, with a line
in between saying how many bytes were cut; memory stays within about twice the bound however much a task
writes. Only the task's own thread is captured: in a worker that runs tasks in its own process (`--simple`),
the worker's other threads keep writing to the worker's streams and logs, and a task's writes still reach
them too (captured, not swallowed).
"""

from __future__ import annotations

import io
import json
import logging
import sys
import threading
import time
import traceback
from dataclasses import asdict, dataclass
from typing import Any, TextIO

DEFAULT_BYTES = 65536
LOG_FORMAT = "%(asctime)s UTC %(levelname)s %(name)s: %(message)s"


@dataclass(frozen=True)
class Captured:
    """A run's leftovers as stored (each None when there was nothing)."""

    traceback: str | None = None
    output: str | None = None
    logs: str | None = None
    result: str | None = None

    def empty(self) -> bool:
        return not (self.traceback or self.output or self.logs or self.result is not None)

    def as_dict(self) -> dict[str, str | None]:
        return asdict(self)

    @classmethod
    def of(cls, values: dict[str, Any] | None) -> Captured | None:
        """From as_dict() (across a pipe); None for None."""
        if not values:
            return None
        return cls(**{name: values.get(name) for name in ("traceback", "output", "logs", "result")})


def cut_marker(dropped: int) -> str:
    return f"\n[... {dropped} bytes cut ...]\n"


class Bounded:
    """A text kept within `limit` bytes (UTF-8) as its head and its tail, written to piece by piece."""

    def __init__(self, limit: int) -> None:
        self.limit = max(limit, 2)
        self._head = bytearray()
        self._tail = bytearray()
        self._dropped = 0

    def write(self, text: str) -> None:
        data = text.encode("utf-8", "replace")
        half = self.limit // 2
        room = half - len(self._head)
        if room > 0:
            self._head += data[:room]
            data = data[room:]
        if not data:
            return
        self._tail += data
        keep = self.limit - half
        if len(self._tail) > 2 * keep:  # trimmed now and then, not on every write
            self._trim(keep)

    def _trim(self, keep: int) -> None:
        excess = len(self._tail) - keep
        if excess > 0:
            del self._tail[:excess]
            self._dropped += excess

    def text(self) -> str | None:
        self._trim(self.limit - self.limit // 2)
        if not self._head and not self._tail:
            return None
        head = self._head.decode("utf-8", "replace")
        if not self._dropped:
            return head + self._tail.decode("utf-8", "replace")
        return head + cut_marker(self._dropped) + self._tail.decode("utf-8", "replace")


def bounded(text: str | None, limit: int) -> str | None:
    """`text` within `limit` bytes, as head and tail."""
    if text is None:
        return None
    kept = Bounded(limit)
    kept.write(text)
    return kept.text() or ""


def result_text(value: Any, limit: int) -> str | None:
    """A task's return value as stored: JSON if it serialises, else its repr; None for None."""
    if value is None:
        return None
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError):  # not JSON (an object, a set, NaN ...), or a cycle
        try:
            text = repr(value)
        except Exception as exc:  # noqa: BLE001 - a broken __repr__ is the task's, not the run's, failure
            text = f"<unprintable {type(value).__name__}: {type(exc).__name__}>"
    return bounded(text, limit)


def traceback_text(exc: BaseException, limit: int) -> str:
    return bounded("".join(traceback.format_exception(exc)), limit) or ""


class _ThreadStream(io.TextIOBase):
    """Stands in for sys.stdout or sys.stderr: the task's thread writes to the capture and the stream
    before it; other threads only to the stream before it."""

    def __init__(self, before: TextIO, kept: Bounded, thread: int) -> None:
        self._before = before
        self._kept = kept
        self._thread = thread

    def write(self, text: str) -> int:
        if threading.get_ident() == self._thread:
            self._kept.write(text)
        return self._before.write(text)

    def flush(self) -> None:
        self._before.flush()

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        return self._before.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self._before, "encoding", "utf-8")


class _ThreadHandler(logging.Handler):
    """A root handler that keeps the records the task's thread emits."""

    def __init__(self, kept: Bounded, thread: int) -> None:
        super().__init__()
        self._kept = kept
        self._thread = thread
        formatter = logging.Formatter(LOG_FORMAT)
        formatter.converter = time.gmtime  # whatever the worker host's zone
        self.setFormatter(formatter)

    def filter(self, record: logging.LogRecord) -> bool:
        return record.thread == self._thread

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self._kept.write(self.format(record) + "\n")
        except Exception:  # noqa: BLE001 - a record that will not format is logging's to report
            self.handleError(record)


class Capture:
    """`with Capture(limit) as capture:` captures the body's stdout, stderr and log lines (this thread's);
    `capture.captured(...)` then gives what to store."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._output = Bounded(limit)
        self._logs = Bounded(limit)
        self._thread = threading.get_ident()
        self._handler = _ThreadHandler(self._logs, self._thread)
        self._streams: tuple[Any, Any] | None = None

    def __enter__(self) -> Capture:
        self._streams = (sys.stdout, sys.stderr)
        sys.stdout = _ThreadStream(sys.stdout, self._output, self._thread)
        sys.stderr = _ThreadStream(sys.stderr, self._output, self._thread)
        logging.getLogger().addHandler(self._handler)
        return self

    def __exit__(self, *exc: object) -> None:
        logging.getLogger().removeHandler(self._handler)
        if self._streams is not None:
            sys.stdout, sys.stderr = self._streams
            self._streams = None

    def captured(self, error: BaseException | None = None, result: Any = None) -> Captured:
        return Captured(
            traceback=traceback_text(error, self.limit) if error is not None else None,
            output=self._output.text(),
            logs=self._logs.text(),
            result=result_text(result, self.limit),
        )
