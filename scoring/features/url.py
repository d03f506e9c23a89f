"""URL normalization and the lexical link features (blueprint angle 1: url_domain, url_tld,
url_subdomain_count, url_token, shortener...).

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
  ``example.co.uk``), the address itself for an IP host; without a known public suffix the last
  two labels (``login.evil.example`` -> ``evil.example``, ``localhost`` stays ``localhost``).
- Anything that cannot be read as a URL with a host raises ``InvalidUrl`` (a ``ValueError``).
"""

from __future__ import annotations

import functools
import ipaddress
import re
from dataclasses import dataclass
from urllib.parse import quote, unquote, urlsplit

import tldextract
from antispam_link_shorteners import link_shorteners_list

__all__ = [
    "LEXICAL_LINK_FEATURES",
    "RISKY_TLDS",
    "InvalidUrl",
    "UrlParts",
    "is_ip_host",
    "is_shortener",
    "normalize_url",
    "path_tokens",
    "registrable_domain",
    "url_lexical_features",
    "url_parts",
]


class InvalidUrl(ValueError):
    """The string cannot be read as a URL with a host."""


# TLDs that abuse reports (Spamhaus "most abused TLDs", Interisle phishing landscape) name
# again and again. A hint for the model, not a verdict: most sites on them are harmless.
RISKY_TLDS: frozenset[str] = frozenset(
    {
        "xyz", "top", "click", "link", "work", "gq", "ml", "cf", "tk", "ga", "buzz", "loan",
        "win", "bid", "review", "country", "stream", "download", "racing", "date", "faith",
        "party", "science", "cricket", "accountant", "men", "trade", "webcam", "kim", "icu",
        "cyou", "rest", "fit", "online", "site", "live", "shop", "monster", "sbs", "cfd",
        "quest", "support", "zip", "mov",
    }
)  # fmt: skip

# The names url_lexical_features() returns; the rest of LINK_FEATURES needs the database.
LEXICAL_LINK_FEATURES: tuple[str, ...] = (
    "url_present",
    "url_is_shortener",
    "url_is_ip_host",
    "url_tld_risky",
    "url_subdomain_count",
    "url_path_depth",
    "url_path_token_count",
    "url_length",
    "url_has_query",
    "url_digit_ratio",
)

_DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443, "ftp": 21}
_SCHEME_RE = re.compile(r"^[a-z][a-z0-9+.-]*$")
_HOST_RE = re.compile(r"^[a-z0-9_-]+(\.[a-z0-9_-]+)*$")
_TOKEN_SPLIT_RE = re.compile(r"[^a-z0-9]+")
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


def is_shortener(url: str) -> bool:
    """The host (or its registrable domain) is a known link shortener (antispam-link-shorteners)."""
    return _is_shortener(url_parts(url))


def _is_shortener(parts: UrlParts) -> bool:
    known = link_shorteners_list()
    host = parts.host.removeprefix("www.")
    return host in known or f"www.{host}" in known or parts.registrable_domain in known


def path_tokens(url: str) -> list[str]:
    """Lower-case alphanumeric tokens of path and query (the blueprint's url_token)."""
    return _path_tokens(url_parts(url))


def _path_tokens(parts: UrlParts) -> list[str]:
    return [t for t in _TOKEN_SPLIT_RE.split(unquote(f"{parts.path} {parts.query}").lower()) if t]


def _subdomain_count(parts: UrlParts) -> int:
    labels = [label for label in parts.subdomain.split(".") if label]
    if labels and labels[0] == "www":  # "www." is the norm, not a signal
        labels = labels[1:]
    return len(labels)


def url_lexical_features(url: str) -> dict[str, float]:
    """The lexical part of LINK_FEATURES (names in ``LEXICAL_LINK_FEATURES``) for one URL."""
    parts = url_parts(url)
    host_path = parts.host + parts.path
    digits = sum(ch.isdigit() for ch in host_path)
    tld = parts.suffix.rsplit(".", 1)[-1] if parts.suffix else ""
    return {
        "url_present": 1.0,
        "url_is_shortener": float(_is_shortener(parts)),
        "url_is_ip_host": float(parts.is_ip),
        "url_tld_risky": float(tld in RISKY_TLDS),
        "url_subdomain_count": float(_subdomain_count(parts)),
        "url_path_depth": float(len([s for s in parts.path.split("/") if s])),
        "url_path_token_count": float(len(_path_tokens(parts))),
        "url_length": float(len(parts.normalized)),
        "url_has_query": float(bool(parts.query)),
        "url_digit_ratio": digits / len(host_path) if host_path else 0.0,
    }
