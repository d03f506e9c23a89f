"""URL normalization: the identity of a link for ingest (Link, Domain rows), the block lists
and the link features.

A link is read as a browser reads it: by the WHATWG URL Standard, through ada (``ada_url``, the
parser Node.js uses). A parser of its own, or urllib's RFC 3986 reading, disagrees with browsers
on exactly the spellings spammers use: ``https://bad.example\\@example.com/`` is a visit to
``bad.example`` for a browser (a backslash ends the host of an http(s) URL) but a user-info
``bad.example\\`` at ``example.com`` for urllib, so a block of ``bad.example`` would be dodged.

Pure functions: no Django, no database, no network. The public suffix list comes from the
snapshot bundled inside tldextract (``suffix_list_urls=()`` and ``cache_dir=None`` switch off
its download and its disk cache), so results are reproducible on an offline machine.

Conventions
- ``normalize_url`` is the identity of a link here (``Link.url``/``Link.url_hash``): the WHATWG
  serialization (scheme and host lower-cased, host IDNA-encoded with UTS 46 mapping, so
  fullwidth and ideographic dots are dots; IPv4 hosts in any spelling, ``0x7f.1`` or
  ``2130706433``, written as dotted decimal; IPv6 compressed; default port dropped; ``.`` and
  ``..`` path segments resolved; path and query percent-encoded as the standard says, existing
  ``%XX`` escapes kept), then: trailing dots of the host removed, user-info, fragment and an
  empty query (``?``) dropped. It is idempotent: normalizing twice changes nothing.
- Web schemes only: http, https, ws, wss and ftp. A string that starts with none of them and
  with no other scheme (``example.com/a``, ``localhost:8000``, ``//example.com``) is read as
  ``http://...``; any other scheme (``javascript:``, ``mailto:``, ``foo://``) is refused.
- Refused, as browsers refuse them: a host with a forbidden character (space, ``%`` that decodes
  to one, ``^``, ``|`` ...), an IPv6 zone (``[fe80::1%25eth0]``), a malformed IPv4 number, a
  port over 65535, a label IDNA rejects. Refused in addition: a host over 253 characters (what
  DNS can name, and the length of ``Domain.name``).
- ``registrable_domain`` is the key of ``Domain.name``: eTLD+1 (``a.b.example.co.uk`` ->
  ``example.co.uk``), the address itself for an IP host, and the host itself when it has no
  public suffix (``localhost``).
- Anything that cannot be read as a URL with a host raises ``InvalidUrl`` (a ``ValueError``);
  ``UnsupportedScheme`` is the ``InvalidUrl`` of a scheme that is not a web scheme.
"""

from __future__ import annotations

import functools
import ipaddress
import re
from dataclasses import dataclass

import ada_url
import tldextract

__all__ = [
    "HOST_MAX_CHARS",
    "WEB_SCHEMES",
    "InvalidUrl",
    "UnsupportedScheme",
    "UrlParts",
    "is_ip_host",
    "normalize_url",
    "registrable_domain",
    "url_parts",
]


class InvalidUrl(ValueError):
    """The string cannot be read as a URL with a host."""


class UnsupportedScheme(InvalidUrl):
    """The URL names a scheme that is not a web scheme (or none, where one is required)."""


# The WHATWG "special" schemes that have a network host (file: is special too, but local).
WEB_SCHEMES = frozenset({"http", "https", "ws", "wss", "ftp"})
HOST_MAX_CHARS = 253
# What the URL parser strips before reading (leading and trailing C0 controls and spaces) and
# removes anywhere (tabs and newlines): the scheme is looked for in what the parser will read.
_C0_AND_SPACE = "".join(chr(c) for c in range(0x21))
_TAB_NEWLINE = str.maketrans("", "", "\t\n\r")
_SCHEME_PREFIX = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):")
# After "name:", a port and the end of the authority: "localhost:8000/x" is a host, not a scheme.
_PORT_THEN_END = re.compile(r"[0-9]+(?:[/\\?#]|$)")
_HOST_TYPE_IP = (ada_url.HostType.IPV4, ada_url.HostType.IPV6)
_PARSED = ("protocol", "hostname", "port", "pathname", "search", "host_type")


@functools.lru_cache(maxsize=1)
def _extractor() -> tldextract.TLDExtract:
    # Offline on purpose: no suffix list download, no cache directory; the bundled snapshot.
    return tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None, fallback_to_snapshot=True)


