"""Evidence with values: each contribution with the feature's value at scoring time, on one
stated scale; the IP and domain panels read the same values, so the two cannot disagree."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from dashboard.selectors.detail import evidence_values, post_detail
from tests.dashboard.dashboard_factories import IpFactory, PostFactory, ScoreFactory
from tests.dashboard.dashboard_fixtures import *  # noqa: F403

pytestmark = pytest.mark.django_db


@pytest.fixture
def scored_then_decided():
    """Scored when its IP had sent 2 posts and none was spam; 3 of 5 decided spam since."""
    ip = IpFactory(post_count=5, spam_count=3)
    post = PostFactory(ip=ip)
    features = {
        "link": {"ip_post_count": 2.0, "ip_spam_rate": 0.0, "domain_post_count": 40.0, "domain_spam_rate": 0.25},
        "behaviour": {"user_followers": 3.0},
    }
    contributions = {"link_model": {"ip_spam_rate": -0.987, "ip_post_count": 0.12, "bias": -1.0}}
    ScoreFactory(post=post, features=features, contributions=contributions, link_score=0.4)
    return post


def test_contributions_carry_the_value_the_panels_show(scored_then_decided):
    detail = post_detail(post_id=scored_then_decided.pk)
    (link_model,) = detail.contributions
    by_name = {c.feature: c for c in link_model.items}
    assert by_name["ip_spam_rate"].feature_value == 0.0 and by_name["ip_spam_rate"].value == -0.987
    # Same source: the contribution's value is the panel's "when scored" value.
    assert detail.scored_values == evidence_values(detail.score)
    assert detail.scored_values["ip_spam_rate"] == by_name["ip_spam_rate"].feature_value
    assert detail.scored_values["link_prob"] == 0.4  # a fusion input: the sub-model's score


def test_the_page_shows_values_direction_one_scale_and_hides_internals(mod_client, scored_then_decided):
    html = mod_client.get(reverse("dashboard:post_detail", args=[scored_then_decided.pk])).content.decode()
    found = re.search(r'<tr data-contrib="ip_spam_rate">.*?</tr>', html, re.S)
    assert found is not None
    row = found.group(0)
    assert '<td class="contrib-fv" data-feature-value>0.00</td>' in row
    assert "-0.99" in row and "towards not spam" in row
    found = re.search(r"data-ip-scored>(.*?)</span></span>", html, re.S)
    assert found is not None
    scored = found.group(1)
    assert "2 posts" in scored and "0.00" in scored  # what the model saw, beside ...
    assert "data-ip-now>5 / 3<" in html  # ... the live counters, labelled as now
    assert html.count("log-odds") == 1  # the scale, stated once
    internals = html[html.index("data-internals") :]
    assert " ms" in internals[: internals.index("</details>")] and " ms" not in html[: html.index("data-internals")]
