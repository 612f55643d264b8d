"""Settings, read from the environment in one place: each is one field of `Settings` (its environment
variable's name, type, default and meaning); parsing and the app's config are derived from the fields."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, TypeVar, get_type_hints
from urllib.parse import parse_qsl, unquote, urlencode

# Where a process keeps what it writes by default (the SQLite database, the metrics of recur.host_metrics):
# `instance` under the directory it starts in (a checkout's root, or a service's working directory).
INSTANCE_DIR = Path("instance").resolve()

# How long any Redis call waits for a connection or a reply (RECUR_REDIS_TIMEOUT_SECONDS): a Redis that stops
# answering is then a prompt 503 redis_unavailable, not a request that hangs.
DEFAULT_REDIS_TIMEOUT_SECONDS = 2.0

T = TypeVar("T")


class SettingError(ValueError):
    """An environment variable holds a value its setting cannot take; the message names the variable."""


def setting(default: T, meaning: str, at_least: int | None = None) -> T:
    """One setting's declaration: its default, what it means (one line) and, for a count, the least value
    it takes (a smaller one is raised to it). Its environment variable is the field's name."""
    if isinstance(default, list):
        return field(default_factory=lambda: list(default),  # type: ignore[return-value]
                     metadata={"meaning": meaning, "at_least": at_least})
    return field(default=default, metadata={"meaning": meaning, "at_least": at_least})


