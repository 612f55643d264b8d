"""Who is acting, in words, for the records that name a person: the owner and, when the request came with
one (the API's, or the one a console session was signed in with), the token's name."""

from __future__ import annotations

from flask import g


def acting() -> str:
    return f"{g.owner.name} (token {g.token.name})" if g.get("token") is not None else str(g.owner.name)
