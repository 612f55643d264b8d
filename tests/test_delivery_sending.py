"""Sending a delivery against real sockets: one deadline for the whole POST, no database transaction open
while a receiver is being called, the day's give-up judged before sending, and a URL that cannot be sent
recorded as a failed attempt that stops nobody else's delivery."""

from __future__ import annotations

import socket
import threading
import time
from datetime import timedelta

import pytest
from sqlalchemy import create_engine, select, text

from harness.deliveries import pending_delivery
from harness.receiver import Receiver, TricklingReceiver
from harness.servers import free_port, wait_for
from harness.tokens import authorized_client, new_owner_token
from recur_server.infra import clock
from recur_server.infra.extensions import db
from recur_server.notify import delivery, send
from recur_server.notify.models import Delivery, DeliveryAttempt


def test_a_trickling_receiver_is_cut_off_at_the_deadline() -> None:
    trickle = TricklingReceiver()
    try:
        started = time.monotonic()
        answer = send.post(f"http://127.0.0.1:{trickle.port}/hook", None, "evt_1", 0, {"x": 1},
                           frozenset({"127.0.0.1"}), 1.0)
        took = time.monotonic() - started
    finally:
        trickle.stop()
    assert answer.status_code is None and answer.error is not None and "deadline" in answer.error, answer
    assert took < 3.0, took  # a per-read timeout alone let a byte a second hold it for as long as it trickled


def _pending_delivery(app, client, url: str, created_ago: timedelta = timedelta(0)) -> int:  # type: ignore[no-untyped-def]
    app.config["RECUR_WEBHOOK_ALLOW_HOSTS"] = "127.0.0.1"
    return pending_delivery(client, url, created_ago)


def _given_up_delivery(app, client, url: str) -> tuple[int, Delivery | None]:  # type: ignore[no-untyped-def]
    """A delivery made a day and a minute ago, after one sending pass: its id, and its row as it is then."""
    row_id = _pending_delivery(app, client, url, created_ago=timedelta(days=1, minutes=1))
    delivery.deliver_due(clock.utcnow())
    delivery.wait_idle()
    db.session.remove()
    return row_id, db.session.get(Delivery, row_id)


def test_a_delivery_past_its_day_is_given_up_without_sending(app, client):
    receiver = Receiver(free_port())
    receiver.start()
    try:
        row_id, row = _given_up_delivery(app, client, receiver.url)
        assert row is not None and row.status == "failed" and "gave up" in (row.reason or "")
        assert receiver.events() == []
    finally:
        receiver.stop()


def test_no_transaction_is_open_while_a_receiver_answers(app, client, database_url):
    trickle = TricklingReceiver()
    try:
        _pending_delivery(app, client, f"http://127.0.0.1:{trickle.port}/hook")
        app.config["RECUR_WEBHOOK_TIMEOUT_SECONDS"] = 4
        db.session.remove()

        def deliver() -> None:  # in a thread of its own, as the watch loop calls it
            with app.app_context():
                delivery.deliver_due(clock.utcnow())
                delivery.wait_idle()
                db.session.remove()

        sender = threading.Thread(target=deliver)
        sender.start()
        wait_for(lambda: trickle.accepted >= 1, 5, what="the receiver to be called")
        time.sleep(0.5)  # the sender is now waiting on the receiver's trickle
        other = create_engine(app.config["SQLALCHEMY_DATABASE_URI"])
        try:
            with other.connect() as connection:
                if connection.dialect.name == "sqlite":
                    connection.exec_driver_sql("PRAGMA busy_timeout=500")
                    connection.exec_driver_sql("BEGIN IMMEDIATE")  # the write lock: refused while one is held
                    connection.exec_driver_sql("ROLLBACK")
                else:
                    held = connection.scalar(text(
                        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                        "AND state LIKE 'idle in transaction%' AND pid <> pg_backend_pid()"))
                    assert held == 0
        finally:
            other.dispose()
        sender.join(10)
        attempt = db.session.scalars(select(DeliveryAttempt)).one()
        assert attempt.error is not None and "deadline" in attempt.error
    finally:
        trickle.stop()


def test_an_unsendable_url_is_a_failed_attempt_and_stops_no_other_delivery(app, client):
    receiver = Receiver(free_port())
    receiver.start()
    try:
        bad = _pending_delivery(app, client, "http://127.0.0.1:9/ok")
        db.session.execute(text("UPDATE webhooks SET url = :url WHERE id = (SELECT webhook_id FROM deliveries "
                                "WHERE id = :id)"), {"url": "http://127.0.0.1:9/hooks/caf\u00e9", "id": bad})
        db.session.commit()
        other = authorized_client(app, new_owner_token(app, "other"))
        good = _pending_delivery(app, other, receiver.url)
        delivery.deliver_due(clock.utcnow())
        delivery.wait_idle()
        db.session.remove()
        attempts = {a.delivery_id: a for a in db.session.scalars(select(DeliveryAttempt))}
        assert attempts[bad].status_code is None and attempts[bad].error
        assert attempts[good].status_code == 204
        assert db.session.get(Delivery, bad).status == "pending"  # retried with backoff, given up after a day
        assert receiver.types() == ["schedule.paused"]
    finally:
        receiver.stop()