@dataclass
class Settings:
    REDIS_URL: str = setting("redis://localhost:6379/0", "the Redis that holds pending links and RQ's queues")
    DATABASE_URL: str = setting(f"sqlite:///{INSTANCE_DIR / 'recur.db'}", "the database (SQLAlchemy URL, or "
                                "libpq's multi-host form for a primary and standbys)")
    RECUR_QUEUE: str = setting("recur", "the RQ queue links go through")
    RECUR_METRICS_PORT: int = setting(0, "a worker.py serves its host's metrics on this port too (0: not); for a "
                                      "host without a web process", at_least=0)
    RECUR_METRICS_ADDRESS: str = setting("127.0.0.1", "the address a worker's metrics port listens on")
    RECUR_QUEUES: str = setting("", "further RQ queues a workflow may name for its links and runs (comma "
                                "separated); a worker listens to RECUR_QUEUE and these unless given --queues")
    RECUR_WORKER_CONCURRENCY: int = setting(0, "tasks one worker.py runs at once, each in a slot of its own "
                                            "(0: four, or one per core on a machine with more)", at_least=0)
    RECUR_WORKER_MIN_SLOTS: int = setting(0, "slots a worker.py keeps while little is due (0: all of them, a "
                                          "fixed pool); below RECUR_WORKER_CONCURRENCY, it adds more while every "
                                          "slot is busy and links wait, and stops those idle for "
                                          "RECUR_WORKER_SLOT_IDLE_SECONDS", at_least=0)
    RECUR_WORKER_SLOT_IDLE_SECONDS: float = setting(60.0, "a slot beyond RECUR_WORKER_MIN_SLOTS that has taken no "
                                                    "task for this long is stopped")
    RECUR_REDIS_TIMEOUT_SECONDS: float = setting(DEFAULT_REDIS_TIMEOUT_SECONDS,
                                                 "deadline of every Redis connect and reply")
    RECUR_TASK_MODULES: list[str] = setting([], "Python modules imported at start to register tasks "
                                            "(comma separated)")
    RECUR_SYNC_ON_START: bool = setting(False, "every worker.py syncs the declared schedules as it starts (once "
                                        "across workers starting together): flask declarations sync")
    RECUR_SYNC_OWNER: str | None = setting(None, "the owner declared schedules belong to and the audit trail "
                                           "names for the sync (unset: the first admin)")
    RECUR_RECONCILE_SECONDS: float = setting(5.0, "how often the workers reconcile Redis with the database")
    RECUR_RECONCILE_SWEEP_SECONDS: float = setting(
        3600.0, "how often a reconciliation reads every active schedule; the passes between read only those "
                "due within three periods. A Redis that lost its data is swept at once")
    RECUR_LEASE_SECONDS: float = setting(5.0, "how long a running link's lease lasts between renewals")
    RECUR_TIMEOUT_GRACE_SECONDS: float = setting(5.0, "how long past its timeout a task may run before it is "
                                                 "killed or written off")
    RECUR_MOVER_MAX_SLEEP: float = setting(0.2, "longest sleep of the due-link mover between looks")
    RECUR_LINK_RESULT_TTL: int = setting(60, "seconds RQ keeps a finished link's job hash and result (the "
                                         "database keeps its run); each costs Redis about 6.5 KB")
    RECUR_EXECUTION_LOG: str | None = setting(None, "a file each task body start appends a line to "
                                              "(recur_server.tasks.execution_log); for checks, off by default")
    RECUR_REQUEST_DEADLINE_SECONDS: float = setting(30.0, "a web request running longer is stopped (503 "
                                                    "request_timeout); one that cannot be stopped ends its process")
    RECUR_MAX_BODY_BYTES: int = setting(1024 * 1024, "a larger request body is refused with 413 before it "
                                        "is parsed")
    RECUR_MAX_APPLY_BODY_BYTES: int = setting(32 * 1024 * 1024, "RECUR_MAX_BODY_BYTES for an apply (POST "
                                              "/apply/, /apply/file/: up to 100,000 changes in one request)")
    RECUR_APPLY_DEADLINE_SECONDS: float = setting(300.0, "RECUR_REQUEST_DEADLINE_SECONDS for an apply")
    RECUR_MAX_PAYLOAD_BYTES: int = setting(64 * 1024, "the largest trigger_payload (compact JSON); larger is "
                                           "a 422")
    RECUR_METRICS_TOKEN: str | None = setting(None, "set: GET /metrics answers only `Authorization: Bearer "
                                              "<this>`; unset: open")
    RECUR_LOG_FORMAT: str = setting("text", "json: one JSON object per log line (infra.logs); anything else: "
                                    "plain text")
    RECUR_SECRET_KEY: str | None = setting(None, "signs the console's session cookie; unset: a key kept in "
                                           "Redis")
    RECUR_SECURE_COOKIES: bool = setting(True, "the console's cookie is Secure unless this is 0 (browsers "
                                         "take Secure cookies from http://localhost)")
    RECUR_WEBHOOK_ALLOW_HOSTS: str = setting("", "hosts webhooks may reach although they resolve to internal "
                                             "addresses (comma separated)")
    RECUR_WEBHOOK_EGRESS: str = setting("", "the only destinations webhooks may reach: hosts, .domains and CIDR "
                                        "ranges (comma separated); empty: any the address guard lets through")
    RECUR_WEBHOOK_TIMEOUT_SECONDS: float = setting(10.0, "deadline of one webhook delivery")
    RECUR_WEBHOOK_BACKOFF_SECONDS: float = setting(5.0, "the first wait before a webhook's next attempt "
                                                   "(doubling)")
    RECUR_WEBHOOK_BACKOFF_MAX_SECONDS: float = setting(3600.0, "the longest wait between a webhook's attempts")
    RECUR_WEBHOOK_CONCURRENCY: int = setting(8, "deliveries one process sends at once; one owner may hold at "
                                             "most half", at_least=1)
    RECUR_WATCH_SECONDS: float = setting(1.0, "how often every process looks for due deliveries, and how "
                                         "often one of them looks for late schedules")
    RECUR_OVERDUE_AFTER_SECONDS: float = setting(60.0, "an active schedule whose next run is past by more than "
                                                 "this is overdue (its alert_after_seconds, if set, instead)")
    RECUR_WORKER_GRACE_SECONDS: float = setting(15.0, "a worker whose last beat is older is gone; a queue with "
                                                "active schedules and no live worker makes health degraded")
    RECUR_MAX_SCHEDULES_PER_OWNER: int = setting(10_000, "schedules one owner may hold (services.quotas; an "
                                                 "admin may set another limit for one owner)", at_least=0)
    RECUR_MAX_WEBHOOKS_PER_OWNER: int = setting(50, "webhooks one owner may hold", at_least=0)
    RECUR_MAX_TOKENS_PER_OWNER: int = setting(100, "active (unrevoked, unexpired) tokens one owner may hold",
                                              at_least=0)
    RECUR_KEEP_RUNS_DAYS: int = setting(30, "days a run is kept (0: for ever)", at_least=0)
    RECUR_KEEP_RUNS_MIN: int = setting(100, "the newest runs of each schedule kept whatever their age",
                                       at_least=1)
    RECUR_RUN_OUTPUT_BYTES: int = setting(65536, "bytes kept of each of a run's captured output, log lines, "
                                          "traceback and return value (head and tail)", at_least=1024)
    RECUR_KEEP_EVENTS_DAYS: int = setting(7, "days webhook events and finished deliveries are kept (0: for "
                                          "ever)", at_least=0)
    RECUR_KEEP_AUDIT_DAYS: int = setting(365, "days the audit trail is kept (0: for ever)", at_least=0)
    RECUR_KEEP_BACKFILLS_DAYS: int = setting(30, "days a finished backfill is kept (0: for ever)", at_least=0)
    RECUR_PRUNE_SECONDS: float = setting(60.0, "how often the workers prune history past its retention (once "
                                         "per period across all workers)")
    RECUR_PRUNE_BATCH: int = setting(500, "rows one pruning statement deletes at most", at_least=1)
    RECUR_PRUNE_MAX_BATCHES: int = setting(50, "pruning statements per table per pass", at_least=1)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Every setting from `environ` (the process's environment by default); an unset or empty variable
        takes its default. Raises SettingError naming the variable whose value does not parse."""
        environ = os.environ if environ is None else environ
        types = get_type_hints(cls)
        values: dict[str, Any] = {}
        for each in fields(cls):
            raw = environ.get(each.name, "")
            if raw == "":
                continue
            value = _PARSERS[types[each.name]](each.name, raw)
            at_least = each.metadata["at_least"]
            values[each.name] = value if at_least is None else max(at_least, value)
        return cls(**values)

    def as_flask_config(self) -> dict[str, Any]:
        return flask_config(self)


def flask_config(settings: Settings, overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The app's config: the settings, then `overrides`, then the keys Flask and Flask-SQLAlchemy read under
    names of their own, derived from the settings unless `overrides` gives them."""
    values = {**settings.__dict__, **(overrides or {})}
    derived = {"SQLALCHEMY_DATABASE_URI": sqlalchemy_url(values["DATABASE_URL"]),
               "MAX_CONTENT_LENGTH": values["RECUR_MAX_BODY_BYTES"]}  # Flask's name for the 413 limit
    return {**values, **{key: value for key, value in derived.items() if key not in values}}


def _parse_int(name: str, raw: str) -> int:
    try:
        return int(raw)
    except ValueError:
        raise SettingError(f"{name} must be a whole number, got {raw!r}") from None


def _parse_float(name: str, raw: str) -> float:
    try:
        return float(raw)
    except ValueError:
        raise SettingError(f"{name} must be a number, got {raw!r}") from None


_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


def _parse_bool(name: str, raw: str) -> bool:
    word = raw.strip().lower()
    if word not in _TRUE + _FALSE:
        raise SettingError(f"{name} must be one of {', '.join(_TRUE + _FALSE)}, got {raw!r}")
    return word in _TRUE


def _parse_list(name: str, raw: str) -> list[str]:
    return [item.strip() for item in raw.split(",") if item.strip()]


_PARSERS: dict[Any, Callable[[str, str], Any]] = {
    int: _parse_int, float: _parse_float, bool: _parse_bool, list[str]: _parse_list,
    str: lambda name, raw: raw, str | None: lambda name, raw: raw,
}


_PSYCOPG = "postgresql+psycopg://"


def sqlalchemy_url(url: str) -> str:
    """DATABASE_URL as SQLAlchemy reads it: postgres:// and postgresql:// go to psycopg 3, and libpq's
    multi-host form (``postgresql://user@h1:5432,h2:5432/db?target_session_attrs=read-write``), which
    SQLAlchemy's URL parser cannot read, becomes the form its psycopg dialect takes for several hosts
    (``postgresql+psycopg://user@/db?host=h1,h2&port=5432,5432&target_session_attrs=read-write``): libpq
    then tries the hosts in order and keeps the first that fits target_session_attrs, at every new
    connection, so a process follows a failover to a promoted standby. Raises ValueError naming what is
    wrong in a malformed host list."""
    for prefix in ("postgres://", "postgresql://"):
        if url.startswith(prefix):
            url = _PSYCOPG + url[len(prefix):]
    if not url.startswith(_PSYCOPG):
        return url
    rest = url[len(_PSYCOPG):]
    cut = min((i for i in (rest.find("/"), rest.find("?")) if i >= 0), default=len(rest))
    authority, tail = rest[:cut], rest[cut:]
    userinfo, at, hostlist = authority.rpartition("@")
    if "," not in hostlist:
        return url
    path, _, query = tail.partition("?")
    names = {name for name, _ in parse_qsl(query, keep_blank_values=True)}
    if names & {"host", "port", "hostaddr"}:
        raise ValueError("DATABASE_URL names hosts both before the path and as host=/port= options: use one form")
    hosts, ports = zip(*(_host_port(item) for item in hostlist.split(",")), strict=True)
    options = [("host", ",".join(hosts))]
    if any(ports):
        options.append(("port", ",".join(ports)))
    encoded = urlencode(options, safe=":,")
    return f"{_PSYCOPG}{userinfo}{at}{path or '/'}?{encoded}" + (f"&{query}" if query else "")


def _host_port(item: str) -> tuple[str, str]:
    """One `host[:port]` of a libpq host list (`[::1]:5432` for an IPv6 address); the port may be empty."""
    if item.startswith("["):
        host, _, port = item[1:].partition("]")
        port = port.removeprefix(":")
    else:
        host, _, port = item.partition(":")
    if not host:
        raise ValueError(f"DATABASE_URL names an empty host in its host list ({item!r})")
    if port and not port.isdigit():
        raise ValueError(f"DATABASE_URL port must be a number, got {port!r}")
    return unquote(host), port
