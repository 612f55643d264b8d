"""One error shape for the whole API: {"code", "status", "message", "errors": {field: [messages]}}. Each refusal
of the services is answered here, once (REFUSALS), so views call the services directly."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from flask import Flask, Response, current_app, has_request_context, jsonify, request
from redis.exceptions import RedisError
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from werkzeug.exceptions import HTTPException, RequestEntityTooLarge

from recur_server.calendars.expansion import CalendarInvalid
from recur_server.infra.extensions import db
from recur_server.infra.request_deadline import RequestDeadline
from recur_server.schemas.errors import field_errors
from recur_server.services import apply, calendars, owners, quotas, schedules, webhooks
from recur_server.services.outside_runs import requests
from recur_server.timing.work import WorkExceeded

log = logging.getLogger(__name__)


class ApiError(Exception):
    def __init__(
        self, status: int, code: str, message: str, errors: dict[str, list[str]] | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.errors = errors or {}


def validation_error(errors: dict[str, Any], message: str = "The request body is invalid.") -> ApiError:
    return ApiError(422, "validation_error", message, field_errors(errors))


def not_found(what: str, ident: object) -> ApiError:
    shown = str(ident)
    shown = shown if len(shown) <= 100 else shown[:97] + "..."
    return ApiError(404, "not_found", f"{what} {shown} does not exist.")


def error_body(status: int, code: str, message: str, errors: dict[str, list[str]] | None = None) -> Response:
    response = jsonify({"code": code, "status": status, "message": message, "errors": errors or {}})
    response.status_code = status
    return response


# What the services (and the timing they build) refuse, and the API's answer to each, whichever view meets it: the
# view lets it go up to the handler init_app registers, which rolls back what the request began. A subclass is
# answered as its nearest class listed.
REFUSALS: dict[type[Exception], Callable[[Any], ApiError]] = {
    schedules.Invalid: lambda exc: validation_error(exc.errors),
    schedules.Conflict: lambda exc: ApiError(409, "invalid_state", str(exc)),
    schedules.DuplicateKey: lambda exc: ApiError(409, "conflict", str(exc), {"key": [str(exc)]}),
    CalendarInvalid: lambda exc: validation_error(exc.errors),
    calendars.Conflict: lambda exc: ApiError(409, "conflict", exc.message, exc.errors),
    webhooks.WebhookInvalid: lambda exc: validation_error(exc.errors),
    webhooks.EventPruned: lambda exc: ApiError(409, "conflict", f"Delivery {exc.delivery_id}'s event {exc} was "
                                               "pruned; nothing is left to send."),
    owners.NameTaken: lambda exc: validation_error({"name": [str(exc)]}),
    owners.ExpiryPassed: lambda exc: validation_error({"expires_at": [str(exc)]}),
    quotas.QuotaExceeded: lambda exc: ApiError(422, "quota_exceeded", "A quota of this owner is used up; an admin "
                                               "may raise it.", exc.errors),
    requests.KeyReused: lambda exc: ApiError(409, "conflict", "This Idempotency-Key was used for another schedule.",
                                             {"Idempotency-Key": ["was used for another schedule."]}),
    requests.TooMany: lambda exc: validation_error({"end": [
        f"the range holds more than {requests.MAX_BACKFILL_TIMES} nominal times of this schedule; backfill it in "
        "parts."]}),
    WorkExceeded: lambda exc: ApiError(422, "validation_error", "The timing cannot be decided within the work one "
                                       "request may do.", {exc.field: [exc.message]}),
    apply.StepRefused: lambda exc: _in_step(exc),
}


def _in_step(exc: apply.StepRefused) -> ApiError:
    """A change of an apply refused: its own answer, its message starting with the change, each field named by
    the change's place (schedules.create.2.cron)."""
    inner = next(REFUSALS[kind] for kind in type(exc.cause).__mro__ if kind in REFUSALS)(exc.cause)
    return ApiError(inner.status, inner.code, f"{exc.label}: {inner.message} Nothing of the apply was kept.",
                    {f"{exc.where}.{name}": messages for name, messages in inner.errors.items()}
                    or {exc.where: [inner.message]})


