"""REDIS_URL forms: redis:// and rediss:// (TLS) go to redis-py as they are; redis+sentinel:// names
Sentinels and a master, so every process connects to whichever server is master now, across failovers."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

SENTINEL_SCHEMES = ("redis+sentinel", "rediss+sentinel")
DEFAULT_SENTINEL_PORT = 26379


@dataclass(frozen=True)
class SentinelTarget:
    """Where the Sentinels are and which master (and database) they should hand us."""

    sentinels: tuple[tuple[str, int], ...]
    service: str
    db: int = 0
    username: str | None = None
    password: str | None = None
    ssl: bool = False


def parse(url: str) -> SentinelTarget | None:
    """The Sentinel target a redis+sentinel:// URL names, or None for a URL redis-py reads itself.

    Form: ``redis+sentinel://[[user]:password@]host1[:port],host2[:port]/service[/db]``. The password
    (and user) is the master's; the Sentinels are reached without one. Raises ValueError on a malformed URL.
    """
    scheme, sep, rest = url.partition("://")
    if not sep or scheme.lower() not in SENTINEL_SCHEMES:
        return None
    # urlsplit cannot read a comma-separated host list, so the userinfo and hosts are split by hand.
    authority, _, path = rest.partition("/")
    userinfo, at, hostlist = authority.rpartition("@")
    username = password = None
    if at:
        user, colon, secret = userinfo.partition(":")
        username = unquote(user) or None
        password = unquote(secret) if colon else None
        if not colon:  # "secret@host" reads as a password, as redis-py does for redis://secret@host
            username, password = None, unquote(user) or None
    sentinels = tuple(_host_port(item) for item in hostlist.split(","))
    parts = [p for p in urlsplit("x:///" + path).path.split("/") if p]
    if not parts or len(parts) > 2:
        raise ValueError(f"REDIS_URL {scheme}:// needs /<master name>[/<db>], got /{path}")
    try:
        db = int(parts[1]) if len(parts) == 2 else 0
    except ValueError:
        raise ValueError(f"REDIS_URL database must be a number, got {parts[1]!r}") from None
    return SentinelTarget(sentinels, unquote(parts[0]), db, username, password, scheme.lower() == "rediss+sentinel")


def _host_port(item: str) -> tuple[str, int]:
    if not item:
        raise ValueError("REDIS_URL names an empty Sentinel host")
    if item.startswith("["):  # [::1]:26379
        host, _, port = item[1:].partition("]")
        port = port.removeprefix(":")
    else:
        host, _, port = item.rpartition(":") if ":" in item else (item, "", "")
    if not host:
        raise ValueError(f"REDIS_URL names an empty Sentinel host in {item!r}")
    try:
        return host, int(port) if port else DEFAULT_SENTINEL_PORT
    except ValueError:
        raise ValueError(f"REDIS_URL Sentinel port must be a number, got {port!r}") from None