def _absolute(url: str, *, require_scheme: bool) -> str:
    """``url`` as the parser should read it: with its web scheme, or ``http://`` put in front."""
    if not isinstance(url, str):
        raise InvalidUrl(f"expected a string, got {type(url).__name__}")
    raw = url.strip(_C0_AND_SPACE).translate(_TAB_NEWLINE)
    if not raw:
        raise InvalidUrl("empty URL")
    scheme = _SCHEME_PREFIX.match(raw)
    if scheme and scheme.group(1).lower() in WEB_SCHEMES:
        return raw
    if require_scheme:
        raise UnsupportedScheme(f"not an absolute {'/'.join(sorted(WEB_SCHEMES))} URL: {url!r}")
    if scheme and not _PORT_THEN_END.match(raw, scheme.end()):
        raise UnsupportedScheme(f"not a web scheme: {scheme.group(1)!r}")
    return "http://" + raw


@dataclass(frozen=True, slots=True)
class _Parsed:
    scheme: str
    host: str  # ASCII; IPv6 in brackets
    port: str  # "" for the scheme's default
    path: str
    query: str  # without "?"
    is_ip: bool

    @property
    def normalized(self) -> str:
        port = f":{self.port}" if self.port else ""
        query = f"?{self.query}" if self.query else ""
        return f"{self.scheme}://{self.host}{port}{self.path}{query}"


def _check_ace_labels(host: str) -> None:
    """Refuse a host with an ``xn--`` label that is not the IDNA encoding of a valid label.

    The URL Standard (UTS 46 processing) decodes every ``xn--`` label and refuses one that does
    not decode, or decodes to a label it would not have produced (``xn--a``, ``xn--``, a bare
    joiner ``xn--1ug``); ada 4.0 passes such labels through unchecked, and the reference test
    (tests/scoring/test_urls_whatwg.py) found them. The check is ada's own IDNA functions: the
    label must decode and encode back to itself."""
    for label in host.split("."):
        if not label.startswith("xn--"):
            continue
        decoded = ada_url.idna_to_unicode(label)
        if decoded.startswith("xn--") or decoded.isascii() or ada_url.idna_to_ascii(decoded).decode() != label:
            raise InvalidUrl(f"{label!r} is not a valid IDNA label")


def _parse(url: str, *, require_scheme: bool = False) -> _Parsed:
    absolute = _absolute(url, require_scheme=require_scheme)
    try:
        parts = ada_url.parse_url(absolute, attributes=_PARSED)
    except ValueError as exc:  # ada's only error: "Invalid URL" (a lone surrogate included)
        raise InvalidUrl(f"not a URL a browser would open: {url!r}") from exc
    scheme = parts["protocol"].removesuffix(":")
    # A trailing dot names the same DNS host ("example.com." is "example.com"); a host made of
    # dots only keeps them, so that every URL still has a host.
    host = parts["hostname"].rstrip(".") or parts["hostname"]
    if not host:
        raise InvalidUrl(f"no host in {url!r}")
    if len(host) > HOST_MAX_CHARS:
        raise InvalidUrl(f"host longer than {HOST_MAX_CHARS} characters in {url!r}")
    if "xn--" in host:
        _check_ace_labels(host)
    return _Parsed(
        scheme=scheme,
        host=host,
        port=parts["port"],
        path=parts["pathname"],
        query=parts["search"].removeprefix("?"),
        is_ip=parts["host_type"] in _HOST_TYPE_IP,
    )


def normalize_url(url: str) -> str:
    """The canonical form of ``url`` (see the module docstring); raises ``InvalidUrl``."""
    return _parse(url).normalized


def is_ip_host(host: str) -> bool:
    """A literal IP address, including the integer/hex spellings spammers use (http://0x7f000001/).

    For a raw host string; a host from ``url_parts`` is already dotted decimal when it is IPv4."""
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


def url_parts(url: str, *, require_scheme: bool = False) -> UrlParts:
    """The parts of ``url``; raises ``InvalidUrl``. With ``require_scheme`` a string without a
    web scheme raises ``UnsupportedScheme`` instead of being read as ``http://...``."""
    parsed = _parse(url, require_scheme=require_scheme)
    normalized, scheme, host, path, query = parsed.normalized, parsed.scheme, parsed.host, parsed.path, parsed.query
    if parsed.is_ip:
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
