"""Signed webhooks, the circuit breaker and missed-run alerts, end to end: gunicorn, worker.py processes, a
real redis-server and a real HTTP receiver that checks each signature with its own implementation."""

from __future__ import annotations

import re
import time
from collections import Counter
from datetime import datetime
from typing import Any

import pytest

from harness.receiver import ALL_TYPES, Receiver, verify
from harness.servers import wait_for
from harness.stack import QUICK_WEBHOOKS, Stack, parse_instant

pytestmark = pytest.mark.integration

# How long a late schedule is watched after its schedule.missed arrived, to see no second one sent: eight
# watch passes (RECUR_WATCH_SECONDS is 0.5 here), each of which would send another if it were one per check.
NO_REPEAT_SECONDS = 4.0
CLAIM_WAIT_SECONDS = 0.5  # a claim stamped before it waited for a probe's finish to commit


@pytest.fixture
def stack_env() -> dict[str, str]:
    # The egress allowlist also takes the internal ranges the guard test names, so that the guard itself is
    # what refuses them (it refuses each: nothing is ever sent there); every receiver here is on loopback.
    return {**QUICK_WEBHOOKS, "RECUR_WEBHOOK_EGRESS": "127.0.0.0/8,::1,localhost,169.254.0.0/16,10.0.0.0/8"}


def test_webhook_urls_that_reach_internal_addresses_are_refused(stack: Stack) -> None:
    for url, why in (("http://127.0.0.2:9/hook", "internal address"), ("http://169.254.169.254/latest", "internal"),
                     ("http://[::1]:9/", "internal"), ("http://10.1.2.3/", "internal"), ("ftp://127.0.0.1/", "http"),
                     ("http://user:pw@127.0.0.1/", "user name")):
        status, answer = stack.api.call("POST", "/api/v1/webhooks/", {"url": url, "event_types": ["run.failed"]})
        assert status == 422 and "url" in answer["errors"], (url, answer)
        assert why in answer["errors"]["url"][0], answer
    # 127.0.0.1 is in RECUR_WEBHOOK_ALLOW_HOSTS here: allowed
    status, made = stack.api.call("POST", "/api/v1/webhooks/", {"url": "http://127.0.0.1:9/hook",
                                                                  "event_types": ["run.failed"]})
    assert status == 201 and made["secret"].startswith("whsec_")
    shown = stack.api.ok("GET", f"/api/v1/webhooks/{made['id']}/")
    assert "secret" not in shown  # shown once


