from __future__ import annotations

import functools
import os
import shutil
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import fakeredis
import pytest
from flask import Flask
from hypothesis import settings
from redis import Redis

from harness import route_builders
from harness.databases import PostgresDatabases, SqliteDatabases
from harness.passes import either_pass_files, file_of, this_pass, uses_database
from harness.pgcluster import POSTGRES_BIN, PgServer, single_server
from harness.receiver import Receiver
from harness.servers import LOOPBACK_EGRESS, RedisServer, free_port, print_logs_if_failed
from harness.shards import shards
from harness.stack import Stack
from harness.tokens import authorized_client, token_for_app
from recur_server import create_app
from recur_server.infra import clock
from recur_server.infra.extensions import db
from recur_server.services.schema import ensure_schema

# RECUR_TEST_CPU_REPORT=FILE: each test's CPU seconds; RECUR_TEST_CLAIMS=DIR: the shards take files as they go
pytest_plugins = ["harness.cpu_report", "harness.claims"]

# The property tests draw the same examples on every run (a red CI is then a change, never a draw of the dice,
# and the suite's time does not depend on one); RECUR_HYPOTHESIS=explore draws new ones each run, to look for
# what those miss.
settings.register_profile("repeatable", derandomize=True, database=None)
settings.register_profile("explore")
settings.load_profile(os.environ.get("RECUR_HYPOTHESIS", "repeatable"))


class FakeClock:
    """Stands in for recur_server.infra.clock's wall clock so chain tests can step through time."""

    def __init__(self, start: datetime) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> datetime:
        self.now += timedelta(**delta)
        return self.now

    def set(self, instant: datetime) -> datetime:
        self.now = instant
        return instant


def pytest_configure(config: pytest.Config) -> None:
    """The apps this process makes (most tests make one) share werkzeug's compiled URL builders: 13 ms an app
    instead of 33 (harness/route_builders.py). Processes the tests start build their own."""
    route_builders.install()


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):  # type: ignore[no-untyped-def]
    """Keep each phase's report on the test item, so a fixture can tell in its teardown that the test failed."""
    outcome = yield
    report = outcome.get_result()
    setattr(item, f"report_{report.when}", report)


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """With RECUR_TEST_SHARD, a test file of another shard is not even imported (harness/shards.py places the
    files by name; one named on the command line is, and pytest_collection_modifyitems leaves it out)."""
    shard = _shard()
    if shard is None or not (collection_path.name.startswith("test_") and collection_path.suffix == ".py"):
        return None
    return _placement(shard[1])[collection_path.name] != shard[0] or None


@functools.cache
def _placement(count: int) -> dict[str, int]:
    files = [path.name for path in Path(__file__).parent.rglob("test_*.py")]
    return shards(files, count, this_pass())


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On the PostgreSQL pass (RECUR_TEST_POSTGRES set) run only the tests that use the database under test:
    the others (pure time and policy math, signing, Redis-only tests) already ran on the SQLite pass, and
    would run the same code again. A test that reaches the database by another way than the
    `database_url` (or `empty_database_url`) fixture says so with the `database` marker. With
    RECUR_TEST_SHARD, only this shard's test files. With RECUR_TEST_CLAIMS_EITHER, a file none of whose tests
    uses the database stays on the PostgreSQL pass too: either pass's shards may take it (harness/claims.py),
    and it runs once."""
    shard = _shard()
    either = either_pass_files(items) if os.environ.get("RECUR_TEST_CLAIMS_EITHER") else set()
    keep = [item for item in items if (_in_this_pass(item) or file_of(item) in either)
            and (shard is None or _placement(shard[1])[item.path.name] == shard[0])]
    if len(keep) < len(items):
        kept = set(map(id, keep))
        config.hook.pytest_deselected(items=[item for item in items if id(item) not in kept])
        items[:] = keep


def _in_this_pass(item: pytest.Item) -> bool:
    return uses_database(item) or not os.environ.get("RECUR_TEST_POSTGRES")


def _shard() -> tuple[int, int] | None:
    """RECUR_TEST_SHARD="i/n" (1 <= i <= n): this process runs shard i of the n of its pass's test files
    (harness/shards.py deals them out by their measured time), unless RECUR_TEST_CLAIMS is set too: the shards
    then take files as they go (harness/claims.py; scripts/test runs each pass as four shards so)."""
    value = os.environ.get("RECUR_TEST_SHARD", "")
    if not value or os.environ.get("RECUR_TEST_CLAIMS"):
        return None
    index, _, count = value.partition("/")
    if not (index.isdigit() and count.isdigit() and 1 <= int(index) <= int(count)):
        raise pytest.UsageError(f"RECUR_TEST_SHARD must be i/n with 1 <= i <= n, got {value!r}")
    return int(index) - 1, int(count)


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path_factory.mktemp("redis"))
    yield server
    server.stop()


@pytest.fixture(scope="session")
def databases(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SqliteDatabases | PostgresDatabases]:
    """Where each test's database comes from: SQLite files, or with RECUR_TEST_POSTGRES set (the URL of a
    PostgreSQL server, e.g. from scripts/pg-throwaway) databases on that server (harness/databases.py)."""
    server = os.environ.get("RECUR_TEST_POSTGRES")
    if not server:
        yield SqliteDatabases(tmp_path_factory.mktemp("schema"))
        return
    postgres = PostgresDatabases(server)
    yield postgres
    postgres.close()


@pytest.fixture
def database_url(tmp_path: Path, databases: SqliteDatabases | PostgresDatabases) -> Iterator[str]:
    """A database for one test alone, at the newest schema with nothing in it but what the migrations put
    there (the first admin), as `flask init-db` leaves it. Processes a test starts still run ensure_schema
    on it, which finds it current."""
    with databases.migrated(tmp_path / "test.db") as url:
        yield url


@pytest.fixture
def empty_database_url(tmp_path: Path, databases: SqliteDatabases | PostgresDatabases) -> Iterator[str]:
    """A new, empty database for one test: for the tests of the migrations and of `flask init-db`."""
    with databases.empty(tmp_path / "test.db") as url:
        yield url


def _make_app(database_url: str, redis: Redis, redis_url: str) -> Flask:
    app = create_app({
        "TESTING": True,
        "DATABASE_URL": database_url,
        "REDIS_URL": redis_url,
        "RECUR_TASK_MODULES": ["harness.jobs"],
        **LOOPBACK_EGRESS,
    })
    from recur_server.tasks import load_task_modules

    load_task_modules(["harness.jobs"])
    app.extensions["recur.redis"] = redis
    ensure_schema(app)
    return app


@pytest.fixture
def fake_redis() -> Redis:
    return fakeredis.FakeRedis()


@pytest.fixture
def app(database_url: str, fake_redis: Redis) -> Iterator[Flask]:
    """An app on a fresh database and fakeredis (with Lua), inside an app context."""
    app = _make_app(database_url, fake_redis, "redis://fake")
    with app.app_context():
        yield app
        db.session.remove()
        db.engine.dispose()


@pytest.fixture(params=["fakeredis", "redis-server"])
def chain_app(request: pytest.FixtureRequest, database_url: str) -> Iterator[Flask]:
    """For chain tests: the same test on fakeredis and on the session's real redis-server."""
    if request.param == "fakeredis":
        redis, url = fakeredis.FakeRedis(), "redis://fake"
    else:
        server: RedisServer = request.getfixturevalue("redis_server")
        redis, url = Redis.from_url(server.url), server.url
        redis.flushall()
    app = _make_app(database_url, redis, url)
    with app.app_context():
        yield app
        db.session.remove()
        db.engine.dispose()


