"""Minimal factories for the dashboard tests (until the shared tests/factories.py lands)."""

from __future__ import annotations

import hashlib
from datetime import timedelta

import factory
from django.contrib.auth.models import Group, User
from django.utils import timezone

from moderation.models import Author, Domain, IpAddress, Link, Post, PostStatus, Report, Source
from scoring.models import Action, Score


class SourceFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Source
        django_get_or_create = ("slug",)

    name = factory.Sequence(lambda n: f"Platform {n}")
    slug = factory.Sequence(lambda n: f"platform-{n}")


class AuthorFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Author

    source = factory.SubFactory(SourceFactory)
    external_id = factory.Sequence(lambda n: f"user-{n}")
    username = factory.Sequence(lambda n: f"user{n}")
    account_created_at = factory.LazyFunction(lambda: timezone.now() - timedelta(days=30))
    email_domain = "example.org"


class DomainFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Domain
        django_get_or_create = ("name",)

    name = factory.Sequence(lambda n: f"site{n}.example")


class LinkFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Link

    domain = factory.SubFactory(DomainFactory)
    host = factory.LazyAttribute(lambda o: o.domain.name)
    url = factory.Sequence(lambda n: f"https://site.example/p/{n}")
    url_hash = factory.LazyAttribute(lambda o: hashlib.sha256(o.url.encode()).hexdigest())


class IpFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = IpAddress

    address = factory.Sequence(lambda n: f"10.{n // 65536 % 256}.{n // 256 % 256}.{n % 256}")


class PostFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Post

    source = factory.LazyAttribute(lambda o: o.author.source)
    author = factory.SubFactory(AuthorFactory)
    external_id = factory.Sequence(lambda n: f"post-{n}")
    text = factory.Sequence(lambda n: f"Post number {n}: buy cheap things now")
    link = factory.SubFactory(LinkFactory)
    url = factory.LazyAttribute(lambda o: o.link.url if o.link else "")
    ip = factory.SubFactory(IpFactory)
    created_at = factory.LazyFunction(timezone.now)
    received_at = factory.LazyFunction(timezone.now)
    status = PostStatus.QUEUED
    final_score = 0.5
    model_version = "text:1,link:1,behaviour:1,fusion:1"


class ReportFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Report

    post = factory.SubFactory(PostFactory)
    reporter_id = factory.Sequence(lambda n: f"reporter-{n}")
    reason = "spam"


class ScoreFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Score

    post = factory.SubFactory(PostFactory)
    model_set = "text:1,link:1,behaviour:1,fusion:1"
    text_score = 0.7
    link_score = 0.4
    behaviour_score = 0.6
    final_score = factory.LazyAttribute(lambda o: o.post.final_score if o.post.final_score is not None else 0.5)
    action = Action.QUEUE
    latency_ms = 12.5
    contributions = factory.LazyFunction(
        lambda: {
            "link": {"url_age": 0.8, "domain_report_count": 0.3, "url_tld": -0.2, "bias": 0.1},
            "behaviour": {"user_age": 0.5, "journey_speed": 0.4, "user_followers": -0.3},
        }
    )


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = User
        django_get_or_create = ("username",)
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"staff{n}")
    password = factory.PostGenerationMethodCall("set_password", "pw-for-tests-123")

    @factory.post_generation
    def role(self, create: bool, extracted: str | None, **kwargs: object) -> None:
        if create and extracted:
            self.groups.add(Group.objects.get(name=extracted))
        if create:
            self.save()
