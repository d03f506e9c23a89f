from __future__ import annotations

import pytest
from django.test import override_settings

from scoring.features import reputation
from scoring.features.reputation import (
    UNKNOWN,
    LocalReputationProvider,
    ReputationContext,
    ReputationProvider,
    configured_providers,
    load_providers,
    url_reputation,
)


class FixedProvider:
    name = "fixed"

    def score(self, url: str, context: ReputationContext) -> float | None:
        return 0.9 if "trusted" in url else None


class BrokenProvider:
    name = "broken"

    def score(self, url: str, context: ReputationContext) -> float | None:
        raise RuntimeError("service down")


fixed_instance = FixedProvider()


def test_local_provider() -> None:
    local = LocalReputationProvider()
    assert local.score("u", ReputationContext()) is None
    assert local.score("u", ReputationContext(domain_status="block")) == 0.0
    assert local.score("u", ReputationContext(domain_status="allow", domain_spam_count=5, domain_post_count=5)) == 1.0
    bad = local.score("u", ReputationContext(domain_post_count=20, domain_spam_count=20))
    good = local.score("u", ReputationContext(domain_post_count=20, domain_spam_count=0))
    one_spam = local.score("u", ReputationContext(domain_post_count=1, domain_spam_count=1))
    assert bad is not None and good is not None and one_spam is not None
    assert bad < one_spam < UNKNOWN < good
    assert one_spam > 0.3  # one spam post does not condemn a domain


def test_url_reputation_combines_known_scores() -> None:
    assert url_reputation("http://x.com/") == UNKNOWN
    providers: list[ReputationProvider] = [LocalReputationProvider(), FixedProvider(), BrokenProvider()]
    assert url_reputation("http://trusted.com/", ReputationContext(domain_status="block"), providers) == pytest.approx(
        0.45
    )
    assert url_reputation("http://other.com/", ReputationContext(), providers) == UNKNOWN


def test_load_providers_by_dotted_path() -> None:
    loaded = load_providers(
        [
            "scoring.features.reputation.LocalReputationProvider",
            f"{__name__}.FixedProvider",
            f"{__name__}.fixed_instance",
        ]
    )
    assert [p.name for p in loaded] == ["local", "fixed", "fixed"]
    assert loaded[2] is fixed_instance
    with pytest.raises(TypeError):
        load_providers(["scoring.features.reputation.ReputationContext"])
    with pytest.raises(ImportError):
        load_providers(["nodots"])


def test_configured_providers_reads_settings() -> None:
    reputation._configured.cache_clear()
    assert [p.name for p in configured_providers()] == ["local"]
    with override_settings(URL_REPUTATION_PROVIDERS=[f"{__name__}.FixedProvider"]):
        assert [p.name for p in configured_providers()] == ["fixed"]
