"""Dashboard test factories: the shared tests/factories.py ones, with defaults a review queue
needs (queued, scored, with a link and an IP) and users with a dashboard role."""

from __future__ import annotations

from datetime import timedelta

import factory
from django.contrib.auth.models import Group, User
from django.utils import timezone

from moderation.models import PostStatus
from scoring.models import Action
from tests import factories as shared


class SourceFactory(shared.SourceFactory):
    class Meta:
        django_get_or_create = ("slug",)

    name = factory.Sequence(lambda n: f"Platform {n}")
    slug = factory.Sequence(lambda n: f"platform-{n}")


class AuthorFactory(shared.AuthorFactory):
    source = factory.SubFactory(SourceFactory)
    external_id = factory.Sequence(lambda n: f"user-{n}")
    username = factory.Sequence(lambda n: f"user{n}")
    account_created_at = factory.LazyFunction(lambda: timezone.now() - timedelta(days=30))
    email_domain = "example.org"


class DomainFactory(shared.DomainFactory):
    name = factory.Sequence(lambda n: f"site{n}.example")


class LinkFactory(shared.LinkFactory):
    domain = factory.SubFactory(DomainFactory)


class IpFactory(shared.IpAddressFactory):
    address = factory.Sequence(lambda n: f"10.{n // 65536 % 256}.{n // 256 % 256}.{n % 256}")


class PostFactory(shared.PostFactory):
    author = factory.SubFactory(AuthorFactory)
    text = factory.Sequence(lambda n: f"Post number {n}: buy cheap things now")
    link = factory.SubFactory(LinkFactory)
    url = factory.LazyAttribute(lambda o: o.link.url if o.link else "")
    ip = factory.SubFactory(IpFactory)
    received_at = factory.LazyFunction(timezone.now)
    status = PostStatus.QUEUED
    final_score = 0.5
    model_version = "behaviour_model:1,fusion_model:1,link_model:1,spam_pipeline:1,text_classifier:1,tokenizer:1"


class ReportFactory(shared.ReportFactory):
    post = factory.SubFactory(PostFactory)


class ScoreFactory(shared.ScoreFactory):
    post = factory.SubFactory(PostFactory)
    text_score = 0.7
    link_score = 0.4
    behaviour_score = 0.6
    final_score = factory.LazyAttribute(lambda o: o.post.final_score if o.post.final_score is not None else 0.5)
    action = Action.QUEUE
    latency_ms = 12.5
    # As the real pipeline stores them: Triton model names, feature names of
    # contracts.feature_schema, the bias last.
    contributions = factory.LazyFunction(
        lambda: {
            "behaviour_model": {
                "user_age_days": 0.5,
                "journey_steps_per_second": 0.4,
                "user_followers": -0.3,
                "bias": 0.0,
            },
            "link_model": {"url_age_hours": 0.8, "domain_report_count": 0.3, "url_tld_risky": -0.2, "bias": 0.1},
            "fusion_model": {"behaviour_prob": 0.9, "link_prob": 0.6, "text_prob": 0.4, "bias": -1.2},
        }
    )


class UserFactory(shared.UserFactory):
    """A dashboard user; `role="moderator"` (or admin/analyst) puts them in the group."""

    class Meta:
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"staff{n}")
    password = factory.django.Password("pw-for-tests-123")

    @factory.post_generation  # called with the user the factory made, not the factory
    def role(self: User, create: bool, extracted: str | None, **kwargs: object) -> None:
        if create and extracted:
            self.groups.add(Group.objects.get(name=extracted))
