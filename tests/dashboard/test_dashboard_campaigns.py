"""The campaign in the queue row, the campaign page, and deciding a campaign with preview and
undo."""

from __future__ import annotations

from collections import Counter

import pytest
from django.urls import reverse

from moderation.models import Campaign, PostStatus
from moderation.services.campaigns import campaigns_members_add
from tests.dashboard.dashboard_factories import AuthorFactory, LinkFactory, PostFactory
from tests.dashboard.dashboard_fixtures import *  # noqa: F403
from tests.factories import ReasonCodeFactory

pytestmark = pytest.mark.django_db


def _campaign(size: int = 3) -> tuple[Campaign, list]:
    first = PostFactory(status=PostStatus.QUEUED, final_score=0.5, link=LinkFactory())
    posts = [first] + [
        PostFactory(
            author=AuthorFactory(source=first.source), status=PostStatus.QUEUED, final_score=0.5, text=first.text
        )
        for _ in range(size - 1)
    ]
    campaign = campaigns_members_add(
        source_id=first.source_id, groups=[(None, [p.pk for p in posts])], now=first.received_at
    )[first.pk]
    return campaign, posts


def test_the_queue_row_links_the_campaign_with_its_counts(mod_client) -> None:
    campaign, _ = _campaign(3)
    PostFactory(status=PostStatus.QUEUED, final_score=0.5)  # in no campaign
    html = mod_client.get(reverse("dashboard:queue")).content.decode()
    link = f'href="{reverse("dashboard:campaign", args=[campaign.pk])}"'
    assert html.count(link) == 3
    assert "campaign · 3 posts · 3 authors" in html


def test_the_campaign_page_shows_members_authors_domains_and_decisions(mod_client, django_assert_max_num_queries):
    campaign, posts = _campaign(4)
    with django_assert_max_num_queries(14):
        response = mod_client.get(reverse("dashboard:campaign", args=[campaign.pk]))
    assert response.status_code == 200
    page = response.context["page"]
    assert {p.pk for p in page.posts} == {p.pk for p in posts}
    assert sorted(a["author_id"] for a in page.authors) == sorted(p.author_id for p in posts)
    expected = Counter(p.link.domain.name for p in posts if p.link_id)
    assert expected and {d["link__domain__name"]: d["n"] for d in page.domains} == expected
    assert response.context["statuses"] == [("Queued for review", 4)]
    html = response.content.decode()
    assert reverse("dashboard:cluster", args=["campaign", campaign.pk]) in html
    assert "4 / 4" in html


def test_an_unknown_campaign_is_not_found(mod_client) -> None:
    assert mod_client.get(reverse("dashboard:campaign", args=[999999])).status_code == 404


def test_one_decision_on_the_whole_campaign_with_preview_and_undo(mod_client) -> None:
    ReasonCodeFactory(code="scam", applies_to="spam")
    campaign, _ = _campaign(3)
    url = reverse("dashboard:cluster", args=["campaign", campaign.pk])
    preview = mod_client.get(url)
    assert preview.status_code == 200 and preview.context["count"] == 3
    mod_client.post(url, {"confirm": "1", "label": "spam", "reason_code": "scam"})
    campaign.refresh_from_db()
    assert campaign.decided_label == "spam" and campaign.decided_bulk is not None
    assert {p.status for p in campaign.posts.all()} == {PostStatus.REMOVED}
    mod_client.post(reverse("dashboard:bulk_undo", args=[campaign.decided_bulk.pk]))
    campaign.refresh_from_db()
    assert campaign.decided_label == "" and campaign.decided_bulk is None
    assert {p.status for p in campaign.posts.all()} == {PostStatus.QUEUED}
