"""Every API call but health names an owner with `Authorization: Bearer <token>`; otherwise a 401."""

from __future__ import annotations

from flask import Blueprint, Flask, g, request

from recur_server.api.errors import ApiError
from recur_server.auth.tokens import authenticate
from recur_server.infra import clock

# Endpoints any caller may reach (a load balancer's health check, the contract and its docs).
OPEN_ENDPOINTS = {"api.health"}


class Unauthorized(ApiError):
    def __init__(self, message: str) -> None:
        super().__init__(401, "unauthorized", message)


def identify() -> None:
    """Set g.owner and g.token from the bearer token, if the request carries a valid one."""
    g.owner = g.token = None
    header = request.headers.get("Authorization", "")
    scheme, _, secret = header.partition(" ")
    if scheme.lower() != "bearer" or not secret.strip():
        return
    found = authenticate(secret.strip(), clock.utcnow())
    if found is not None:
        g.owner, g.token = found


def require_owner() -> None:
    identify()
    if request.endpoint in OPEN_ENDPOINTS or request.method == "OPTIONS":
        return
    if g.owner is None:
        if "Authorization" not in request.headers:
            raise Unauthorized("This endpoint needs an API token: send 'Authorization: Bearer <token>'.")
        raise Unauthorized("The API token is malformed, unknown, revoked or expired.")


def protect(app: Flask, blueprint: Blueprint) -> None:
    """Guard every request to `blueprint` in this app (per app: the blueprint object is shared)."""
    app.before_request_funcs.setdefault(blueprint.name, []).append(require_owner)
