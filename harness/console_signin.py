"""A browser on the console, played by a Flask test client: it speaks HTTPS (the session cookie is Secure,
and a browser only sends it back over HTTPS or localhost), reads a form's CSRF token and signs in."""

from __future__ import annotations

import re
from typing import Any

HTTPS = "https://localhost"


def console_browser(app: Any) -> Any:
    """A new browser (a test client with its own cookies) on `app`'s console."""
    return app.test_client()


def csrf_of(page: bytes) -> str:
    """The CSRF token of the form on `page`."""
    found = re.search(rb'name="csrf_token" value="([^"]+)"', page)
    assert found is not None
    return found.group(1).decode()


def signed_in_browser(app: Any, token: str) -> Any:
    """A browser signed in to `app`'s console with `token`."""
    browser = console_browser(app)
    csrf = csrf_of(browser.get("/signin", base_url=HTTPS).data)
    response = browser.post("/signin", data={"token": token, "csrf_token": csrf}, base_url=HTTPS)
    assert response.status_code == 302, response.data
    return browser
