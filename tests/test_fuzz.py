"""Property-based fuzz of the whole HTTP surface: no request, however malformed, gets a 5xx.

Bodies, query strings and path segments are drawn by hypothesis (random JSON plus targeted values: huge
and negative integers, floats, NUL bytes, lone surrogates, deep nesting, far dates with offsets, wrong types
for every known field) and sent to every endpoint and verb through Flask's test client, on SQLite or on
PostgreSQL (RECUR_TEST_POSTGRES). Every response must be < 500 and every 4xx must have the API's error shape.

Each test collects all bad responses and reports them together (counts by endpoint and exception), rather
than stopping at the first; set RECUR_FUZZ_EXAMPLES to run more examples per test (default: a run of a
minute or so on SQLite).
"""

from __future__ import annotations

import json
import logging
import os
import uuid
from collections import Counter
from datetime import UTC, datetime, timedelta, timezone
from typing import Any
from urllib.parse import quote, urlencode

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.infra.extensions import db

EXAMPLES = int(os.environ.get("RECUR_FUZZ_EXAMPLES") or 0)


def _settings(default_examples: int) -> settings:
    return settings(
        max_examples=EXAMPLES or default_examples,
        deadline=None,
        derandomize=not EXAMPLES,  # the default run is reproducible; a long run explores new ground
        database=None,
        suppress_health_check=list(HealthCheck),
    )


# --- values ------------------------------------------------------------------------------------------

HUGE_INTS = [2**31 - 1, 2**31, 2**32, 2**53 + 1, 2**63 - 1, 2**63, 2**64, 10**12, 10**30, -1, -(2**31) - 1,
             -(2**63) - 1, 0]
NASTY_STRINGS = [
    "", " ", "\x00", "a\x00b", "\ud800", "x\udfffy", "\ud83d", "\U0001f600", "é", "\u202e", "null", "0", "-1",
    "1e309", "NaN", "%00", "../../etc", "a" * 300, "a" * 70_000, "\n", "'; DROP TABLE x;--", "FREQ=DAILY\x00",
    "0 \x00 * * *", "UTC\x00", "Europe/Berlin", "08:00-18:00", "  08:00  -   18:00         ", "sat",
]
FAR_DATES = [
    "0001-01-01T00:00+01:00", "0001-01-01T00:00:00Z", "0001-01-01T00:00-01:00", "9999-12-31T23:00-14:00",
    "9999-12-31T23:59:59Z", "9999-12-31T23:59:59+14:00", "1969-12-31T23:59:59Z", "1970-01-01T00:00:00Z",
    "2033-01-01T00:00:00Z", "2999-12-31T23:59:59Z", "3000-01-01T00:00:00Z", "2100-02-29T00:00:00Z",
    "2026-13-01T00:00:00Z", "2026-01-01T24:00:00Z", "2026-01-01", "2026-01-01T00:00:00", "now", "",
]
offsets = st.builds(lambda minutes: timezone(timedelta(minutes=minutes)), st.integers(-1439, 1439))
dates = st.one_of(
    st.sampled_from(FAR_DATES),
    st.builds(lambda d: d.isoformat(), st.datetimes(timezones=offsets)),
    st.builds(lambda d: d.isoformat(), st.datetimes(min_value=datetime(2020, 1, 1), max_value=datetime(2200, 1, 1),
                                                    timezones=st.just(UTC))),
)
ints = st.one_of(st.sampled_from(HUGE_INTS), st.integers(), st.integers(-5, 100))
floats = st.one_of(st.floats(), st.sampled_from([1.5, 1e308, -0.0, 60.0]))
texts = st.one_of(st.sampled_from(NASTY_STRINGS), st.text(max_size=30),
                  st.text(st.characters(codec=None, categories=["Cs", "Cc", "Lo", "So"]), max_size=10))
scalars = st.one_of(st.none(), st.booleans(), ints, floats, texts, dates)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(texts, inner, max_size=4),
    max_leaves=12,
)


def nested(depth: int, leaf: Any = 1) -> Any:
    value = leaf
    for i in range(depth):
        value = [value] if i % 2 else {"a": value}
    return value


deep = st.builds(nested, st.sampled_from([30, 64, 65, 200, 900]))

