"""Scenario 8, history: Recur with a big run history behind it (ten million runs over 1,000 schedules, two
million behind one, inserted in bulk: bench/big_history.py) beside the same schedules with 1,000 runs in all.

Requests through gunicorn as in the Procfile, each timed against both databases in turn; a link's CPU with the
big history beside an empty database (bench/cpu.py); then pruning with one day of runs kept, under a steady load
of quick schedules (as in scenario 2): the pruner's rows per second, the load's lateness while it prunes, and
the database's size over time, until some time after the pruner has caught up."""

from __future__ import annotations

import http.client
import math
import re
import shutil
import sqlite3
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from prometheus_client import CollectorRegistry, multiprocess
from sqlalchemy import create_engine, text
from sqlalchemy.pool import NullPool

from bench.big_history import Group, Shape, insert_history, run_id, schedule_id
from bench.cpu import measure_links
from bench.lateness import SETUP_SECONDS, steady_due
from bench.stack import Bench, RecurEnv, utc, web
from bench.stats import lateness_summary, percentile
from harness.servers import Process, wait_for
from harness.tokens import token_for_env
from recur_server.infra import cursors
from recur_server.workers.background import PRUNED_KEY

# What a pruning pass keeps in this scenario: a day of runs (the history spans four weeks: most of it goes).
KEEP_RUNS_DAYS = 1
# A pass as soon as the last one ended (each worker's pruning thread looks this often), so the figures are the
# pruner's pace at the default batches (50 statements of 500 rows a pass) and the load meets it all the time.
PRUNE_SECONDS = 0.2
KEEP_RUNS_MIN = 10  # the default 100 keeps all of a --quick history; the full one keeps a day of each anyway
PAGE = 50


class Browser:
    """One kept-alive HTTP connection that sends an API token and keeps the console's session cookie."""

    def __init__(self, address: str, token: str) -> None:
        host, port = address.rsplit(":", 1)
        self._connection = http.client.HTTPConnection(host, int(port), timeout=60)
        self._token = token
        self._cookies: dict[str, str] = {}

    def call(self, method: str, path: str, form: dict[str, str] | None = None) -> tuple[int, bytes, float]:
        headers = {"Authorization": f"Bearer {self._token}"}
        if self._cookies:
            headers["Cookie"] = "; ".join(f"{name}={value}" for name, value in self._cookies.items())
        body = None
        if form is not None:
            body = urlencode(form)
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        started = time.perf_counter()
        self._connection.request(method, path, body=body, headers=headers)
        response = self._connection.getresponse()
        raw = response.read()
        elapsed = time.perf_counter() - started
        for header in response.headers.get_all("Set-Cookie") or []:
            name, _, value = header.split(";", 1)[0].partition("=")
            self._cookies[name.strip()] = value.strip()
        return response.status, raw, elapsed

    def sign_in(self) -> None:
        """Into the console with the token, as a browser's form does (the CSRF token read from the form)."""
        status, page, _ = self.call("GET", "/signin")
        found = re.search(rb'name="csrf_token" value="([^"]+)"', page)
        if status != 200 or found is None:
            raise RuntimeError(f"the sign-in form answered {status}")
        status, page, _ = self.call("POST", "/signin", {"token": self._token, "csrf_token": found.group(1).decode()})
        if status != 302:
            raise RuntimeError(f"signing in answered {status}: {page[:300]!r}")

    def close(self) -> None:
        self._connection.close()


