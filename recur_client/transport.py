"""HTTP for the client, standard library only: JSON in, JSON out, error answers raised as ApiError, and
redirects followed only within the server's origin (so the token never travels anywhere else)."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from recur_client.errors import ApiError, Unreachable, error_for

API_PREFIX = "/api/v1"


class Transport:
    """One server (its base URL) and one token; `request` calls API_PREFIX + path."""

    def __init__(self, url: str, token: str | None, timeout: float = 30.0) -> None:
        self.base = url.rstrip("/")
        self.token = token
        self.timeout = timeout

    def request(self, method: str, path: str, body: Any = None, query: dict[str, Any] | None = None,
                headers: dict[str, str] | None = None, timeout: float | None = None) -> Any:
        """The decoded JSON answer (None for an empty one); query values that are None are left out. `timeout`:
        this request's, if longer than the transport's."""
        url = self.base + API_PREFIX + path
        given = {k: _query_value(v) for k, v in (query or {}).items() if v is not None}
        if given:
            url += "?" + urllib.parse.urlencode(given)
        sent = {"Accept": "application/json"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            sent["Content-Type"] = "application/json"
        if self.token:
            sent["Authorization"] = f"Bearer {self.token}"
        sent.update(headers or {})
        request = urllib.request.Request(url, data=data, method=method, headers=sent)
        try:
            with OPENER.open(request, timeout=max(self.timeout, timeout or 0)) as response:
                return decoded(response.read())
        except urllib.error.HTTPError as exc:
            raise error_for(exc.code, decoded(exc.read(), lenient=True),
                            f"{method} {path} failed: {exc.reason}") from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise Unreachable(0, f"cannot reach {self.base}: {reason}") from None


def _query_value(value: Any) -> Any:
    if isinstance(value, bool):
        return "true" if value else "false"
    return value


def origin(url: str) -> tuple[str, str, int | None]:
    """(scheme, host, port) of a URL, the port spelled out for http and https."""
    parts = urllib.parse.urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port or {"http": 80, "https": 443}.get(scheme)
    except ValueError:
        port = -1  # not a port: matches no origin
    return scheme, (parts.hostname or "").lower(), port


class SameOriginRedirects(urllib.request.HTTPRedirectHandler):
    """Follows a redirect only within the origin (scheme, host and port) the request went to: the token in
    Authorization, which urllib would copy into the redirected request, never reaches another server or
    leaves https for http. A redirect elsewhere is an ApiError that names where it pointed."""

    def redirect_request(self, req: urllib.request.Request, fp: Any, code: int, msg: str, headers: Any,
                         newurl: str) -> urllib.request.Request | None:
        if origin(newurl) != origin(req.full_url):
            fp.close()
            raise ApiError(code, f"the server redirected to {newurl}, another origin; not followed, so that the "
                                 "token is not sent there (if that is the Recur server, give it as --url or RECUR_URL)")
        return super().redirect_request(req, fp, code, msg, headers, newurl)


OPENER = urllib.request.build_opener(SameOriginRedirects)


def decoded(raw: bytes, lenient: bool = False) -> Any:
    """JSON from an answer's bytes; with `lenient` (an error answer), text that is not JSON stays text."""
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        if lenient:
            return raw.decode(errors="replace")
        raise Unreachable(0, "the server's answer is not JSON (is RECUR_URL the Recur server?)") from None