@pytest.fixture
def real_app(database_url: str, redis_server: RedisServer) -> Iterator[Flask]:
    """An app on a fresh database and the session's real redis-server, flushed first."""
    redis = Redis.from_url(redis_server.url)
    redis.flushall()
    app = _make_app(database_url, redis, redis_server.url)
    with app.app_context():
        yield app
        db.session.remove()
        db.engine.dispose()


@pytest.fixture
def client(app: Flask):  # type: ignore[no-untyped-def]
    """A test client that calls as the first admin (owner 1, which the migrations create)."""
    return authorized_client(app, token_for_app(app))


@pytest.fixture
def fake_clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    fake = FakeClock(datetime(2026, 3, 2, 12, 0, 0, 250000, tzinfo=UTC))
    monkeypatch.setattr(clock, "utcnow", fake)
    return fake


@pytest.fixture
def postgres() -> Iterator[PgServer]:
    """A PostgreSQL server of the test's own, to restart, stop or stall (harness/pgcluster.py): never the
    database under test, which other tests share."""
    if POSTGRES_BIN is None:
        pytest.skip("PostgreSQL's server binaries are not installed")
    server = single_server()
    yield server
    server.destroy()


@pytest.fixture
def stack_env() -> dict[str, str]:
    """Environment variables (settings) the `stack` fixture sets for this process and every process it
    starts, besides Stack's own; a test module that needs others overrides this fixture."""
    return {}


@pytest.fixture
def stack(request: pytest.FixtureRequest, tmp_path: Path, redis_server: RedisServer, database_url: str,
          stack_env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Iterator[Stack]:
    """gunicorn (and the workers a test starts) on the session's redis-server, flushed first, and the test's
    database (harness/stack.py). The processes' logs go in a failure's report."""
    for name, value in stack_env.items():
        monkeypatch.setenv(name, value)
    Redis.from_url(redis_server.url).flushall()
    web_workers = request.node.get_closest_marker("web_workers")
    stack = Stack(tmp_path, redis_server, database_url, web_workers=web_workers.args[0] if web_workers else 1)
    yield stack
    stack.stop()
    log_lines = request.node.get_closest_marker("log_lines")
    print_logs_if_failed(request.node, tmp_path.glob("*.log"), *(log_lines.args if log_lines else ()))


@pytest.fixture
def pg_stack(request: pytest.FixtureRequest, tmp_path: Path, redis_server: RedisServer,
             postgres: PgServer) -> Iterator[Stack]:
    """gunicorn (and the workers a test starts) on the session's redis-server and the test's own PostgreSQL."""
    Redis.from_url(redis_server.url).flushall()
    stack = Stack(tmp_path, redis_server, postgres.url)
    yield stack
    stack.stop()
    print_logs_if_failed(request.node, tmp_path.glob("*.log"))
    if getattr(request.node, "report_call", None) is not None and request.node.report_call.failed:
        print("----- postgres\n" + postgres.log_tail())


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    """A webhook receiver (harness/receiver.py) on a free loopback port, for the test's webhooks to send to."""
    receiver = Receiver(free_port())
    receiver.start()
    yield receiver
    receiver.stop()


@pytest.fixture
def browser() -> Iterator[Any]:
    """Debian's Chromium, headless, driven by Playwright; the test is skipped where it is not installed. A test
    opens its own contexts (zone, viewport, JavaScript) on it: Stack.console_page signs one in."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("chromium is not installed (scripts/bootstrap installs Debian's chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        try:
            yield launched
        finally:
            launched.close()
