"""Overdue, as everyone sees it with no worker running: a schedule whose next run is a minute past, with no
alert set, answers `overdue` in the API, wears the `overdue` badge in the console (never the green `active`)
and says so in `recur schedules list` and `show`; a paused one and one not yet due do not."""

from __future__ import annotations

import re
import urllib.error
import urllib.parse
import urllib.request
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import create_engine, update

from harness.recur_cli_runner import recur
from harness.stack import Stack
from recur_server.infra.config import sqlalchemy_url
from recur_server.models import Schedule

pytestmark = pytest.mark.integration


@pytest.fixture
def stack_env() -> dict[str, str]:
    return {"RECUR_SECURE_COOKIES": "0"}  # the console's cookie over the stack's plain HTTP


def _stopped_a_minute_ago(stack: Stack, *schedule_ids: str) -> None:
    """The rows as every worker stopping a minute ago leaves them: next_run_at 75 s past, nothing moving it."""
    engine = create_engine(sqlalchemy_url(stack.database_url))
    try:
        with engine.begin() as connection:
            connection.execute(update(Schedule.__table__).where(Schedule.__table__.c.id.in_(schedule_ids))
                               .values(next_run_at=datetime.now(UTC) - timedelta(seconds=75)))
    finally:
        engine.dispose()


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object) -> None:
        return None  # the sign-in's 302 carries the session cookie: keep it rather than follow


def _console_page(base: str, token: str, path: str) -> str:
    """`path` of the console, signed in with `token` over plain HTTP (the session cookie kept by hand)."""
    cookie = ""
    opener = urllib.request.build_opener(_NoRedirect)

    def fetch(method: str, where: str, form: dict[str, str] | None = None) -> tuple[int, str]:
        nonlocal cookie
        data = None if form is None else urllib.parse.urlencode(form).encode()
        request = urllib.request.Request(base + where, data=data, method=method,
                                         headers={"Cookie": cookie} if cookie else {})
        try:
            with opener.open(request, timeout=10) as response:
                status, headers, body = response.status, response.headers, response.read().decode()
        except urllib.error.HTTPError as exc:
            status, headers, body = exc.code, exc.headers, exc.read().decode()
        cookie = (headers.get("Set-Cookie") or cookie).split(";", 1)[0]
        return status, str(body)

    csrf = re.search(r'name="csrf_token" value="([^"]+)"', fetch("GET", "/signin")[1])
    assert csrf is not None
    assert fetch("POST", "/signin", {"token": token, "csrf_token": csrf.group(1)})[0] == 302
    status, page = fetch("GET", path)
    assert status == 200, page
    return page


def test_a_schedule_a_minute_past_its_next_run_shows_overdue_everywhere(stack: Stack) -> None:
    api = stack.api
    workflow = api.ok("POST", "/api/v1/workflows/", {"name": "nightly", "task": "builtin.noop"})["id"]

    def schedule(name: str) -> str:
        made = api.ok("POST", "/api/v1/schedules/", {"name": name, "workflow_id": workflow, "cron": "0 2 * * *"})
        assert made["alert_after_seconds"] is None and made["overdue"] is False
        return str(made["id"])

    stuck, paused, fresh = schedule("stuck"), schedule("paused"), schedule("fresh")
    api.ok("POST", f"/api/v1/schedules/{paused}/pause/", {})
    _stopped_a_minute_ago(stack, stuck, paused)

    answer = api.ok("GET", f"/api/v1/schedules/{stuck}/")
    assert answer["status"] == "active" and answer["health"] == "ok"  # no alert set, none fired
    assert answer["overdue"] is True and 75 <= answer["overdue_seconds"] < 120
    listed = {s["id"]: s for s in api.ok("GET", "/api/v1/schedules/")["items"]}
    assert {k: (s["overdue"], s["overdue_seconds"] is None) for k, s in listed.items()} == {
        stuck: (True, False), paused: (False, True), fresh: (False, True)}

    page = _console_page(api.base, api.token, f"/schedules/{stuck}")
    assert '<span class="badge overdue" id="status" title="status: active">overdue</span>' in page
    assert 'class="badge active"' not in page
    rows = _console_page(api.base, api.token, "/schedules")
    row = {schedule_id: next(r for r in rows.split("<tr") if f'href="/schedules/{schedule_id}"' in r)
           for schedule_id in (stuck, paused, fresh)}
    assert '<span class="badge overdue"' in row[stuck] and 'badge active' not in row[stuck]
    assert '<span class="badge active"' in row[fresh] and "overdue" not in row[fresh]
    assert '<span class="badge paused"' in row[paused] and "overdue" not in row[paused]
    assert '<span class="badge paused"' in _console_page(api.base, api.token, f"/schedules/{paused}")

    table = recur(api.base, api.token, "schedules", "list").out.splitlines()
    status = {line.split()[0]: line.split()[3] for line in table[1:]}  # ID KEY NAME STATUS: no key is "-"
    assert status == {stuck: "overdue", paused: "paused", fresh: "active"}
    shown = recur(api.base, api.token, "schedules", "show", stuck).out
    assert re.search(r"^overdue\s+True$", shown, re.M) and re.search(r"^overdue_seconds\s+\d", shown, re.M)
    assert re.search(r"^overdue\s+False$", recur(api.base, api.token, "schedules", "show", fresh).out, re.M)
