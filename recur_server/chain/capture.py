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


# The capture running in each thread (by thread id): the streams and the root handler below are put in
# place once per process, and a capture only registers here, so a run pays a dictionary write for it.
_running: dict[int, Capture] = {}


class _Router(io.TextIOBase):
    """Stands in for sys.stdout or sys.stderr: everything goes to the stream before it, and what a thread
    running a task writes goes to its capture as well."""

    def __init__(self, before: TextIO) -> None:
        self.before = before

    def write(self, text: str) -> int:
        capture = _running.get(threading.get_ident())
        if capture is not None:
            capture.output.write(text)
        return self.before.write(text)

    def flush(self) -> None:
        self.before.flush()

    def isatty(self) -> bool:
        return self.before.isatty()

    def fileno(self) -> int:
        return self.before.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self.before, "encoding", "utf-8")

    def __getattr__(self, name: str) -> Any:  # buffer, errors, reconfigure ...: the stream's own
        return getattr(self.before, name)


class _RootHandler(logging.Handler):
    """On the root logger: a record emitted by a thread running a task goes to its capture."""

    def __init__(self) -> None:
        super().__init__()
        formatter = logging.Formatter(LOG_FORMAT)
        formatter.converter = time.gmtime  # whatever the worker host's zone
        self.setFormatter(formatter)

    def emit(self, record: logging.LogRecord) -> None:
        capture = _running.get(record.thread) if record.thread is not None else None
        if capture is None:
            return
        try:
            capture.logs.write(self.format(record) + "\n")
        except Exception:  # noqa: BLE001 - a record that will not format is logging's to report
            self.handleError(record)


_handler: _RootHandler | None = None


def _put_in_place() -> None:
    """The routers and the root handler, once per process; again if something replaced them since (a
    logging setup that set the root's handlers, a test harness that swapped the streams)."""
    global _handler
    if not isinstance(sys.stdout, _Router):
        sys.stdout = _Router(sys.stdout)
    if not isinstance(sys.stderr, _Router):
        sys.stderr = _Router(sys.stderr)
    if _handler is None:
        _handler = _RootHandler()
    root = logging.getLogger()
    if _handler not in root.handlers:
        root.addHandler(_handler)


class Capture:
    """`with Capture(limit) as capture:` captures the body's stdout, stderr and log lines (this thread's);
    `capture.captured(...)` then gives what to store."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.output = Bounded(limit)
        self.logs = Bounded(limit)
        self._thread = threading.get_ident()

    def __enter__(self) -> Capture:
        _put_in_place()
        _running[self._thread] = self
        return self

    def __exit__(self, *exc: object) -> None:
        if _running.get(self._thread) is self:
            del _running[self._thread]

    def captured(self, error: BaseException | None = None, result: Any = None) -> Captured:
        return Captured(
            traceback=traceback_text(error, self.limit) if error is not None else None,
            output=self.output.text(),
            logs=self.logs.text(),
            result=result_text(result, self.limit),
        )