def test_signed_events_breaker_and_a_receiver_that_was_down(stack: Stack, receiver: Receiver) -> None:
    api = stack.api
    stack.start_worker()
    hook = api.ok("POST", "/api/v1/webhooks/", {"url": receiver.url, "event_types": ALL_TYPES})
    secret = hook["secret"]

    # a schedule that dies: run.failed then schedule.dead
    dying = api.ok("POST", "/api/v1/workflows/", {"name": "dies", "task": "builtin.fail"})
    dead_id = api.ok("POST", "/api/v1/schedules/", {"name": "dies", "workflow_id": dying["id"], "interval_seconds": 1,
                                                     "max_retries": 1})["id"]
    # a workflow whose breaker opens after 3 failed runs and lets one probe through after 5 s
    flow = api.ok("POST", "/api/v1/workflows/", {"name": "flaky vendor", "task": "builtin.fail",
                                                 "breaker_threshold": 3, "breaker_reset_seconds": 5})
    ids = [api.ok("POST", "/api/v1/schedules/", {"name": f"b{i}", "workflow_id": flow["id"], "interval_seconds": 1,
                                                 "max_retries": 0, "on_exhausted": "continue"})["id"] for i in range(2)]
    wait_for(lambda: {"run.failed", "schedule.dead", "breaker.opened"} <= set(receiver.types()), 20,
             what="run.failed, schedule.dead and breaker.opened")

    receiver.stop()  # down: every event meanwhile waits in the outbox
    down_at = time.monotonic()

    def outage_seen() -> bool:
        """The breaker's probe failed (its breaker.opened made while the receiver is down) and a delivery
        was refused: the outbox holds what the receiver missed."""
        history = api.ok("GET", f"/api/v1/workflows/{flow['id']}/breaker/")["history"]
        attempts = api.ok("GET", f"/api/v1/webhooks/{hook['id']}/deliveries/?limit=1000")["items"]
        return (("half_open", "open") in [(h["from"], h["to"]) for h in history]
                and any(a["status_code"] is None for a in attempts))

    wait_for(outage_seen, 40, interval=0.5, what="a failed probe and a refused delivery while the receiver is down")
    receiver.start()
    wait_for(lambda: receiver.types().count("breaker.opened") >= 2, 30, what="the probe's failure to reopen it")
    api.ok("PATCH", f"/api/v1/workflows/{flow['id']}/", {"task": "builtin.noop"})  # the vendor is fixed
    wait_for(lambda: "breaker.closed" in receiver.types(), 20, what="a probe to close the breaker")
    api.ok("POST", f"/api/v1/schedules/{ids[0]}/pause/")
    api.ok("POST", f"/api/v1/schedules/{ids[1]}/pause/")

    def all_delivered() -> bool:
        return api.ok("GET", f"/api/v1/webhooks/{hook['id']}/deliveries/?limit=1000")["pending"] == 0

    wait_for(all_delivered, 20, what="every delivery")
    log = api.ok("GET", f"/api/v1/webhooks/{hook['id']}/deliveries/?limit=1000")
    attempted = {a["event_id"] for a in log["items"]}
    got = Counter(e["id"] for e in receiver.events())
    assert attempted <= set(got), "an event the log shows was never received"
    failed_attempts = [a for a in log["items"] if a["status_code"] is None]
    assert failed_attempts and all("Connection" in a["error"] or "refused" in a["error"].lower()
                                   for a in failed_attempts)
    print(f"receiver down {time.monotonic() - down_at:.0f}s ago; {len(got)} events received, "
          f"{len(log['items'])} attempts, {len(failed_attempts)} while it was down")
    for line in sorted(log["items"], key=lambda a: a["at"])[-12:]:
        print(f"  {line['at']} {line['event_type']:<18} attempt {line['attempt']} -> "
              f"{line['status_code']} in {line['duration_ms']} ms {line['error'] or ''}")

    for delivery in receiver.received:  # every delivery signed, checked by the receiver's own code
        assert verify(secret, delivery["headers"], delivery["body"]), delivery["headers"]
        assert delivery["headers"]["webhook-id"] == delivery["json"]["id"]
    dead = next(e for e in receiver.events() if e["type"] == "schedule.dead")
    assert dead["data"]["schedule_id"] == dead_id and dead["data"]["status"] == "dead"

    state = api.ok("GET", f"/api/v1/workflows/{flow['id']}/breaker/")
    steps = [(h["from"], h["to"]) for h in state["history"]]
    print("breaker history:\n" + "\n".join(f"  {h['at']} {h['from']:>9} -> {h['to']:<9} {h['reason']} ({h['by']})"
                                           for h in state["history"]))
    assert steps[0] == ("closed", "open") and steps[-1] == ("half_open", "closed") and state["state"] == "closed"
    assert ("half_open", "open") in steps  # a failed probe opened it again
    opened = [h for h in state["history"] if h["to"] == "open"]
    halves = [h for h in state["history"] if h["to"] == "half_open"]
    assert all((parse_instant(half["at"]) - parse_instant(o["at"])).total_seconds() >= 5
               for o, half in zip(opened, halves, strict=False))

    # while open, ticks were skipped; each half-open period let exactly one run through: the probe it names.
    # A run's started_at is its claim's time, taken before the claim waits for the database (on SQLite, the
    # write lock): a link stamped in the last moments of a half-open period that ended in `closed` may have
    # waited for the probe's finish to commit and then, rightly, found the breaker closed. Such a run is let
    # pass only that close to a close; after a probe that failed (back to open) no other run may start at all.
    # (That the breaker admits one probe only is tests/test_notify_units.py's, with literal times.)
    runs = [r for i in ids for r in api.runs(i)]
    skipped = [r for r in runs if r["reason"] == "breaker"]
    assert skipped
    for half in halves:
        began = parse_instant(half["at"])
        after = next((h for h in state["history"] if parse_instant(h["at"]) > began), None)
        end = parse_instant(after["at"]) if after else datetime.max.replace(tzinfo=began.tzinfo)
        started = [r for r in runs if r["reason"] is None and began <= parse_instant(r["started_at"]) < end]
        probe = re.search(r"run (\S+) probes", half["reason"])
        assert probe is not None and probe.group(1) in {r["id"] for r in started}, (half, started)
        others = [r for r in started if r["id"] != probe.group(1)]
        assert not others or (after is not None and after["to"] == "closed" and all(
            (end - parse_instant(r["started_at"])).total_seconds() <= CLAIM_WAIT_SECONDS for r in others)), \
            (half, started)

    api.ok("POST", f"/api/v1/workflows/{flow['id']}/breaker/reset/")  # by hand, recorded with who did it
    assert api.ok("GET", f"/api/v1/workflows/{flow['id']}/breaker/")["history"][-1]["by"].startswith("admin")


