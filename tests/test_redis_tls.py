"""REDIS_URL=rediss://: the API and a worker.py run chains against a redis-server that speaks only TLS,
trusting a private CA named in the URL; without the CA the same URL is refused (the certificate is checked).
TLS through Sentinel (rediss+sentinel://) is in tests/test_sentinel.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from redis.exceptions import ConnectionError as RedisConnectionError

from app.extensions import connect_redis
from tests.servers import RedisServer, Tls, wait_for
from tests.test_integration import Stack

pytestmark = pytest.mark.integration


@pytest.fixture
def tls_redis(tmp_path: Path) -> RedisServer:
    server = RedisServer(tmp_path, tls=Tls(tmp_path))
    yield server
    server.stop()


def test_the_api_and_a_worker_run_a_chain_over_tls(tmp_path: Path, tls_redis: RedisServer, database_url: str) -> None:
    assert tls_redis.url.startswith("rediss://")
    stack = Stack(tmp_path, tls_redis, database_url)
    try:
        stack.start_worker()
        stack.wait_workers_ready()
        workflow = stack.api.ok("POST", "/api/v1/workflows/", {"name": "noop", "task": "builtin.noop"})
        schedule = stack.api.ok("POST", "/api/v1/schedules/", {
            "name": "three", "workflow_id": workflow["id"], "interval_seconds": 1, "total_repeats": 3,
        })
        wait_for(lambda: stack.api.ok("GET", f"/api/v1/schedules/{schedule['id']}/")["status"] == "done", 30,
                 what="the schedule to reach done over TLS")
        runs = stack.api.runs(schedule["id"])
        assert sorted((r["repeat_number"], r["status"]) for r in runs) == [
            (0, "succeeded"), (1, "succeeded"), (2, "succeeded")]
        assert all(process.alive() for process in [stack.web, *stack.workers])
    finally:
        stack.stop()


def test_a_server_certificate_the_client_does_not_trust_is_refused(tls_redis: RedisServer) -> None:
    assert connect_redis(tls_redis.url).ping()
    untrusting = tls_redis.url.partition("?")[0]  # the system's CAs only: ours is not among them
    with pytest.raises(RedisConnectionError, match="certificate verify failed"):
        connect_redis(untrusting).ping()
