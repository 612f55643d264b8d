"""API tokens: random, recognisable, shown once, stored as a SHA-256 digest and found by it.

A token carries 256 random bits, so a plain SHA-256 is as strong as a slow password hash here and lets a
request find its token with one indexed lookup on the digest; the digests are compared in constant time.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import select, update

from recur_server.auth.models import ApiToken, Owner
from recur_server.infra.extensions import db

PREFIX = "recur_"
# last_used_at is written at most this often per token: a write per request would cost every call.
LAST_USED_RESOLUTION = timedelta(seconds=60)


def digest_of(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class Issued:
    """A token just made: `secret` is the only time the token itself exists outside the caller's hands."""

    token: ApiToken
    secret: str


def issue(owner: Owner, name: str, now: datetime, expires_at: datetime | None = None) -> Issued:
    """Make a token for `owner` (added to the session; the caller commits)."""
    secret = PREFIX + secrets.token_urlsafe(32)
    token = ApiToken(owner_id=owner.id, name=name, prefix=secret[:10], digest=digest_of(secret),
                     created_at=now, expires_at=expires_at)
    db.session.add(token)
    return Issued(token, secret)


def authenticate(secret: str, now: datetime) -> tuple[Owner, ApiToken] | None:
    """The owner and token a bearer secret names, if it is well formed, known, unrevoked and unexpired."""
    if not secret.startswith(PREFIX) or not 20 <= len(secret) <= 100 or not secret.isascii():
        return None
    digest = digest_of(secret)
    row = db.session.execute(
        select(ApiToken, Owner).join(Owner, Owner.id == ApiToken.owner_id).where(ApiToken.digest == digest)
    ).first()
    if row is None:
        return None
    token, owner = row
    if not hmac.compare_digest(token.digest, digest):
        return None
    if token.revoked_at is not None or (token.expires_at is not None and token.expires_at <= now):
        return None
    if token.last_used_at is None or now - token.last_used_at >= LAST_USED_RESOLUTION:
        db.session.execute(update(ApiToken).where(ApiToken.id == token.id).values(last_used_at=now))
        db.session.commit()
        token.last_used_at = now
    return owner, token
