"""The API's contract: /api/openapi.json is a valid OpenAPI 3 document generated from the schemas, its docs
render from local files, and a live gunicorn server answers schemathesis's requests, over every operation,
only as the document says (no 5xx, declared statuses, declared bodies, JSON content), on the suite's
database (SQLite, and PostgreSQL when RECUR_TEST_POSTGRES is set).

RECUR_CONTRACT_EXAMPLES sets schemathesis's examples per operation (default 40).
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from harness.servers import (
    Process,
    RedisServer,
    flask_command,
    print_logs_if_failed,
    serve_web,
    start_worker,
    wait_for,
)
from harness.tokens import token_for_env


def test_the_document_is_valid_openapi_and_covers_every_api_route(client):
    from openapi_spec_validator import validate

    answer = client.get("/api/openapi.json")
    assert answer.status_code == 200 and answer.mimetype == "application/json"
    document = answer.get_json()
    validate(document)
    documented = {(path, method.upper()) for path, ops in document["paths"].items() for method in ops
                  if method != "parameters"}  # a path's own parameters, shared by its operations
    routes = {(re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", rule.rule), method)
              for rule in client.application.url_map.iter_rules() if rule.rule.startswith("/api/v1/")
              for method in (rule.methods or set()) - {"HEAD", "OPTIONS"}}
    assert routes and routes == documented
    assert document["components"]["securitySchemes"]["bearerAuth"] == {"type": "http", "scheme": "bearer"}
    health = document["paths"]["/api/v1/health/"]["get"]
    assert health["security"] == [] and "401" not in health["responses"]
    assert document["paths"]["/api/v1/schedules/"]["get"]["security"] == [{"bearerAuth": []}]


def test_the_docs_render_from_local_files_only(client):
    page = client.get("/api/docs/")
    assert page.status_code == 200
    html = page.get_data(as_text=True)
    assert "http://" not in html and "https://" not in html  # nothing fetched from elsewhere: works offline
    assets = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert len(assets) >= 4
    for asset in assets:
        answer = client.get(asset)
        answer.close()  # a file sent from the package
        assert answer.status_code == 200, asset
    assert "/api/openapi.json" in client.get("/api/docs/assets/recur-docs.js").get_data(as_text=True)


def _validate_answer(document: dict[str, Any], path: str, method: str, status: int, answer: Any) -> None:
    """Validate an answer against the schema the document declares for it (OpenAPI 3.0: nullable and all)."""
    from openapi_schema_validator import OAS30Validator

    schema = document["paths"][path][method]["responses"][str(status)]["content"]["application/json"]["schema"]
    OAS30Validator({**schema, "components": document["components"]}).validate(answer)


def test_a_manual_runs_row_in_the_run_list_is_what_the_document_declares(app, client):
    """A run outside the chain has no repeat number: the list of runs answers null, so the document must
    declare it nullable (it declared a plain integer, and a client generated from it refused the answer)."""
    from rq import SimpleWorker

    from harness.chain_driver import make_schedule
    from recur_server.infra.extensions import get_queue, get_redis

    schedule = make_schedule(datetime.now(UTC), interval_seconds=3600)
    assert client.post(f"/api/v1/schedules/{schedule.id}/trigger/").status_code == 202
    SimpleWorker([get_queue(app)], connection=get_redis(app)).work(burst=True, with_scheduler=False)
    answer = client.get(f"/api/v1/schedules/{schedule.id}/runs/")
    assert answer.status_code == 200
    [run] = answer.json["items"]
    assert (run["trigger"], run["status"], run["repeat_number"]) == ("manual", "succeeded", None)
    _validate_answer(client.get("/api/openapi.json").json, "/api/v1/schedules/{schedule_id}/runs/", "get", 200,
                     answer.json)


# --- a live gunicorn -----------------------------------------------------------------------------

class Web:
    def __init__(self, tmp_path: Path, redis: RedisServer, database_url: str) -> None:
        # Webhooks may reach loopback (the stack's egress allowlist is loopback only: harness.servers).
        self.env = {"DATABASE_URL": database_url, "REDIS_URL": redis.url, "RECUR_WEBHOOK_ALLOW_HOSTS": "127.0.0.1"}
        self.token = token_for_env(self.env)
        self.process: Process
        self.process, self.port = serve_web(self.env, tmp_path / "web.log", self._ready)
        self.base = f"http://127.0.0.1:{self.port}"

    @staticmethod
    def _ready(port: int) -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/health/", timeout=2):
                return True
        except (OSError, urllib.error.HTTPError):
            return False

    def raw(self, request: bytes) -> tuple[int, dict[str, str], bytes]:
        """Send raw bytes, as no HTTP library would, and read the whole answer."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=10) as sock:
            sock.sendall(request)
            data = b""
            while chunk := sock.recv(65536):
                data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        headers = dict(line.split(": ", 1) for line in lines[1:] if ": " in line)
        return int(lines[0].split()[1]), {k.lower(): v for k, v in headers.items()}, body


