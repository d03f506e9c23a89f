"""A tenancy matrix generated from the URL conf: source A's API key (every scope) is sent at
every API endpoint and method, aimed at source B's data (B's post and author ids in the path,
B's post in report bodies, B's domain and IP in block requests). After all of it:

- B's posts, authors, reports, blocks, scores and webhook deliveries are exactly as before, and
  the global block lists are untouched;
- no response A received carries any of B's content (texts, reasons, usernames, webhook URL);
- A's blocks of B's domain and IP do not change the scoring decision on B's posts (scored for
  real, on these rows), while they do decide A's own post with the same link (the control);
- A's traffic through the link and IP B uses (spam posts, spam decisions, reports from new
  reporter ids) changes none of B's features as the real extraction computes them, nor the
  vectors scoring sends to the models for B's post.

A new API route or method must be given a body here (BODIES) or the matrix fails, so the
matrix cannot silently skip it."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.db import models
from rest_framework.test import APIClient

from contracts.feature_schema import BEHAVIOUR_FEATURES, LINK_FEATURES, vector
from moderation.models import (
    Appeal,
    Author,
    BlockKind,
    Domain,
    IpAddress,
    ListStatus,
    Note,
    Post,
    PostStatus,
    Report,
    Source,
    SourceBlock,
    StatementOfReasons,
    Strike,
)
from moderation.services.blocklists import source_block_add
from moderation.services.decisions import decision_record
from moderation.services.enforcement import EnforcementReason
from moderation.services.notes import note_create
from moderation.services.strikes import author_warn
from scoring.features.extract import features_for_posts, posts_with_features
from scoring.models import Score, WebhookDelivery
from scoring.services.scoring import score_posts
from scoring.services.shortcircuit import SHORT_CIRCUIT_MODEL_SET
from tests.dashboard.dashboard_factories import UserFactory as DashboardUserFactory
from tests.factories import ScoreFactory, UserFactory, create_api_key
from tests.moderation.api_helpers import post_payload
from tests.scoring.pipeline_support import FakeClient, make_author, make_ip, make_link, make_post
from tests.test_security_matrix import API, METHODS, Route

pytestmark = pytest.mark.django_db

B_POST, B_FRESH, B_AUTHOR = "tenant-b-post", "tenant-b-fresh", "tenant-b-author"
B_DECIDED = "tenant-b-decided"  # removed automatically: appealable, by B only
B_OTHER_AUTHOR = "tenant-b-other-author"  # A never posts as this one: its erasure must 404
B_DOMAIN, B_IP = "tenant-b-shop.com", "198.51.100.77"
B_BLOCKED_DOMAIN = "tenant-b-blocked.example"
# B's content: A never sends any of it, so none of it may come back to A.
B_SECRETS = (
    "tenant-b-text",
    "tenant-b-username",
    "tenant-b-reason",
    "tenant-b-details",
    "tenant-b-hook",
    "tenant-b-secret",
    "tenant-b-note",
    B_BLOCKED_DOMAIN,
)
# Path parameters filled with B's identifiers.
PATH_VALUES = {"external_id": B_POST, "name": B_BLOCKED_DOMAIN, "address": B_IP}
PATH_OVERRIDES = {"api-author": {"external_id": B_AUTHOR}}
# Database ids of B's rows, filled when tenant B is made: a decision and its statement of reasons.
B_IDS: dict[str, str] = {}


def _b_aimed_post() -> dict[str, Any]:
    payload = post_payload(B_POST, url=f"https://www.{B_DOMAIN}/deal", ip=B_IP, text="a's own words")
    payload["author"]["external_id"] = B_AUTHOR
    return payload


# Bodies per (route name, method): each aims at B's data.
BODIES: dict[tuple[str, str], Any] = {
    ("api-posts", "post"): _b_aimed_post,
    ("api-posts-batch", "post"): lambda: {"posts": [_b_aimed_post()]},
    ("api-reports", "post"): lambda: {"post_external_id": B_POST, "reporter_id": "a-reporter", "reason": "spam"},
    ("api-appeals", "post"): lambda: {"post_external_id": B_DECIDED, "statement": "a's appeal"},
    ("api-erasures", "post"): lambda: {"author_external_id": B_OTHER_AUTHOR},
    ("api-author", "put"): lambda: {"username": "hijacked", "verified": True, "spam_report_count": 99},
    ("api-blocklist-domains", "post"): lambda: {"domain": B_DOMAIN, "reason": "a's block"},
    ("api-blocklist-ips", "post"): lambda: {"address": B_IP, "reason": "a's block"},
    ("api-notes", "post"): lambda: {"post_external_id": B_DECIDED, "text": "a's note on b's post"},
}
BODYLESS = {"get", "delete"}
# Query strings of GETs that take one, aimed at tenant B.
QUERIES: dict[tuple[str, str], Any] = {
    ("api-sanctions", "get"): lambda: {"author_external_id": B_AUTHOR},
    ("api-notes", "get"): lambda: {"author_external_id": B_AUTHOR},
}


def _served_methods(route: Route) -> list[str]:
    return [m for m in METHODS if hasattr(route.callback.view_class, m)]


def _path(route: Route) -> str:
    values = {**PATH_VALUES, **B_IDS, **PATH_OVERRIDES.get(route.name or "", {})}

    def fill(match: re.Match[str]) -> str:
        return values[match.group(2)]

    return "/" + re.sub(r"<(?:(\w+):)?(\w+)>", fill, route.route)


def _rows(queryset: models.QuerySet[Any]) -> list[dict[str, Any]]:
    return [dict(row) for row in queryset.order_by("pk").values()]


def _snapshot(source: Source) -> dict[str, Any]:
    return {
        "posts": _rows(Post.objects.filter(source=source)),
        "authors": _rows(Author.objects.filter(source=source)),
        "reports": _rows(Report.objects.filter(post__source=source)),
        "blocks": _rows(SourceBlock.objects.filter(source=source)),
        "scores": _rows(Score.objects.filter(post__source=source)),
        "webhooks": _rows(WebhookDelivery.objects.filter(source=source)),
        "appeals": _rows(Appeal.objects.filter(source=source)),
        "statements": _rows(StatementOfReasons.objects.filter(source=source)),
        "strikes": _rows(Strike.objects.filter(source=source)),
        "notes": _rows(Note.objects.filter(author__source=source)),
        "source": _rows(Source.objects.filter(pk=source.pk)),
        "global_domains": _rows(Domain.objects.filter(status=ListStatus.BLOCK)),
        "global_ips": _rows(IpAddress.objects.filter(status=ListStatus.BLOCK)),
    }


def _tenant_b() -> Source:
    source = Source.objects.create(
        name="Tenant B",
        slug="tenant-b",
        callback_url="https://tenant-b-hook.example/decisions",
        webhook_secret="tenant-b-secret",
    )
    author = make_author(source, external_id=B_AUTHOR, username="tenant-b-username")
    link, ip = make_link(f"https://{B_DOMAIN}/deal", domain=B_DOMAIN), make_ip(B_IP)
    post = make_post(
        source=source, author=author, link=link, ip=ip, external_id=B_POST, text="tenant-b-text", status="queued"
    )
    make_post(source=source, author=author, link=link, ip=ip, external_id=B_FRESH, text="tenant-b-text again")
    make_post(source=source, author=author, external_id=B_DECIDED, text="tenant-b-text gone", status="auto_removed")
    other = make_author(source, external_id=B_OTHER_AUTHOR, username="tenant-b-username other")
    make_post(source=source, author=other, external_id="tenant-b-other-post", text="tenant-b-text other")
    Report.objects.create(post=post, reporter_id="b-reporter", reason="spam", details="tenant-b-details")
    ScoreFactory(post=post)
    WebhookDelivery.objects.create(
        source=source, post=post, event_id="evt_tenant_b", event_type="post.decision", payload={}
    )
    removed = make_post(source=source, author=other, external_id="tenant-b-removed", text="tenant-b-text removed")
    decision = decision_record(
        post=removed,
        moderator=DashboardUserFactory(username="b-mod", role="moderator"),
        label="spam",
        note="tenant-b-reason",
    )
    B_IDS.update(decision_id=str(decision.pk), statement_id=str(decision.statement.pk))
    author_warn(author=author, actor=decision.moderator, reason=EnforcementReason("scam", "tenant-b-reason"))
    note_create(text="tenant-b-note on the author", writer=decision.moderator, author=author)
    note_create(text="tenant-b-note on the post", writer=None, post=post, via="api:tenant-b")
    source_block_add(source=source, kind=BlockKind.DOMAIN, value=B_BLOCKED_DOMAIN, reason="tenant-b-reason")
    source_block_add(source=source, kind=BlockKind.IP, value="198.51.100.78", reason="tenant-b-reason")
    return source


def test_every_api_method_has_an_attack_in_the_matrix() -> None:
    missing = [
        f"{m.upper()} {r.route}"
        for r in API
        for m in _served_methods(r)
        if m not in BODYLESS and (r.name, m) not in BODIES
    ]
    assert missing == [], f"give these a body aimed at tenant B in BODIES: {missing}"


def test_no_source_reads_changes_or_affects_another_sources_data() -> None:
    tenant_b = _tenant_b()
    before = _snapshot(tenant_b)
    tenant_a = Source.objects.create(name="Tenant A", slug="tenant-a")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Api-Key {create_api_key(tenant_a)}")

    sent = 0
    for route in API:
        for method in _served_methods(route):
            key = (route.name or "", method)
            body = BODIES[key]() if method not in BODYLESS else QUERIES.get(key, lambda: None)()
            response = getattr(client, method)(_path(route), body, format="json")
            sent += 1
            assert response.status_code < 500, f"{method.upper()} {_path(route)} -> {response.status_code}"
            text = response.content.decode(errors="replace")
            leaked = [secret for secret in B_SECRETS if secret in text]
            assert leaked == [], f"{method.upper()} {_path(route)} showed tenant B's {leaked}"
            if method == "get" and route.name == "api-sanctions":
                # 404, or A's own author of that external_id (A posted as one above): no strikes of B's.
                assert response.status_code == 404 or response.json()["strikes"] == []
            if method == "get" and route.name == "api-notes":
                # 404, or the notes of A's own author of that external_id: none of B's.
                assert response.status_code == 404 or response.json()["results"] == []
            if method == "get" and route.name == "api-post-detail":
                # 404, or A's own post of that external_id (A sent one above), never B's.
                b_ids = set(Post.objects.filter(source=tenant_b).values_list("pk", flat=True))
                assert response.status_code == 404 or response.json()["id"] not in b_ids
    assert sent >= 9, "the matrix sent fewer requests than the API has methods"

    # A's attempts landed in A's own rows (its post, author and blocks), never in B's. (A's
    # DELETE of B's IP lifted A's own block of it: the matrix sends the POST first.)
    assert Post.objects.filter(source=tenant_a, external_id=B_POST).exists()
    assert Author.objects.filter(source=tenant_a, external_id=B_AUTHOR).exists()
    assert SourceBlock.objects.filter(source=tenant_a, value=B_DOMAIN).exists()
    assert _snapshot(tenant_b) == before
    assert client.post("/api/v1/blocklist/ips", {"address": B_IP, "reason": "again"}, format="json").status_code == 201

    # The scoring decision: B's waiting post shares the link and IP A just blocked, and is
    # decided by the model; A's own post with that link is removed by A's block.
    a_post = Post.objects.get(source=tenant_a, external_id=B_POST)
    b_fresh = Post.objects.get(source=tenant_b, external_id=B_FRESH)
    assert a_post.link is not None and b_fresh.link is not None
    assert a_post.link.domain.name == B_DOMAIN and b_fresh.link.domain.name == B_DOMAIN
    client_model = FakeClient()
    results = {r.post_id: r for r in score_posts(post_ids=[a_post.pk, b_fresh.pk], client=client_model)}
    assert [len(call) for call in client_model.calls] == [1]  # only B's post reached the model
    assert Score.objects.get(post=a_post).model_set == SHORT_CIRCUIT_MODEL_SET
    assert Score.objects.get(post=b_fresh).model_set != SHORT_CIRCUIT_MODEL_SET
    assert results[b_fresh.pk].status == PostStatus.AUTO_APPROVED


def _features(post: Post) -> tuple[dict[str, float], dict[str, float]]:
    """The features of `post` as the scoring worker loads them, checked against the ORM reading."""
    (_, loaded) = posts_with_features([post.pk])[post.pk]
    assert features_for_posts([post.pk])[post.pk] == loaded
    return loaded.link, loaded.behaviour


def test_no_source_moves_another_sources_features_with_its_traffic() -> None:
    """Source A sends 30 spam posts from the IP and domain B's borderline post uses, they are
    decided spam (by the models and by a moderator), and A reports them with fresh reporter ids.
    B's features, read by the real extraction, and the vectors sent for B's post are unchanged;
    A's own features moved (the control)."""
    shared_ip, domain = "198.51.100.90", "tenancy-shop.example"
    tenant_a, tenant_b = Source.objects.create(name="A", slug="a"), Source.objects.create(name="B", slug="b")
    a, b = APIClient(), APIClient()
    a.credentials(HTTP_AUTHORIZATION=f"Api-Key {create_api_key(tenant_a)}")
    b.credentials(HTTP_AUTHORIZATION=f"Api-Key {create_api_key(tenant_b)}")
    sent = b.post(
        "/api/v1/posts",
        post_payload("b-borderline", url=f"https://{domain}/deal", ip=shared_ip, text="maybe a good deal"),
        format="json",
    )
    assert sent.status_code == 201, sent.content
    b_post = Post.objects.get(source=tenant_b, external_id="b-borderline")
    before = _features(b_post)

    for i in range(30):
        url = f"https://{domain}/deal" if i % 2 else f"https://www.{domain}/win/{i}"
        payload = post_payload(f"a-spam-{i}", url=url, ip=shared_ip, text=f"spam spam {i}")
        payload["author"]["external_id"] = f"a-author-{i % 3}"
        assert a.post("/api/v1/posts", payload, format="json").status_code == 201
    a_posts = list(Post.objects.filter(source=tenant_a).order_by("pk"))
    score_posts(post_ids=[p.pk for p in a_posts[1:]], client=FakeClient())
    decision_record(post=a_posts[0], moderator=UserFactory(), label="spam")
    for i in range(30):
        for reporter in range(3):
            body = {"post_external_id": f"a-spam-{i}", "reporter_id": f"sock-{i}-{reporter}", "reason": "spam"}
            assert a.post("/api/v1/reports", body, format="json").status_code == 201
    assert Post.objects.filter(source=tenant_a, status__in=[PostStatus.AUTO_REMOVED, PostStatus.REMOVED]).count() == 30

    assert _features(b_post) == before
    client_model = FakeClient()
    score_posts(post_ids=[b_post.pk], client=client_model)
    (call,) = client_model.calls
    (vectors,) = call
    # What the models are sent for B's post is what they would have been sent before A's traffic.
    assert vectors.link == vector(before[0], LINK_FEATURES)
    assert vectors.behaviour == vector(before[1], BEHAVIOUR_FEATURES)

    # The control: A's own counters did move, so the comparison above could fail.
    a_link, _ = _features(a_posts[-1])
    assert a_link["ip_post_count"] == 30.0 and a_link["ip_spam_rate"] == 1.0
    assert a_link["domain_spam_rate"] == 1.0 and a_link["domain_report_count"] == 90.0
