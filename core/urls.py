"""URL normalization: the identity of a link for ingest (Link, Domain rows), the block lists
and the link features.

Pure functions: no Django, no database, no network. The public suffix list comes from the
snapshot bundled inside tldextract (``suffix_list_urls=()`` and ``cache_dir=None`` switch off
its download and its disk cache), so results are reproducible on an offline machine.

Conventions
- ``normalize_url`` is the identity of a link here (``Link.url``/``Link.url_hash``): scheme and
  host lower-cased, host IDNA-encoded (punycode) with trailing dots removed, default port
  (80/443) dropped, user-info and fragment dropped, an empty path becomes ``/``, unsafe
  characters of path and query percent-encoded (existing ``%XX`` escapes are kept). A string
  without ``://`` is read as ``http://...``. It is idempotent: normalizing twice changes nothing.
- ``registrable_domain`` is the key of ``Domain.name``: eTLD+1 (``a.b.example.co.uk`` ->
  ``example.co.uk``), the address itself for an IP host, and the host itself when it has no
  public suffix (``localhost``).
- Anything that cannot be read as a URL with a host raises ``InvalidUrl`` (a ``ValueError``).
"""

from __future__ import annotations

import functools
import ipaddress
import re
from dataclasses import dataclass
from urllib.parse import quote, urlsplit

import tldextract

__all__ = [
    "InvalidUrl",
    "UrlParts",
    "is_ip_host",
    "normalize_url",
    "registrable_domain",
    "url_parts",
]


class InvalidUrl(ValueError):
    """The string cannot be read as a URL with a host."""


_DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443, "ftp": 21}
_SCHEME_RE = re.compile(r"^[a-z][a-z0-9+.-]*$")
_HOST_RE = re.compile(r"^[a-z0-9_-]+(\.[a-z0-9_-]+)*$")
# Characters left as they are in path and query; everything else is percent-encoded. "%" is
# kept so that existing escapes survive and normalization stays idempotent.
_PATH_SAFE = "/%:@!$&'()*+,;=-._~"
_QUERY_SAFE = _PATH_SAFE + "?"


@functools.lru_cache(maxsize=1)
def _extractor() -> tldextract.TLDExtract:
    # Offline on purpose: no suffix list download, no cache directory; the bundled snapshot.
    return tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None, fallback_to_snapshot=True)


def _encode_host(host: str) -> str:
    host = host.strip().lower().rstrip(".")
    if host.startswith("[") and host.endswith("]"):
        try:
            return f"[{ipaddress.IPv6Address(host[1:-1]).compressed}]"
        except ValueError as exc:
            raise InvalidUrl(f"invalid IPv6 host: {host!r}") from exc
    if not host.isascii():
        try:
            import idna  # IDNA 2008 + UTS 46 mapping, as browsers do

            host = idna.encode(host, uts46=True).decode("ascii")
        except Exception:
            try:
                host = host.encode("idna").decode("ascii")  # IDNA 2003, more permissive
            except UnicodeError as exc:
                raise InvalidUrl(f"host cannot be IDNA-encoded: {host!r}") from exc
        host = host.lower().rstrip(".")
    if not host or len(host) > 253 or not _HOST_RE.match(host):
        raise InvalidUrl(f"invalid host: {host!r}")
    return host


