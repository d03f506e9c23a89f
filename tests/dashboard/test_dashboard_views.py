from __future__ import annotations

import csv
import io

import pytest
from django.test import Client
from django.urls import reverse

from moderation.models import AuditLog, BulkAction, Decision, PostStatus
from moderation.services.bulk import bulk_decide
from moderation.services.campaigns import campaigns_members_add
from moderation.services.decisions import decision_record
from tests.dashboard.dashboard_factories import AuthorFactory, PostFactory, ReportFactory, ScoreFactory, UserFactory
from tests.dashboard.dashboard_fixtures import *  # noqa: F403
from tests.dashboard.dashboard_fixtures import client_for

pytestmark = pytest.mark.django_db

ROLES = ["anonymous", "norole", "analyst", "moderator", "admin"]


@pytest.fixture
def users(db):
    return {
        "anonymous": None,
        "norole": UserFactory(username="u-norole"),
        "analyst": UserFactory(username="u-analyst", role="analyst"),
        "moderator": UserFactory(username="u-mod", role="moderator"),
        "admin": UserFactory(username="u-admin", role="admin"),
    }


@pytest.fixture
def world(db):
    post = PostFactory(final_score=0.9)
    ScoreFactory(post=post)
    campaigns_members_add(source_id=post.source_id, groups=[(None, [post.pk])], now=post.received_at)
    post.refresh_from_db()
    other = UserFactory(username="u-other", role="moderator")
    bulk_post = PostFactory()
    bulk = bulk_decide(moderator=other, label="spam", post_ids=[bulk_post.pk])
    decision = decision_record(post=PostFactory(), moderator=other, label="spam")
    return {"post": post, "bulk": bulk, "decision": decision}


def _urls(world):
    p = world["post"]
    return {
        "queue": ("get", reverse("dashboard:queue"), {}),
        "focus": ("get", reverse("dashboard:focus"), {}),
        "detail": ("get", reverse("dashboard:post_detail", args=[p.pk]), {}),
        "decide": ("post", reverse("dashboard:decide", args=[p.pk]), {"label": "spam", "reason_code": "scam"}),
        "claim": ("post", reverse("dashboard:claim", args=[p.pk]), {}),
        "release": ("post", reverse("dashboard:release", args=[p.pk]), {}),
        "bulk": ("post", reverse("dashboard:bulk"), {"post_ids": [p.pk], "label": "ham"}),
        "undo": ("post", reverse("dashboard:bulk_undo", args=[world["bulk"].pk]), {}),
        "decision_undo": ("post", reverse("dashboard:decision_undo", args=[world["decision"].pk]), {}),
        "cluster_get": ("get", reverse("dashboard:cluster", args=["author", p.author_id]), {}),
        "cluster_post": (
            "post",
            reverse("dashboard:cluster", args=["author", p.author_id]),
            {"confirm": "1", "label": "spam", "reason_code": "scam"},
        ),
        "block_domain": (
            "post",
            reverse("dashboard:enforce", args=["domain", p.link.domain_id, "block"]),
            {"reason_code": "phishing"},
        ),
        "block_ip": ("post", reverse("dashboard:enforce", args=["ip", p.ip_id, "block"]), {"reason_code": "scam"}),
        "suspend": (
            "post",
            reverse("dashboard:enforce", args=["author", p.author_id, "suspend"]),
            {"reason_code": "bot-activity"},
        ),
        "enforce_form": ("get", reverse("dashboard:enforce", args=["author", p.author_id, "suspend"]), {}),
        "author_page": ("get", reverse("dashboard:author", args=[p.author_id]), {}),
        "campaign_page": ("get", reverse("dashboard:campaign", args=[p.campaign_id]), {}),
        "campaign_cluster_get": ("get", reverse("dashboard:cluster", args=["campaign", p.campaign_id]), {}),
        "audit": ("get", reverse("dashboard:audit"), {}),
        "audit_csv": ("get", reverse("dashboard:audit_csv"), {}),
        "metrics": ("get", reverse("dashboard:metrics"), {}),
    }


