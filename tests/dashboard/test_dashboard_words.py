"""Plain words instead of codes: languages by name ("und" is "not detected") and picked from a
list, reasons by their labels, list statuses in words, no accounts linked by a free mail domain."""

from __future__ import annotations

import pytest
from django.urls import reverse

from dashboard.templatetags.dashboard import language_name, list_status
from moderation.services.decisions import decision_record
from tests.dashboard.dashboard_factories import AuthorFactory, LinkFactory, PostFactory
from tests.dashboard.dashboard_fixtures import *  # noqa: F403

pytestmark = pytest.mark.django_db


def test_languages_and_list_statuses_read_as_words():
    assert language_name("und") == "not detected"
    assert language_name("de") == "German" and language_name("ja") == "Japanese"
    assert (list_status("unknown"), list_status("allow"), list_status("block")) == ("not listed", "trusted", "blocked")


def test_the_language_filter_is_a_picker_and_refuses_what_it_does_not_know(mod_client):
    german = PostFactory(language="de")
    PostFactory(language="en")
    html = mod_client.get(reverse("dashboard:queue")).content.decode()
    assert '<option value="de">German</option>' in html and '<option value="und">Not detected</option>' in html
    response = mod_client.get(reverse("dashboard:queue"), {"language": "german"})
    assert response.status_code == 400  # said out loud, not an empty list
    assert "is not a language the detector assigns" in response.content.decode()
    html = mod_client.get(reverse("dashboard:queue"), {"language": "de"}).content.decode()
    assert f'data-post-id="{german.pk}"' in html and html.count('tr class="qrow') == 1


def test_the_post_page_names_the_language_and_the_list_status(mod_client):
    post = PostFactory(language="und", link=LinkFactory())
    html = mod_client.get(reverse("dashboard:post_detail", args=[post.pk])).content.decode()
    assert "<span data-language>not detected</span>" in html and "language und" not in html
    assert 'badge-list-unknown">not listed<' in html


def test_the_author_page_shows_reason_labels_and_links_nobody_by_free_mail(mod_client, moderator):
    gmail = AuthorFactory(email_domain="gmail.com")
    AuthorFactory(source=gmail.source, email_domain="gmail.com")
    ring = AuthorFactory(source=gmail.source, email_domain="cheap-deals.shop")
    partner = AuthorFactory(source=gmail.source, email_domain="cheap-deals.shop", username="ring2")
    decision_record(post=PostFactory(author=gmail), moderator=moderator, label="spam", reason_code="commercial-spam")
    html = mod_client.get(reverse("dashboard:author", args=[gmail.pk])).content.decode()
    assert "Commercial spam / advertising" in html and "· commercial-spam" not in html
    assert "data-email-free-mail" in html and "data-linked-email" not in html
    html = mod_client.get(reverse("dashboard:author", args=[ring.pk])).content.decode()
    assert "data-linked-email" in html and reverse("dashboard:author", args=[partner.pk]) in html
