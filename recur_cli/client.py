"""A small HTTP client for the Recur API (standard library only): JSON in, JSON out, errors as ApiError."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from typing import Any

API_PREFIX = "/api/v1"
PAGE = 1000  # the API's largest page


class ApiError(Exception):
    """The API answered with an error (status >= 400), or could not be reached (status 0)."""

    def __init__(self, status: int, message: str, errors: dict[str, list[str]] | None = None,
                 body: Any = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.errors = errors or {}
        self.body = body

    def __str__(self) -> str:
        lines = [f"{self.message} (HTTP {self.status})" if self.status else self.message]
        lines += [f"  {field}: {'; '.join(messages)}" for field, messages in self.errors.items()]
        return "\n".join(lines)


class Client:
    def __init__(self, url: str, token: str | None, timeout: float = 30.0) -> None:
        self.base = url.rstrip("/")
        self.token = token
        self.timeout = timeout

    def request(self, method: str, path: str, body: Any = None, query: dict[str, Any] | None = None,
                extra_headers: dict[str, str] | None = None) -> Any:
        """Call API_PREFIX + path; returns the decoded JSON answer (None for an empty one)."""
        url = self.base + API_PREFIX + path
        given = {k: v for k, v in (query or {}).items() if v is not None}
        if given:
            url += "?" + urllib.parse.urlencode(given)
        headers = {"Accept": "application/json"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        headers.update(extra_headers or {})
        request = urllib.request.Request(url, data=data, method=method, headers=headers)
        try:
            with _OPENER.open(request, timeout=self.timeout) as response:
                return _decoded(response.read())
        except urllib.error.HTTPError as exc:
            payload = _decoded(exc.read(), lenient=True)
            if isinstance(payload, dict) and "message" in payload:
                raise ApiError(exc.code, str(payload["message"]), payload.get("errors") or {}, payload) from None
            raise ApiError(exc.code, f"{method} {path} failed: {exc.reason}", body=payload) from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise ApiError(0, f"cannot reach {self.base}: {reason}") from None

    def get(self, path: str, **query: Any) -> Any:
        return self.request("GET", path, query=query)

    def post(self, path: str, body: Any = None, headers: dict[str, str] | None = None) -> Any:
        return self.request("POST", path, body if body is not None else {}, extra_headers=headers)

    def patch(self, path: str, body: Any) -> Any:
        return self.request("PATCH", path, body)

    def delete(self, path: str) -> Any:
        return self.request("DELETE", path)

    def every(self, path: str, **query: Any) -> Iterator[dict[str, Any]]:
        """Every item of a paginated list, a page of PAGE at a time, each after the cursor (`next`) of the
        page before: every page is one index range, however long the list."""
        cursor = None
        while True:
            page = self.get(path, limit=PAGE, cursor=cursor, **query)
            yield from page["items"]
            cursor = page.get("next")
            if not cursor or not page["items"]:
                return


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urllib.parse.urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port or {"http": 80, "https": 443}.get(scheme)
    except ValueError:
        port = -1  # not a port: matches no origin
    return scheme, (parts.hostname or "").lower(), port


class _SameOriginRedirects(urllib.request.HTTPRedirectHandler):
    """Follows a redirect only within the origin (scheme, host and port) the request went to: the token in
    Authorization, which urllib would copy into the redirected request, never reaches another server or
    leaves https for http. A redirect elsewhere is an ApiError that names where it pointed."""

    def redirect_request(self, req: urllib.request.Request, fp: Any, code: int, msg: str, headers: Any,
                         newurl: str) -> urllib.request.Request | None:
        if _origin(newurl) != _origin(req.full_url):
            fp.close()
            raise ApiError(code, f"the server redirected to {newurl}, another origin; not followed, so that the "
                                 "token is not sent there (if that is the Recur server, give it as --url or RECUR_URL)")
        return super().redirect_request(req, fp, code, msg, headers, newurl)


_OPENER = urllib.request.build_opener(_SameOriginRedirects)


def _decoded(raw: bytes, lenient: bool = False) -> Any:
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        if lenient:
            return raw.decode(errors="replace")
        raise ApiError(0, "the server's answer is not JSON (is RECUR_URL the Recur server?)") from None