MODERATION_VIEWS = [
    "focus",
    "detail",
    "decide",
    "claim",
    "release",
    "bulk",
    "undo",
    "decision_undo",
    "cluster_get",
    "cluster_post",
    "block_domain",
    "block_ip",
    "suspend",
    "enforce_form",
    "author_page",
    "campaign_page",
    "campaign_cluster_get",
]
READ_VIEWS = ["audit", "audit_csv", "metrics"]

# Expected outcome per view and role: "ok" (2xx/3xx that is not the login page), 403, "login".
MATRIX = {
    **{
        v: {"anonymous": "login", "norole": 403, "analyst": 403, "moderator": "ok", "admin": "ok"}
        for v in MODERATION_VIEWS
    },
    **{v: {"anonymous": "login", "norole": 403, "analyst": "ok", "moderator": "ok", "admin": "ok"} for v in READ_VIEWS},
    # Analysts landing on / are sent to the metrics page.
    "queue": {"anonymous": "login", "norole": 403, "analyst": "metrics", "moderator": "ok", "admin": "ok"},
}


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("view", sorted(MATRIX))
def test_permission_matrix(view, role, users, world, monkeypatch):
    if view == "undo" and role == "moderator":
        # Only the bulk action's own moderator (or an admin) may undo: a peer is refused politely.
        pass
    method, url, data = _urls(world)[view]
    client = client_for(users[role])
    response = getattr(client, method)(url, data)
    expected = MATRIX[view][role]
    if expected == "login":
        assert response.status_code == 302
        assert response["Location"].startswith(reverse("login"))
    elif expected == 403:
        assert response.status_code == 403
    elif expected == "metrics":
        assert response.status_code == 302 and response["Location"] == reverse("dashboard:metrics")
    else:
        assert response.status_code in (200, 302), response.status_code
        if response.status_code == 302:
            assert not response["Location"].startswith(reverse("login"))


def test_undo_only_by_owner_or_admin(users, world):
    bulk = world["bulk"]
    url = reverse("dashboard:bulk_undo", args=[bulk.pk])
    client_for(users["moderator"]).post(url)
    bulk.refresh_from_db()
    assert bulk.undone_at is None  # a peer moderator cannot undo someone else's bulk action
    client_for(users["admin"]).post(url)
    bulk.refresh_from_db()
    assert bulk.undone_at is not None


@pytest.mark.parametrize(
    "name,args",
    [
        ("dashboard:decide", "post"),
        ("dashboard:bulk", None),
        ("dashboard:release", "post"),
        ("dashboard:enforce", "block"),
        ("dashboard:decision_undo", "decision"),
        ("logout", None),
    ],
)
def test_forms_require_csrf(name, args, moderator, world):
    client = Client(enforce_csrf_checks=True)
    client.force_login(moderator)
    post = world["post"]
    if args == "post":
        url = reverse(name, args=[post.pk])
    elif args == "block":
        url = reverse(name, args=["domain", post.link.domain_id, "block"])
    elif args == "decision":
        url = reverse(name, args=[world["decision"].pk])
    else:
        url = reverse(name)
    response = client.post(url, {"label": "spam"})
    assert response.status_code == 403
    assert not Decision.objects.filter(post=post).exists()
    world["decision"].refresh_from_db()
    assert world["decision"].undone_at is None


def test_decision_form_posts_with_csrf_token(moderator, world):
    client = Client(enforce_csrf_checks=True)
    client.force_login(moderator)
    post = world["post"]
    page = client.get(reverse("dashboard:post_detail", args=[post.pk]))
    token = page.context["csrf_token"]
    response = client.post(
        reverse("dashboard:decide", args=[post.pk]),
        {"label": "spam", "reason_code": "phishing", "note": "kit", "csrfmiddlewaretoken": str(token)},
    )
    assert response.status_code == 302
    post.refresh_from_db()
    assert post.status == PostStatus.REMOVED
    assert Decision.objects.get(post=post).reason_code == "phishing"


