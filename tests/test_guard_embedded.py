"""The outbound-address guard with what plain IP checks miss: IPv6 addresses that carry an IPv4 address
(NAT64, 6to4, Teredo) judged by the IPv4 they reach, `host:port` entries of RECUR_WEBHOOK_ALLOW_HOSTS,
and URLs that http.client could not send (non-ASCII, whitespace, control characters). Literal addresses
only: resolving an IP literal needs no DNS."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from recur_server.notify import guard, send


@pytest.mark.parametrize("address", [
    "64:ff9b::a00:1",  # NAT64 (RFC 6052) of 10.0.0.1
    "64:ff9b::7f00:1",  # ... of 127.0.0.1
    "64:ff9b::a9fe:a9fe",  # ... of 169.254.169.254, the cloud metadata service
    "64:ff9b:1::808:808",  # local-use NAT64 (RFC 8215): internal whatever it carries
    "64:ff9b:1:2:3::a00:1",
    "2002:a00:1::",  # 6to4 of 10.0.0.1
    "2002:7f00:1::1",  # 6to4 of 127.0.0.1
    "2002:a9fe:a9fe::",  # 6to4 of 169.254.169.254
    "2001:0:808:808::f5ff:fffe",  # Teredo, server 8.8.8.8, client 10.0.0.1 (stored XOR 0xffffffff)
    "2001:0:a00:1::f7f7:f7f7",  # Teredo, server 10.0.0.1, client 8.8.8.8
    "::a00:1",  # IPv4-compatible (deprecated) 10.0.0.1
    "::ffff:0:a00:1",  # IPv4-translated (SIIT) 10.0.0.1
])
def test_an_ipv6_address_carrying_an_internal_ipv4_is_not_public(address: str) -> None:
    assert not guard._public(address)
    with pytest.raises(guard.Refused, match="internal address"):
        guard.resolve(f"http://[{address}]/hook", frozenset())


@pytest.mark.parametrize("address", [
    "64:ff9b::808:808",  # NAT64 of 8.8.8.8: a public receiver reached through the host's NAT64
    "2002:808:808::1",  # 6to4 of 8.8.8.8
    "2001:0:808:808::f7f7:f7f7",  # Teredo, server and client 8.8.8.8
    "2606:4700:4700::1111",
    "8.8.8.8",
])
def test_an_address_carrying_a_public_ipv4_stays_public(address: str) -> None:
    assert guard._public(address)
    host = f"[{address}]" if ":" in address else address
    assert guard.resolve(f"https://{host}/hook", frozenset()).address == address


def test_an_allowed_host_with_a_port_allows_that_port_only() -> None:
    allow = guard.allowed_hosts("127.0.0.1:8080, Hooks.Internal , [::1]:9000")
    assert guard.resolve("http://127.0.0.1:8080/hook", allow).address == "127.0.0.1"
    assert guard.resolve("http://[::1]:9000/hook", allow).address == "::1"
    for url in ("http://127.0.0.1:8081/hook", "http://127.0.0.1/hook", "http://[::1]:9001/hook",
                "http://[::1]/hook"):
        with pytest.raises(guard.Refused, match="internal address"):
            guard.resolve(url, allow)


def test_a_bare_allowed_host_allows_every_port() -> None:
    allow = guard.allowed_hosts("127.0.0.1,::1")
    for port in (80, 8080, 65535):
        assert guard.resolve(f"http://127.0.0.1:{port}/hook", allow).port == port
        assert guard.resolve(f"http://[::1]:{port}/hook", allow).port == port


def test_a_non_ascii_path_and_query_are_percent_encoded_as_utf8() -> None:
    scheme, host, port, path = guard.parse("https://example.com/hooks/café?x=é&y=%41b")
    assert (scheme, host, port) == ("https", "example.com", 443)
    assert path == "/hooks/caf%C3%A9?x=%C3%A9&y=%41b"  # existing escapes and reserved characters kept
    assert path.isascii()
    assert guard.parse("https://example.com/a/b;c=d,e:f@g!$'()*+?k=v&l=[1]#frag")[3] == \
        "/a/b;c=d,e:f@g!$'()*+?k=v&l=[1]"  # an ASCII URL is sent as it was given


def test_a_non_ascii_host_is_idna_encoded() -> None:
    assert guard.parse("https://Bücher.example/hook")[1] == "xn--bcher-kva.example"


@pytest.mark.parametrize("url", [
    "https://example.com/a b", "https://example.com/a\nb", "https://example.com/a\x00b",
    "https://example.com/a\tb", "https://example.com/a\rb", "https://example.com/?x=\x7f",
    "https://example.com/a\u00a0b", " https://example.com/", "https://example.com/\n",
    "https://exa\nmple.com/", "https://example.com/?x=1#a b",
])
def test_whitespace_and_control_characters_are_refused(url: str) -> None:
    with pytest.raises(guard.Refused, match="whitespace or control"):
        guard.parse(url)


def test_a_url_that_cannot_be_encoded_is_refused() -> None:
    with pytest.raises(guard.Refused, match="cannot be encoded"):
        guard.parse("https://example.com/\ud800")  # a lone surrogate, as JSON's \ud800 gives
    with pytest.raises(guard.Refused, match="cannot be encoded"):
        guard.parse("https://" + "x" * 64 + "é.example/")  # a label too long for IDNA


@pytest.fixture
def paths() -> Iterator[tuple[int, list[str]]]:
    """A loopback receiver that records the request target of every POST."""
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            seen.append(self.path)
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1], seen
    server.shutdown()
    server.server_close()


def test_a_non_ascii_webhook_url_is_delivered_not_a_unicode_error(paths: tuple[int, list[str]]) -> None:
    port, seen = paths
    answer = send.post(f"http://127.0.0.1:{port}/hooks/café?x=é", None, "msg_1", 1_700_000_000, {"a": 1},
                       frozenset({"127.0.0.1"}), 5.0)
    assert (answer.status_code, answer.error) == (204, None)
    assert seen == ["/hooks/caf%C3%A9?x=%C3%A9"]


@pytest.mark.parametrize("url", ["http://8.8.8.8/hook\x01", "http://8.8.8.8/hook\nX-Injected: 1",
                                 "http://8.8.8.8/a b", "http://8.8.8.8/\ud800"])
def test_the_api_refuses_a_url_it_could_not_send_with_a_422_naming_url(client, url: str) -> None:
    response = client.post("/api/v1/webhooks/", json={"url": url, "event_types": ["run.failed"]})
    assert response.status_code == 422, response.json
    assert list(response.json["errors"]) == ["url"]
    assert client.get("/api/v1/webhooks/").json["total"] == 0


def test_the_api_accepts_a_non_ascii_path(app, client) -> None:
    app.config["RECUR_WEBHOOK_ALLOW_HOSTS"] = "127.0.0.1"
    response = client.post("/api/v1/webhooks/", json={"url": "http://127.0.0.1:9/hooks/café",
                                                      "event_types": ["run.failed"]})
    assert response.status_code == 201, response.json
