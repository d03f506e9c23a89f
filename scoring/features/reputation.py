"""URL reputation (url_wot_score / url_google_score style, docs/design.md), behind a pluggable interface.

A provider maps a URL to a trust score in [0, 1]: 1 trusted, 0 known bad, ``None`` when it
knows nothing. ``url_reputation`` (a LINK_FEATURES entry) is the mean of the providers that
know the URL, and ``UNKNOWN`` (0.5) when none does.

The default provider is local: it reads only what the caller passes in ``ReputationContext``
(the domain's allow/block status and this service's history for the link and its domain), so
it needs no network and no database access of its own. External services (Web of Trust,
Google Safe Browsing, ...) plug in by dotted path::

    # settings
    URL_REPUTATION_PROVIDERS = [
        "scoring.features.reputation.LocalReputationProvider",
        "myplatform.reputation.SafeBrowsingProvider",   # your class, same protocol
    ]

A dotted path may name a class (instantiated without arguments), a factory function, or a
ready instance. External providers are optional and none ships here. A provider that raises is treated as unknown so
one failing service cannot fail scoring.

Pure module: Django settings are read only inside ``configured_providers()``, lazily.
"""

from __future__ import annotations

import functools
import importlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

__all__ = [
    "DEFAULT_PROVIDERS",
    "UNKNOWN",
    "LocalReputationProvider",
    "ReputationContext",
    "ReputationProvider",
    "configured_providers",
    "load_providers",
    "url_reputation",
]

logger = logging.getLogger(__name__)

UNKNOWN = 0.5
DEFAULT_PROVIDERS: tuple[str, ...] = ("scoring.features.reputation.LocalReputationProvider",)


@dataclass(frozen=True, slots=True)
class ReputationContext:
    """What this service knows about a link; the caller (pipeline) reads it from the database:
    the global status set by moderators, and the counts of the post's own source only."""

    domain_status: str = "unknown"  # "allow" | "block" | "unknown" (moderation.models.ListStatus)
    domain_post_count: int = 0
    domain_spam_count: int = 0
    url_post_count: int = 0
    url_spam_count: int = 0


@runtime_checkable
class ReputationProvider(Protocol):
    name: str

    def score(self, url: str, context: ReputationContext) -> float | None:
        """Trust in [0, 1] (1 trusted, 0 bad) or ``None`` when the provider does not know."""
        ...


class LocalReputationProvider:
    """Block list -> 0, allow list -> 1, otherwise the ham share of the domain's decided posts,
    shrunk towards 0.5 with a prior of ``prior_weight`` pseudo-posts (so one spam post does not
    condemn a domain). No history -> unknown."""

    name = "local"

    def __init__(self, prior_weight: float = 4.0) -> None:
        self.prior_weight = prior_weight

    def score(self, url: str, context: ReputationContext) -> float | None:
        if context.domain_status == "block":
            return 0.0
        if context.domain_status == "allow":
            return 1.0
        posts = max(context.domain_post_count, context.url_post_count)
        spam = max(context.domain_spam_count, context.url_spam_count)
        if posts <= 0:
            return None
        spam = min(spam, posts)
        return (posts - spam + UNKNOWN * self.prior_weight) / (posts + self.prior_weight)


def _load_one(path: str) -> ReputationProvider:
    module_name, _, attr = path.rpartition(".")
    if not module_name:
        raise ImportError(f"not a dotted path: {path!r}")
    obj = getattr(importlib.import_module(module_name), attr)
    provider = obj() if isinstance(obj, type) or (callable(obj) and not isinstance(obj, ReputationProvider)) else obj
    if not isinstance(provider, ReputationProvider):
        raise TypeError(f"{path} does not implement ReputationProvider (name + score(url, context))")
    return provider


def load_providers(paths: Sequence[str]) -> list[ReputationProvider]:
    """Import and instantiate providers from dotted paths; a bad path is a configuration error."""
    return [_load_one(p) for p in paths]


@functools.lru_cache(maxsize=1)
def _configured(paths: tuple[str, ...]) -> tuple[ReputationProvider, ...]:
    return tuple(load_providers(paths))


def configured_providers() -> list[ReputationProvider]:
    """Providers named by ``settings.URL_REPUTATION_PROVIDERS`` (default: the local one)."""
    from django.conf import settings  # lazy: this module must import without Django

    paths = tuple(getattr(settings, "URL_REPUTATION_PROVIDERS", DEFAULT_PROVIDERS))
    return list(_configured(paths))


def url_reputation(
    url: str,
    context: ReputationContext | None = None,
    providers: Sequence[ReputationProvider] | None = None,
) -> float:
    """Mean trust of the providers that know ``url``; ``UNKNOWN`` when none does.

    ``providers`` defaults to the local provider alone, so the function stays pure; the
    pipeline passes ``configured_providers()``."""
    context = context or ReputationContext()
    providers = [LocalReputationProvider()] if providers is None else providers
    scores: list[float] = []
    for provider in providers:
        try:
            value = provider.score(url, context)
        except Exception:
            logger.warning("scoring.reputation_provider_failed provider=%s", getattr(provider, "name", provider))
            continue
        if value is not None:
            scores.append(min(max(float(value), 0.0), 1.0))
    return sum(scores) / len(scores) if scores else UNKNOWN
