"""What the screens say: human labels, feature names, score colours from the live policy,
warnings on spoofing text, no inline styles (the pages run under a strict CSP)."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from contracts.feature_schema import BEHAVIOUR_FEATURES, FUSION_FEATURES, LINK_FEATURES, feature_display_name
from dashboard.templatetags.dashboard import model_label, score_band
from moderation.models import Label
from moderation.text_safety import bidi_controls_visible, mixed_script_words, spoofing_warnings
from scoring.models import DecisionPolicy
from tests.dashboard.dashboard_factories import AuthorFactory, PostFactory, ScoreFactory
from tests.dashboard.dashboard_fixtures import *  # noqa: F403

RLO = "\u202e"
CYRILLIC_A = "\u0430"


def test_text_safety_finds_bidi_overrides_and_mixed_scripts():
    assert spoofing_warnings("plain text, café, 東京, ひらがな混じり文 and Ελληνικά words") == []
    assert spoofing_warnings(f"invoice{RLO}fdp.exe")[0].startswith("contains right-to-left")
    assert bidi_controls_visible(f"a{RLO}b") == "a[U+202E]b"
    assert mixed_script_words(f"login at p{CYRILLIC_A}ypal.com now") == [f"p{CYRILLIC_A}ypal"]
    assert mixed_script_words(f"https://secure.p{CYRILLIC_A}ypal.example/login") == [f"p{CYRILLIC_A}ypal"]


def test_every_schema_feature_has_a_display_name():
    for name in (*LINK_FEATURES, *BEHAVIOUR_FEATURES, *FUSION_FEATURES):
        label = feature_display_name(name)
        assert "_" not in label and label[0].isupper(), name
    assert feature_display_name("journey_steps_per_second") == "Posting speed (steps per second)"
    assert feature_display_name("some_new_feature") == "Some new feature"
    assert model_label("behaviour_model") == "Behaviour model"
    assert model_label("text") == "Text model"
    assert Label.HAM.label == "Not spam"


def test_score_band_follows_the_thresholds():
    class Policy:
        remove_threshold = 0.8
        approve_threshold = 0.4

    assert [score_band(v, Policy()) for v in (0.85, 0.45, 0.39, None)] == ["high", "mid", "low", "none"]


@pytest.mark.django_db
def test_pages_colour_scores_from_the_live_policy(mod_client):
    DecisionPolicy.objects.update(is_active=False)
    DecisionPolicy.objects.create(version=99, remove_threshold=0.95, approve_threshold=0.4, is_active=True)
    queued = PostFactory(final_score=0.45)
    html = mod_client.get(reverse("dashboard:queue")).content.decode()
    row = html[html.index(f'data-post-id="{queued.pk}"') :]
    assert 'class="score score-mid"' in row[:1500]  # queued for review: amber, not green
    DecisionPolicy.objects.filter(version=99).update(approve_threshold=0.5)
    html = mod_client.get(reverse("dashboard:queue")).content.decode()
    row = html[html.index(f'data-post-id="{queued.pk}"') :]
    assert 'class="score score-low"' in row[:1500]


@pytest.mark.django_db
def test_detail_shows_human_labels_and_spoofing_warnings(mod_client):
    author = AuthorFactory(username=f"p{CYRILLIC_A}ypal_support")
    post = PostFactory(author=author, text=f"Your invoice{RLO}fdp.exe is ready", url="https://example.org/x")
    ScoreFactory(post=post, contributions={"behaviour_model": {"journey_steps_per_second": 0.4, "user_age_days": -0.2}})
    html = mod_client.get(reverse("dashboard:post_detail", args=[post.pk])).content.decode()
    assert "data-spoof-warning" in html and "[U+202E]" in html and RLO not in html
    assert "data-name-warning" in html
    assert "Behaviour model: top features" in html
    assert "Posting speed (steps per second)" in html and "Account age (days)" in html
    assert "Not spam" in html and ">Ham<" not in html


@pytest.mark.django_db
def test_dashboard_pages_have_no_inline_styles_or_scripts(mod_client, moderator):
    post = PostFactory()
    ScoreFactory(post=post)
    for url in (
        reverse("dashboard:queue"),
        reverse("dashboard:post_detail", args=[post.pk]),
        reverse("dashboard:audit"),
        reverse("dashboard:metrics"),
    ):
        html = mod_client.get(url).content.decode()
        assert not re.search(r"\sstyle=", html), url
        assert not re.search(r"<script(?![^>]*\ssrc=)", html), url
        assert not re.search(r"\son[a-z]+=", html), url


@pytest.mark.django_db
def test_queue_rows_warn_on_spoofing_text_and_names(mod_client):
    author = AuthorFactory(username=f"p{CYRILLIC_A}ypal")
    PostFactory(author=author, text=f"Refund{RLO}gpj.exe attached")
    html = mod_client.get(reverse("dashboard:queue")).content.decode()
    assert "⚠ Text contains right-to-left" in html and "[U+202E]" in html
    assert "⚠ name</span>" in html
