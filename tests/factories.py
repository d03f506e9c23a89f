"""Shared factory_boy factories. Everyone imports these; keep them minimal and valid.

from tests.factories import PostFactory, SourceFactory, create_api_key
source = SourceFactory()
raw_key = create_api_key(source)          # the plaintext key for Authorization: Api-Key <raw>
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from datetime import timedelta

import factory
from django.contrib.auth import get_user_model
from django.utils import timezone

from moderation.models import (
    ALL_SCOPES,
    ApiKey,
    AuditLog,
    Author,
    Decision,
    Domain,
    IpAddress,
    Label,
    Link,
    Post,
    ReasonCode,
    Report,
    Source,
)
from moderation.services.api_keys import api_key_create
from scoring.models import Action, Score


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)

    username = factory.Sequence(lambda n: f"user{n}")
    email = factory.LazyAttribute(lambda o: f"{o.username}@example.org")
    password = factory.django.Password("password")
    is_staff = False


class SourceFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Source

    name = factory.Sequence(lambda n: f"Platform {n}")
    slug = factory.Sequence(lambda n: f"platform-{n}")


def create_api_key(source: Source | None = None, *, name: str = "test", scopes: Iterable[str] = ALL_SCOPES) -> str:
    """A fresh API key of ``source`` (a new source when None), every scope unless told;
    returns the raw key."""
    _, raw_key = api_key_create(source=source or SourceFactory(), name=name, scopes=scopes)
    return raw_key


def api_key_with_row(
    source: Source | None = None, *, name: str = "test", scopes: Iterable[str] = ALL_SCOPES
) -> tuple[ApiKey, str]:
    return api_key_create(source=source or SourceFactory(), name=name, scopes=scopes)


class AuthorFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Author

    source = factory.SubFactory(SourceFactory)
    external_id = factory.Sequence(lambda n: f"author-{n}")
    username = factory.LazyAttribute(lambda o: o.external_id)
    account_created_at = factory.LazyFunction(lambda: timezone.now() - timedelta(days=400))
    email_domain = "example.org"
    friends_count = 10
    followers_count = 20
    platform_post_count = 5


class DomainFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Domain
        django_get_or_create = ("name",)

    name = factory.Sequence(lambda n: f"site{n}.example.com")


class LinkFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Link

    domain = factory.SubFactory(DomainFactory)
    host = factory.LazyAttribute(lambda o: o.domain.name)
    url = factory.Sequence(lambda n: f"https://page.example.com/{n}")
    url_hash = factory.LazyAttribute(lambda o: hashlib.sha256(o.url.encode()).hexdigest())


class IpAddressFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = IpAddress
        django_get_or_create = ("address",)

    address = factory.Sequence(lambda n: f"198.51.{(n // 250) % 250}.{n % 250 + 1}")


class PostFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Post

    author = factory.SubFactory(AuthorFactory)
    source = factory.LazyAttribute(lambda o: o.author.source)
    external_id = factory.Sequence(lambda n: f"post-{n}")
    text = factory.Faker("sentence")
    created_at = factory.LazyFunction(timezone.now)
    journey = factory.LazyFunction(list)


class ReportFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Report

    post = factory.SubFactory(PostFactory)
    reporter_id = factory.Sequence(lambda n: f"reporter-{n}")
    reason = "spam"


class ReasonCodeFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = ReasonCode
        django_get_or_create = ("code",)

    code = factory.Sequence(lambda n: f"reason-{n}")
    label = factory.LazyAttribute(lambda o: o.code.replace("-", " ").title())
    applies_to = Label.SPAM


class DecisionFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Decision

    post = factory.SubFactory(PostFactory)
    moderator = factory.SubFactory(UserFactory)
    label = Label.SPAM
    reason_code = "spam"


class ScoreFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Score

    post = factory.SubFactory(PostFactory)
    # As scoring stores them: the versions Triton reports per model, and their sorted model_set.
    model_set = "behaviour_model:1,fusion_model:1,link_model:1,spam_pipeline:1,text_classifier:1,tokenizer:1"
    text_score = 0.5
    link_score = 0.5
    behaviour_score = 0.5
    final_score = 0.5
    action = Action.QUEUE
    model_versions = factory.LazyFunction(
        lambda: {
            "tokenizer": "1",
            "text_classifier": "1",
            "link_model": "1",
            "behaviour_model": "1",
            "fusion_model": "1",
            "spam_pipeline": "1",
        }
    )


class AuditLogFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = AuditLog

    action = "test.action"
    target_type = "post"
    target_id = "1"
