"""The egress allowlist (RECUR_WEBHOOK_EGRESS): when set, webhooks reach only the hosts, domains and ranges it
names. A URL outside it is a 422 on `url` when a webhook is created or edited, and a delivery to a webhook
made before the setting changed is a failed attempt naming the allowlist, with no connection made. It
composes with the address guard: an internal address needs RECUR_WEBHOOK_ALLOW_HOSTS as well."""

from __future__ import annotations

import os
import socket

import pytest
from sqlalchemy import select

from harness.deliveries import pending_delivery
from harness.receiver import Receiver
from harness.servers import free_port
from recur_server import create_app
from recur_server.infra import clock
from recur_server.infra.config import SettingError
from recur_server.infra.extensions import db
from recur_server.notify import delivery, guard
from recur_server.notify.models import DeliveryAttempt

LOOPBACK = "127.0.0.0/8,::1,localhost"


def test_the_setting_reads_hosts_domains_and_ranges() -> None:
    allow = guard.egress(" hooks.example.com, .Example.ORG ,10.0.0.0/8, 2001:db8::/32, 192.0.2.7 ")
    assert allow is not None
    assert allow.hosts == frozenset({"hooks.example.com"})
    assert allow.allows_name("hooks.example.com") and not allow.allows_name("example.com")
    assert allow.allows_name("example.org") and allow.allows_name("a.b.example.org")
    assert not allow.allows_name("badexample.org") and not allow.allows_name("example.org.evil.net")
    assert allow.allows_addresses(["10.1.2.3", "192.0.2.7"]) and allow.allows_addresses(["2001:db8::1"])
    assert not allow.allows_addresses(["10.1.2.3", "192.0.2.8"])  # every address it resolves to, not one
    assert guard.egress("") is None and guard.egress(" , ") is None


@pytest.mark.parametrize("entry", ["10.0.0.0/33", "http://x.example.com", "a b", "..example.com", "host:80"])
def test_an_entry_that_is_none_of_these_is_refused_at_start(entry: str) -> None:
    with pytest.raises(ValueError, match="RECUR_WEBHOOK_EGRESS"):
        guard.egress(entry)
    with pytest.raises(SettingError, match="RECUR_WEBHOOK_EGRESS"):
        create_app({"TESTING": True, "RECUR_WEBHOOK_EGRESS": entry})


def test_outside_the_allowlist_is_refused_whatever_the_guard_allows() -> None:
    allow = guard.egress(LOOPBACK)
    with pytest.raises(guard.Refused, match="egress allowlist"):  # a public address: the guard alone lets it by
        guard.resolve("https://203.0.113.10/hook", frozenset({"203.0.113.10"}), allow)
    with pytest.raises(guard.Refused, match="egress allowlist"):  # names only: one outside is refused unlooked-up
        guard.resolve("https://hooks.example.com/hook", frozenset(), guard.egress("localhost,.internal.test"))
    assert guard.resolve("http://127.0.0.1:9/hook", frozenset({"127.0.0.1"}), allow).address == "127.0.0.1"
    assert guard.resolve("http://localhost:9/hook", frozenset({"localhost"}), allow).host == "localhost"
    with pytest.raises(guard.Refused, match="internal address"):  # inside it, the guard still judges
        guard.resolve("http://127.0.0.1:9/hook", frozenset(), allow)


def test_creating_or_editing_a_webhook_outside_the_allowlist_is_a_422_on_url(app, client) -> None:
    app.config["RECUR_WEBHOOK_ALLOW_HOSTS"] = "127.0.0.1,203.0.113.10"
    app.config["RECUR_WEBHOOK_EGRESS"] = LOOPBACK
    answer = client.post("/api/v1/webhooks/", json={"url": "https://203.0.113.10/hook",
                                                    "event_types": ["schedule.paused"]})
    assert answer.status_code == 422, answer.json
    assert "egress allowlist" in answer.json["errors"]["url"][0], answer.json
    made = client.post("/api/v1/webhooks/", json={"url": "http://127.0.0.1:9/hook",
                                                  "event_types": ["schedule.paused"]})
    assert made.status_code == 201, made.json
    edit = client.patch(f"/api/v1/webhooks/{made.json['id']}/", json={"url": "https://203.0.113.10/hook"})
    assert edit.status_code == 422 and "egress allowlist" in edit.json["errors"]["url"][0], edit.json


def test_a_webhook_made_before_the_allowlist_gets_a_failed_attempt_and_no_connection(app, client) -> None:
    """Made to 127.0.0.2 (loopback, its own address) when nothing narrowed egress; the allowlist then names
    127.0.0.1 only. The delivery's attempt fails naming the allowlist, and a socket listening on 127.0.0.2
    accepts nothing."""
    listener = socket.create_server(("127.0.0.2", 0))
    listener.settimeout(0.5)
    port = listener.getsockname()[1]
    try:
        app.config["RECUR_WEBHOOK_ALLOW_HOSTS"] = "127.0.0.2"
        delivery_id = pending_delivery(client, f"http://127.0.0.2:{port}/hook")
        app.config["RECUR_WEBHOOK_EGRESS"] = "127.0.0.1/32"
        delivery.deliver_due(clock.utcnow())
        delivery.wait_idle()
        db.session.remove()
        [attempt] = db.session.scalars(select(DeliveryAttempt).where(DeliveryAttempt.delivery_id == delivery_id))
        assert attempt.status_code is None and "egress allowlist" in (attempt.error or ""), attempt.error
        assert "RECUR_WEBHOOK_EGRESS=127.0.0.1/32" in (attempt.error or "")
        with pytest.raises(TimeoutError):  # nothing ever connected
            listener.accept()
    finally:
        listener.close()


def test_a_receiver_inside_the_allowlist_is_delivered_to(app, client) -> None:
    receiver = Receiver(free_port())
    receiver.start()
    try:
        app.config["RECUR_WEBHOOK_ALLOW_HOSTS"] = "127.0.0.1"
        app.config["RECUR_WEBHOOK_EGRESS"] = LOOPBACK
        pending_delivery(client, receiver.url)
        delivery.deliver_due(clock.utcnow())
        delivery.wait_idle()
        assert receiver.types() == ["schedule.paused"]
    finally:
        receiver.stop()


@pytest.mark.skipif(os.environ.get("RECUR_TEST_NETNS") != "inside",
                    reason="not run by scripts/test inside its loopback-only network namespace")
def test_the_suite_runs_where_nothing_but_loopback_exists() -> None:
    """scripts/test's namespace: loopback is the one interface, and an address beyond it is unreachable. (The
    multi-host tests, in a shard beside this one, add a bridge and veths that lead only to namespaces they made:
    harness.netns.MADE_HERE.)"""
    from harness.netns import MADE_HERE

    assert [name for _, name in socket.if_nameindex() if not MADE_HERE.fullmatch(name)] == ["lo"]
    with socket.socket() as probe:
        probe.settimeout(2)
        assert probe.connect_ex(("203.0.113.10", 443)) != 0