def test_every_worker_killed_then_schedule_missed_once_and_recovered(stack: Stack, receiver: Receiver) -> None:
    api = stack.api
    worker = stack.start_worker()
    # A worker slow to start would make the first ticks late, and their schedule.missed is not the one tested.
    stack.wait_workers_ready()
    hook = api.ok("POST", "/api/v1/webhooks/", {"url": receiver.url,
                                                "event_types": ["schedule.missed", "schedule.recovered"]})
    flow = api.ok("POST", "/api/v1/workflows/", {"name": "heartbeat", "task": "builtin.noop"})
    schedule_id = api.ok("POST", "/api/v1/schedules/", {"name": "heartbeat", "workflow_id": flow["id"],
                                                        "interval_seconds": 2, "alert_after_seconds": 5})["id"]
    wait_for(lambda: len([r for r in api.runs(schedule_id) if r["status"] == "succeeded"]) >= 2, 20,
             what="two runs")
    worker.kill()  # SIGKILL: nothing runs the chain now; only the web processes are alive
    first_missed = parse_instant(api.ok("GET", f"/api/v1/schedules/{schedule_id}/")["next_run_at"])
    wait_for(lambda: "schedule.missed" in receiver.types(), 20, what="schedule.missed")
    arrived = datetime.now(first_missed.tzinfo)
    time.sleep(NO_REPEAT_SECONDS)  # one event, not one per check
    assert receiver.types() == ["schedule.missed"]
    late = api.ok("GET", f"/api/v1/schedules/{schedule_id}/")
    assert late["health"] == "late"
    print(f"schedule.missed arrived {(arrived - first_missed).total_seconds():.1f}s after the first missed tick")
    assert (arrived - first_missed).total_seconds() <= 15

    stack.start_worker()
    wait_for(lambda: "schedule.recovered" in receiver.types(), 20, what="schedule.recovered")
    assert receiver.types() == ["schedule.missed", "schedule.recovered"]
    assert api.ok("GET", f"/api/v1/schedules/{schedule_id}/")["health"] == "ok"
    event: Any = receiver.events()[0]
    assert event["data"]["schedule_id"] == schedule_id and event["data"]["alert_after_seconds"] == 5
    # Delivered: the sender records it once the receiver has answered, a moment after the receiver has it.
    wait_for(lambda: api.ok("GET", f"/api/v1/webhooks/{hook['id']}/deliveries/")["pending"] == 0, 10,
             what="the deliveries to be recorded as sent")
