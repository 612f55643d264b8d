"""The outbound-address guard: a webhook may only reach public addresses over http or https.

A URL whose host resolves to a loopback, private, link-local (cloud metadata), multicast, reserved or
unspecified address is refused, unless its host (or `host:port`) is listed in RECUR_WEBHOOK_ALLOW_HOSTS.
An IPv6 address that carries an IPv4 address (NAT64, 6to4, Teredo) is judged by the IPv4 it reaches. The
check is made at creation and again at each delivery, and the delivery connects to the very address it
checked (a name that resolved to a public address at creation and to 127.0.0.1 now is refused: DNS
rebinding). The URL is made sendable here too: a non-ASCII host IDNA-encoded, a non-ASCII path and query
percent-encoded as UTF-8; whitespace or a control character anywhere is refused.

The egress allowlist (RECUR_WEBHOOK_EGRESS), when set, narrows this further: a URL is then refused unless its
host is one of the hosts named, lies under one of the domains named (`.example.com`: the domain and every
name under it), or every address it resolves to lies in one of the ranges named (CIDR; a bare address is a
range of one). It is checked before the internal-address rule, and both must pass: an internal address
needs its host in RECUR_WEBHOOK_ALLOW_HOSTS as well as a place in the allowlist.
"""

from __future__ import annotations

import concurrent.futures
import ipaddress
import socket
import unicodedata
from dataclasses import dataclass
from urllib.parse import quote, urlsplit

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


# Reached only inside a network whatever they carry: local-use NAT64 (RFC 8215), IPv4-compatible (deprecated,
# RFC 4291) and IPv4-translated (SIIT, RFC 6145) addresses.
_INTERNAL_V6 = tuple(ipaddress.IPv6Network(n) for n in ("64:ff9b:1::/48", "::/96", "::ffff:0:0:0/96"))
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")  # RFC 6052: the IPv4 address is the last 32 bits


