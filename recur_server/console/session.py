"""Signing in to the console: an API token, checked once, becomes a console session (a row naming that token,
recur_server.auth.models.ConsoleSession); the cookie carries the session's id and a random secret whose digest the row
keeps, never the token. Each request re-reads the session and its token, so signing out (which deletes the
row), revoking or expiring the token, or deleting its owner ends the session for good: a cookie captured
before is refused after, and no row id in a cookie can come to name someone else's session.

The cookie is HttpOnly, SameSite=Lax and (unless RECUR_SECURE_COOKIES=0) Secure; every form carries a
per-session CSRF token that each POST must return (a form field, or the X-CSRF-Token header).
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Callable
from datetime import timedelta
from functools import wraps
from typing import Any, TypeVar

from flask import Flask, abort, g, redirect, request, session, url_for
from flask.sessions import SecureCookieSessionInterface
from redis.exceptions import RedisError
from sqlalchemy import delete

from recur_server.auth.models import ApiToken, ConsoleSession, Owner
from recur_server.auth.tokens import authenticate, digest_of
from recur_server.infra import clock
from recur_server.infra.extensions import db, get_redis

F = TypeVar("F", bound=Callable[..., Any])

# Where the console's signing key is kept when RECUR_SECRET_KEY is not set: made once, shared by every
# process of the cluster (a restart keeps sessions; emptying Redis signs everyone out).
SECRET_KEY_KEY = "recur:console:secret-key"
# How long a console session lasts after signing in (the token's own expiry ends it sooner).
SESSION_LIFETIME = timedelta(days=7)


class SharedKeySessionInterface(SecureCookieSessionInterface):
    """Flask's signed-cookie session, its key read lazily (from RECUR_SECRET_KEY, or the one in Redis)."""

    def open_session(self, app: Flask, request: Any) -> Any:
        # The API and /metrics use no session: they never wait on the key (nor on Redis for it).
        if request.path.startswith(("/api/", "/metrics")):
            return None
        try:
            return super().open_session(app, request)
        except RedisError:  # no key to read: an empty session; signing in then says Redis is down
            return None

    def get_signing_serializer(self, app: Flask) -> Any:
        if not app.secret_key:
            app.secret_key = _shared_key(app)
        return super().get_signing_serializer(app)


def _shared_key(app: Flask) -> str:
    redis = get_redis(app)
    redis.set(SECRET_KEY_KEY, secrets.token_urlsafe(48), nx=True)
    key: bytes = redis.get(SECRET_KEY_KEY)  # type: ignore[assignment]
    return key.decode()


def init_app(app: Flask) -> None:
    app.session_interface = SharedKeySessionInterface()
    app.secret_key = app.config.get("RECUR_SECRET_KEY") or app.secret_key
    app.config.update(
        SESSION_COOKIE_NAME="recur_console",
        SESSION_COOKIE_HTTPONLY=True,
        SESSION_COOKIE_SAMESITE="Lax",
        SESSION_COOKIE_SECURE=app.config.get("RECUR_SECURE_COOKIES", True),
    )


def sign_in(secret: str) -> Owner | None:
    found = authenticate(secret.strip(), clock.utcnow())
    if found is None:
        return None
    owner, token = found
    now = clock.utcnow()
    secret = secrets.token_urlsafe(32)
    db.session.execute(delete(ConsoleSession).where(ConsoleSession.expires_at <= now))  # sessions past their life
    row = ConsoleSession(token_id=token.id, digest=digest_of(secret), created_at=now, expires_at=now + SESSION_LIFETIME)
    db.session.add(row)
    db.session.commit()
    session.clear()
    session["sid"] = row.id
    session["secret"] = secret
    session["csrf"] = secrets.token_urlsafe(32)
    return owner


def sign_out() -> None:
    """End this session for good: its row goes, so the cookie (or a copy of it) names nothing any more."""
    row = _session_row()
    if row is not None:
        db.session.delete(row)
        db.session.commit()
    session.clear()


def _session_row() -> ConsoleSession | None:
    sid, secret = session.get("sid"), session.get("secret")
    if not isinstance(sid, int) or not isinstance(secret, str):
        return None
    row = db.session.get(ConsoleSession, sid)
    if row is None or not hmac.compare_digest(row.digest, digest_of(secret)):
        return None
    return row


def load_owner() -> None:
    """g.owner (which recur_server.auth.scope reads) from the session's row and its token, if both are still valid."""
    g.owner = g.token = None
    if "sid" not in session:
        return
    row = _session_row()
    now = clock.utcnow()
    token = db.session.get(ApiToken, row.token_id) if row is not None and row.expires_at > now else None
    if token is None or token.revoked_at is not None or (token.expires_at is not None and token.expires_at <= now):
        session.clear()
        return
    g.owner, g.token = db.session.get(Owner, token.owner_id), token


def csrf_token() -> str:
    if "csrf" not in session:
        session["csrf"] = secrets.token_urlsafe(32)
    token: str = session["csrf"]
    return token


def check_csrf() -> None:
    """Every state-changing request carries the session's CSRF token; a 400 otherwise."""
    if request.method in ("GET", "HEAD", "OPTIONS"):
        return
    expected = session.get("csrf")
    given = request.form.get("csrf_token") or request.headers.get("X-CSRF-Token") or ""
    if not expected or not hmac.compare_digest(str(given), str(expected)):
        abort(400, description="The form has expired or did not come from this console (CSRF check). "
                               "Reload the page and try again.")


def signed_in(view: F) -> F:
    @wraps(view)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if g.get("owner") is None:
            return redirect(url_for("console.signin", next=request.full_path if request.method == "GET" else None))
        return view(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


