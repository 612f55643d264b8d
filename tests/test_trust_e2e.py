"""Trust between owners and with receivers, end to end: gunicorn, worker.py, a real redis-server and real
HTTP receivers on loopback. A deleted owner's events, attempts and console cookie reach nobody after it;
one owner's hanging, trickling and unsendable receivers delay no other owner's delivery, API or chain."""

from __future__ import annotations

import re
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import create_engine, text

from harness.receiver import ALL_TYPES, HangingReceiver, Receiver, TricklingReceiver
from harness.servers import free_port, wait_for
from harness.stack import QUICK_WEBHOOKS, Api, Stack, parse_instant
from recur_server.infra.config import sqlalchemy_url

pytestmark = pytest.mark.integration

# How long the newcomer's receiver is watched, once its own event came, for anything of the deleted owner's:
# ten watch passes (RECUR_WATCH_SECONDS is 0.5 here), each of which would send what is still routed.
WATCHED_SECONDS = 5.0


@pytest.fixture
def stack_env() -> dict[str, str]:
    return {**QUICK_WEBHOOKS, "RECUR_WEBHOOK_TIMEOUT_SECONDS": "4", "RECUR_SECURE_COOKIES": "0"}


@pytest.fixture
def receivers() -> Iterator[list[Receiver]]:
    made: list[Receiver] = []
    yield made
    for receiver in made:
        receiver.stop()


def _receiver(made: list[Receiver]) -> Receiver:
    receiver = Receiver(free_port())
    receiver.start()
    made.append(receiver)
    return receiver