def _carried(ip: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses a packet to `ip` reaches through a translator or tunnel on the way."""
    if ip.ipv4_mapped is not None:
        return [ip.ipv4_mapped]
    if ip in _NAT64:
        return [ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)]
    if ip.sixtofour is not None:
        return [ip.sixtofour]
    if ip.teredo is not None:
        return list(ip.teredo)  # the server and the client (stored XOR 0xffffffff; ipaddress undoes it)
    return []


def _public(address: str) -> bool:
    ip = ipaddress.ip_address(address)
    if isinstance(ip, ipaddress.IPv6Address):
        if any(ip in network for network in _INTERNAL_V6):
            return False
        carried = _carried(ip)
        if carried:  # judged by where it leads, whatever Python's version thinks of the IPv6 prefix itself
            return all(_public(str(v4)) for v4 in carried)
    # is_global leaves out the private, loopback, link-local, shared (100.64/10), documentation, reserved
    # and unspecified ranges; multicast is global in part but never a webhook receiver.
    return ip.is_global and not ip.is_multicast


# Printable ASCII: what http.client sends as given. Only the rest (non-ASCII) is percent-encoded, so an ASCII
# URL, its %XX escapes and reserved characters included, is sent exactly as the owner wrote it.
_SENT_AS_IS = "".join(chr(c) for c in range(0x21, 0x7F))


def _sendable(url: str) -> bool:
    return not any(c.isspace() or unicodedata.category(c) == "Cc" for c in url)


def parse(url: str) -> tuple[str, str, int, str]:
    """(scheme, host, port, path with query) as they go on the wire: all ASCII, or Refused."""
    if not _sendable(url):
        raise Refused("must not contain whitespace or control characters (percent-encode them)")
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
    try:
        host = _ascii_host(parts.hostname)
        path = quote(path, safe=_SENT_AS_IS, encoding="utf-8", errors="strict")
    except UnicodeError as exc:
        raise Refused(f"cannot be encoded for sending ({exc})") from exc
    return parts.scheme, host, port or (443 if parts.scheme == "https" else 80), path


def _ascii_host(host: str) -> str:
    """The host as DNS and the Host header want it: a non-ASCII name IDNA-encoded, lower case."""
    host = host.lower()
    return host if host.isascii() else host.encode("idna").decode("ascii")


@dataclass(frozen=True)
class Egress:
    """RECUR_WEBHOOK_EGRESS parsed: the only destinations webhooks may reach."""

    hosts: frozenset[str]
    domains: tuple[str, ...]  # without their leading dot
    networks: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]
    setting: str  # as written, for the refusal's message

    def allows_name(self, host: str) -> bool:
        return host in self.hosts or any(host == d or host.endswith("." + d) for d in self.domains)

    def allows_addresses(self, addresses: list[str]) -> bool:
        return bool(self.networks) and all(
            any(ipaddress.ip_address(a) in network for network in self.networks) for a in addresses)


def egress(setting: str | None) -> Egress | None:
    """RECUR_WEBHOOK_EGRESS: comma-separated hosts (`hooks.example.com`), domains with a leading dot
    (`.example.com`) and ranges (`10.0.0.0/8`, `2001:db8::/32`, `127.0.0.1`); None when empty (no allowlist).
    Raises ValueError naming an entry that is none of these."""
    entries = [entry.strip() for entry in (setting or "").split(",") if entry.strip()]
    if not entries:
        return None
    hosts: set[str] = set()
    domains: list[str] = []
    networks: list[ipaddress.IPv4Network | ipaddress.IPv6Network] = []
    for entry in entries:
        try:
            networks.append(ipaddress.ip_network(entry.strip("[]"), strict=False))
            continue
        except ValueError:
            pass
        name = entry[1:] if entry.startswith(".") else entry
        try:
            name = _ascii_host(name)
        except UnicodeError:
            raise ValueError(f"RECUR_WEBHOOK_EGRESS: {entry!r} is not a host, a .domain or a range") from None
        if not name or "/" in name or ":" in name or any(c.isspace() for c in name) or name.startswith("."):
            raise ValueError(f"RECUR_WEBHOOK_EGRESS: {entry!r} is not a host, a .domain or a range")
        if entry.startswith("."):
            domains.append(name)
        else:
            hosts.add(name)
    return Egress(frozenset(hosts), tuple(domains), tuple(networks), ",".join(entries))


def resolve(url: str, allow_hosts: frozenset[str], allowlist: Egress | None = None) -> Target:
    """The address to connect to for `url`, or Refused (`allowlist`: RECUR_WEBHOOK_EGRESS, when set)."""
    scheme, host, port, path = parse(url)
    # A host the allowlist does not name may still pass by its addresses; with no ranges in the list it cannot,
    # and is refused before any lookup.
    by_address = allowlist if allowlist is not None and not allowlist.allows_name(host) else None
    if by_address is not None and not by_address.networks:
        raise _outside(host, by_address)
    try:
        future = _resolver.submit(socket.getaddrinfo, host, port, 0, socket.SOCK_STREAM)
        infos = future.result(timeout=RESOLVE_TIMEOUT)
    except (OSError, UnicodeError, concurrent.futures.TimeoutError) as exc:
        raise Refused(f"host {host!r} does not resolve") from exc
    addresses = [str(info[4][0]) for info in infos]
    if not addresses:
        raise Refused(f"host {host!r} does not resolve")
    if by_address is not None and not by_address.allows_addresses(addresses):
        raise _outside(host, by_address)
    if host not in allow_hosts and _with_port(host, port) not in allow_hosts:
        internal = [a for a in addresses if not _public(a)]
        if internal:
            raise Refused(f"resolves to an internal address ({internal[0]}); list the host in "
                          "RECUR_WEBHOOK_ALLOW_HOSTS to allow it")
    return Target(scheme, host, port, path, addresses[0])


def _outside(host: str, allowlist: Egress) -> Refused:
    return Refused(f"host {host!r} is outside the egress allowlist (RECUR_WEBHOOK_EGRESS={allowlist.setting}); "
                   "no request is made to it")


def _with_port(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def allowed_hosts(setting: str | None) -> frozenset[str]:
    """RECUR_WEBHOOK_ALLOW_HOSTS: comma-separated `host` (any port) or `host:port` (that port only; an IPv6
    address with a port in brackets, `[::1]:8080`), as resolve() compares them."""
    return frozenset(_allowed(entry.strip()) for entry in (setting or "").split(",") if entry.strip())


def _allowed(entry: str) -> str:
    host, port = entry, None
    if entry.startswith("["):  # [v6] or [v6]:port
        host, _, rest = entry[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else None
    elif entry.count(":") == 1:
        host, port = entry.split(":")
    try:
        host = _ascii_host(host)
    except UnicodeError:
        return entry  # matches no URL that parse() lets through
    return _with_port(host, int(port)) if port is not None and port.isdigit() else host
