"""REDIS_URL forms: redis:// and rediss:// (TLS) go to redis-py as they are; redis+sentinel:// (and
rediss+sentinel://, TLS to the Sentinels and the master) names Sentinels and a master, so every process
connects to whichever server is master now, across failovers."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

SENTINEL_SCHEMES = ("redis+sentinel", "rediss+sentinel")
DEFAULT_SENTINEL_PORT = 26379
# The query options of rediss+sentinel://, as rediss:// takes them (redis-py's names): how the master's
# certificate is checked, and the client's own certificate where the server asks for one.
TLS_OPTIONS = ("ssl_ca_certs", "ssl_ca_path", "ssl_certfile", "ssl_keyfile", "ssl_cert_reqs", "ssl_check_hostname")
_CERT_REQS = ("none", "optional", "required")
_BOOLEANS = {"true": True, "yes": True, "1": True, "false": False, "no": False, "0": False}


@dataclass(frozen=True)
class SentinelTarget:
    """Where the Sentinels are and which master (and database) they should hand us."""

    sentinels: tuple[tuple[str, int], ...]
    service: str
    db: int = 0
    username: str | None = None
    password: str | None = None
    ssl: bool = False
    tls_options: dict[str, Any] = field(default_factory=dict)  # TLS_OPTIONS given in the query


def parse(url: str) -> SentinelTarget | None:
    """The Sentinel target a redis+sentinel:// URL names, or None for a URL redis-py reads itself.

    Form: ``redis+sentinel://[[user]:password@]host1[:port],host2[:port]/service[/db]``. The password
    (and user) is the master's; the Sentinels are reached without one. rediss+sentinel:// reaches the
    Sentinels and the master over TLS, with TLS_OPTIONS in the query (``?ssl_ca_certs=/path/ca.pem``).
    Raises ValueError on a malformed URL, naming what is wrong.
    """
    scheme, sep, rest = url.partition("://")
    if not sep or scheme.lower() not in SENTINEL_SCHEMES:
        return None
    ssl = scheme.lower() == "rediss+sentinel"
    rest, _, query = rest.partition("?")
    tls_options = _tls_options(query, ssl)
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
    return SentinelTarget(sentinels, unquote(parts[0]), db, username, password, ssl, tls_options)


def _tls_options(query: str, ssl: bool) -> dict[str, Any]:
    try:
        pairs = parse_qsl(query, keep_blank_values=True, strict_parsing=bool(query))
    except ValueError:
        raise ValueError(f"REDIS_URL query is malformed: {query!r}") from None
    options: dict[str, Any] = {}
    for name, value in pairs:
        if name not in TLS_OPTIONS:
            raise ValueError(f"REDIS_URL option {name!r} is not one of {', '.join(TLS_OPTIONS)}")
        if not ssl:
            raise ValueError(f"REDIS_URL option {name!r} needs TLS: use rediss+sentinel://")
        options[name] = _option_value(name, value)
    return options


def _option_value(name: str, value: str) -> Any:
    if name == "ssl_check_hostname":
        if value.lower() not in _BOOLEANS:
            raise ValueError(f"REDIS_URL option ssl_check_hostname must be true or false, got {value!r}")
        return _BOOLEANS[value.lower()]
    if name == "ssl_cert_reqs" and value not in _CERT_REQS:
        raise ValueError(f"REDIS_URL option ssl_cert_reqs must be one of {', '.join(_CERT_REQS)}, got {value!r}")
    if not value:
        raise ValueError(f"REDIS_URL option {name} is empty")
    return value


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