# Plausible values for each known field, so bodies get past the first check and reach the deeper layers.
TIMING = {
    "interval_seconds": st.one_of(ints, st.sampled_from([1, 60, 86400, 7 * 86400, 316_224_000, 316_224_001])),
    "every": st.one_of(texts, st.sampled_from(["5m", "daily", "99999999999999999999w", "0s", "1d", "10000000000s"])),
    "cron": st.one_of(texts, st.sampled_from(["* * * * *", "0 9 * * MON-FRI", "0 0 29 2 1", "@yearly", "0 3 * * *",
                                              "0 0 31 2 *"])),
    "rrule": st.one_of(texts, st.sampled_from([
        "FREQ=DAILY", "FREQ=YEARLY;INTERVAL=6", "FREQ=MONTHLY;BYDAY=MO;BYSETPOS=-1", "FREQ=DAILY;COUNT=3",
        "FREQ=DAILY;UNTIL=20200101T000000Z", "FREQ=DAILY;UNTIL=99991231T235959Z", "FREQ=SECONDLY;INTERVAL=1",
        "FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=29;BYDAY=MO", "FREQ=DAILY;INTERVAL=7;BYDAY=MO",
        "FREQ=YEARLY;INTERVAL=100000", "FREQ=MINUTELY;INTERVAL=999999999999",
    ])),
    "at": dates,
    "after_seconds": st.one_of(ints, st.sampled_from([1, 3600, 10**12, 316_224_000])),
}
CONSTRAINTS = {
    "anchor_date": st.one_of(st.none(), dates),
    "start_at": st.one_of(st.none(), dates),
    "end_at": st.one_of(st.none(), dates),
    "timezone": st.one_of(texts, st.sampled_from(["UTC", "Europe/Berlin", "Pacific/Kiritimati", "Etc/GMT+12"])),
    "only_between": st.one_of(st.none(), texts, st.sampled_from(["08:00-18:00", "22:00-06:00", "03:00-03:01"])),
    "not_on": st.one_of(st.none(), st.lists(st.one_of(texts, ints), max_size=8),
                        st.sampled_from([["sat", "sun"], [0, 1, 2, 3, 4, 5]])),
    "jitter_seconds": st.one_of(ints, st.sampled_from([0, 30, 604800, 604801])),
    "day_or": st.one_of(st.booleans(), texts, ints),
}
PLAIN = {
    "name": st.one_of(texts, st.just("ok")),
    "description": st.one_of(st.none(), texts),
    "trigger_node_id": st.one_of(st.none(), texts),
    "total_repeats": ints,
    "max_retries": ints,
    "timeout_seconds": st.one_of(ints, st.sampled_from([1, 604800, 604801, 2**31])),
    "trigger_payload": st.one_of(json_values, deep, st.builds(lambda n: {"blob": "x" * n},
                                                             st.sampled_from([10, 70_000, 1_100_000]))),
}
FIELDS = {**TIMING, **CONSTRAINTS, **PLAIN}


