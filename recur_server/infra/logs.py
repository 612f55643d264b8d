"""Logging for every process: plain text by default, or with RECUR_LOG_FORMAT=json one JSON object per line
carrying the link being worked on (schedule_id, run_id, repeat, retry, worker) where one is."""

from __future__ import annotations

import json
import logging
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
# What a record may carry about the link it concerns: bound for the link (bind), or given as `extra=`.
CONTEXT_FIELDS = ("schedule_id", "run_id", "repeat", "retry", "worker")

_context: ContextVar[dict[str, Any] | None] = ContextVar("recur_log_context", default=None)


def bind(**fields: Any) -> None:
    """Add fields to every record this thread (or forked work horse) logs until clear()."""
    _context.set({**(_context.get() or {}), **fields})


def clear() -> None:
    _context.set(None)


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        # The host's clock is fine here: logs only (DESIGN 9). The time is written as recur_server.timing.iso writes an
        # instant; infra lies below timing, so this one line cannot call it.
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat().replace("+00:00", "Z"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "pid": record.process,
        }
        context = _context.get() or {}
        for name in CONTEXT_FIELDS:
            value = getattr(record, name, context.get(name))
            if value is not None:
                entry[name] = value
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False, default=str)


# RQ's lines for every job it runs (the job taken, how long it took, "Job OK"; rq 3.0's formats): a link's one
# line at INFO is Recur's own, when its run ends (recur_server.chain.run), naming the schedule, the tick and
# the outcome. These go to DEBUG, where RQ's other per-job lines are. tests/test_link_log.py counts the lines.
RQ_PER_JOB = frozenset({
    "Worker %s: %s: %s (%s)",  # the job taken (with its description), and "Job OK"
    "Worker %s: %s: %s",  # the job taken (without)
    "Successfully completed %s job in %ss on worker %s",
    "Successfully completed job %s in %ss on worker %s",
})


class PerJobAtDebug(logging.Filter):
    """On RQ's worker logger: its per-job lines become DEBUG records (dropped unless DEBUG is on)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno == logging.INFO and record.msg in RQ_PER_JOB:
            record.levelno, record.levelname = logging.DEBUG, "DEBUG"
            return logging.getLogger(record.name).isEnabledFor(logging.DEBUG)
        return True


def configure(log_format: str) -> None:
    """Set the root logger's one handler (a worker, the web and the CLI all call create_app), RQ's per-job lines
    at DEBUG, and Alembic's setup lines left out."""
    rq_worker = logging.getLogger("rq.worker")
    # Alembic, loaded when a process migrates (after this), says at INFO which of its own plugins it set up.
    logging.getLogger("alembic.runtime.plugins").setLevel(logging.WARNING)
    if not any(isinstance(f, PerJobAtDebug) for f in rq_worker.filters):
        rq_worker.addFilter(PerJobAtDebug())
    root = logging.getLogger()
    if log_format == "json":
        if not any(isinstance(h.formatter, JsonFormatter) for h in root.handlers):
            handler = logging.StreamHandler()
            handler.setFormatter(JsonFormatter())
            root.handlers = [handler]
        root.setLevel(logging.INFO)
    else:
        logging.basicConfig(level=logging.INFO, format=TEXT_FORMAT)
