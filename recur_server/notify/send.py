"""One signed POST to a checked address: http.client connected to the IP the guard approved, with the
host's name in the Host header and, for https, in SNI and the certificate check.

A POST has one deadline for connecting, sending and reading the answer together: a socket timeout alone
applies to each read, and a receiver that trickles a byte every half second would hold it for ever."""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import ssl
import threading
import time
from dataclasses import dataclass
from typing import Any

from recur_server.notify import guard, signing


@dataclass(frozen=True)
class Answer:
    status_code: int | None
    duration_ms: int
    error: str | None

    @property
    def ok(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300


class _PinnedHTTPS(http.client.HTTPSConnection):
    def __init__(self, host: str, address: str, port: int, timeout: float) -> None:
        super().__init__(host, port, timeout=timeout, context=ssl.create_default_context())
        self._address = address

    def connect(self) -> None:
        sock = socket.create_connection((self._address, self.port), self.timeout)
        self.sock = self._context.wrap_socket(sock, server_hostname=self.host)  # type: ignore[attr-defined]


def post(url: str, secret: str | None, message_id: str, timestamp: int, payload: dict[str, Any],
         allow_hosts: frozenset[str], timeout: float, allowlist: guard.Egress | None = None) -> Answer:
    """POST `payload` to `url` under the address guard and the egress allowlist (a URL they refuse is an
    Answer with the reason and no connection made)."""
    started = time.monotonic()
    body = json.dumps(payload, separators=(",", ":")).encode()

    def took() -> int:
        return int((time.monotonic() - started) * 1000)

    try:
        target = guard.resolve(url, allow_hosts, allowlist)
    except guard.Refused as exc:
        return Answer(None, took(), f"refused: {exc}")
    connection: http.client.HTTPConnection
    if target.scheme == "https":
        connection = _PinnedHTTPS(target.host, target.address, target.port, timeout)
    else:
        connection = http.client.HTTPConnection(target.address, target.port, timeout=timeout)
    expired = threading.Event()

    def cut_off() -> None:
        expired.set()
        sock = connection.sock
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)  # the blocked read or write returns at once

    deadline = threading.Timer(timeout, cut_off)
    deadline.daemon = True
    deadline.start()
    try:
        name = f"[{target.host}]" if ":" in target.host else target.host  # an IPv6 literal, as in its URL
        host_header = name if target.port in (80, 443) else f"{name}:{target.port}"
        headers = signing.headers(secret, message_id, timestamp, body) if secret else {
            "webhook-id": message_id, "webhook-timestamp": str(timestamp), "Content-Type": "application/json"}
        connection.request("POST", target.path, body=body, headers={**headers, "Host": host_header})
        if expired.is_set():
            raise TimeoutError
        response = connection.getresponse()
        response.read(65536)
        if expired.is_set():
            raise TimeoutError
        return Answer(response.status, took(), None if 200 <= response.status < 300 else f"HTTP {response.status}")
    except Exception as exc:  # noqa: BLE001 - whatever the send raises is this attempt's error
        if expired.is_set():
            return Answer(None, took(), f"no complete answer within the {timeout:g} s deadline")
        return Answer(None, took(), f"{type(exc).__name__}: {exc}"[:500])
    finally:
        deadline.cancel()
        connection.close()
