"""The lexical link features (angle 1 of docs/design.md: url_domain, url_tld, url_subdomain_count,
url_token, shortener...) of a URL read by core.urls. Pure functions: no Django, no database, no
network."""

from __future__ import annotations

import re
from urllib.parse import unquote

from antispam_link_shorteners import link_shorteners_list

from core.urls import UrlParts, url_parts

__all__ = [
    "LEXICAL_LINK_FEATURES",
    "RISKY_TLDS",
    "is_shortener",
    "path_tokens",
    "url_lexical_features",
]


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

_TOKEN_SPLIT_RE = re.compile(r"[^a-z0-9]+")


def is_shortener(url: str) -> bool:
    """The host (or its registrable domain) is a known link shortener (antispam-link-shorteners)."""
    return _is_shortener(url_parts(url))


def _is_shortener(parts: UrlParts) -> bool:
    known = link_shorteners_list()
    host = parts.host.removeprefix("www.")
    return host in known or f"www.{host}" in known or parts.registrable_domain in known


def path_tokens(url: str) -> list[str]:
    """Lower-case alphanumeric tokens of path and query (url_token in docs/design.md)."""
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
