"""Property-based fuzz of the whole HTTP surface: no request, however malformed, gets a 5xx.

Bodies, query strings and path segments are drawn by hypothesis (random JSON plus targeted values: huge
and negative integers, floats, NUL bytes, lone surrogates, deep nesting, far dates with offsets, wrong types
for every known field) and sent to every endpoint and verb through Flask's test client, on SQLite or on
PostgreSQL (RECUR_TEST_POSTGRES). Every response must be < 500 and every 4xx must have the API's error shape.

Each test collects all bad responses and reports them together (counts by endpoint and exception), rather
than stopping at the first; set RECUR_FUZZ_EXAMPLES to run more examples per test (default: a run of a
minute or so on SQLite). The field-aware schedule bodies have a fuzz of their own
(tests/test_fuzz_schedule_bodies.py); the values and the contract check are in harness/fuzz_values.py and
harness/fuzz_api.py.
"""

from __future__ import annotations

import uuid
from typing import Any
from urllib.parse import quote

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.fuzz_api import (
    Failures,
    json_body,
    path_segment,
    query_string,
    remember_created,
    seed_schedules,
    settings_for,
)
from harness.fuzz_values import ints, json_values, patch_bodies, schedule_bodies, texts

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
    workflow_id, ids = seed_schedules(client)

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

    @settings_for(2500)
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
        path = "/api/v1" + template.replace("{s}", path_segment(schedule_id)).replace("{w}", path_segment(wf))
        payload = body if isinstance(body, bytes) or body is None else json_body(body)
        response = client.open(path, method=method, query_string=query_string(query), data=payload,
                               content_type=content_type or None)
        remember_created(ids, response)
        failures.check(f"{method} {template}", response, f"{path[:120]}?{query_string(query)[:100]} {payload!r:.200}")

    with Failures() as failures:
        run()
    assert not failures.items, failures.report()


@pytest.mark.parametrize("path", ["/api/v1/schedules/", "/api/v1/workflows/"])
def test_fuzz_lists_with_any_query_string(client, path):
    """List endpoints with raw, arbitrary query strings (also not key=value, percent escapes and NULs)."""
    seed_schedules(client)

    @settings_for(150)
    @given(raw=st.one_of(st.text(max_size=60), st.builds(query_string, st.dictionaries(query_keys, query_values))))
    def run(raw: str) -> None:
        response = client.get(path + "?" + quote(raw, safe="=&%", errors="surrogatepass"))
        failures.check(f"GET {path}", response, raw)

    with Failures() as failures:
        run()
    assert not failures.items, failures.report()
