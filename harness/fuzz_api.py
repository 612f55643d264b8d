"""Driving the API under fuzz: how many examples a run draws, the schedules it starts from, how a path,
query string and body are encoded, and the contract each response is checked against (no 5xx, every 4xx in
the API's error shape), with every breach collected and reported together."""

from __future__ import annotations

import json
import logging
import os
from collections import Counter
from typing import Any
from urllib.parse import quote, urlencode

from hypothesis import HealthCheck, settings

from recur_server.infra.extensions import db

EXAMPLES = int(os.environ.get("RECUR_FUZZ_EXAMPLES") or 0)


def settings_for(default_examples: int) -> settings:
    """A fuzz test's settings: `default_examples`, derandomized, unless RECUR_FUZZ_EXAMPLES asks for more."""
    return settings(
        max_examples=EXAMPLES or default_examples,
        deadline=None,
        derandomize=not EXAMPLES,  # the default run is reproducible; a long run explores new ground
        database=None,
        suppress_health_check=list(HealthCheck),
    )


class Failures:
    """Every response that breaks the contract, with the exception the server logged for it."""

    def __init__(self) -> None:
        self.items: list[tuple[str, int, str, str]] = []
        self.requests = 0
        self.statuses: Counter[tuple[str, int]] = Counter()
        self._exceptions: list[str] = []
        self._handler = _Collect(self._exceptions)

    def __enter__(self) -> Failures:
        logging.getLogger("recur_server.api.errors").addHandler(self._handler)
        return self

    def __exit__(self, *exc: object) -> None:
        logging.getLogger("recur_server.api.errors").removeHandler(self._handler)

    def check(self, route: str, response: Any, sent: str) -> None:
        # In production each request ends its app context and with it the database session; the test
        # client runs every request inside the test's one app context, so end the session here instead.
        db.session.remove()
        self.requests += 1
        status = response.status_code
        self.statuses[(route, status)] += 1
        thrown = self._exceptions.pop() if self._exceptions else ""
        self._exceptions.clear()
        if status >= 500:
            self.items.append((route, status, thrown, sent))
        elif status >= 400 and response.request.method != "HEAD":
            body = response.get_json(silent=True)
            if not (isinstance(body, dict) and set(body) == {"code", "status", "message", "errors"}
                    and body["status"] == status):
                self.items.append((route, status, "bad error shape", sent))

    def report(self) -> str:
        by_kind = Counter((route, status, thrown) for route, status, thrown, _ in self.items)
        by_status = Counter(status for (_, status), n in self.statuses.items() for _ in range(n))
        lines = [f"{len(self.items)} of {self.requests} requests broke the contract "
                 f"(all responses by status: {dict(sorted(by_status.items()))}):"]
        lines += [f"  {n:5d}  {status} {route}  {thrown}" for (route, status, thrown), n in by_kind.most_common()]
        seen: set[tuple[str, str]] = set()
        for route, _, thrown, sent in self.items:
            if (route, thrown) not in seen:
                seen.add((route, thrown))
                lines.append(f"  e.g. {route} {thrown}: {sent[:300]}")
        return "\n".join(lines)


class _Collect(logging.Handler):
    def __init__(self, sink: list[str]) -> None:
        super().__init__()
        self.sink = sink

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info and record.exc_info[0] is not None:
            self.sink.append(f"{record.exc_info[0].__name__}: {str(record.exc_info[1])[:120]}")


def path_segment(text: str) -> str:
    """Percent-encode as UTF-8; a lone surrogate goes out as the bytes a client could send (ED A0 80)."""
    return quote(text, safe="", errors="surrogatepass")


def query_string(query: dict[str, str]) -> str:
    return urlencode(query, errors="surrogatepass")


def json_body(body: Any) -> bytes:
    return json.dumps(body).encode()  # ensure_ascii: lone surrogates travel as \ud800 escapes, as JSON allows


def seed_schedules(client: Any) -> tuple[int, list[str]]:
    """A workflow and one schedule of each kind (one paused), for the id-taking endpoints to find."""
    workflow_id = client.post("/api/v1/workflows/", json={"name": "wf", "task": "builtin.noop"}).json["id"]
    ids = []
    for timing in ({"interval_seconds": 60}, {"cron": "0 9 * * *"}, {"rrule": "FREQ=WEEKLY"},
                   {"after_seconds": 3600}, {"every": "1h", "only_between": "08:00-18:00", "not_on": ["sat"]}):
        response = client.post("/api/v1/schedules/", json={"name": "seed", "workflow_id": workflow_id, **timing})
        assert response.status_code == 201, response.json
        ids.append(response.json["id"])
    client.post(f"/api/v1/schedules/{ids[0]}/pause/")
    return workflow_id, ids


def remember_created(ids: list[str], response: Any) -> None:
    if response.status_code == 201 and isinstance(response.json, dict) and "id" in response.json:
        ids.append(str(response.json["id"]))
