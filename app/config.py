"""Settings, read from the environment in one place."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qsl, unquote, urlencode

INSTANCE_DIR = Path(__file__).resolve().parent.parent / "instance"


def _int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    return default if raw in (None, "") else int(raw)


def _float(name: str, default: float) -> float:
    raw = os.environ.get(name)
    return default if raw in (None, "") else float(raw)


# How long any Redis call waits for a connection or a reply (RECUR_REDIS_TIMEOUT_SECONDS): a Redis that stops
# answering is then a prompt 503 redis_unavailable, not a request that hangs.
DEFAULT_REDIS_TIMEOUT_SECONDS = 2.0


@dataclass
class Settings:
    REDIS_URL: str = "redis://localhost:6379/0"
    DATABASE_URL: str = f"sqlite:///{INSTANCE_DIR / 'recur.db'}"
    RECUR_QUEUE: str = "recur"
    RECUR_REDIS_TIMEOUT_SECONDS: float = DEFAULT_REDIS_TIMEOUT_SECONDS
    RECUR_TASK_MODULES: list[str] = field(default_factory=list)
    RECUR_RECONCILE_SECONDS: float = 5.0
    RECUR_LEASE_SECONDS: float = 5.0
    RECUR_TIMEOUT_GRACE_SECONDS: float = 5.0
    RECUR_MOVER_MAX_SLEEP: float = 0.2
    RECUR_LINK_RESULT_TTL: int = 300
    # A file to append a line to as each task body starts (app.tasks.execution_log); for checks, off by default.
    RECUR_EXECUTION_LOG: str | None = None
    # Request limits: a larger body is refused with 413 before it is parsed; a schedule's trigger_payload,
    # stored in every schedule row and handed to every run, has a limit of its own (422 beyond it).
    RECUR_MAX_BODY_BYTES: int = 1024 * 1024
    RECUR_MAX_PAYLOAD_BYTES: int = 64 * 1024
    # GET /metrics answers only `Authorization: Bearer <this>` when set; open when unset.
    RECUR_METRICS_TOKEN: str | None = None
    # "json": every process logs one JSON object per line (app.logs); anything else: plain text.
    RECUR_LOG_FORMAT: str = "text"
    # The console's session cookie: signed with RECUR_SECRET_KEY (or a key kept in Redis when unset), and
    # Secure unless RECUR_SECURE_COOKIES=0 (browsers accept Secure cookies from http://localhost).
    RECUR_SECRET_KEY: str | None = None
    RECUR_SECURE_COOKIES: bool = True
    # Webhooks (app.notify): hosts allowed although they resolve to internal addresses (comma separated),
    # the timeout of one delivery, and the backoff between attempts (doubling from BACKOFF up to MAX).
    RECUR_WEBHOOK_ALLOW_HOSTS: str = ""
    RECUR_WEBHOOK_TIMEOUT_SECONDS: float = 10.0
    RECUR_WEBHOOK_BACKOFF_SECONDS: float = 5.0
    RECUR_WEBHOOK_BACKOFF_MAX_SECONDS: float = 3600.0
    # How many deliveries one process sends at once; one owner may hold at most half of them.
    RECUR_WEBHOOK_CONCURRENCY: int = 8
    # How often every process looks for due deliveries and (one process at a time) for late schedules.
    RECUR_WATCH_SECONDS: float = 1.0
    # Per-owner quotas (app.auth.quotas): schedules, webhooks and active (unrevoked, unexpired) tokens one owner
    # may hold; an admin may set another limit for one owner (PATCH /api/v1/owners/{id}/).
    RECUR_MAX_SCHEDULES_PER_OWNER: int = 10_000
    RECUR_MAX_WEBHOOKS_PER_OWNER: int = 50
    RECUR_MAX_TOKENS_PER_OWNER: int = 100
    # Retention (app.retention, app.policies.retention): days each history is kept (0: for ever), the newest
    # runs of each schedule kept whatever their age, and the background pruning pass: how often (once per
    # period across all workers), rows per statement, and statements per table per pass.
    RECUR_KEEP_RUNS_DAYS: int = 30
    RECUR_KEEP_RUNS_MIN: int = 100
    RECUR_KEEP_EVENTS_DAYS: int = 7
    RECUR_KEEP_AUDIT_DAYS: int = 365
    RECUR_KEEP_BACKFILLS_DAYS: int = 30
    RECUR_PRUNE_SECONDS: float = 60.0
    RECUR_PRUNE_BATCH: int = 500
    RECUR_PRUNE_MAX_BATCHES: int = 50

    @classmethod
    def from_env(cls) -> Settings:
        defaults = cls()
        modules = os.environ.get("RECUR_TASK_MODULES", "")
        return cls(
            REDIS_URL=os.environ.get("REDIS_URL") or defaults.REDIS_URL,
            DATABASE_URL=os.environ.get("DATABASE_URL") or defaults.DATABASE_URL,
            RECUR_QUEUE=os.environ.get("RECUR_QUEUE") or defaults.RECUR_QUEUE,
            RECUR_REDIS_TIMEOUT_SECONDS=_float("RECUR_REDIS_TIMEOUT_SECONDS", defaults.RECUR_REDIS_TIMEOUT_SECONDS),
            RECUR_TASK_MODULES=[m.strip() for m in modules.split(",") if m.strip()],
            RECUR_RECONCILE_SECONDS=_float("RECUR_RECONCILE_SECONDS", defaults.RECUR_RECONCILE_SECONDS),
            RECUR_LEASE_SECONDS=_float("RECUR_LEASE_SECONDS", defaults.RECUR_LEASE_SECONDS),
            RECUR_TIMEOUT_GRACE_SECONDS=_float("RECUR_TIMEOUT_GRACE_SECONDS", defaults.RECUR_TIMEOUT_GRACE_SECONDS),
            RECUR_MOVER_MAX_SLEEP=_float("RECUR_MOVER_MAX_SLEEP", defaults.RECUR_MOVER_MAX_SLEEP),
            RECUR_LINK_RESULT_TTL=_int("RECUR_LINK_RESULT_TTL", defaults.RECUR_LINK_RESULT_TTL),
            RECUR_EXECUTION_LOG=os.environ.get("RECUR_EXECUTION_LOG") or None,
            RECUR_MAX_BODY_BYTES=_int("RECUR_MAX_BODY_BYTES", defaults.RECUR_MAX_BODY_BYTES),
            RECUR_MAX_PAYLOAD_BYTES=_int("RECUR_MAX_PAYLOAD_BYTES", defaults.RECUR_MAX_PAYLOAD_BYTES),
            RECUR_METRICS_TOKEN=os.environ.get("RECUR_METRICS_TOKEN") or None,
            RECUR_LOG_FORMAT=os.environ.get("RECUR_LOG_FORMAT") or defaults.RECUR_LOG_FORMAT,
            RECUR_SECRET_KEY=os.environ.get("RECUR_SECRET_KEY") or None,
            RECUR_SECURE_COOKIES=os.environ.get("RECUR_SECURE_COOKIES", "1").strip().lower()
            not in ("0", "false", "no", "off"),
            RECUR_WEBHOOK_ALLOW_HOSTS=os.environ.get("RECUR_WEBHOOK_ALLOW_HOSTS", ""),
            RECUR_WEBHOOK_TIMEOUT_SECONDS=_float("RECUR_WEBHOOK_TIMEOUT_SECONDS",
                                                 defaults.RECUR_WEBHOOK_TIMEOUT_SECONDS),
            RECUR_WEBHOOK_BACKOFF_SECONDS=_float("RECUR_WEBHOOK_BACKOFF_SECONDS",
                                                 defaults.RECUR_WEBHOOK_BACKOFF_SECONDS),
            RECUR_WEBHOOK_BACKOFF_MAX_SECONDS=_float("RECUR_WEBHOOK_BACKOFF_MAX_SECONDS",
                                                     defaults.RECUR_WEBHOOK_BACKOFF_MAX_SECONDS),
            RECUR_WEBHOOK_CONCURRENCY=max(1, _int("RECUR_WEBHOOK_CONCURRENCY", defaults.RECUR_WEBHOOK_CONCURRENCY)),
            RECUR_WATCH_SECONDS=_float("RECUR_WATCH_SECONDS", defaults.RECUR_WATCH_SECONDS),
            RECUR_MAX_SCHEDULES_PER_OWNER=max(0, _int("RECUR_MAX_SCHEDULES_PER_OWNER",
                                                      defaults.RECUR_MAX_SCHEDULES_PER_OWNER)),
            RECUR_MAX_WEBHOOKS_PER_OWNER=max(0, _int("RECUR_MAX_WEBHOOKS_PER_OWNER",
                                                     defaults.RECUR_MAX_WEBHOOKS_PER_OWNER)),
            RECUR_MAX_TOKENS_PER_OWNER=max(0, _int("RECUR_MAX_TOKENS_PER_OWNER", defaults.RECUR_MAX_TOKENS_PER_OWNER)),
            RECUR_KEEP_RUNS_DAYS=max(0, _int("RECUR_KEEP_RUNS_DAYS", defaults.RECUR_KEEP_RUNS_DAYS)),
            RECUR_KEEP_RUNS_MIN=max(1, _int("RECUR_KEEP_RUNS_MIN", defaults.RECUR_KEEP_RUNS_MIN)),
            RECUR_KEEP_EVENTS_DAYS=max(0, _int("RECUR_KEEP_EVENTS_DAYS", defaults.RECUR_KEEP_EVENTS_DAYS)),
            RECUR_KEEP_AUDIT_DAYS=max(0, _int("RECUR_KEEP_AUDIT_DAYS", defaults.RECUR_KEEP_AUDIT_DAYS)),
            RECUR_KEEP_BACKFILLS_DAYS=max(0, _int("RECUR_KEEP_BACKFILLS_DAYS", defaults.RECUR_KEEP_BACKFILLS_DAYS)),
            RECUR_PRUNE_SECONDS=_float("RECUR_PRUNE_SECONDS", defaults.RECUR_PRUNE_SECONDS),
            RECUR_PRUNE_BATCH=max(1, _int("RECUR_PRUNE_BATCH", defaults.RECUR_PRUNE_BATCH)),
            RECUR_PRUNE_MAX_BATCHES=max(1, _int("RECUR_PRUNE_MAX_BATCHES", defaults.RECUR_PRUNE_MAX_BATCHES)),
        )

    def as_flask_config(self) -> dict[str, object]:
        return {**self.__dict__, "SQLALCHEMY_DATABASE_URI": sqlalchemy_url(self.DATABASE_URL),
                "MAX_CONTENT_LENGTH": self.RECUR_MAX_BODY_BYTES}


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
