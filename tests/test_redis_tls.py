"""REDIS_URL=rediss://: the API and a worker.py run chains against a redis-server that speaks only TLS,
trusting a private CA named in the URL; without the CA the same URL is refused (the certificate is checked).
TLS through Sentinel (rediss+sentinel://) is in tests/test_sentinel.py."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from redis.exceptions import ConnectionError as RedisConnectionError

from harness.servers import RedisServer, Tls
from harness.stack import Stack, three_runs_to_done
from recur_server.infra.extensions import connect_redis

pytestmark = pytest.mark.integration


@pytest.fixture
def tls_redis(tmp_path: Path) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path, tls=Tls(tmp_path))
    yield server
    server.stop()


def test_the_api_and_a_worker_run_a_chain_over_tls(tmp_path: Path, tls_redis: RedisServer, database_url: str) -> None:
    assert tls_redis.url.startswith("rediss://")
    stack = Stack(tmp_path, tls_redis, database_url)
    try:
        three_runs_to_done(stack)
        assert all(process.alive() for process in [stack.web, *stack.workers])
    finally:
        stack.stop()


def test_a_server_certificate_the_client_does_not_trust_is_refused(tls_redis: RedisServer) -> None:
    assert connect_redis(tls_redis.url).ping()
    untrusting = tls_redis.url.partition("?")[0]  # the system's CAs only: ours is not among them
    with pytest.raises(RedisConnectionError, match="certificate verify failed"):
        connect_redis(untrusting).ping()