def test_deliveries_are_shared_fairly_between_owners(app, client):
    """One owner with more due deliveries than this process has slots takes at most half of them; another
    owner's delivery goes out in the same pass."""
    hanging_port = free_port()
    server = socket.create_server(("127.0.0.1", hanging_port), backlog=64)
    stop = threading.Event()
    receiver = Receiver(free_port())
    receiver.start()
    try:
        app.config["RECUR_WEBHOOK_ALLOW_HOSTS"] = "127.0.0.1"
        app.config["RECUR_WEBHOOK_CONCURRENCY"] = 4
        app.config["RECUR_WEBHOOK_TIMEOUT_SECONDS"] = 3
        for i in range(10):
            assert client.post("/api/v1/webhooks/", json={"url": f"http://127.0.0.1:{hanging_port}/h{i}",
                                                         "event_types": ["schedule.paused"]}).status_code == 201
        _pending_delivery(app, client, f"http://127.0.0.1:{hanging_port}/last")
        other = authorized_client(app, new_owner_token(app, "other"))
        _pending_delivery(app, other, receiver.url)
        started = delivery.deliver_due(clock.utcnow())
        assert started == 3  # two of the first owner's (half of 4 slots) and the other owner's one
        wait_for(lambda: receiver.types() == ["schedule.paused"], 5, what="the other owner's delivery")
        delivery.wait_idle()
    finally:
        stop.set()
        server.close()
        receiver.stop()


def test_an_ipv6_literal_host_is_bracketed_in_the_host_header() -> None:
    try:
        server = socket.create_server(("::1", 0), family=socket.AF_INET6)
    except OSError:  # no IPv6 loopback on this machine
        pytest.skip("no IPv6 loopback")
    port = server.getsockname()[1]
    seen: list[bytes] = []

    def answer() -> None:
        conn, _ = server.accept()
        with conn:
            seen.append(conn.recv(65536))
            conn.sendall(b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n")

    threading.Thread(target=answer, daemon=True).start()
    try:
        reply = send.post(f"http://[::1]:{port}/hook", None, "evt_1", 0, {}, frozenset({"::1"}), 5.0)
    finally:
        server.close()
    assert reply.status_code == 204, reply
    assert f"Host: [::1]:{port}\r\n".encode() in seen[0], seen


def test_a_given_up_delivery_is_sent_again_by_hand_once_per_request_and_the_log_says_so(app, client):
    receiver = Receiver(free_port())
    receiver.start()
    try:
        row_id, row = _given_up_delivery(app, client, receiver.url)
        assert row is not None and row.status == "failed" and receiver.events() == []
        webhook_id = row.webhook_id
        db.session.rollback()
        path = f"/api/v1/webhooks/{webhook_id}/deliveries/{row_id}/redeliver/"

        first = client.post(path)
        assert first.status_code == 202, first.json
        assert (first.json["status"], first.json["id"]) == ("pending", row_id)
        again = client.post(path)  # the same request again: still the one redelivery
        assert again.status_code == 202 and again.json["status"] == "pending"
        delivery.deliver_due(clock.utcnow())  # its day counts from the redelivery, not from the event
        delivery.wait_idle()
        wait_for(lambda: receiver.types() == ["schedule.paused"], 5, what="the delivery sent again")
        db.session.remove()
        assert db.session.get(Delivery, row_id).status == "delivered"  # type: ignore[union-attr]
        log = client.get(f"/api/v1/webhooks/{webhook_id}/deliveries/").json["items"]
        # Newest first: the attempt that delivered it, then the request that sent it again (it sent nothing).
        assert [(e["delivery_id"], e["requested_by"] is not None) for e in log] == [(row_id, False), (row_id, True)]
        assert 200 <= log[0]["status_code"] < 300 and log[1]["status_code"] is None
        assert "admin" in log[1]["requested_by"] and "it was failed" in log[1]["error"]
        missing = client.post(f"/api/v1/webhooks/{webhook_id}/deliveries/999999/redeliver/")
        assert missing.status_code == 404
    finally:
        receiver.stop()


def test_a_delivery_waiting_for_its_retry_is_sent_when_asked_unless_a_sender_has_it(app, client):
    receiver = Receiver(free_port(), fail_first=1)
    receiver.start()
    try:
        app.config["RECUR_WEBHOOK_BACKOFF_SECONDS"] = 300
        row_id = _pending_delivery(app, client, receiver.url)
        webhook_id = db.session.get(Delivery, row_id).webhook_id  # type: ignore[union-attr]
        delivery.deliver_due(clock.utcnow())
        delivery.wait_idle()
        db.session.remove()
        row = db.session.get(Delivery, row_id)
        assert row is not None and (row.status, row.attempts) == ("pending", 1) and len(receiver.events()) == 1
        waiting_since = row.next_attempt_at  # five minutes away
        db.session.rollback()
        path = f"/api/v1/webhooks/{webhook_id}/deliveries/{row_id}/redeliver/"

        assert delivery.claim(row_id, waiting_since, clock.utcnow())  # a sender has it: under way
        held = client.post(path)
        assert held.status_code == 202 and (held.json["status"], held.json["attempts"]) == ("pending", 2)
        assert len(receiver.events()) == 1  # left to the sender
        row = db.session.get(Delivery, row_id)
        assert row is not None
        row.attempts, row.next_attempt_at = 1, waiting_since  # as if that claim were never made
        db.session.commit()

        sent = client.post(path)
        assert sent.status_code == 202 and (sent.json["status"], sent.json["attempts"]) == ("delivered", 2)
        assert len(receiver.events()) == 2
        # The scheduled retry's sender, which read the row before the request claimed it, finds it taken.
        assert not delivery.claim(row_id, waiting_since, clock.utcnow())
        log = client.get(f"/api/v1/webhooks/{webhook_id}/deliveries/").json["items"]
        assert [(e["status_code"], e["requested_by"] is not None) for e in log] == [(204, True), (500, False)]
    finally:
        receiver.stop()
