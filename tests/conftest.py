from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import fakeredis
import pytest
from flask import Flask
from redis import Redis

from app import clock, create_app, ensure_schema
from app.extensions import db
from tests.servers import RedisServer


class FakeClock:
    """Stands in for app.clock's wall clock so chain tests can step through time."""

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


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path_factory.mktemp("redis"))
    yield server
    server.stop()


def _make_app(tmp_path: Path, redis: Redis, redis_url: str) -> Flask:
    app = create_app({
        "TESTING": True,
        "DATABASE_URL": f"sqlite:///{tmp_path / 'test.db'}",
        "REDIS_URL": redis_url,
        "RECUR_TASK_MODULES": ["tests.jobs"],
    })
    from app.tasks import load_task_modules

    load_task_modules(["tests.jobs"])
    app.extensions["recur.redis"] = redis
    ensure_schema(app)
    return app


@pytest.fixture
def fake_redis() -> Redis:
    return fakeredis.FakeRedis()


@pytest.fixture
def app(tmp_path: Path, fake_redis: Redis) -> Iterator[Flask]:
    """An app on a fresh SQLite file and fakeredis (with Lua), inside an app context."""
    app = _make_app(tmp_path, fake_redis, "redis://fake")
    with app.app_context():
        yield app
        db.session.remove()
        db.engine.dispose()


@pytest.fixture
def real_app(tmp_path: Path, redis_server: RedisServer) -> Iterator[Flask]:
    """An app on a fresh SQLite file and the session's real redis-server, flushed first."""
    redis = Redis.from_url(redis_server.url)
    redis.flushall()
    app = _make_app(tmp_path, redis, redis_server.url)
    with app.app_context():
        yield app
        db.session.remove()
        db.engine.dispose()


@pytest.fixture
def client(app: Flask):  # type: ignore[no-untyped-def]
    return app.test_client()


@pytest.fixture
def fake_clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    fake = FakeClock(datetime(2026, 3, 2, 12, 0, 0, 250000, tzinfo=UTC))
    monkeypatch.setattr(clock, "utcnow", fake)
    return fake