def test_queue_sorted_by_risk_and_paginated_by_keyset(mod_client, settings):
    low = PostFactory(final_score=0.2)
    top = PostFactory(final_score=0.95)
    reported = PostFactory(final_score=0.6, report_count=3)
    unreported = PostFactory(final_score=0.6)
    PostFactory(final_score=0.99, status=PostStatus.REMOVED)  # not pending
    from dashboard.selectors.queue import QueueFilters, queue_page

    page = queue_page(filters=QueueFilters(sort="score"), page_size=2)
    assert [r.post for r in page.rows] == [top, reported]
    page2 = queue_page(filters=QueueFilters(sort="score"), cursor=page.next_cursor, page_size=2)
    assert [r.post for r in page2.rows] == [unreported, low]
    assert page2.next_cursor is None
    html = mod_client.get(reverse("dashboard:queue"), {"sort": "score"}).content.decode()
    assert html.index(f'data-post-id="{top.pk}"') < html.index(f'data-post-id="{low.pk}"')


def test_queue_filters(mod_client):
    author = AuthorFactory(username="spammy")
    hit = PostFactory(author=author, text="Cheap watches here", final_score=0.7, report_count=1)
    miss = PostFactory(text="hello friends", final_score=0.3)
    assert hit.link is not None and hit.ip is not None
    cases = [
        {"q": "watches"},
        {"author": "spammy"},
        {"domain": hit.link.domain.name},
        {"score_min": "0.5"},
        {"has_reports": "1"},
        {"ip": hit.ip.address},
        {"source": hit.source.slug},
    ]
    for params in cases:
        html = mod_client.get(reverse("dashboard:queue"), params).content.decode()
        assert f'data-post-id="{hit.pk}"' in html, params
        assert f'data-post-id="{miss.pk}"' not in html, params


def test_queue_query_count_is_bounded(mod_client, django_assert_num_queries):
    for _ in range(3):
        ScoreFactory(post=PostFactory())
    # session, user, groups, page of posts (joined), latest scores, policy, reason codes, sources,
    # the three tab counts (queue, reported, spot checks), the specialist queues and the moderators
    # (the assignment choices)
    with django_assert_num_queries(13):
        assert mod_client.get(reverse("dashboard:queue")).status_code == 200
    for _ in range(20):
        p = PostFactory(report_count=1)
        ScoreFactory(post=p)
        ReportFactory(post=p)
    # ... and the report reasons of the page, once rows have reports
    with django_assert_num_queries(14):
        assert mod_client.get(reverse("dashboard:queue")).status_code == 200


def test_detail_query_count_is_bounded(mod_client, moderator, django_assert_num_queries):
    author = AuthorFactory()
    post = PostFactory(author=author)
    ScoreFactory(post=post)
    ReportFactory(post=post)  # reports (and their reporters' records) are read from the first one

    def grow():
        for _ in range(5):
            sib = PostFactory(author=author, ip=post.ip, link=post.link)
            ReportFactory(post=post)
            bulk_decide(moderator=moderator, label="spam", post_ids=[sib.pk])

    mod_client.get(reverse("dashboard:post_detail", args=[post.pk]))
    # 16th: whether the post is hidden pending review; then its notes, the moderators and the
    # specialist queues (the assignment choices)
    with django_assert_num_queries(19) as ctx:
        mod_client.get(reverse("dashboard:post_detail", args=[post.pk]))
    first = len(ctx.captured_queries)
    grow()
    with django_assert_num_queries(first):
        response = mod_client.get(reverse("dashboard:post_detail", args=[post.pk]))
    assert response.status_code == 200