LIMITS_KEY = "recur.limits"  # in a request's environ: the settings its limits come from, if not every request's


def _limits() -> tuple[str, str]:
    """The settings that bound this request's body and its time: an apply's own (recur_server.api.apply), else
    every request's."""
    default = ("RECUR_MAX_BODY_BYTES", "RECUR_REQUEST_DEADLINE_SECONDS")
    limits: tuple[str, str] = request.environ.get(LIMITS_KEY, default) if has_request_context() else default
    return limits


def init_app(app: Flask) -> None:
    def _refused(exc: Exception) -> Response:
        _end_transaction()
        answer = next(REFUSALS[kind] for kind in type(exc).__mro__ if kind in REFUSALS)
        return api_error(answer(exc))

    for refusal in REFUSALS:
        app.register_error_handler(refusal, _refused)

    @app.errorhandler(RequestDeadline)
    def _deadline(exc: RequestDeadline) -> Response:
        _end_transaction()
        setting = _limits()[1]
        seconds = current_app.config[setting]
        return error_body(503, "request_timeout", f"The request ran past its deadline of {seconds:g} s "
                          f"({setting}) and was stopped; nothing it had not committed was kept.")

    app.register_error_handler(ApiError, api_error)

    @app.errorhandler(RequestEntityTooLarge)
    def _too_large(exc: RequestEntityTooLarge) -> Response:
        limit = request.max_content_length if has_request_context() else None  # the one this request had
        return error_body(413, "request_entity_too_large", f"The request body is larger than the limit of "
                          f"{limit} bytes ({_limits()[0]}).")

    @app.errorhandler(HTTPException)
    def _http_error(exc: HTTPException) -> Response:
        code = (exc.name or "error").lower().replace(" ", "_")
        response = error_body(exc.code or 500, code, exc.description or exc.name)
        for name, value in exc.get_headers():  # e.g. a 405's Allow; the body and its type are ours
            if name.lower() != "content-type":
                response.headers[name] = value
        return response

    @app.errorhandler(RedisError)
    def _redis_down(exc: RedisError) -> Response:
        log.warning("Redis unavailable: %s", exc)
        return error_body(503, "redis_unavailable", "Redis is unreachable; nothing was changed. Try again.")

    @app.errorhandler(OperationalError)
    @app.errorhandler(InterfaceError)
    @app.errorhandler(PoolTimeout)
    def _database_down(exc: Exception) -> Response:
        return _database_unavailable(exc)

    @app.errorhandler(Exception)
    def _unexpected(exc: Exception) -> Response:
        if database_away(exc):
            return _database_unavailable(exc)
        log.exception("unhandled error")
        _end_transaction()
        return error_body(500, "internal_error", "An unexpected error occurred.")


def api_error(exc: ApiError) -> Response:
    """An ApiError in the error shape; a 401 names the scheme to authenticate with."""
    response = error_body(exc.status, exc.code, exc.message, exc.errors)
    if exc.status == 401:
        response.headers["WWW-Authenticate"] = 'Bearer realm="recur"'
    return response


# SQLSTATE 25006: a write reached a server in recovery (a standby, or a primary being demoted in a failover).
_READ_ONLY = "25006"


def database_away(exc: BaseException) -> bool:
    """Whether `exc` says the database cannot serve now (down, restarting, failing over, out of connections),
    not that the request or the code is wrong: the caller may try again, and the answer is a 503."""
    if isinstance(exc, (OperationalError, InterfaceError, PoolTimeout)):
        return True
    return isinstance(exc, DBAPIError) and (exc.connection_invalidated
                                            or getattr(exc.orig, "sqlstate", None) == _READ_ONLY)


def _database_unavailable(exc: Exception) -> Response:
    log.warning("database unavailable: %s", str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
    _end_transaction()
    return error_body(503, "database_unavailable", "The database is unreachable or busy. Try again.")


def _end_transaction() -> None:
    """A failed flush leaves the session unusable until rolled back: never let it outlive the request."""
    try:
        db.session.rollback()
    except Exception:  # the session may be beyond a rollback too; the app context's teardown removes it
        log.warning("could not roll back the session after an unhandled error", exc_info=True)
