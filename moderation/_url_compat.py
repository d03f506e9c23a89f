"""Stand-in for scoring.features.url until it lands on main (same interface, simpler rules).
Delete once main has scoring/features/url.py."""

from __future__ import annotations

from urllib.parse import urlsplit

import tldextract


class InvalidUrl(ValueError):
    pass


def normalize_url(url: str) -> str:
    raw = url.strip()
    if "://" not in raw:
        raw = "http://" + raw
    try:
        parts = urlsplit(raw)
        host = (parts.hostname or "").rstrip(".")
        port = parts.port
    except ValueError as exc:
        raise InvalidUrl(str(exc)) from exc
    if not host:
        raise InvalidUrl("no host")
    try:
        host = host.encode("idna").decode("ascii").lower()
    except UnicodeError as exc:
        raise InvalidUrl("bad host") from exc
    scheme = parts.scheme.lower()
    netloc = host if port in (None, 80 if scheme == "http" else 443) else f"{host}:{port}"
    out = f"{scheme}://{netloc}{parts.path or '/'}"
    return f"{out}?{parts.query}" if parts.query else out


def registrable_domain(url: str) -> str:
    host = urlsplit(normalize_url(url)).hostname or ""
    ext = tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None)(host)
    return f"{ext.domain}.{ext.suffix}" if ext.domain and ext.suffix else host