class Browser:
    """A console session over plain HTTP (RECUR_SECURE_COOKIES=0), its cookie kept by hand."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.cookie = ""

    def open(self, method: str, path: str, form: dict[str, str] | None = None) -> tuple[int, str, str]:
        data = None if form is None else urllib.parse.urlencode(form).encode()
        request = urllib.request.Request(self.base + path, data=data, method=method,
                                         headers={"Cookie": self.cookie} if self.cookie else {})

        class NoRedirect(urllib.request.HTTPRedirectHandler):
            def redirect_request(self, *args: Any) -> None:
                return None

        opener = urllib.request.build_opener(NoRedirect)
        try:
            with opener.open(request, timeout=10) as response:
                status, headers, body = response.status, response.headers, response.read().decode()
        except urllib.error.HTTPError as exc:
            status, headers, body = exc.code, exc.headers, exc.read().decode()
        cookie = headers.get("Set-Cookie")
        if cookie:
            self.cookie = cookie.split(";", 1)[0]
        return status, headers.get("Location", ""), body

    def sign_in(self, token: str) -> None:
        _, _, page = self.open("GET", "/signin")
        csrf = re.search(r'name="csrf_token" value="([^"]+)"', page)
        assert csrf is not None
        status, location, _ = self.open("POST", "/signin", {"token": token, "csrf_token": csrf.group(1)})
        assert status == 302, (status, location)


def test_a_deleted_owner_leaves_nothing_that_reaches_the_next(stack: Stack, receivers: list[Receiver]) -> None:
    admin = stack.api
    stack.start_worker()
    made = admin.ok("POST", "/api/v1/owners/", {"name": "contractor"})
    contractor = Api(admin.base, made["token"]["token"])
    quiet_port = free_port()  # nobody listens: the contractor's deliveries fail and wait to be retried
    hook_a = contractor.ok("POST", "/api/v1/webhooks/", {"url": f"http://127.0.0.1:{quiet_port}/hook",
                                                          "event_types": ALL_TYPES})
    flow = contractor.ok("POST", "/api/v1/workflows/", {"name": "w", "task": "builtin.fail"})
    a_schedules = [contractor.ok("POST", "/api/v1/schedules/", {
        "name": f"a{i}", "workflow_id": flow["id"], "interval_seconds": 1, "max_retries": 0,
        "on_exhausted": "continue"})["id"] for i in range(2)]
    browser = Browser(admin.base)
    browser.sign_in(made["token"]["token"])
    assert browser.open("GET", "/schedules")[0] == 200
    wait_for(lambda: contractor.ok("GET", f"/api/v1/webhooks/{hook_a['id']}/deliveries/")["total"] >= 3, 30,
             what="failed attempts of the contractor's deliveries")
    assert contractor.ok("GET", f"/api/v1/webhooks/{hook_a['id']}/deliveries/")["pending"] >= 1
    contractor_cookie = browser.cookie

    admin.ok("DELETE", f"/api/v1/owners/{made['id']}/")

    other = admin.ok("POST", "/api/v1/owners/", {"name": "newcomer"})
    first = Api(admin.base, other["token"]["token"])
    newcomer = Api(admin.base, first.ok("POST", "/api/v1/tokens/", {"name": "ci"})["token"])
    receiver = _receiver(receivers)
    hook_b = newcomer.ok("POST", "/api/v1/webhooks/", {"url": receiver.url, "event_types": ALL_TYPES})
    assert hook_b["id"] > hook_a["id"]
    own_flow = newcomer.ok("POST", "/api/v1/workflows/", {"name": "w", "task": "builtin.noop"})
    own = newcomer.ok("POST", "/api/v1/schedules/", {"name": "mine", "workflow_id": own_flow["id"],
                                                      "interval_seconds": 3600})
    newcomer.ok("POST", f"/api/v1/schedules/{own['id']}/pause/", {"note": "b's own event"})
    wait_for(lambda: "schedule.paused" in receiver.types(), 20, what="the newcomer's own event")
    time.sleep(WATCHED_SECONDS)  # anything of the contractor's still routed anywhere would be sent now

    events = receiver.events()
    assert [e["data"].get("schedule_id") for e in events] == [own["id"]], events
    for schedule_id in a_schedules:
        assert all(schedule_id not in str(e) for e in events)
    log = newcomer.ok("GET", f"/api/v1/webhooks/{hook_b['id']}/deliveries/")
    assert {a["event_id"] for a in log["items"]} == {e["id"] for e in events} and log["pending"] == 0

    browser.cookie = contractor_cookie
    for path in ("/schedules", "/health", "/workflows"):
        status, location, _ = browser.open("GET", path)
        assert status == 302 and "/signin" in location, (path, status, location)
    assert admin.call("GET", f"/api/v1/webhooks/{hook_a['id']}/")[0] == 404


def _slowest_read(api: Api, schedule_id: str) -> float:
    """The slowest of 20 reads of a schedule, a quarter second apart."""
    slowest = 0.0
    for _ in range(20):
        started = time.monotonic()
        api.ok("GET", f"/api/v1/schedules/{schedule_id}/")
        slowest = max(slowest, time.monotonic() - started)
        time.sleep(0.25)
    return slowest


def test_one_owners_hanging_receivers_delay_no_other_owner(stack: Stack, receivers: list[Receiver]) -> None:
    admin = stack.api
    stack.start_worker()
    stack.wait_workers_ready()
    made_x = admin.ok("POST", "/api/v1/owners/", {"name": "x"})
    admin.ok("PATCH", f"/api/v1/owners/{made_x['id']}/", {"quotas": {"webhooks": 60}})  # above the default 50
    x = Api(admin.base, made_x["token"]["token"])
    y = Api(admin.base, admin.ok("POST", "/api/v1/owners/", {"name": "y"})["token"]["token"])
    hanging, trickling = HangingReceiver(), TricklingReceiver()
    y_receiver = _receiver(receivers)
    try:
        x_hooks = [x.ok("POST", "/api/v1/webhooks/", {"url": f"http://127.0.0.1:{hanging.port}/h{i}",
                                                       "event_types": ["schedule.paused"]})["id"] for i in range(50)]
        x_hooks.append(x.ok("POST", "/api/v1/webhooks/", {"url": f"http://127.0.0.1:{trickling.port}/slow",
                                                           "event_types": ["schedule.paused"]})["id"])
        unsendable = x.ok("POST", "/api/v1/webhooks/", {"url": "http://127.0.0.1:9/ok",
                                                         "event_types": ["schedule.paused"]})["id"]
        x_hooks.append(unsendable)
        # A URL the address guard refuses today but that was stored before it did (an upgrade's rows).
        engine = create_engine(sqlalchemy_url(stack.database_url))
        with engine.begin() as connection:
            connection.execute(text("UPDATE webhooks SET url = :url WHERE id = :id"),
                               {"url": "http://127.0.0.1:9/caf\u00e9 \n", "id": unsendable})
        engine.dispose()
        y_hook = y.ok("POST", "/api/v1/webhooks/", {"url": y_receiver.url, "event_types": ["schedule.paused"]})
        y_flow = y.ok("POST", "/api/v1/workflows/", {"name": "heartbeat", "task": "builtin.noop"})
        heartbeat = y.ok("POST", "/api/v1/schedules/", {"name": "heartbeat", "workflow_id": y_flow["id"],
                                                         "interval_seconds": 1})["id"]
        x_flow = x.ok("POST", "/api/v1/workflows/", {"name": "w", "task": "builtin.noop"})
        x_schedule = x.ok("POST", "/api/v1/schedules/", {"name": "s", "workflow_id": x_flow["id"],
                                                          "interval_seconds": 3600})["id"]
        wait_for(lambda: len(stack.api.runs(heartbeat)) >= 2, 30, what="the heartbeat's chain")
        quiet_api = _slowest_read(y, heartbeat)  # the same reads before X's storm, to compare with

        storm_at = datetime.now(UTC)
        x.ok("POST", f"/api/v1/schedules/{x_schedule}/pause/")  # 52 deliveries of X's
        wait_for(lambda: hanging.accepted >= 3, 20, what="X's receivers to be called")
        y_schedule = y.ok("POST", "/api/v1/schedules/", {"name": "alert me", "workflow_id": y_flow["id"],
                                                          "interval_seconds": 3600})["id"]
        paused_at = time.monotonic()
        y.ok("POST", f"/api/v1/schedules/{y_schedule}/pause/")
        wait_for(lambda: "schedule.paused" in y_receiver.types(), 4 + 5, what="Y's event beside X's storm")
        y_took = time.monotonic() - paused_at

        # Meanwhile the API answers and the chain keeps its cadence.
        slowest = _slowest_read(y, heartbeat)
        assert slowest < 2.0, slowest  # a lock held through a receiver's call shows as seconds here

        def every_x_delivery_attempted() -> bool:
            return all(x.ok("GET", f"/api/v1/webhooks/{hook}/deliveries/")["total"] >= 1 for hook in x_hooks)

        wait_for(every_x_delivery_attempted, 120, interval=1, what="an attempt of every X delivery")
        errors = {hook: x.ok("GET", f"/api/v1/webhooks/{hook}/deliveries/")["items"][-1]["error"] for hook in x_hooks}
        assert all(errors.values()), errors
        assert "refused" in errors[unsendable] or "invalid" in errors[unsendable].lower(), errors[unsendable]
        assert "deadline" in errors[x_hooks[50]], errors[x_hooks[50]]  # the trickle was cut off at the deadline
        assert y.ok("GET", f"/api/v1/webhooks/{y_hook['id']}/deliveries/")["items"][0]["status_code"] == 204
        runs = [r for r in stack.api.runs(heartbeat) if r["started_at"] and r["scheduled_for"]]
        lateness = [(parse_instant(r["started_at"]) - parse_instant(r["scheduled_for"])).total_seconds() for r in runs]
        assert len(lateness) >= 20 and max(lateness) < 2.0, lateness  # the chain kept its cadence through it all
        assert y_took < 9
        before = [late for r, late in zip(runs, lateness, strict=True) if parse_instant(r["scheduled_for"]) < storm_at]
        during = [late for r, late in zip(runs, lateness, strict=True) if parse_instant(r["scheduled_for"]) >= storm_at]
        print(f"fairness: Y's event {y_took:.2f} s after its pause; slowest of 20 API reads {quiet_api * 1000:.0f} ms "
              f"before X's storm, {slowest * 1000:.0f} ms during it; heartbeat lateness max "
              f"{max(before, default=0) * 1000:.0f} ms before ({len(before)} runs), "
              f"{max(during, default=0) * 1000:.0f} ms during and after ({len(during)} runs)")
    finally:
        hanging.stop()
        trickling.stop()
