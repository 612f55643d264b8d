"""The outbound-address guard: a webhook may only reach public addresses over http or https.

A URL whose host resolves to a loopback, private, link-local (cloud metadata), multicast, reserved or
unspecified address is refused, unless its host is listed in RECUR_WEBHOOK_ALLOW_HOSTS. The check is
made at creation and again at each delivery, and the delivery connects to the very address it checked
(a name that resolved to a public address at creation and to 127.0.0.1 now is refused: DNS rebinding).
"""

from __future__ import annotations

import concurrent.futures
import ipaddress
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit

RESOLVE_TIMEOUT = 3.0
_resolver = concurrent.futures.ThreadPoolExecutor(max_workers=4, thread_name_prefix="recur-resolve")


class Refused(ValueError):
    """The URL may not be called; the message says why."""


@dataclass(frozen=True)
class Target:
    scheme: str
    host: str
    port: int
    path: str  # with the query
    address: str  # the IP the request connects to


def _public(address: str) -> bool:
    ip = ipaddress.ip_address(address)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    # is_global leaves out the private, loopback, link-local, shared (100.64/10), documentation, reserved
    # and unspecified ranges; multicast is global in part but never a webhook receiver.
    return ip.is_global and not ip.is_multicast


def parse(url: str) -> tuple[str, str, int, str]:
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise Refused(f"is not a valid URL ({exc})") from exc
    if parts.scheme not in ("http", "https"):
        raise Refused("must be an http or https URL")
    if not parts.hostname:
        raise Refused("must name a host")
    if parts.username or parts.password:
        raise Refused("must not carry a user name or password")
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return parts.scheme, parts.hostname.lower(), port or (443 if parts.scheme == "https" else 80), path


def resolve(url: str, allow_hosts: frozenset[str]) -> Target:
    """The address to connect to for `url`, or Refused."""
    scheme, host, port, path = parse(url)
    try:
        future = _resolver.submit(socket.getaddrinfo, host, port, 0, socket.SOCK_STREAM)
        infos = future.result(timeout=RESOLVE_TIMEOUT)
    except (OSError, UnicodeError, concurrent.futures.TimeoutError) as exc:
        raise Refused(f"host {host!r} does not resolve") from exc
    addresses = [str(info[4][0]) for info in infos]
    if not addresses:
        raise Refused(f"host {host!r} does not resolve")
    if host not in allow_hosts:
        internal = [a for a in addresses if not _public(a)]
        if internal:
            raise Refused(f"resolves to an internal address ({internal[0]}); list the host in "
                          "RECUR_WEBHOOK_ALLOW_HOSTS to allow it")
    return Target(scheme, host, port, path, addresses[0])


def allowed_hosts(setting: str | None) -> frozenset[str]:
    return frozenset(h.strip().lower() for h in (setting or "").split(",") if h.strip())
