"""Where a decision webhook may be sent: the server-side request forgery guard.

A source's callback URL is chosen by the source, so without a check it can aim the workers at
anything they reach: the cloud metadata service (169.254.169.254), Redis and PostgreSQL on
loopback, the private network. The rules, checked when a URL is saved (Source.clean) and again
at every delivery (scoring.services.webhooks):

- https only (never ftp:, file: or any other scheme), no user-info in the URL;
- every address the host resolves to is public: not loopback, private (RFC 1918, ULA),
  link-local, shared (100.64/10), multicast, reserved or unspecified; an IPv6 address that
  carries an IPv4 address (IPv4-mapped, IPv4-compatible, NAT64, 6to4, Teredo) is public only
  if that IPv4 address is too. One non-public answer refuses the URL, so a name with mixed
  answers cannot pass;
- at delivery the connection goes to the address that was checked (`WebhookTarget.address`),
  never to a second resolution, so a DNS answer that changes between the check and the
  connection (DNS rebinding) cannot redirect it.

WEBHOOK_ALLOW_PRIVATE_TARGETS (on in the local and test settings, off in production) lifts the
address rule and also allows plain http, for receivers on the developer's machine.

No app is imported here: moderation (saving) and scoring (delivering) both use it."""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit

DEFAULT_PORTS = {"http": 80, "https": 443}


class UnsafeWebhookTarget(ValueError):
    """The URL may not receive webhooks; the message says why, for the operator."""


@dataclass(frozen=True)
class WebhookTarget:
    scheme: str
    host: str  # as in the URL (the TLS server name and the Host header)
    port: int
    path: str  # path and query, as sent in the request line
    address: str  # the checked address to connect to ("" when not resolved)

    @property
    def host_header(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if self.port == DEFAULT_PORTS[self.scheme] else f"{host}:{self.port}"


# IPv6 prefixes whose addresses carry an IPv4 address that the network delivers to: NAT64's
# well-known prefix (RFC 6052) and its local-use /48 (RFC 8215), and the deprecated
# IPv4-compatible form (::a.b.c.d), which some stacks still route as IPv4.
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_NAT64_LOCAL = ipaddress.IPv6Network("64:ff9b:1::/48")
_IPV4_COMPATIBLE = ipaddress.IPv6Network("::/96")


def embedded_ipv4(address: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses ``address`` reaches through a translation or tunnel: IPv4-mapped,
    6to4 (2002::/16), Teredo (2001::/32: its server and its client), NAT64 and IPv4-compatible.
    A private address behind any of them (``64:ff9b::a9fe:a9fe`` is 169.254.169.254 on a
    network with NAT64) is as private as the address itself."""
    found: list[ipaddress.IPv4Address] = []
    if address.ipv4_mapped is not None:
        found.append(address.ipv4_mapped)
    if address.sixtofour is not None:
        found.append(address.sixtofour)
    if address.teredo is not None:
        found.extend(address.teredo)
    packed = address.packed
    if address in _NAT64 or address in _IPV4_COMPATIBLE:
        found.append(ipaddress.IPv4Address(packed[12:]))
    if address in _NAT64_LOCAL:
        # RFC 6052 puts the IPv4 address in bits 48-63 and 72-87 under a /48 prefix, and in the
        # last 32 bits under a /96 an operator carves out of it. Both readings must be public,
        # so this local-use prefix (the operator's own translator) rarely passes, by design.
        found.append(ipaddress.IPv4Address(packed[6:8] + packed[9:11]))
        found.append(ipaddress.IPv4Address(packed[12:]))
    return found


def is_public_address(value: str) -> bool:
    address = ipaddress.ip_address(value.split("%", 1)[0])
    candidates: list[ipaddress.IPv4Address | ipaddress.IPv6Address] = [address]
    if isinstance(address, ipaddress.IPv6Address):
        candidates += embedded_ipv4(address)
    return all(a.is_global and not a.is_multicast for a in candidates)


def webhook_target(url: str, *, allow_private: bool, resolve: bool = True) -> WebhookTarget:
    """The checked target of `url`; raises UnsafeWebhookTarget. With `resolve=False` only the
    URL itself is checked (an IP literal host is still checked as an address)."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError as exc:
        raise UnsafeWebhookTarget("Not a valid URL.") from exc
    scheme = parts.scheme.lower()
    allowed = ("http", "https") if allow_private else ("https",)
    if scheme not in allowed:
        raise UnsafeWebhookTarget(f"The callback URL must use {' or '.join(allowed)}.")
    if parts.username or parts.password:
        raise UnsafeWebhookTarget("The callback URL must not carry a user name or password.")
    host = (parts.hostname or "").rstrip(".")
    if not host:
        raise UnsafeWebhookTarget("The callback URL has no host.")
    port = port or DEFAULT_PORTS[scheme]
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    addresses = _literal(host)
    if addresses is None and resolve:
        addresses = _resolve(host, port)
    if addresses and not allow_private:
        refused = [a for a in addresses if not is_public_address(a)]
        if refused:
            raise UnsafeWebhookTarget(
                f"{host} is not a public address ({refused[0]}); webhooks go to public hosts only."
            )
    return WebhookTarget(scheme, host, port, path, addresses[0] if addresses else "")


def _literal(host: str) -> list[str] | None:
    try:
        return [str(ipaddress.ip_address(host))]
    except ValueError:
        return None


def _resolve(host: str, port: int) -> list[str]:
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        raise UnsafeWebhookTarget(f"{host} does not resolve.") from exc
    addresses = list(dict.fromkeys(str(info[4][0]) for info in infos))
    if not addresses:
        raise UnsafeWebhookTarget(f"{host} does not resolve.")
    return addresses
