"""Redirects that must not carry trust elsewhere: the console's `next` after sign-in stays on the site, and
the `recur` CLI never sends its token to another origin a redirect points at."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from harness.console_signin import HTTPS, console_browser, csrf_of
from harness.tokens import token_for_app
from recur_cli.client import ApiError, Client


def _sign_in_with_next(app, query: str) -> str:  # type: ignore[no-untyped-def]
    """The Location the real sign-in answers with, for /signin?<query> (query as sent, already encoded)."""
    token = token_for_app(app)
    browser = console_browser(app)
    csrf = csrf_of(browser.get(f"/signin?{query}", base_url=HTTPS).data)
    response = browser.post(f"/signin?{query}", data={"token": token, "csrf_token": csrf}, base_url=HTTPS)
    assert response.status_code == 302, response.data
    return response.headers["Location"]


@pytest.mark.parametrize("query", [
    "next=/%09/evil.example/",  # a tab, which browsers drop: //evil.example/
    "next=/%0a/evil.example/", "next=/%0d%0a/evil.example/", "next=/%00/evil.example/",
    "next=%09//evil.example/", "next=/%2509/evil.example/",  # a tab only after decoding once more
    "next=//evil.example/", "next=///evil.example/", "next=/%2F/evil.example/", "next=%2F%2Fevil.example",
    "next=/\\evil.example/", "next=/%5Cevil.example/", "next=%5C%5Cevil.example",
    "next=https://evil.example/", "next=http:evil.example", "next=javascript:alert(1)",
    "next=%20//evil.example/", "next=/%E3%80%80/evil.example/", "next=evil.example",
])
def test_a_next_that_could_leave_the_site_goes_home(app, query: str) -> None:
    assert _sign_in_with_next(app, query) == "/"


@pytest.mark.parametrize(("query", "location"), [
    ("next=/schedules%3Fstatus%3Dactive%26page%3D2", "/schedules?status=active&page=2"),
    ("next=/health", "/health"),
    ("next=/schedules/abc%2520def", "/schedules/abc%20def"),  # an escape in the path stays an escape
])
def test_a_next_on_the_site_is_followed(app, query: str, location: str) -> None:
    assert _sign_in_with_next(app, query) == location


def test_the_console_sends_a_signed_out_browser_back_where_it_was(app) -> None:
    browser = console_browser(app)
    to_signin = browser.get("/schedules?status=paused", base_url=HTTPS).headers["Location"]
    assert to_signin.startswith("/signin?next=")
    assert _sign_in_with_next(app, to_signin.split("?", 1)[1]) == "/schedules?status=paused"


# --- the recur CLI and redirects ------------------------------------------------------------------

class _Server:
    """A loopback HTTP server in a thread: records each request's path and Authorization header, and
    answers what `answer(path)` gives: (status, headers, body)."""

    def __init__(self, answer: Any) -> None:
        self.seen: list[tuple[str, str, str | None]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def _any(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length", "0")))
                server.seen.append((self.command, self.path, self.headers.get("Authorization")))
                status, headers, body = answer(self.path)
                self.send_response(status)
                for name, value in {**headers, "Content-Length": str(len(body))}.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_PATCH = do_DELETE = _any  # noqa: N815 (http.server's names)

            def log_message(self, *args: Any) -> None:
                pass

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.http.daemon_threads = True
        threading.Thread(target=self.http.serve_forever, daemon=True).start()
        self.base = f"http://127.0.0.1:{self.http.server_address[1]}"

    def stop(self) -> None:
        self.http.shutdown()
        self.http.server_close()


@pytest.fixture
def servers() -> Iterator[tuple[_Server, _Server]]:
    """`elsewhere` answers every request with JSON; `api` redirects /api/v1/moved* to elsewhere (307, then
    308, 302 by the path) and /api/v1/here to its own /api/v1/there."""
    elsewhere = _Server(lambda path: (200, {"Content-Type": "application/json"}, b'{"where": "elsewhere"}'))

    def api_answer(path: str) -> tuple[int, dict[str, str], bytes]:
        if path.startswith("/api/v1/moved"):
            code = {"/api/v1/moved": 307, "/api/v1/moved308": 308, "/api/v1/moved302": 302}[path.split("?")[0]]
            return code, {"Location": elsewhere.base + "/api/v1/stolen"}, b""
        if path.startswith("/api/v1/here"):
            return 308, {"Location": "/api/v1/there"}, b""
        return 200, {"Content-Type": "application/json"}, b'{"where": "api"}'

    api = _Server(api_answer)
    yield api, elsewhere
    api.stop()
    elsewhere.stop()


@pytest.mark.parametrize("path", ["/moved", "/moved308", "/moved302"])
def test_the_token_never_follows_a_redirect_to_another_origin(servers: tuple[_Server, _Server],
                                                              path: str) -> None:
    api, elsewhere = servers
    client = Client(api.base, "recur_secret-token-of-the-test")
    with pytest.raises(ApiError, match="another origin") as raised:
        client.get(path)
    assert elsewhere.base in str(raised.value)
    assert [auth for _, _, auth in api.seen] == ["Bearer recur_secret-token-of-the-test"]
    assert all(auth is None for _, _, auth in elsewhere.seen)  # nothing reached it with the token


def test_a_redirect_to_another_port_of_the_same_host_is_another_origin(servers: tuple[_Server, _Server]) -> None:
    api, elsewhere = servers
    assert api.base.rsplit(":", 1)[0] == elsewhere.base.rsplit(":", 1)[0]  # same scheme and host, not port
    with pytest.raises(ApiError, match="another origin"):
        Client(api.base, "recur_t").post("/moved", {"a": 1})
    assert all(auth is None for _, _, auth in elsewhere.seen)


def test_a_redirect_within_the_origin_keeps_the_token(servers: tuple[_Server, _Server]) -> None:
    api, _ = servers
    assert Client(api.base, "recur_t").get("/here") == {"where": "api"}
    assert [(path, auth) for _, path, auth in api.seen] == [("/api/v1/here", "Bearer recur_t"),
                                                            ("/api/v1/there", "Bearer recur_t")]