def test_detail_shows_evidence_and_claims(mod_client, moderator):
    post = PostFactory(text="Win a free phone", final_score=0.91)
    ScoreFactory(post=post)
    ReportFactory(post=post, reason="scam")
    html = mod_client.get(reverse("dashboard:post_detail", args=[post.pk])).content.decode()
    assert "Win a free phone" in html
    assert "url_age" in html and "Behaviour" in html  # contributions and sub-scores
    # The fused decision's explanation first, then the angles it fuses, whatever the stored order.
    shown = [html.index(f'id="contrib-{model}"') for model in ("fusion_model", "link_model", "behaviour_model")]
    assert shown == sorted(shown)
    assert "scam" in html
    post.refresh_from_db()
    assert post.claimed_by is None  # reading claims nothing
    # The Claim button does; another moderator still sees the post, marked with the claim.
    mod_client.post(reverse("dashboard:claim", args=[post.pk]))
    post.refresh_from_db()
    assert post.claimed_by == moderator
    other = client_for(UserFactory(username="peer", role="moderator"))
    queue_html = other.get(reverse("dashboard:queue")).content.decode()
    assert f'data-post-id="{post.pk}"' in queue_html
    assert 'data-claimed-by="mod">claimed by mod until ' in queue_html
    detail_html = other.get(reverse("dashboard:post_detail", args=[post.pk])).content.decode()
    assert 'data-claimed-by="mod"' in detail_html and "data-claim>" not in detail_html
    # Focus mode claims the post it serves.
    post2 = PostFactory(final_score=0.5)
    other.get(reverse("dashboard:post_detail", args=[post2.pk]) + "?focus=1")
    post2.refresh_from_db()
    assert post2.claimed_by is not None and post2.claimed_by.username == "peer"


def test_queue_and_appeal_tabs_show_counts(mod_client, moderator):
    PostFactory()
    reported = PostFactory(report_count=1)
    ReportFactory(post=reported)
    html = mod_client.get(reverse("dashboard:queue")).content.decode()
    assert 'data-tab-count="queue">2<' in html and 'data-tab-count="reported">1<' in html
    html = mod_client.get(reverse("dashboard:appeals")).content.decode()
    assert 'data-tab-count="pending">0<' in html and 'data-tab-count="overturned">0<' in html


def test_quick_decide_json(mod_client):
    post = PostFactory()
    response = mod_client.post(
        reverse("dashboard:decide", args=[post.pk]), {"label": "ham", "quick": "1"}, HTTP_ACCEPT="application/json"
    )
    assert response.status_code == 200
    assert response.json()["status"] == PostStatus.APPROVED


def test_focus_mode_walks_the_queue(mod_client):
    first = PostFactory(final_score=0.9)
    second = PostFactory(final_score=0.8)
    response = mod_client.get(reverse("dashboard:focus"))
    assert response["Location"].startswith(reverse("dashboard:post_detail", args=[first.pk]))
    response = mod_client.post(
        reverse("dashboard:decide", args=[first.pk]), {"label": "spam", "reason_code": "scam", "focus": "1"}
    )
    assert response["Location"].startswith(reverse("dashboard:focus"))
    response = mod_client.get(response["Location"])
    assert response["Location"].startswith(reverse("dashboard:post_detail", args=[second.pk]))
    # Skip: the next call serves nothing else, so the skipped one comes back after a full pass.
    response = mod_client.post(reverse("dashboard:release", args=[second.pk]), {"focus": "1"})
    assert mod_client.get(response["Location"])["Location"].startswith(
        reverse("dashboard:post_detail", args=[second.pk])
    )


def test_cluster_preview_and_confirm(mod_client):
    author = AuthorFactory()
    for _ in range(4):
        PostFactory(author=author)
    url = reverse("dashboard:cluster", args=["author", author.pk])
    response = mod_client.get(url)
    assert response.context["count"] == 4
    assert mod_client.post(url, {"label": "spam", "reason_code": "scam"}).status_code == 400  # no confirmation
    mod_client.post(url, {"label": "spam", "reason_code": "scam", "confirm": "1"})
    bulk = BulkAction.objects.get()
    assert bulk.scope == {"cluster": "author", "id": author.pk}
    assert len(bulk.previous_statuses) == 4


def test_audit_filter_and_csv(mod_client, moderator):
    post = PostFactory()
    assert post.link is not None
    mod_client.post(reverse("dashboard:decide", args=[post.pk]), {"label": "spam", "reason_code": "scam"})
    mod_client.post(
        reverse("dashboard:enforce", args=["domain", post.link.domain_id, "block"]), {"reason_code": "scam"}
    )
    page = mod_client.get(reverse("dashboard:audit"), {"action": "domain."}).content.decode()
    assert 'data-audit-action="domain.block"' in page and 'data-audit-action="post.decide"' not in page
    response = mod_client.get(reverse("dashboard:audit_csv"))
    rows = list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert rows[0][:4] == ["id", "created_at", "actor", "action"]
    assert {r[3] for r in rows[1:]} == {"post.decide", "domain.block"}
    assert all(r[2] == moderator.username for r in rows[1:])
    assert AuditLog.objects.count() == 2