# Values each field accepts, so that a body with one bad value reaches the layer that value tests.
future = st.datetimes(min_value=datetime(2027, 1, 1), max_value=datetime(2400, 1, 1), timezones=st.just(UTC))
VALID = {
    "interval_seconds": st.one_of(st.integers(1, 10**6), st.sampled_from([86400, 7 * 86400, 316_224_000])),
    "every": st.sampled_from(["30s", "5m", "2h", "1d", "1w", "daily", "hourly"]),
    "cron": st.sampled_from(["* * * * *", "0 9 * * MON-FRI", "0 0 29 2 1", "@yearly", "*/5 8-18 * * *"]),
    "rrule": st.sampled_from(["FREQ=DAILY", "FREQ=YEARLY;INTERVAL=6", "FREQ=MONTHLY;BYDAY=MO;BYSETPOS=-1",
                              "FREQ=DAILY;COUNT=3", "FREQ=WEEKLY;BYDAY=MO,FR;BYHOUR=9", "FREQ=HOURLY;INTERVAL=7"]),
    "at": st.builds(lambda d: d.isoformat(), future),
    "after_seconds": st.integers(1, 10**7),
    "anchor_date": st.builds(lambda d: d.isoformat(), st.datetimes(datetime(1990, 1, 1), datetime(2300, 1, 1),
                                                                  timezones=offsets)),
    "start_at": st.one_of(st.none(), st.builds(lambda d: d.isoformat(), future)),
    "end_at": st.one_of(st.none(), st.builds(lambda d: d.isoformat(), future)),
    "timezone": st.sampled_from(["UTC", "Europe/Berlin", "America/New_York", "Pacific/Kiritimati", "Asia/Kolkata"]),
    "only_between": st.one_of(st.none(), st.sampled_from(["08:00-18:00", "22:00-06:00", "00:00-23:59"])),
    "not_on": st.one_of(st.none(), st.sampled_from([["sat", "sun"], [0], ["Monday", 7]])),
    "jitter_seconds": st.integers(0, 604800),
    "day_or": st.booleans(),
    "name": st.text(min_size=1, max_size=20),
    "description": st.one_of(st.none(), st.text(max_size=50)),
    "trigger_node_id": st.one_of(st.none(), st.text(max_size=20)),
    "total_repeats": st.integers(0, 100),
    "max_retries": st.integers(0, 10),
    "timeout_seconds": st.integers(1, 3600),
    "trigger_payload": st.recursive(st.none() | st.booleans() | st.integers(-1000, 1000) | st.text(max_size=10),
                                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
                                        st.text(max_size=5), inner, max_size=3), max_leaves=6),
}
valid_field = st.sampled_from(sorted(set(VALID) - set(TIMING))).flatmap(
    lambda name: st.tuples(st.just(name), VALID[name]))
nasty_field = st.sampled_from(sorted(FIELDS)).flatmap(
    lambda name: st.tuples(st.just(name), FIELDS[name]))


@st.composite
def schedule_bodies(draw: st.DrawFn, workflow_id: int) -> Any:
    """A valid create body, mostly with one bad value in it; now and then two, or something else entirely."""
    shape = draw(st.integers(0, 19))
    if shape == 0:
        return draw(json_values)
    if shape == 1:
        return draw(deep)
    kind = draw(st.sampled_from(sorted(TIMING)))
    body: dict[str, Any] = {"name": "fz", "workflow_id": workflow_id, kind: draw(VALID[kind])}
    body.update(draw(st.lists(valid_field, max_size=3)))
    body.update(draw(st.lists(nasty_field, max_size=2)))
    if draw(st.integers(0, 9)) == 0:
        body["workflow_id"] = draw(st.one_of(ints, texts, st.none()))
    if draw(st.integers(0, 9)) == 0:
        body[draw(texts)] = draw(json_values)
    if draw(st.integers(0, 9)) == 0:
        body.pop(draw(st.sampled_from(sorted(body))))
    return body


@st.composite
def patch_bodies(draw: st.DrawFn) -> Any:
    """One to four fields, valid ones and bad ones; now and then not an object at all."""
    if draw(st.integers(0, 19)) == 0:
        return draw(st.one_of(json_values, deep))
    fields = draw(st.lists(st.one_of(valid_field, nasty_field, st.sampled_from(sorted(TIMING)).flatmap(
        lambda name: st.tuples(st.just(name), VALID[name]))), min_size=1, max_size=4))
    return dict(fields)


# --- the harness -------------------------------------------------------------------------------------

class Failures:
    """Every response that breaks the contract, with the exception the server logged for it."""

    def __init__(self) -> None:
        self.items: list[tuple[str, int, str, str]] = []
        self.requests = 0
        self.statuses: Counter[tuple[str, int]] = Counter()
        self._exceptions: list[str] = []
        self._handler = _Collect(self._exceptions)

    def __enter__(self) -> Failures:
        logging.getLogger("app.api.errors").addHandler(self._handler)
        return self

    def __exit__(self, *exc: object) -> None:
        logging.getLogger("app.api.errors").removeHandler(self._handler)

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


def _q(text: str) -> str:
    """Percent-encode as UTF-8; a lone surrogate goes out as the bytes a client could send (ED A0 80)."""
    return quote(text, safe="", errors="surrogatepass")


def _qs(query: dict[str, str]) -> str:
    return urlencode(query, errors="surrogatepass")


