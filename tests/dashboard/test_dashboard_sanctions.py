"""Warn, limit, hide, lift and revoke from the dashboard's enforcement form; the author page
shows the strike ledger, the restrictions and the statements of reasons."""

from __future__ import annotations

import pytest
from django.urls import reverse

from moderation.models import LadderRule, Restriction, StatementOfReasons, Strike
from tests.dashboard.dashboard_fixtures import *  # noqa: F403
from tests.dashboard.dashboard_fixtures import client_for
from tests.scoring.pipeline_support import make_author, make_post, make_source

pytestmark = pytest.mark.django_db


def _enforce(client, kind, pk, action, **data):
    return client.post(reverse("dashboard:enforce", args=[kind, pk, action]), data)


def test_warn_from_the_author_page_records_a_strike_and_the_page_lists_it(mod_client, moderator):
    author = make_author(make_source())
    page = mod_client.get(reverse("dashboard:author", args=[author.pk])).content.decode()
    assert 'data-enforce="warn"' in page and 'data-enforce="limit_rate"' in page
    form = mod_client.get(reverse("dashboard:enforce", args=["author", author.pk, "warn"])).content.decode()
    assert 'name="expires_at"' not in form  # a strike expires by itself
    response = _enforce(mod_client, "author", author.pk, "warn", reason_code="abuse", note="insults")
    assert response.status_code == 302
    strike = Strike.objects.get(author=author)
    assert (strike.category, strike.note, strike.issued_by) == ("abuse", "insults", moderator)
    page = mod_client.get(reverse("dashboard:author", args=[author.pk])).content.decode()
    assert f'data-strike="{strike.pk}"' in page and "Abuse / harassment: 1" in page


def test_warn_without_a_reason_is_refused(mod_client):
    author = make_author(make_source())
    assert _enforce(mod_client, "author", author.pk, "warn", note="x").status_code == 400
    assert not Strike.objects.exists()


def test_warn_from_a_post_ties_the_strike_to_it_and_the_ladder_suspends(mod_client):
    source = make_source()
    LadderRule.objects.create(source=source, category="spam", strikes=1, window_days=30, action="suspend")
    post = make_post(source=source)
    response = _enforce(mod_client, "post", post.pk, "warn", reason_code="commercial-spam")
    assert response.status_code == 302
    assert Strike.objects.get().post_id == post.pk
    followed = mod_client.get(response["Location"]).content.decode()
    assert "The escalation ladder applied: suspended." in followed
    post.author.refresh_from_db()
    assert post.author.suspended_at is not None
    page = mod_client.get(reverse("dashboard:author", args=[post.author_id])).content.decode()
    assert "suspension" in page and "data-ladder" in page


def test_hide_a_post_then_unhide_it(mod_client):
    post = make_post()
    detail = mod_client.get(reverse("dashboard:post_detail", args=[post.pk])).content.decode()
    assert 'data-enforce="hide"' in detail
    assert _enforce(mod_client, "post", post.pk, "hide", reason_code="abuse").status_code == 302
    hidden = Restriction.objects.get(post=post)
    detail = mod_client.get(reverse("dashboard:post_detail", args=[post.pk])).content.decode()
    assert "data-hidden" in detail
    assert _enforce(mod_client, "restriction", hidden.pk, "lift", note="reviewed").status_code == 302
    hidden.refresh_from_db()
    assert hidden.lifted_at is not None
    assert StatementOfReasons.objects.get(restriction=hidden).reversed_at is not None


def test_limit_and_revoke(mod_client):
    author = make_author(make_source())
    assert _enforce(mod_client, "author", author.pk, "limit_reach", reason_code="bot-activity").status_code == 302
    assert Restriction.objects.get(author=author).kind == "limit_reach"
    _enforce(mod_client, "author", author.pk, "warn", reason_code="scam")
    strike = Strike.objects.get()
    assert _enforce(mod_client, "strike", strike.pk, "revoke").status_code == 302
    strike.refresh_from_db()
    assert strike.revoked_at is not None


def test_analysts_cannot_warn(analyst):
    author = make_author(make_source())
    response = _enforce(client_for(analyst), "author", author.pk, "warn", reason_code="abuse")
    assert response.status_code in (302, 403)
    assert not Strike.objects.exists()