def test_text_search_window_and_fallback_give_the_same_order(settings):
    from dashboard.selectors import queue as q

    common = [PostFactory(text=f"cheap watches {i}", final_score=0.9 - i / 100) for i in range(6)]
    PostFactory(text="unrelated", final_score=0.95)
    rare = PostFactory(text="a rare needle", final_score=0.1)
    f = q.QueueFilters(q="watches")
    page = q.queue_page(filters=f, page_size=2)  # window path: a full page within the window
    assert [r.post for r in page.rows] == common[:2]
    page2 = q.queue_page(filters=f, page_size=2, cursor=page.next_cursor)
    assert [r.post for r in page2.rows] == common[2:4]
    old = q.TEXT_WINDOW
    q.TEXT_WINDOW = 1  # force the trigram fallback
    try:
        assert [r.post for r in q.queue_page(filters=f, page_size=2).rows] == common[:2]
        assert [r.post for r in q.queue_page(filters=q.QueueFilters(q="needle")).rows] == [rare]
    finally:
        q.TEXT_WINDOW = old


def test_load_more_returns_rows_partial_for_htmx(mod_client, settings):
    from dashboard.selectors import queue as q

    posts = [PostFactory(final_score=0.9 - i / 100) for i in range(3)]
    first = q.queue_page(filters=q.QueueFilters(), page_size=2)
    response = mod_client.get(reverse("dashboard:queue"), {"cursor": first.next_cursor}, HTTP_HX_REQUEST="true")
    html = response.content.decode()
    assert "<html" not in html and "<tr" in html
    assert f'data-post-id="{posts[2].pk}"' in html and f'data-post-id="{posts[0].pk}"' not in html


def test_bad_cursor_is_ignored(mod_client):
    post = PostFactory()
    response = mod_client.get(reverse("dashboard:queue"), {"cursor": "not-a-cursor"})
    assert response.status_code == 200 and f'data-post-id="{post.pk}"' in response.content.decode()


def test_other_statuses_list_newest_first_with_keyset(mod_client):
    from datetime import timedelta

    from django.utils import timezone

    from dashboard.selectors import queue as q

    now = timezone.now()
    old = PostFactory(status=PostStatus.AUTO_REMOVED, final_score=0.99, received_at=now - timedelta(hours=3))
    mid = PostFactory(status=PostStatus.AUTO_REMOVED, final_score=0.91, received_at=now - timedelta(hours=2))
    new = PostFactory(status=PostStatus.AUTO_REMOVED, final_score=0.95, received_at=now - timedelta(hours=1))
    PostFactory(final_score=0.5)  # queued: not listed
    f = q.QueueFilters(status=PostStatus.AUTO_REMOVED)
    page = q.queue_page(filters=f, page_size=2)
    assert [r.post for r in page.rows] == [new, mid]
    assert [r.post for r in q.queue_page(filters=f, page_size=2, cursor=page.next_cursor).rows] == [old]
    html = mod_client.get(reverse("dashboard:queue"), {"status": "auto_removed"}).content.decode()
    assert "newest first" in html


def test_detail_and_queue_row_show_why_an_unfamiliar_post_was_queued(mod_client):
    post = PostFactory(text="Mitochondrial phosphorylation gradients", final_score=0.05)
    reason = "unfamiliar text (2.5 x the limit)"
    ScoreFactory(post=post, final_score=0.05, routing_reason=reason, features={"unfamiliarity": 2.4567})
    familiar = PostFactory(text="see you at lunch", final_score=0.5)
    ScoreFactory(post=familiar, final_score=0.5, features={"unfamiliarity": 0.31})
    html = mod_client.get(reverse("dashboard:post_detail", args=[post.pk])).content.decode()
    assert reason in html and "unfamiliarity 2.46" in html
    assert "unfamiliarity 0.31" in mod_client.get(reverse("dashboard:post_detail", args=[familiar.pk])).content.decode()
    queue = mod_client.get(reverse("dashboard:queue")).content.decode()
    assert queue.count(reason) == 1
