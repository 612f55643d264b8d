"""The real-process stack end-to-end tests drive: gunicorn serving the API and the worker.py processes a test
starts, on a real redis-server and the test's database, reached through `Api` as any HTTP client would.
The `stack` fixture (tests/conftest.py) makes one per test."""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from datetime import datetime
from pathlib import Path
from typing import Any

from harness.servers import ROOT, Process, RedisServer, serve_web, start_worker, wait_for
from harness.tokens import token_for_env

# Settings that make webhooks reach loopback receivers and be retried and watched quickly, for the stacks of
# the webhook tests (their `stack_env` fixture).
QUICK_WEBHOOKS = {"RECUR_WEBHOOK_ALLOW_HOSTS": "127.0.0.1", "RECUR_WEBHOOK_BACKOFF_SECONDS": "0.5",
                  "RECUR_WEBHOOK_BACKOFF_MAX_SECONDS": "2", "RECUR_WATCH_SECONDS": "0.5",
                  "RECUR_WEBHOOK_TIMEOUT_SECONDS": "2"}


def parse_instant(instant: str) -> datetime:
    """An instant as the API writes it (ISO 8601, `Z` for UTC)."""
    return datetime.fromisoformat(instant.replace("Z", "+00:00"))


class Api:
    """The API at `base`, called with `token`, as any HTTP client would."""

    def __init__(self, base: str, token: str) -> None:
        self.base = base
        self.token = token

    def call(self, method: str, path: str, body: Any = None,
             headers: dict[str, str] | None = None) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.base + path, data=data, method=method,
                                         headers={"Content-Type": "application/json",
                                                  "Authorization": f"Bearer {self.token}", **(headers or {})})
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                raw = response.read()
                return response.status, json.loads(raw) if raw else None
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read() or b"null")

    def ok(self, method: str, path: str, body: Any = None) -> Any:
        status, payload = self.call(method, path, body)
        assert status < 300, (method, path, status, payload)
        return payload

    def runs(self, schedule_id: str) -> list[dict[str, Any]]:
        return self.ok("GET", f"/api/v1/schedules/{schedule_id}/runs/?limit=1000")["items"]

    def answers(self) -> bool:
        """Whether the server answers an authorized request; refused (a server not listening yet) is no."""
        try:
            return self.call("GET", "/api/v1/workflows/")[0] == 200
        except OSError:
            return False


def serve_api(env: dict[str, str], log_path: Path, token: str | None = None,
              cwd: Path = ROOT, workers: int = 1) -> tuple[Process, Api]:
    """gunicorn on `env` (harness.servers.serve_web), once it answers an authorized request, and its API called
    with `token` (a new admin token on `env`'s database when none is given)."""
    token = token or token_for_env(env)
    web, port = serve_web(env, log_path, lambda port: Api(f"http://127.0.0.1:{port}", token).answers(), cwd=cwd,
                          workers=workers)
    return web, Api(f"http://127.0.0.1:{port}", token)


class Stack:
    """gunicorn on `redis` and `database_url`, with an admin token, and the workers a test starts. `env`
    is what every process started gets besides this process's environment; a test may add to it before it
    starts a worker."""

    def __init__(self, tmp_path: Path, redis: RedisServer, database_url: str, cwd: Path = ROOT,
                 web_workers: int = 1) -> None:
        self.tmp_path = tmp_path
        self.cwd = cwd  # the checkout the processes run from
        self.database_url = database_url
        self.env = {
            "DATABASE_URL": database_url,
            "REDIS_URL": redis.url,
            "RECUR_RECONCILE_SECONDS": "1",
            "RECUR_LEASE_SECONDS": "3",
        }
        self.web, self.api = serve_api(self.env, tmp_path / "web.log", cwd=cwd, workers=web_workers)
        self.workers: list[Process] = []

    def start_worker(self, *extra: str, slots: int | None = 1) -> Process:
        """A worker.py with `extra` arguments (a mode: --fork, --simple) and `slots` slots (None: the worker's
        default, four, as the Procfile starts it). One unless the test asks for more (here or with
        --concurrency in `extra`): each slot is an RQ worker forked and registered as the worker starts, and
        a test that runs one task at a time waits for slots it never uses."""
        slots = None if "--concurrency" in extra else slots
        worker = start_worker(self.env, self.tmp_path / f"worker{len(self.workers)}.log", *extra, slots=slots,
                              cwd=self.cwd)
        self.workers.append(worker)
        return worker

    def wait_workers_ready(self, timeout: float = 60) -> None:
        """Until every worker started so far listens on its queues with every slot it starts with: on a loaded
        machine a worker takes seconds to start, ticks that come due before any worker listens are (rightly)
        missed, and a slot still starting when a test stops Redis dies on the refused connection."""
        for worker in self.workers:
            wait_for(lambda w=worker: _all_slots_listen(w.output()), timeout, what="a worker's slots to start")

    def console_page(self, browser: Any, **context: Any) -> Any:
        """A page of a new context of a Playwright `browser` (New York's zone; `context` adds options such as
        viewport or java_script_enabled), signed in to the console with the stack's token."""
        page = browser.new_context(timezone_id="America/New_York", **context).new_page()
        page.goto(self.api.base + "/signin")
        page.fill("#token", self.api.token)
        page.click("button[type=submit]")
        page.wait_for_url(self.api.base + "/schedules")
        return page

    def stop(self) -> None:
        for process in [*self.workers, self.web]:
            process.stop()


def three_runs_to_done(stack: Stack) -> list[dict[str, Any]]:
    """Start a worker, run a three-repeat one-second no-op schedule to done through the API; its runs."""
    stack.start_worker()
    stack.wait_workers_ready()
    workflow = stack.api.ok("POST", "/api/v1/workflows/", {"name": "noop", "task": "builtin.noop"})
    schedule = stack.api.ok("POST", "/api/v1/schedules/", {
        "name": "three", "workflow_id": workflow["id"], "interval_seconds": 1, "total_repeats": 3,
    })
    wait_for(lambda: stack.api.ok("GET", f"/api/v1/schedules/{schedule['id']}/")["status"] == "done", 30,
             what="the schedule to reach done")
    runs: list[dict[str, Any]] = stack.api.runs(schedule["id"])
    assert sorted((r["repeat_number"], r["retry_number"], r["status"]) for r in runs) == [
        (0, 0, "succeeded"), (1, 0, "succeeded"), (2, 0, "succeeded")]
    return runs


def _all_slots_listen(output: str) -> bool:
    """Whether a worker's log shows each slot it starts with listening (one RQ worker's "Listening on" line a
    slot; a worker of one slot logs no slot count)."""
    slots = re.search(r"runs (\d+) to \d+ slots", output)
    return output.count("Listening on") >= (int(slots.group(1)) if slots else 1)
