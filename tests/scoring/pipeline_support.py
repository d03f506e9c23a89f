"""Builders and a fake Triton client for the pipeline's tests."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any

from django.utils import timezone

from contracts.feature_schema import BEHAVIOUR_FEATURES, FUSION_FEATURES, LINK_FEATURES
from contracts.triton import ALL_MODELS
from moderation.models import Author, Domain, IpAddress, Link, Post, Source
from scoring.services.inference import ScoringInput, ScoringOutput, TritonUnavailable

_seq = itertools.count(1)

# What Triton reports (scoring.triton_client.ALL_MODELS) and the model_set scoring derives from it.
MODEL_VERSIONS = {name: "1" for name in ALL_MODELS}
MODEL_SET = "behaviour_model:1,fusion_model:1,link_model:1,spam_pipeline:1,text_classifier:1,tokenizer:1"


def make_source(**kwargs: Any) -> Source:
    n = next(_seq)
    kwargs.setdefault("name", f"source {n}")
    kwargs.setdefault("slug", f"source-{n}")
    return Source.objects.create(**kwargs)


def make_author(source: Source, **kwargs: Any) -> Author:
    kwargs.setdefault("external_id", f"user-{next(_seq)}")
    kwargs.setdefault("account_created_at", timezone.now() - timedelta(days=30))
    return Author.objects.create(source=source, **kwargs)


def make_link(url: str = "", *, domain: str = "", **domain_kwargs: Any) -> Link:
    n = next(_seq)
    domain = domain or f"site{n}.example"
    url = url or f"https://{domain}/page/{n}"
    d, _ = Domain.objects.get_or_create(name=domain, defaults=domain_kwargs)
    return Link.objects.create(url=url, url_hash=f"{n:064x}", domain=d, host=domain, post_count=1)


def make_post(
    *,
    source: Source | None = None,
    author: Author | None = None,
    text: str = "hello world",
    link: Link | None = None,
    ip: IpAddress | None = None,
    **kwargs: Any,
) -> Post:
    source = source or (author.source if author else make_source())
    author = author or make_author(source)
    kwargs.setdefault("external_id", f"post-{next(_seq)}")
    kwargs.setdefault("created_at", timezone.now())
    return Post.objects.create(
        source=source, author=author, text=text, link=link, url=link.url if link else "", ip=ip, **kwargs
    )


def make_ip(address: str = "", **kwargs: Any) -> IpAddress:
    n = next(_seq)
    return IpAddress.objects.create(address=address or f"10.{n // 65536 % 256}.{n // 256 % 256}.{n % 256}", **kwargs)


def model_versions(version: str) -> dict[str, str]:
    """What Triton reports once every model serves `version` (a promotion bumps each number the
    pipeline reports: the new spam_pipeline bundle and the models it bundles)."""
    return {name: version for name in ALL_MODELS}


class FakeClient:
    """Scores by a rule over the input (default: "spam" in the text -> 0.95, "maybe" -> 0.5,
    else 0.05) and records each call's batch. `versions`: the model versions every output
    reports (default MODEL_VERSIONS; model_versions("2") after a promotion)."""

    def __init__(
        self,
        rule: Callable[[ScoringInput], float] | None = None,
        *,
        fail: Exception | None = None,
        reject: Callable[[Sequence[ScoringInput]], Exception | None] | None = None,
        versions: dict[str, str] | None = None,
    ) -> None:
        self.rule = rule or self.default_rule
        self.fail = fail
        self.reject = reject
        self.versions = dict(versions or MODEL_VERSIONS)
        self.calls: list[list[ScoringInput]] = []

    @staticmethod
    def default_rule(item: ScoringInput) -> float:
        if "spam" in item.text:
            return 0.95
        if "maybe" in item.text:
            return 0.5
        return 0.05

    def is_ready(self) -> bool:
        return self.fail is None

    def score(self, inputs: Sequence[ScoringInput]) -> list[ScoringOutput]:
        self.calls.append(list(inputs))
        if self.fail is not None:
            raise self.fail
        if self.reject is not None and (exc := self.reject(inputs)) is not None:
            raise exc
        outputs = []
        for item in inputs:
            p = self.rule(item)
            outputs.append(
                ScoringOutput(
                    text_prob=p,
                    preview_prob=p if item.preview_text else None,
                    link_prob=p,
                    behaviour_prob=p,
                    final_prob=p,
                    contributions=fake_contributions(p),
                    model_versions=dict(self.versions),
                )
            )
        return outputs


def fake_contributions(p: float) -> dict[str, dict[str, float]]:
    """Shaped as scoring.triton_client parses them: per tree model, every feature it reads in
    order, then the bias; the text probability carries the whole fused margin here."""
    rows = {"link_model": LINK_FEATURES, "behaviour_model": BEHAVIOUR_FEATURES, "fusion_model": FUSION_FEATURES}
    out = {model: {**dict.fromkeys(names, 0.0), "bias": 0.0} for model, names in rows.items()}
    out["fusion_model"]["text_prob"] = p - 0.5
    return out


def down_client() -> FakeClient:
    return FakeClient(fail=TritonUnavailable("connection refused"))


def break_scoring_of(monkeypatch: Any, post_id: int) -> None:
    """Scoring raises for this one post (a corrupt row), inside its batch's work."""
    from scoring.services import scoring as scoring_service

    # Patched where prepare looks it up; scoring does not export it.
    real = scoring_service.short_circuit_reason  # type: ignore[attr-defined]

    def explode(post: Any, *args: Any) -> Any:
        if post.id == post_id:
            raise ValueError("corrupt row")
        return real(post, *args)

    monkeypatch.setattr(scoring_service, "short_circuit_reason", explode)