@pytest.fixture
def web(request: pytest.FixtureRequest, tmp_path: Path, redis_server: RedisServer,
        database_url: str) -> Iterator[Web]:
    from redis import Redis

    Redis.from_url(redis_server.url).flushall()
    server = Web(tmp_path, redis_server, database_url)
    yield server
    server.process.stop()
    print_logs_if_failed(request.node, tmp_path.glob("*.log"))  # the server's, and a worker's the test started


def _error_shape(status: int, headers: dict[str, str], body: bytes) -> dict[str, Any]:
    assert headers["content-type"].startswith("application/json"), (status, headers, body[:200])
    payload = json.loads(body)
    assert set(payload) == {"code", "status", "message", "errors"} and payload["status"] == status, payload
    return payload


@pytest.mark.integration
def test_answers_gunicorn_gives_before_flask_are_in_the_error_shape(web):
    status, headers, body = web.raw(b"GET /api/v1/" + b"a" * 9000 + b"/ HTTP/1.1\r\nHost: x\r\n\r\n")
    assert status == 414
    _error_shape(status, headers, body)
    status, headers, body = web.raw(b"GET /api/v1/health/ HTTP/1.1\r\nHost: x\r\nX-Big: " + b"b" * 9000 + b"\r\n\r\n")
    assert status in (400, 431)
    _error_shape(status, headers, body)
    many = b"".join(b"X-H%d: v\r\n" % i for i in range(150))
    status, headers, body = web.raw(b"GET /api/v1/health/ HTTP/1.1\r\nHost: x\r\n" + many + b"\r\n")
    assert status in (400, 431)
    _error_shape(status, headers, body)
    status, headers, body = web.raw(b"NOT A REQUEST LINE\r\n\r\n")
    assert status == 400
    _error_shape(status, headers, body)