def _deep_cursor(group: Group, end: datetime) -> str:
    """The cursor a client holds halfway back through the big schedule's history (built from that row, as the
    list would have written it after showing it)."""
    number = max(1, group.runs // 2)
    return cursors.encode(group.started(end, number), run_id(group.first, number))


def endpoints(shape: Shape, end: datetime) -> list[tuple[str, str, str]]:
    """(key, what it is, its path): the big schedule's reads, the lists, /metrics and health."""
    big = shape.groups()[0]
    runs = f"/api/v1/schedules/{schedule_id(big.first)}/runs/?limit={PAGE}"
    return [
        ("schedule_get", "API: GET the big schedule", f"/api/v1/schedules/{schedule_id(big.first)}/"),
        ("runs_first_page", f"API: its runs' first page ({PAGE})", runs),
        ("runs_deep_page", f"API: its runs {PAGE} halfway back (cursor)", f"{runs}&cursor={_deep_cursor(big, end)}"),
        ("schedules_list", f"API: schedules list ({PAGE})", f"/api/v1/schedules/?limit={PAGE}"),
        ("console_schedule", "console: the big schedule's page", f"/schedules/{schedule_id(big.first)}"),
        ("console_schedules", "console: schedules list", "/schedules"),
        ("metrics", "GET /metrics", "/metrics"),
        ("health", "GET /api/v1/health/", "/api/v1/health/"),
    ]


def build(bench: Bench, name: str, shape: Shape, end: datetime) -> tuple[RecurEnv, float]:
    """A Recur environment holding `shape`'s history: the environment and the seconds the insert took."""
    env = bench.recur(name)
    workflow = env.workflow()
    started = time.monotonic()
    insert_history(env, workflow, shape, end)
    if not env.database_url.startswith("sqlite"):
        # What autovacuum has long done to a table that grew over four weeks: its statistics, and the
        # visibility map that lets a read of an index skip the table.
        engine = create_engine(env.database_url, isolation_level="AUTOCOMMIT", poolclass=NullPool)
        with engine.connect() as connection:
            connection.execute(text("VACUUM ANALYZE"))
        engine.dispose()
    return env, round(time.monotonic() - started, 1)


def _serve(env: RecurEnv, name: str) -> tuple[Process, str, str]:
    token = token_for_env(env.env)
    process, address = web(env.env, env.directory / f"{name}.log")

    def ready() -> bool:
        if not process.alive():
            raise RuntimeError(process.output()[-2000:])
        try:
            browser = Browser(address, token)
            try:
                return browser.call("GET", "/api/v1/health/")[0] == 200
            finally:
                browser.close()
        except OSError:
            return False

    wait_for(ready, 60, interval=0.1, what="gunicorn")
    return process, address, token


def measure_requests(envs: dict[str, RecurEnv], paths: list[tuple[str, str, str]], requests: int,
                     warmup: int) -> dict[str, Any]:
    """p50/p99 of each path against each environment's gunicorn, the environments' requests interleaved one by
    one so that drift on the machine hits both alike."""
    served = {name: _serve(env, name) for name, env in envs.items()}
    browsers = {name: Browser(address, token) for name, (_, address, token) in served.items()}
    try:
        for browser in browsers.values():
            browser.sign_in()
        figures: dict[str, Any] = {}
        for key, label, path in paths:
            times: dict[str, list[float]] = {name: [] for name in envs}
            for index in range(warmup + requests):
                for name, browser in browsers.items():
                    status, body, elapsed = browser.call("GET", path)
                    if status != 200:
                        raise RuntimeError(f"{label} on {name} answered {status}: {body[:300]!r}")
                    if index >= warmup:
                        times[name].append(elapsed)
            figures[key] = {"label": label, **{name: {"p50_ms": round(percentile(values, 50) * 1000, 2),
                                                      "p99_ms": round(percentile(values, 99) * 1000, 2)}
                                               for name, values in times.items()}}
        return figures
    finally:
        for browser in browsers.values():
            browser.close()
        for process, _, _ in served.values():
            process.stop()


def database_size(env: RecurEnv) -> dict[str, int]:
    """SQLite: the file's pages as the database sees them (its write-ahead log folded in) and its free ones;
    PostgreSQL: pg_total_relation_size of runs (table, indexes, TOAST)."""
    if env.database_url.startswith("sqlite"):
        connection = sqlite3.connect(f"file:{env.db_path}?mode=ro", uri=True, timeout=30)
        try:
            size = connection.execute("PRAGMA page_size").fetchone()[0]
            pages = connection.execute("PRAGMA page_count").fetchone()[0]
            free = connection.execute("PRAGMA freelist_count").fetchone()[0]
        finally:
            connection.close()
        return {"bytes": pages * size, "free_bytes": free * size}
    return {"bytes": int(env.query("SELECT pg_total_relation_size('runs')")[0][0])}


def server_activity(env: RecurEnv) -> dict[str, Any]:
    """PostgreSQL only: what the server does beside the load at a sample, to read the lateness against: the
    phase of a vacuum of runs under way (autovacuum after the pruner's deletes), and the checkpoints so far."""
    if env.database_url.startswith("sqlite"):
        return {}
    vacuum = env.query("SELECT phase FROM pg_stat_progress_vacuum WHERE relid = 'runs'::regclass")
    checkpoints = env.query("SELECT checkpoints_timed + checkpoints_req FROM pg_stat_bgwriter")
    return {"vacuum": vacuum[0][0] if vacuum else None, "checkpoints": int(checkpoints[0][0])}


def _pruned(directory: Path) -> int:
    """Runs the workers' pruning passes deleted, from their own recur_pruned_rows_total."""
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry, path=str(directory))  # type: ignore[no-untyped-call]
    return int(registry.get_sample_value("recur_pruned_rows_total", {"table": "runs"}) or 0)