def _encode(body: Any) -> bytes:
    return json.dumps(body).encode()  # ensure_ascii: lone surrogates travel as \ud800 escapes, as JSON allows


def _seed(client: Any) -> tuple[int, list[str]]:
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


def _remember(ids: list[str], response: Any) -> None:
    if response.status_code == 201 and isinstance(response.json, dict) and "id" in response.json:
        ids.append(str(response.json["id"]))


def test_fuzz_schedule_bodies(client):
    """Create, PATCH and preview with field-aware bodies: every timing kind, constraint and plain field."""
    workflow_id, ids = _seed(client)

    @_settings(2000)
    @given(data=st.data())
    def run(data: st.DataObject) -> None:
        action = data.draw(st.sampled_from(["create", "create", "patch", "patch", "preview"]))
        if action == "create":
            body = data.draw(schedule_bodies(workflow_id))
            response = client.post("/api/v1/schedules/", data=_encode(body), content_type="application/json")
            _remember(ids, response)
            route = "POST /schedules/"
        elif action == "patch":
            target = ids[data.draw(st.integers(0, 10**6)) % len(ids)]
            body = data.draw(patch_bodies())
            response = client.patch(f"/api/v1/schedules/{target}/", data=_encode(body),
                                    content_type="application/json")
            route = "PATCH /schedules/<id>/"
            if response.status_code < 500:  # what a PATCH stored must still read back
                check = client.get(f"/api/v1/schedules/{target}/")
                failures.check("GET /schedules/<id>/ after PATCH", check, json.dumps(body)[:300])
        else:
            body = data.draw(schedule_bodies(workflow_id))
            if isinstance(body, dict):
                body.pop("name", None), body.pop("workflow_id", None)
                body["count"] = data.draw(st.one_of(st.just(100), ints))
            response = client.post("/api/v1/schedules/preview/", data=_encode(body), content_type="application/json")
            route = "POST /schedules/preview/"
        failures.check(route, response, json.dumps(body)[:300])

    with Failures() as failures:
        run()
    assert not failures.items, failures.report()


ROUTES = [
    ("GET", "/health/"), ("GET", "/workflows/"), ("POST", "/workflows/"), ("GET", "/workflows/{w}/"),
    ("DELETE", "/workflows/{w}/"), ("GET", "/schedules/"), ("POST", "/schedules/"), ("POST", "/schedules/preview/"),
    ("POST", "/schedules/batch-delete/"), ("GET", "/schedules/{s}/"), ("PATCH", "/schedules/{s}/"),
    ("DELETE", "/schedules/{s}/"), ("POST", "/schedules/{s}/pause/"), ("POST", "/schedules/{s}/resume/"),
    ("GET", "/schedules/{s}/runs/"),
]
segments = st.one_of(
    texts, st.sampled_from(["\x00", "%00", "a" * 5000, "ü", "1", "0", "-1", str(2**31), str(2**63), str(10**40),
                            "00000000-0000-0000-0000-000000000000", "preview", ".", "..", "%2F", "\ufffd"]),
    st.builds(str, ints),
)
query_values = st.one_of(texts, st.builds(str, ints), st.sampled_from(["active", "paused", "1e3", "5", "\x00"]))
query_keys = st.one_of(st.sampled_from(["limit", "offset", "status", "workflow_id"]), texts)
known_query = st.dictionaries(st.sampled_from(["limit", "offset", "status", "workflow_id"]), query_values, max_size=3)
RAW_BODIES = [
    b"", b"{", b"nul", b"[" * 100_000 + b"]" * 100_000, b'{"a":' * 3000 + b"1" + b"}" * 3000, b"\xff\xfe",
    b'{"name": NaN}', b'{"trigger_payload": Infinity}', b'{"name": "\\ud800"}', b"1e999999", b"1" * 5000,
    b'{"schedule_ids": ["\\u0000"]}', b'{"name": "a", "name": "b"}', b'{"trigger_payload": ' + b"[" * 5000 + b"]" * 5000
    + b"}",
]


