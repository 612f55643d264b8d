"""Real HTTP receivers for webhook tests, on free loopback ports: `Receiver` records what it is sent, can
answer 500 to its first requests, and can be stopped and started again on the same port; it checks nothing
itself: tests verify signatures with verify() below, written here from the Standard Webhooks specification,
independently of recur_server.notify.signing. `HangingReceiver` never answers and `TricklingReceiver` answers a byte at
a time."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# Every type of event a webhook can subscribe to.
ALL_TYPES = ["run.failed", "run.timed_out", "schedule.dead", "schedule.paused", "schedule.done", "schedule.missed",
             "schedule.recovered", "breaker.opened", "breaker.closed"]


class Receiver:
    def __init__(self, port: int, fail_first: int = 0) -> None:
        self.port = port
        self.fail_first = fail_first  # answer 500 to this many requests first (each is recorded all the same)
        self.received: list[dict[str, Any]] = []  # {"headers": {...}, "body": bytes, "json": ...}
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    def start(self) -> None:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                with receiver._lock:
                    receiver.received.append({"headers": {k.lower(): v for k, v in self.headers.items()},
                                              "body": body, "json": json.loads(body)})
                    failing = len(receiver.received) <= receiver.fail_first
                self.send_response(500 if failing else 204)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def events(self) -> list[dict[str, Any]]:
        with self._lock:
            return [r["json"] for r in self.received]

    def types(self) -> list[str]:
        return [e["type"] for e in self.events()]


def verify(secret: str, headers: dict[str, str], body: bytes) -> bool:
    """The receiver's check: v1 = base64(HMAC-SHA256(base64-decoded secret, "id.timestamp.body"))."""
    key = base64.b64decode(secret.split("_", 1)[1])
    content = headers["webhook-id"].encode() + b"." + headers["webhook-timestamp"].encode() + b"." + body
    expected = base64.b64encode(hmac.new(key, content, hashlib.sha256).digest()).decode()
    given = [part.split(",", 1)[1] for part in headers["webhook-signature"].split(" ") if part.startswith("v1,")]
    return any(hmac.compare_digest(expected, signature) for signature in given)


class HangingReceiver:
    """Accepts connections, reads the request, and never answers (until stopped)."""

    def __init__(self) -> None:
        self.server = socket.create_server(("127.0.0.1", 0), backlog=128)
        self.port = self.server.getsockname()[1]
        self.stopped = threading.Event()
        self.accepted = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.stopped.is_set():
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            self.accepted += 1
            threading.Thread(target=self._hold, args=(conn,), daemon=True).start()

    def _hold(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(0.5)
            while not self.stopped.is_set():
                try:
                    if conn.recv(65536) == b"":
                        return
                except TimeoutError:
                    continue
                except OSError:
                    return

    def stop(self) -> None:
        self.stopped.set()
        self.server.close()


class TricklingReceiver(HangingReceiver):
    """Answers a byte every half second: a timeout of each read (of a second, say) never fires."""

    def _hold(self, conn: socket.socket) -> None:
        with conn:
            conn.recv(65536)
            answer = b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n" + b"x" * 10
            for byte in answer:
                if self.stopped.wait(0.5):
                    return
                try:
                    conn.sendall(bytes([byte]))
                except OSError:
                    return