def _load_runs(env: RecurEnv, workflow: int) -> list[tuple[float, float]]:
    rows = env.query(f"SELECT r.scheduled_for, r.started_at FROM scheduled_jobs s JOIN runs r ON r.schedule_id = s.id "
                     f"WHERE s.workflow_id = {int(workflow)}")
    return [(_epoch(nominal), _epoch(started)) for nominal, started in rows]


def _epoch(stored: str | datetime) -> float:
    value = datetime.fromisoformat(stored) if isinstance(stored, str) else stored
    return (value if value.tzinfo else value.replace(tzinfo=UTC)).timestamp()


def measure_pruning(env: RecurEnv, shape: Shape, end: datetime, spec: dict[str, Any], workers: int) -> dict[str, Any]:
    """Workers that prune with one day of runs kept (passes back to back, the default batches) under a steady load;
    sampled until `spec["settle"]` seconds after the pruner has deleted what was past retention when it began
    (or `spec["limit"]` seconds in all)."""
    metrics_dir = env.directory / "prometheus"
    shutil.rmtree(metrics_dir, ignore_errors=True)
    metrics_dir.mkdir()
    env.env.update({"RECUR_KEEP_RUNS_DAYS": str(KEEP_RUNS_DAYS), "RECUR_KEEP_RUNS_MIN": str(KEEP_RUNS_MIN),
                    "RECUR_PRUNE_SECONDS": str(PRUNE_SECONDS), "PROMETHEUS_MULTIPROC_DIR": str(metrics_dir)})
    schedules, interval = spec["load"]
    before = database_size(env)
    workflow = env.workflow()
    # No pass until the load is under way: the cluster's "a pass just ended" mark holds the workers' pruning
    # threads back until then.
    redis = env.bench.redis
    redis.set(PRUNED_KEY, "bench", px=120_000)
    env.start_workers(workers, "default")
    start = math.ceil(time.time()) + SETUP_SECONDS
    due = steady_due(schedules, interval, start)
    env.insert_schedules(workflow, schedules, interval, lambda i: utc(due(i)))
    env.reconcile()
    redis.set(PRUNED_KEY, "bench", px=max(1, round((start - time.time()) * 1000)))
    time.sleep(max(0.0, start - time.time()))
    began = time.time()
    expected = shape.prunable(end, utc(began) - timedelta(days=KEEP_RUNS_DAYS), KEEP_RUNS_MIN)
    samples: list[dict[str, Any]] = []
    caught_up: float | None = None
    while True:
        now = time.time()
        pruned = _pruned(metrics_dir)
        samples.append({"seconds": round(now - began, 1), "pruned": pruned, **database_size(env),
                        **server_activity(env)})
        if caught_up is None and pruned >= expected:
            caught_up = now
        if (caught_up is not None and now - caught_up >= spec["settle"]) or now - began >= spec["limit"]:
            break
        time.sleep(spec["sample"])
    ended = time.time()
    for worker in env.workers:
        worker.stop()
    env.workers = []
    pairs = [(nominal, started) for nominal, started in _load_runs(env, workflow) if nominal >= start]
    pruning_end = caught_up or ended
    at_catch_up = next((s for s in samples if s["seconds"] >= round(pruning_end - began, 1)), samples[-1])
    new_runs = sum(1 for _, started in pairs if started >= pruning_end)
    pruned = samples[-1]["pruned"]
    return {
        "load": {"schedules": schedules, "interval": interval, "workers": workers},
        "keep_runs_days": KEEP_RUNS_DAYS, "expected": expected, "pruned": pruned,
        "caught_up": caught_up is not None,
        "caught_up_seconds": None if caught_up is None else round(caught_up - began, 1),
        "rows_per_second": round(at_catch_up["pruned"] / max(0.001, pruning_end - began)),
        "lateness_while_pruning": lateness_summary([p for p in pairs if p[0] < pruning_end]),
        "lateness_after": lateness_summary([p for p in pairs if p[0] >= pruning_end]),
        "size_before": before, "size_at_catch_up": {k: v for k, v in at_catch_up.items() if k.endswith("bytes")},
        "size_end": {k: v for k, v in samples[-1].items() if k.endswith("bytes")},
        "growth_after_bytes": samples[-1]["bytes"] - at_catch_up["bytes"],
        "new_runs_after": new_runs,
        # What the runs written after the catch-up would take at the history's bytes per run, had they grown
        # the database instead of reusing what the pruner freed.
        "new_runs_after_bytes": round(new_runs * before["bytes"] / max(1, shape.total)),
        "seconds": round(ended - began, 1),
        # The load's lateness between each sample and the one before it, to set beside what the sample saw.
        "samples": [{**sample, "lateness": lateness_summary(
            [p for p in pairs if began + previous["seconds"] <= p[0] < began + sample["seconds"]])}
            for previous, sample in zip([{"seconds": 0.0}, *samples], samples, strict=False)],
    }


