"""Scenario 5: the REST API through the real WSGI server (gunicorn, as in the Procfile), one client
on a kept-alive connection; beside the same requests to the bare Flask + gunicorn floor."""

from __future__ import annotations

import http.client
import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from bench.stack import Bench, web
from bench.stats import percentile
from harness.servers import wait_for
from harness.tokens import token_for_env


class Client:
    def __init__(self, address: str, token: str = "", timeout: float = 30) -> None:
        self._headers = {"Content-Type": "application/json", "Authorization": f"Bearer {token}"}
        host, port = address.rsplit(":", 1)
        self._connection = http.client.HTTPConnection(host, int(port), timeout=timeout)

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, Any, float]:
        data = None if body is None else json.dumps(body)
        started = time.perf_counter()
        self._connection.request(method, path, body=data, headers=self._headers)
        response = self._connection.getresponse()
        raw = response.read()
        elapsed = time.perf_counter() - started
        return response.status, json.loads(raw) if raw else None, elapsed

    def close(self) -> None:
        self._connection.close()


def _ready(address: str, token: str = "") -> bool:
    try:
        client = Client(address, token)
        try:
            return client.call("GET", "/api/v1/schedules/?limit=1")[0] == 200
        finally:
            client.close()
    except OSError:
        return False


WARMUP = 20  # requests per endpoint not counted: each gunicorn thread's first request pays for imports


def _measure(address: str, requests: int, workflow_id: int, token: str = "") -> dict[str, Any]:
    client = Client(address, token)
    create: list[float] = []
    listing: list[float] = []
    try:
        for index in range(WARMUP):
            client.call("POST", "/api/v1/schedules/", {"name": f"warm-{index}", "workflow_id": workflow_id,
                                                        "interval_seconds": 3600})
            client.call("GET", "/api/v1/schedules/?limit=50")
        for index in range(requests):
            body = {"name": f"api-{index}", "workflow_id": workflow_id, "interval_seconds": 3600}
            status, payload, elapsed = client.call("POST", "/api/v1/schedules/", body)
            if status != 201:
                raise RuntimeError(f"create answered {status}: {payload}")
            create.append(elapsed)
        for _ in range(requests):
            status, payload, elapsed = client.call("GET", "/api/v1/schedules/?limit=50")
            if status != 200:
                raise RuntimeError(f"list answered {status}: {payload}")
            listing.append(elapsed)
    finally:
        client.close()
    def ms(values: list[float], pct: float) -> float:
        return round(percentile(values, pct) * 1000, 2)

    return {"requests": requests, "create_p50_ms": ms(create, 50), "create_p99_ms": ms(create, 99),
            "list_p50_ms": ms(listing, 50), "list_p99_ms": ms(listing, 99)}


@contextmanager
def serving(env: Any) -> Iterator[tuple[Any, str, str]]:
    """gunicorn as the Procfile starts it, on a Recur environment (bench.stack.RecurEnv), once it answers:
    its process, its address and a token of the first admin. Stopped afterwards."""
    token = token_for_env(env.env)
    process, address = web(env.env, env.directory / "web.log")
    try:
        wait_for(lambda: _ready(address, token) or not process.alive(), 60, interval=0.1, what="gunicorn")
        if not process.alive():
            raise RuntimeError(process.output()[-2000:])
        yield process, address, token
    finally:
        process.stop()


def recur(bench: Bench, requests: int) -> dict[str, Any]:
    env = bench.recur("api")
    try:
        with serving(env) as (_, address, token):
            client = Client(address, token)
            status, workflow, _ = client.call("POST", "/api/v1/workflows/", {"name": "noop", "task": "builtin.noop"})
            client.close()
            assert status == 201, workflow
            return _measure(address, requests, workflow["id"], token)
    finally:
        env.stop()


def floor(bench: Bench, requests: int) -> dict[str, Any]:
    process, address = web({}, bench.log("floor-web"), app="bench.floor_app:app")
    try:
        wait_for(lambda: _ready(address) or not process.alive(), 60, interval=0.1, what="gunicorn (floor)")
        return _measure(address, requests, 1)
    finally:
        process.stop()