@pytest.mark.integration
def test_flask_errors_of_a_live_server_are_in_the_error_shape(web):
    auth = f"Authorization: Bearer {web.token}\r\n".encode()
    for request, expected in [
        (b"GET /nowhere HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 404),
        (b"PUT /api/v1/schedules/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n" + auth + b"\r\n", 405),
        (b"POST /api/v1/workflows/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\n"
         + auth + b"Content-Length: 2000000\r\n\r\n" + b"{" * 10, 413),
    ]:
        status, headers, body = web.raw(request)
        assert status == expected, (request[:40], status, body[:200])
        _error_shape(status, headers, body)


def _schemathesis(web: Web, tmp_path: Path, name: str, token: str, *extra: str,
                  config_extra: str = "") -> dict[str, Any]:
    """Run schemathesis's CLI against the live server; returns its verdict and the requests it sent."""
    cassette = tmp_path / f"{name}.har"
    config = tmp_path / f"{name}.toml"
    # schemathesis's error feedback (learning from 4xx bodies) makes up properties such as `not_on.0` ...
    # `not_on.13` and sends them in cases it counts as valid, though the document forbids unknown properties
    # (additionalProperties: false); refused, they would read as the document's schemas disagreeing with
    # the API's validation. Without it, every case the fuzzer counts as valid is valid by the document.
    # A backfill's range has rules OpenAPI 3.0 cannot state (the end after the start, years 1970-3000, at
    # most 1,000 of the schedule's times in it): random bodies valid by the document are all refused, which
    # would read as the document disagreeing with the view. Its documented examples and the coverage phase's
    # cases still check its answers against the document; test_api's backfill tests check the rules.
    # A new calendar's rules are so too (a country the holidays package knows, a subdivision of it, real dates,
    # a range that ends after it starts, at most 20 years of holidays, 5,000 days), for the coverage phase's
    # boundary cases as well: its documented example still runs, and test_named_calendars checks the rules.
    # A webhook's URL is taken only where it may be sent: a host that resolves, to an address the guard and
    # the deployment's egress allowlist (here loopback only, as in every test stack) allow. OpenAPI cannot
    # state DNS or a setting: harness/contract_hooks.py points the URLs the fuzzer makes at loopback (their
    # paths as generated), so they are taken, and whatever they cause to be sent stays on this machine. The
    # examples and the coverage phase's variations of them name the document's example host, which a
    # loopback-only stack refuses by design, and no hook reaches them: those phases are off for the two
    # operations that take a URL (test_egress and test_notify_units check the refusals).
    # An apply's changes carry every rule above at once (calendars' days, webhook destinations) and more
    # (a schedule names its workflow and calendar by a name that must exist): random bodies valid by the
    # document are nearly all refused, which would read as the document disagreeing with the view, and so are
    # its examples (put together from each kind's). It is left out of the run: test_apply_whole,
    # test_recur_apply and test_recur_client check its rules and its answers. So is an apply file's
    # (post_apply_file: the same changes, named by name; test_apply_file checks its refusals). Fuzzed once
    # when it was added, its 5,754 requests met no server error; what it refused was these names.
    # Health's readiness form (`ready`) answers its documented 503 while a queue with active schedules has no
    # live worker, as here once the worker is stopped: a 503 that is the answer, not a server error. Its status
    # and body are still checked against the document (test_worker_liveness checks when it is a 503).
    config.write_text("[phases.stateful]\nenabled = false\n"
                      "[phases.fuzzing]\nerror-feedback = { enabled = false }\n"
                      '[[operations]]\ninclude-operation-id = "post_schedule_backfill"\n'
                      "phases = { fuzzing = { enabled = false } }\n"
                      '[[operations]]\ninclude-operation-id = "post_calendars"\n'
                      "phases = { fuzzing = { enabled = false }, coverage = { enabled = false } }\n"
                      '[[operations]]\ninclude-operation-id = "post_webhooks"\n'
                      "phases = { examples = { enabled = false }, coverage = { enabled = false } }\n"
                      '[[operations]]\ninclude-operation-id = "patch_webhook"\n'
                      "phases = { examples = { enabled = false }, coverage = { enabled = false } }\n"
                      '[[operations]]\ninclude-operation-id = "post_apply"\n'
                      "phases = { examples = { enabled = false }, fuzzing = { enabled = false }, "
                      "coverage = { enabled = false } }\n"
                      '[[operations]]\ninclude-operation-id = "post_apply_file"\n'
                      "phases = { examples = { enabled = false }, fuzzing = { enabled = false }, "
                      "coverage = { enabled = false } }\n"
                      '[[operations]]\ninclude-operation-id = "get_health"\n'
                      'checks = { not_a_server_error = { expected-statuses = ["2xx", "3xx", "4xx", "503"] } }\n'
                      + config_extra)
    examples = os.environ.get("RECUR_CONTRACT_EXAMPLES", "40")
    st = str(Path(sys.executable).parent / "st")
    result = subprocess.run(
        [st, "--config-file", str(config), "run", f"{web.base}/api/openapi.json", "--url", web.base,
         "-H", f"Authorization: Bearer {token}",
         "--checks", "not_a_server_error,status_code_conformance,content_type_conformance,"
                     "response_schema_conformance",
         "--max-examples", examples, "--seed", "20261124",
         "--suppress-health-check", "all", "--report", "har", "--report-har-path", str(cassette), "--no-color",
         *extra],
        capture_output=True, text=True, timeout=900,
        env={**os.environ, "SCHEMATHESIS_TELEMETRY": "false", "SCHEMATHESIS_HOOKS": "harness.contract_hooks"})
    output = result.stdout + result.stderr
    # The HAR report (JSON): its VCR cassette is megabytes of YAML, which took 6.2 s of CPU a run to read even
    # with libyaml's loader. An entry with no response (status 0: the connection dropped) is a server error.
    entries = json.loads(cassette.read_text())["log"]["entries"] if cassette.exists() else []
    operations = {(e["request"]["method"], e["request"]["url"].split("?")[0]) for e in entries}
    statuses = [e["response"]["status"] for e in entries]
    print(f"schemathesis {name}: {len(entries)} requests, {len(operations)} distinct method+URL, "
          f"statuses {sorted(set(statuses))}")
    print(output[-2500:])  # schemathesis's summary (with -s)
    # A 5xx is a server error, but for the documented one: health's readiness form answering 503 while a queue
    # with active schedules has no live worker (this run starts none).
    server_errors = [(e["request"]["method"], e["request"]["url"][:200], e["response"]["status"])
                     for e in entries if (e["response"]["status"] >= 500 or e["response"]["status"] == 0)
                     and not _degraded_health(e)]
    return {"returncode": result.returncode, "output": output, "requests": len(entries), "statuses": statuses,
            "server_errors": server_errors}


def _degraded_health(entry: dict[str, Any]) -> bool:
    request, response = entry["request"], entry["response"]
    body = str(response.get("content", {}).get("text") or "")
    return (request["method"] == "GET" and request["url"].split("?")[0].endswith("/api/v1/health/")
            and response["status"] == 503 and '"status":"degraded"' in body.replace(" ", ""))


def _post(web: Web, path: str, body: Any) -> Any:
    request = urllib.request.Request(web.base + path, method="POST", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json",
                                              "Authorization": f"Bearer {web.token}"})
    with urllib.request.urlopen(request, timeout=10) as answer:
        assert answer.status in (201, 202), answer.status
        return json.loads(answer.read())


