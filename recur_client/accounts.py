"""`client.tokens` (the caller's own API tokens) and `client.owners` (admin: owners, quotas, their audit)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Unpack, cast

from recur_client.fields import QuotaFields
from recur_client.pages import WALK_PAGE, walk
from recur_client.results import CreatedOwner, CreatedToken, Owner, OwnerEvent, Page, Token
from recur_client.transport import Transport


class Tokens:
    def __init__(self, transport: Transport) -> None:
        self.transport = transport

    def list(self, *, limit: int | None = None, offset: int | None = None,
             cursor: str | None = None) -> Page[Token]:
        """One page of the caller's tokens (never their secrets), oldest first."""
        query = {"limit": limit, "offset": offset, "cursor": cursor}
        return cast(Page[Token], self.transport.request("GET", "/tokens/", query=query))

    def iterate(self) -> Iterator[Token]:
        return walk(lambda cursor: self.list(limit=WALK_PAGE, cursor=cursor))

    def create(self, name: str, expires_at: str | None = None) -> CreatedToken:
        """A new token of the caller; the answer's `token` is its secret, shown this once."""
        body: dict[str, Any] = {"name": name}
        if expires_at is not None:
            body["expires_at"] = expires_at
        return cast(CreatedToken, self.transport.request("POST", "/tokens/", body))

    def revoke(self, token_id: int) -> None:
        """Revoke one of the caller's tokens: it is refused from now on."""
        self.transport.request("DELETE", f"/tokens/{token_id}/")


class Owners:
    """Admin operations: Forbidden for any other token."""

    def __init__(self, transport: Transport) -> None:
        self.transport = transport

    def list(self, *, limit: int | None = None, offset: int | None = None,
             cursor: str | None = None) -> Page[Owner]:
        query = {"limit": limit, "offset": offset, "cursor": cursor}
        return cast(Page[Owner], self.transport.request("GET", "/owners/", query=query))

    def iterate(self) -> Iterator[Owner]:
        return walk(lambda cursor: self.list(limit=WALK_PAGE, cursor=cursor))

    def create(self, name: str, is_admin: bool = False) -> CreatedOwner:
        """A new owner with its first token (the secret in `token.token`, shown this once)."""
        return cast(CreatedOwner, self.transport.request("POST", "/owners/", {"name": name, "is_admin": is_admin}))

    def set_quotas(self, owner_id: int, **quotas: Unpack[QuotaFields]) -> Owner:
        """Set the quotas given (`schedules=50_000`; None: back to the server's default); others stay."""
        return cast(Owner, self.transport.request("PATCH", f"/owners/{owner_id}/", {"quotas": dict(quotas)}))

    def delete(self, owner_id: int) -> None:
        """Delete an owner and everything it owns."""
        self.transport.request("DELETE", f"/owners/{owner_id}/")

    def events(self, *, limit: int | None = None, offset: int | None = None,
               cursor: str | None = None) -> Page[OwnerEvent]:
        """One page of the owners' audit trail (made, changed, deleted, and by whom), newest first."""
        query = {"limit": limit, "offset": offset, "cursor": cursor}
        return cast(Page[OwnerEvent], self.transport.request("GET", "/audit/owners/", query=query))

    def iterate_events(self) -> Iterator[OwnerEvent]:
        return walk(lambda cursor: self.events(limit=WALK_PAGE, cursor=cursor))