CONSOLE_PAGE = 25  # schedules on the console's first page (recur_server.console.views.PAGE)
CONSOLE_STRIP = 20  # runs in each of their strips (recur_server.console.views.STRIP)


def recur(bench: Bench, spec: dict[str, Any], workers: int, say: Callable[[str], None]) -> dict[str, Any]:
    big_shape = Shape(spec["runs"], spec["schedules"], spec["big"])
    # The small history: its runs where the measured pages read them, so that each page does the same work
    # as over the big one and only the history behind it differs: the console's first page of schedules with
    # full strips of runs (25 of STRIP), schedule 0 with what is left for its own page and stats.
    full = min(CONSOLE_PAGE, spec["schedules"] - 1)
    full_runs = min(CONSOLE_STRIP, spec["small"] // (2 * max(1, full)))
    big_of_small = max(1, spec["small"] - full * full_runs - spec["small"] // 10)
    small_shape = Shape(spec["small"], spec["schedules"], big_of_small, full, full_runs)
    end = utc(time.time()).replace(microsecond=0) - timedelta(minutes=1)
    result: dict[str, Any] = {"runs": big_shape.total, "schedules": big_shape.schedules, "big": big_shape.big,
                              "small": small_shape.total}
    small, result["small_insert_seconds"] = build(bench, "history-small", small_shape, end)
    say(f"  small history ({small_shape.total:,} runs) in {result['small_insert_seconds']} s")
    envs: list[RecurEnv] = [small]
    try:
        big, result["insert_seconds"] = build(bench, "history-big", big_shape, end)
        envs.append(big)
        result["size_bytes"] = database_size(big)["bytes"]
        say(f"  big history ({big_shape.total:,} runs) in {result['insert_seconds']} s, "
            f"{result['size_bytes'] / 1e6:,.0f} MB")
        paths = endpoints(big_shape, end)
        result["requests"] = measure_requests({"small": small, "big": big}, paths, spec["requests"], spec["warmup"])
        say(f"  requests: {result['requests']}")
        empty = bench.recur("history-empty")
        envs.append(empty)
        result["cpu"] = {"empty": measure_links(empty, workers, spec["links"])}
        empty.stop()
        result["cpu"]["big"] = measure_links(big, workers, spec["links"])
        say(f"  link CPU: {result['cpu']}")
        result["prune"] = measure_pruning(big, big_shape, end, spec, workers)
    finally:
        for env in envs:
            env.stop()
    return result