def _get(web: Web, path: str) -> Any:
    request = urllib.request.Request(web.base + path, headers={"Authorization": f"Bearer {web.token}"})
    with urllib.request.urlopen(request, timeout=10) as answer:
        return json.loads(answer.read())


def _each(option: str, values: list[str]) -> list[str]:
    return [item for value in values for item in (option, value)]


@pytest.mark.integration
def test_the_live_server_keeps_its_contract_under_schemathesis(web, tmp_path):
    # Something to find: a workflow and a schedule of the admin's, with runs of every trigger (the chain's,
    # a manual one, a backfill's), so reads and edits reach real rows and their answers are checked too.
    workflow = _post(web, "/api/v1/workflows/", {"name": "w", "task": "builtin.noop"})
    once = _post(web, "/api/v1/schedules/", {"name": "once", "workflow_id": workflow["id"], "after_seconds": 1})
    # Its key is the one the document's example of `after` names, so the examples' schedules may follow it.
    hourly = _post(web, "/api/v1/schedules/", {"name": "hourly", "workflow_id": workflow["id"], "cron": "0 * * * *",
                                               "key": "nightly-export"})
    # A calendar (id 1, as the workflow is) that a schedule uses, so schedules the fuzzer makes on it are valid
    # and its delete is the 409 the document declares.
    calendar = _post(web, "/api/v1/calendars/", {"name": "c", "dates": ["2030-12-25"]})
    _post(web, "/api/v1/schedules/", {"name": "daily", "workflow_id": workflow["id"], "cron": "0 9 * * *",
                                      "calendar_id": calendar["id"]})
    worker = start_worker(web.env, tmp_path / "worker.log", slots=1)
    try:
        # allow_all: under the schedule's own overlap (skip) the manual run is skipped if the backfill's
        # first run, enqueued after it, happens to start first on another slot.
        _post(web, f"/api/v1/schedules/{hourly['id']}/trigger/", {"overlap": "allow_all"})
        start = datetime.now(UTC).replace(minute=0, second=0, microsecond=0) - timedelta(hours=3)
        _post(web, f"/api/v1/schedules/{hourly['id']}/backfill/",
              {"start": start.isoformat(), "end": (start + timedelta(hours=2)).isoformat()})

        def triggers() -> set[str]:
            return {r["trigger"] for s in (once, hourly)
                    for r in _get(web, f"/api/v1/schedules/{s['id']}/runs/")["items"] if r["status"] == "succeeded"}

        wait_for(lambda: triggers() >= {"schedule", "manual", "backfill"}, 30, what="runs of every trigger")
    finally:
        worker.stop()
    # Revoking tokens and deleting owners may revoke the very token the run uses: they run apart, last,
    # with a token of their own, so the rest of the run keeps its access.
    # Setting quotas may set the caller's own to 0, and deleting a workflow takes the one every new schedule
    # names: either refuses every create after it, so they run apart too.
    apart = ["delete_token", "delete_owner", "patch_owner", "delete_workflow"]
    main = _schemathesis(web, tmp_path, "main", web.token, *_each("--exclude-operation-id", apart))
    assert main["returncode"] == 0, main["output"][-6000:]
    # The document's schemas are the ones the views validate with: no operation refuses everything it is sent.
    assert "schema validation mismatch" not in main["output"].lower(), main["output"][-6000:]
    second = flask_command(web.env, "tokens", "create", "admin").strip().splitlines()[-1]
    # An owner to delete: otherwise the only owner the run knows is the admin itself, whom it may not delete.
    spare = _post(web, "/api/v1/owners/", {"name": "deleted by schemathesis"})["id"]
    last = _schemathesis(web, tmp_path, "revoking", second, *_each("--include-operation-id", apart),
                         config_extra=f'[[operations]]\ninclude-operation-id = "delete_owner"\n'
                                      f"parameters = {{ owner_id = {spare} }}\n")
    assert last["returncode"] == 0, last["output"][-6000:]
    assert "schema validation mismatch" not in last["output"].lower(), last["output"][-6000:]
    assert main["server_errors"] + last["server_errors"] == []
    assert main["requests"] > 200
    _nothing_sent_off_the_machine(web)


def _nothing_sent_off_the_machine(web: Web) -> None:
    """The webhooks the fuzzer made (under the stack's loopback-only egress allowlist) and every delivery
    attempt any process made: none went to an address beyond loopback (a refused one made no connection)."""
    import ipaddress
    from urllib.parse import urlsplit

    from sqlalchemy import create_engine, text

    from recur_server.infra.config import sqlalchemy_url

    def loopback(url: str) -> bool:
        host = urlsplit(url).hostname or ""
        try:
            return ipaddress.ip_address(host).is_loopback
        except ValueError:
            return host == "localhost"

    engine = create_engine(sqlalchemy_url(web.env["DATABASE_URL"]))
    try:
        with engine.connect() as connection:
            hooks = connection.execute(text("SELECT url FROM webhooks")).scalars().all()
            sent = connection.execute(text(
                "SELECT w.url, a.error FROM delivery_attempts a JOIN webhooks w ON w.id = a.webhook_id")).all()
    finally:
        engine.dispose()
    assert [url for url in hooks if not loopback(url)] == [], hooks
    assert [(url, error) for url, error in sent
            if not loopback(url) and not (error or "").startswith("refused:")] == [], sent
