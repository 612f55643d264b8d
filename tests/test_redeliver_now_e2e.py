"""Send again means now: a delivery still waiting for its next retry (minutes away) is sent at once when
someone asks, one attempt per request, recorded in the delivery log with who asked. Real processes:
gunicorn, a worker.py process (whose background loop sends the outbox) and an HTTP receiver."""

from __future__ import annotations

import time

import pytest

from harness.receiver import Receiver
from harness.servers import free_port, wait_for
from harness.stack import QUICK_WEBHOOKS, Stack, parse_instant

pytestmark = pytest.mark.integration


@pytest.fixture
def stack_env() -> dict[str, str]:
    # A failed attempt's retry is five minutes away: only a request can send it within this test.
    return {**QUICK_WEBHOOKS, "RECUR_WEBHOOK_BACKOFF_SECONDS": "300", "RECUR_WEBHOOK_BACKOFF_MAX_SECONDS": "300"}


def test_a_delivery_waiting_for_its_retry_is_sent_at_once_when_asked(stack: Stack) -> None:
    receiver = Receiver(free_port(), fail_first=1)  # 500 once, then 204
    receiver.start()
    try:
        api = stack.api
        stack.start_worker()
        stack.wait_workers_ready()  # its deliveries go out from a worker that runs (a loaded CI machine once
        # started none within the 30 s below: its log was empty)
        hook = api.ok("POST", "/api/v1/webhooks/", {"url": receiver.url, "event_types": ["schedule.paused"]})
        log_path = f"/api/v1/webhooks/{hook['id']}/deliveries/"
        flow = api.ok("POST", "/api/v1/workflows/", {"name": "noop", "task": "builtin.noop"})
        schedule = api.ok("POST", "/api/v1/schedules/", {"name": "idle", "workflow_id": flow["id"],
                                                         "interval_seconds": 3600})
        api.ok("POST", f"/api/v1/schedules/{schedule['id']}/pause/")
        wait_for(lambda: [a["status_code"] for a in api.ok("GET", log_path)["items"]] == [500], 30,
                 what="the first attempt, answered 500")
        [failed] = api.ok("GET", log_path)["items"]
        assert len(receiver.events()) == 1 and api.ok("GET", log_path)["pending"] == 1
        redeliver = f"{log_path}{failed['delivery_id']}/redeliver/"

        asked = time.monotonic()
        status, answer = api.call("POST", redeliver)
        assert status == 202, answer
        # At once: within seconds (a loaded machine's), where the delivery's own retry is five minutes away.
        wait_for(lambda: len(receiver.events()) == 2, 30, interval=0.02, what="the event sent again at once")
        assert time.monotonic() - asked < 30
        assert [e["id"] for e in receiver.events()] == [failed["event_id"]] * 2
        log = api.ok("GET", log_path)
        # Newest first: the attempt the request sent (marked with who asked), then the scheduled one.
        assert [(a["delivery_id"], a["status_code"]) for a in log["items"]] == [
            (failed["delivery_id"], 204), (failed["delivery_id"], 500)], log
        sent = log["items"][0]
        assert sent["requested_by"] is not None and "(token test client)" in sent["requested_by"], sent
        assert log["items"][1]["requested_by"] is None and log["pending"] == 0
        assert answer["status"] == "delivered" and answer["attempts"] == 2, answer
        assert parse_instant(sent["at"]) >= parse_instant(failed["at"])

        # Nothing else went out meanwhile: the retry that was five minutes away is no longer pending.
        time.sleep(1)
        assert len(receiver.events()) == 2
    finally:
        receiver.stop()