@st.composite
def requests(draw: st.DrawFn, workflow_id: int) -> tuple[str, str, str | None, dict[str, str], Any, str]:
    """A route (now and then with any verb), a path segment (None: a real id), a query string and a body
    (bytes: sent as they are; anything else: sent as JSON)."""
    method, template = draw(st.sampled_from(ROUTES))
    if draw(st.integers(0, 9)) == 0:
        method = draw(st.sampled_from(["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]))
    segment = draw(segments) if draw(st.integers(0, 3)) == 0 else None
    query = draw(st.one_of(known_query, st.dictionaries(query_keys, query_values, max_size=4)))
    shape = draw(st.integers(0, 9))
    body: Any
    if shape == 0:
        body = draw(st.sampled_from(RAW_BODIES))
    elif shape == 1:
        body = None
    elif template == "/schedules/batch-delete/":
        body = draw(st.one_of(json_values, st.fixed_dictionaries(
            {"schedule_ids": st.lists(st.one_of(segments, texts, st.just(REAL)), max_size=5)})))
    elif template == "/workflows/":
        body = draw(st.one_of(json_values, st.fixed_dictionaries(
            {"name": texts, "task": st.one_of(texts, st.just("builtin.noop"))})))
    elif template == "/schedules/{s}/":
        body = draw(patch_bodies())
    else:
        body = draw(schedule_bodies(workflow_id))
    content_type = draw(st.sampled_from(["application/json"] * 4 + ["text/plain", ""]))
    return method, template, segment, query, body, content_type


REAL = "<a real schedule id>"


def test_fuzz_every_endpoint(client):
    """Every route and verb with random path segments, query strings and bodies. Deletes aim at schedules
    and workflows made for the purpose, so the rest of the run still finds real ones."""
    workflow_id, ids = _seed(client)

    def fresh_schedule(workflow: int | str = workflow_id) -> str:
        response = client.post("/api/v1/schedules/", json={"name": "victim", "workflow_id": workflow, "every": "1h"})
        failures.check("POST /schedules/ (a victim)", response, "")
        return str(response.json["id"]) if response.status_code == 201 else str(uuid.uuid4())

    def fresh_workflow() -> str:
        response = client.post("/api/v1/workflows/", json={"name": "victim", "task": "builtin.noop"})
        failures.check("POST /workflows/ (a victim)", response, "")
        if response.status_code != 201:
            return "2147483647"
        fresh_schedule(response.json["id"])
        return str(response.json["id"])

    @_settings(2500)
    @given(data=st.data())
    def run(data: st.DataObject) -> None:
        method, template, segment, query, body, content_type = data.draw(requests(workflow_id))
        deleting = method == "DELETE" or template == "/schedules/batch-delete/"
        if segment is not None:
            schedule_id = wf = segment
        else:
            wf = fresh_workflow() if deleting and "{w}" in template else str(workflow_id)
            schedule_id = fresh_schedule() if deleting else ids[data.draw(st.integers(0, 10**6)) % len(ids)]
        if isinstance(body, dict) and isinstance(body.get("schedule_ids"), list):
            body["schedule_ids"] = [fresh_schedule() if i == REAL else i for i in body["schedule_ids"]]
        path = "/api/v1" + template.replace("{s}", _q(schedule_id)).replace("{w}", _q(wf))
        payload = body if isinstance(body, bytes) or body is None else _encode(body)
        response = client.open(path, method=method, query_string=_qs(query), data=payload,
                               content_type=content_type or None)
        _remember(ids, response)
        failures.check(f"{method} {template}", response, f"{path[:120]}?{_qs(query)[:100]} {payload!r:.200}")

    with Failures() as failures:
        run()
    assert not failures.items, failures.report()


@pytest.mark.parametrize("path", ["/api/v1/schedules/", "/api/v1/workflows/"])
def test_fuzz_lists_with_any_query_string(client, path):
    """List endpoints with raw, arbitrary query strings (also not key=value, percent escapes and NULs)."""
    _seed(client)

    @_settings(150)
    @given(raw=st.one_of(st.text(max_size=60), st.builds(_qs, st.dictionaries(query_keys, query_values))))
    def run(raw: str) -> None:
        response = client.get(path + "?" + quote(raw, safe="=&%", errors="surrogatepass"))
        failures.check(f"GET {path}", response, raw)

    with Failures() as failures:
        run()
    assert not failures.items, failures.report()
