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
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
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
        """Every item of a paginated list, a page of PAGE at a time."""
        offset = 0
        while True:
            page = self.get(path, limit=PAGE, offset=offset, **query)
            yield from page["items"]
            offset += len(page["items"])
            if not page["items"] or offset >= page["total"]:
                return


def _decoded(raw: bytes, lenient: bool = False) -> Any:
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        if lenient:
            return raw.decode(errors="replace")
        raise ApiError(0, "the server's answer is not JSON (is RECUR_URL the Recur server?)") from None
