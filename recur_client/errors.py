"""The API's errors as exceptions. Every error answer has one shape, {"code", "status", "message",
"errors": {field: [messages]}}; each exception carries it, and its class says which kind it is."""

from __future__ import annotations

from typing import Any


class ApiError(Exception):
    """The API answered with an error (`status` >= 400), or could not be reached (`status` 0).

    `code` is the API's machine-readable code (`not_found`, `validation_error`, ...), `errors` names each
    field it refused with its messages, `body` is the answer as it came (a dict, text, or None)."""

    def __init__(self, status: int, message: str, errors: dict[str, list[str]] | None = None,
                 body: Any = None, code: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.errors: dict[str, list[str]] = errors or {}
        self.body = body
        self.code = code if code is not None else (body.get("code") if isinstance(body, dict) else None)

    def __str__(self) -> str:
        lines = [f"{self.message} (HTTP {self.status})" if self.status else self.message]
        lines += [f"  {field}: {'; '.join(messages)}" for field, messages in self.errors.items()]
        return "\n".join(lines)


class Unreachable(ApiError):
    """No answer: the server could not be reached, or what answered is not a Recur server (status 0)."""


class BadRequest(ApiError):
    """400: the request cannot be carried out as it stands (a body that is not JSON, an argument out of place)."""


class Unauthorized(ApiError):
    """401: no token, or one that is unknown, expired or revoked."""


class Forbidden(ApiError):
    """403: the token's owner may not do this (an admin operation)."""


class NotFound(ApiError):
    """404: no such object, or not one the token's owner can see."""


class Conflict(ApiError):
    """409: the request collides with the current state (a schedule's key taken, pausing a schedule that is
    not active, ...)."""


class TooLarge(ApiError):
    """413, 414, 431: the body, URL or headers are larger than the server accepts."""


class ValidationFailed(ApiError):
    """422: a field was refused; `errors` names each field with its messages."""


class Unavailable(ApiError):
    """503: the server's database or Redis does not answer for now; the request may be tried again."""


BY_STATUS: dict[int, type[ApiError]] = {
    400: BadRequest, 401: Unauthorized, 403: Forbidden, 404: NotFound, 409: Conflict,
    413: TooLarge, 414: TooLarge, 431: TooLarge, 422: ValidationFailed, 503: Unavailable,
}


def error_for(status: int, body: Any, fallback: str) -> ApiError:
    """The exception for an error answer: its class chosen by status, its fields from the API's error body
    (or `fallback` as the message when the body is not the API's)."""
    kind = BY_STATUS.get(status, ApiError)
    if isinstance(body, dict) and "message" in body:
        errors = body.get("errors") if isinstance(body.get("errors"), dict) else {}
        return kind(status, str(body["message"]), errors, body)
    return kind(status, fallback, None, body)
