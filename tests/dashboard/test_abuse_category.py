"""The abuse category on the moderators' pages: the queue's category filter and row badge by
the source's abuse thresholds, and the evidence page's abuse line."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from tests.dashboard.dashboard_factories import PostFactory, ScoreFactory, SourceFactory
from tests.dashboard.dashboard_fixtures import *  # noqa: F403

pytestmark = pytest.mark.django_db


def _ids(html: str) -> set[int]:
    return {int(pk) for pk in re.findall(r'<tr class="qrow" data-post-id="(\d+)"', html)}


def test_the_category_filter_and_badge_follow_the_source_thresholds(mod_client, settings):
    settings.ABUSE_QUEUE_THRESHOLD = 0.5
    strict = SourceFactory(abuse_queue_threshold=0.3)
    default = SourceFactory()
    abusive = PostFactory(source=default, abuse_score=0.8)
    abusive_here = PostFactory(source=strict, abuse_score=0.4)  # below the setting, above its source's value
    below = PostFactory(source=default, abuse_score=0.4)
    unscored = PostFactory(source=default, abuse_score=None)
    queue = reverse("dashboard:queue")
    assert _ids(mod_client.get(queue, {"category": "abuse"}).content.decode()) == {abusive.pk, abusive_here.pk}
    assert _ids(mod_client.get(queue, {"category": "spam"}).content.decode()) == {below.pk, unscored.pk}
    html = mod_client.get(queue).content.decode()
    assert _ids(html) == {abusive.pk, abusive_here.pk, below.pk, unscored.pk}
    assert html.count('data-category="abuse"') == 2
    assert 'data-category="abuse">abuse 0.80<' in html


def test_the_evidence_page_shows_the_abuse_score_and_the_sources_thresholds(mod_client, settings):
    settings.ABUSE_REMOVE_THRESHOLD = 0.994
    post = PostFactory(source=SourceFactory(abuse_queue_threshold=0.45), abuse_score=0.97)
    ScoreFactory(post=post, abuse_score=0.97)
    html = mod_client.get(reverse("dashboard:post_detail", args=[post.pk])).content.decode()
    assert "Abuse score <strong>0.970</strong>" in html
    assert "holds at ≥ 0.450, removes at ≥ 0.994" in html
    without = PostFactory()
    ScoreFactory(post=without)
    assert (
        "data-abuse-score" not in mod_client.get(reverse("dashboard:post_detail", args=[without.pk])).content.decode()
    )