def _split(url: str) -> tuple[str, str, int | None, str, str]:
    """(scheme, ascii host, explicit non-default port or None, path, query)."""
    if not isinstance(url, str):
        raise InvalidUrl(f"expected a string, got {type(url).__name__}")
    raw = url.strip()
    if not raw:
        raise InvalidUrl("empty URL")
    if "://" not in raw:
        raw = "http://" + raw.lstrip("/")
    try:
        parts = urlsplit(raw)
    except ValueError as exc:
        raise InvalidUrl(str(exc)) from exc
    scheme = parts.scheme.lower()
    if not _SCHEME_RE.match(scheme):
        raise InvalidUrl(f"invalid scheme in {url!r}")
    netloc = parts.netloc.rpartition("@")[2]  # user-info dropped: it is not part of the identity
    if netloc.startswith("["):
        end = netloc.find("]")
        if end < 0:
            raise InvalidUrl(f"unterminated IPv6 host in {url!r}")
        host_raw, port_raw = netloc[: end + 1], netloc[end + 1 :]
        if port_raw and not port_raw.startswith(":"):
            raise InvalidUrl(f"invalid host in {url!r}")
        port_raw = port_raw[1:]
    else:
        host_raw, _, port_raw = netloc.partition(":")
    host = _encode_host(host_raw)
    port: int | None = None
    if port_raw:
        if not port_raw.isdigit() or not port_raw.isascii() or int(port_raw) > 65535:
            raise InvalidUrl(f"invalid port in {url!r}")
        port = int(port_raw)
        if _DEFAULT_PORTS.get(scheme) == port:
            port = None
    path = quote(parts.path, safe=_PATH_SAFE) or "/"
    query = quote(parts.query, safe=_QUERY_SAFE)
    return scheme, host, port, path, query


def normalize_url(url: str) -> str:
    """The canonical form of ``url`` (see the module docstring); raises ``InvalidUrl``."""
    scheme, host, port, path, query = _split(url)
    out = f"{scheme}://{host}"
    if port is not None:
        out += f":{port}"
    out += path
    if query:
        out += f"?{query}"
    return out


def is_ip_host(host: str) -> bool:
    """A literal IP address, including the integer/hex spellings spammers use (http://0x7f000001/)."""
    host = host.strip("[]")
    try:
        ipaddress.ip_address(host)
        return True
    except ValueError:
        pass
    if re.fullmatch(r"(0x[0-9a-f]+|\d+)", host):
        return True
    labels = host.split(".")
    return len(labels) == 4 and all(re.fullmatch(r"(0x[0-9a-f]+|\d+)", label) for label in labels)


@dataclass(frozen=True, slots=True)
class UrlParts:
    normalized: str
    scheme: str
    host: str
    subdomain: str  # "" when none
    domain: str  # the label under the public suffix ("example"), or the whole host
    suffix: str  # public suffix ("co.uk"), "" for IPs and unknown suffixes
    registrable_domain: str
    is_ip: bool
    path: str
    query: str


def url_parts(url: str) -> UrlParts:
    scheme, host, port, path, query = _split(url)
    normalized = f"{scheme}://{host}" + (f":{port}" if port is not None else "") + path + (f"?{query}" if query else "")
    ip = is_ip_host(host)
    if ip:
        address = host.strip("[]")
        return UrlParts(normalized, scheme, host, "", address, "", address, True, path, query)
    ext = _extractor()(host)
    if ext.suffix and ext.domain:
        registrable = f"{ext.domain}.{ext.suffix}"
        return UrlParts(
            normalized, scheme, host, ext.subdomain, ext.domain, ext.suffix, registrable, False, path, query
        )
    labels = host.split(".")
    if not ext.suffix and len(labels) > 2:
        # A suffix the public list does not know (`.example`, an intranet's `.corp`): the last two
        # labels are the registrable domain, so a block of `evil.example` covers
        # `login.evil.example` as it would under a listed suffix.
        registrable = ".".join(labels[-2:])
        return UrlParts(
            normalized, scheme, host, ".".join(labels[:-2]), labels[-2], "", registrable, False, path, query
        )
    # One or two labels without a public suffix (localhost, evil.example), or the host is a
    # suffix itself (co.uk): the host is its own registrable domain.
    return UrlParts(normalized, scheme, host, "", host, ext.suffix, host, False, path, query)


def registrable_domain(url: str) -> str:
    """eTLD+1 of the URL's host (``https://a.b.example.co.uk/x`` -> ``example.co.uk``).

    Accepts a bare host too (``www.example.com``). IP hosts return the address (no brackets), hosts without
    a public suffix return the host. Raises ``InvalidUrl``."""
    return url_parts(url).registrable_domain
