"""The queue rows built in Python (dashboard.queue_rows): every value escaped, every badge and
link where the template put it, through the real queue page."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from dashboard.queue_rows import render_queue_rows
from dashboard.selectors.queue import QueueFilters, queue_page
from dashboard.selectors.thresholds import live_thresholds
from moderation.models import Post, PostStatus
from moderation.services.decisions import post_version
from tests.dashboard.dashboard_factories import AuthorFactory, DomainFactory, LinkFactory, PostFactory, ScoreFactory
from tests.dashboard.dashboard_fixtures import *  # noqa: F403

pytestmark = pytest.mark.django_db

HOSTILE = '<script>alert("x")</script> & "quotes" \u202eexe.txt'


def _row(html: str, pk: int) -> str:
    start = html.index(f'<tr class="qrow" data-post-id="{pk}"')
    return html[start : html.index("</tr>", start)]


def test_row_escapes_text_author_domain_and_reasons(mod_client):
    author = AuthorFactory(username='<b>"bob"</b>')
    post = PostFactory(
        text=HOSTILE, author=author, link=LinkFactory(domain=DomainFactory(name="evil<i>.example")), language="en"
    )
    ScoreFactory(post=post, routing_reason='<img src=x onerror="1">')
    html = mod_client.get(reverse("dashboard:queue")).content.decode()
    row = _row(html, post.pk)
    assert "<script>" not in row and "<b>" not in row and "<i>" not in row and "<img" not in row
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &quot;quotes&quot; [U+202E]exe.txt" in row
    assert "@&lt;b&gt;&quot;bob&quot;&lt;/b&gt;" in row
    assert "evil&lt;i&gt;.example" in row
    assert "&lt;img src=x onerror=&quot;1&quot;&gt;" in row
    assert "\u202e" not in row  # shown as [U+202E], never reordering the row
    assert 'role="note">⚠ Text contains right-to-left' in row


def test_row_links_version_scores_and_badges(mod_client, moderator):
    blocked = DomainFactory(status="block")
    post = PostFactory(text="x" * 400, link=LinkFactory(domain=blocked), final_score=0.456, language="es")
    Post.objects.filter(pk=post.pk).update(claimed_by=moderator, claimed_until=timezone.now() + timedelta(minutes=10))
    ScoreFactory(post=post, text_score=0.91, link_score=None, behaviour_score=0.05)
    html = mod_client.get(reverse("dashboard:queue")).content.decode()
    post.refresh_from_db()
    row = _row(html, post.pk)
    assert f'data-url="{reverse("dashboard:post_detail", args=[post.pk])}"' in row
    assert f'data-decide-url="{reverse("dashboard:decide", args=[post.pk])}"' in row
    assert f'data-version="{post_version(post)}"' in row
    assert f'href="{reverse("dashboard:post_detail", args=[post.pk])}"' in row
    assert ">0.46</span>" in row  # two decimals
    assert re.search(r">x{159}…</a>", row)  # 160 characters with the ellipsis
    assert 'class="domain is-blocked"' in row
    assert 'title="Language detected at ingest">Spanish<' in row
    assert "claimed by you" in row
    assert 'aria-label="Text 91%, link —, behaviour 5%"' in row
    assert 'class="lvl-high w-90"' in row and 'class="lvl-none w-0"' in row and 'class="lvl-low w-5"' in row
    assert '<span class="muted">0</span>' in row  # no reports


def test_decided_post_shows_its_status_and_no_sla(mod_client):
    post = PostFactory(status=PostStatus.REMOVED, text="")
    html = mod_client.get(reverse("dashboard:queue") + "?status=all").content.decode()
    row = _row(html, post.pk)  # class="qrow" alone: a decided post has no SLA to breach
    assert f'class="badge badge-{PostStatus.REMOVED}"' in row
    assert str(PostStatus.REMOVED.label) in row
    assert "(no text)" in row
    assert "data-sla" not in row


def test_load_more_fragment_uses_the_same_rows(mod_client):
    posts = PostFactory.create_batch(52)
    first = mod_client.get(reverse("dashboard:queue")).content.decode()
    more = re.search(r'hx-get="([^"]+)"', first)
    assert more is not None
    fragment = mod_client.get(more.group(1).replace("&amp;", "&"), HTTP_HX_REQUEST="true").content.decode()
    shown = set(re.findall(r'data-post-id="(\d+)"', first)) | set(re.findall(r'data-post-id="(\d+)"', fragment))
    assert shown == {str(p.pk) for p in posts}
    assert fragment.count('<tr class="qrow') == 2
    assert "<html" not in fragment


def test_priority_is_shown_as_its_reasons_with_the_number_on_hover(settings):
    settings.DASHBOARD_SLA_SECONDS = 4 * 3600
    # A row whose stored key was never computed (0.0): the page must not print it raw.
    post = PostFactory(final_score=0.83, report_count=2, report_weight=1.0, priority=0.0)
    Post.objects.filter(pk=post.pk).update(received_at=timezone.now() - timedelta(minutes=24))
    html = render_queue_rows(queue_page(filters=QueueFilters()).rows, thresholds=live_thresholds(), user_id=None)
    shown = html[html.index("data-priority>") + len("data-priority>") :]
    assert shown.startswith("2 reports · due in 3.6 h · score 0.83</span>")
    assert 'title="Priority 1.93 = score 0.83 + reports 1.00 + waited 0.10 (time waited / SLA)"' in html
    assert "P 1" not in html
