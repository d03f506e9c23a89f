"""Shared factory_boy factories. Everyone imports these; keep them minimal and valid.

from tests.factories import PostFactory, SourceFactory, create_api_key
source = SourceFactory()
raw_key = create_api_key(source)          # the plaintext key for Authorization: Api-Key <raw>
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from datetime import timedelta
from typing import TYPE_CHECKING, Any, TypeVar

import factory
from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.db import models
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

ModelT = TypeVar("ModelT", bound=models.Model)


class ModelFactory(factory.django.DjangoModelFactory[ModelT]):
    """A DjangoModelFactory whose call is typed: ``PostFactory()`` is a ``Post``.

    factory_boy types ``create``/``build``/``create_batch`` by the model, but calling the
    factory class goes through its untyped metaclass ``__call__``, which mypy cannot see, so it
    would type ``PostFactory()`` as a PostFactory. The ``__new__`` below exists for mypy only.

    A declaration that a subclass replaces with another kind (a Sequence for a LazyAttribute,
    say) is annotated with the kind they share, so that mypy accepts the override.
    """

    class Meta:
        abstract = True

    if TYPE_CHECKING:
        # mypy wants __new__ to return an instance of the class; the metaclass really returns
        # the model instance (create strategy), which is what this declares.
        def __new__(cls, *args: Any, **kwargs: Any) -> ModelT: ...  # type: ignore[misc]


class UserFactory(ModelFactory[User]):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)

    username = factory.Sequence(lambda n: f"user{n}")
    email = factory.LazyAttribute(lambda o: f"{o.username}@example.org")
    password = factory.django.Password("password")
    is_staff = False


class SourceFactory(ModelFactory[Source]):
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


class AuthorFactory(ModelFactory[Author]):
    class Meta:
        model = Author

    source = factory.SubFactory(SourceFactory)
    external_id = factory.Sequence(lambda n: f"author-{n}")
    username: factory.declarations.BaseDeclaration = factory.LazyAttribute(lambda o: o.external_id)
    account_created_at = factory.LazyFunction(lambda: timezone.now() - timedelta(days=400))
    email_domain = "example.org"
    friends_count = 10
    followers_count = 20
    platform_post_count = 5


class DomainFactory(ModelFactory[Domain]):
    class Meta:
        model = Domain
        django_get_or_create = ("name",)

    name = factory.Sequence(lambda n: f"site{n}.example.com")


class LinkFactory(ModelFactory[Link]):
    class Meta:
        model = Link

    domain = factory.SubFactory(DomainFactory)
    host = factory.LazyAttribute(lambda o: o.domain.name)
    url = factory.Sequence(lambda n: f"https://page.example.com/{n}")
    url_hash = factory.LazyAttribute(lambda o: hashlib.sha256(o.url.encode()).hexdigest())


class IpAddressFactory(ModelFactory[IpAddress]):
    class Meta:
        model = IpAddress
        django_get_or_create = ("address",)

    address = factory.Sequence(lambda n: f"198.51.{(n // 250) % 250}.{n % 250 + 1}")


class PostFactory(ModelFactory[Post]):
    class Meta:
        model = Post

    author = factory.SubFactory(AuthorFactory)
    source = factory.LazyAttribute(lambda o: o.author.source)
    external_id = factory.Sequence(lambda n: f"post-{n}")
    text: factory.declarations.BaseDeclaration = factory.Faker("sentence")
    created_at = factory.LazyFunction(timezone.now)
    journey = factory.LazyFunction(list)


class ReportFactory(ModelFactory[Report]):
    class Meta:
        model = Report

    post = factory.SubFactory(PostFactory)
    reporter_id = factory.Sequence(lambda n: f"reporter-{n}")
    reason = "spam"


class ReasonCodeFactory(ModelFactory[ReasonCode]):
    class Meta:
        model = ReasonCode
        django_get_or_create = ("code",)

    code = factory.Sequence(lambda n: f"reason-{n}")
    label = factory.LazyAttribute(lambda o: o.code.replace("-", " ").title())
    applies_to = Label.SPAM


class DecisionFactory(ModelFactory[Decision]):
    class Meta:
        model = Decision

    post = factory.SubFactory(PostFactory)
    moderator = factory.SubFactory(UserFactory)
    label = Label.SPAM
    reason_code = "spam"


class ScoreFactory(ModelFactory[Score]):
    class Meta:
        model = Score

    post = factory.SubFactory(PostFactory)
    # As scoring stores them: the versions Triton reports per model, and their sorted model_set.
    model_set = "behaviour_model:1,fusion_model:1,link_model:1,spam_pipeline:1,text_classifier:1,tokenizer:1"
    text_score = 0.5
    link_score = 0.5
    behaviour_score = 0.5
    final_score: float | factory.declarations.BaseDeclaration = 0.5
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


class AuditLogFactory(ModelFactory[AuditLog]):
    class Meta:
        model = AuditLog

    action = "test.action"
    target_type = "post"
    target_id = "1"
