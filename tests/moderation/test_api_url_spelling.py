"""A link is filed, shown and checked against the block lists under the host a browser visits
(core.urls, the WHATWG URL Standard), however it is spelt: a backslash before '@' ends the host,
so the block of that host applies and moderators see it."""

from __future__ import annotations

import pytest

from moderation.models import Domain, ListStatus, Post, PostStatus
from scoring.services.scoring import score_posts
from scoring.services.shortcircuit import SHORT_CIRCUIT_MODEL_SET
from tests.moderation.api_helpers import ApiCaller, post_payload
from tests.scoring.pipeline_support import FakeClient

pytest_plugins = ["tests.moderation.api_fixtures"]
pytestmark = pytest.mark.django_db

BACKSLASH_SPELLINGS = [
    "https://bad.example\\@example.com/login",
    "https:\\\\bad.example\\@example.com/login",
    "https:bad.example\\@example.com/login",
    "https://BAD\u3002example\\@example.com/login",
]


def _ingest_and_score(api: ApiCaller, url: str) -> Post:
    response = api.post("/api/v1/posts", post_payload("p-1", url=url, text="hello"))
    assert response.status_code == 201, response.json()
    post = Post.objects.select_related("link__domain").get(source=api.source, external_id="p-1")
    score_posts(post_ids=[post.pk], client=FakeClient())
    post.refresh_from_db()
    return post


@pytest.mark.parametrize("url", BACKSLASH_SPELLINGS)
def test_a_source_block_catches_the_host_a_browser_visits(api: ApiCaller, url: str):
    blocked = api.post("/api/v1/blocklist/domains", {"domain": "bad.example", "reason": "phishing"})
    assert blocked.status_code == 201, blocked.json()

    post = _ingest_and_score(api, url)

    assert post.link is not None
    assert (post.link.host, post.link.domain.name) == ("bad.example", "bad.example")
    assert post.url == post.link.url == "https://bad.example/@example.com/login"
    assert post.status == PostStatus.AUTO_REMOVED
    assert post.scores.get().model_set == SHORT_CIRCUIT_MODEL_SET
    shown = api.get("/api/v1/posts/p-1").json()
    assert shown["url"] == "https://bad.example/@example.com/login"
    assert shown["status"] == PostStatus.AUTO_REMOVED


def test_a_global_block_catches_the_host_a_browser_visits(api: ApiCaller):
    Domain.objects.create(name="bad.example", status=ListStatus.BLOCK, status_reason="phishing kit")
    post = _ingest_and_score(api, BACKSLASH_SPELLINGS[0])
    assert post.status == PostStatus.AUTO_REMOVED
    assert post.link is not None and post.link.domain.status == ListStatus.BLOCK


def test_an_encoded_backslash_before_the_at_sign_is_user_info(api: ApiCaller):
    """'%5C' is not a backslash to a URL parser: 'bad.example%5C' is the user name and the
    browser goes to example.com, so that is the link (user-info dropped), not bad.example."""
    api.post("/api/v1/blocklist/domains", {"domain": "bad.example", "reason": "phishing"})
    post = _ingest_and_score(api, "https://bad.example%5C@example.com/login")
    assert post.link is not None and post.link.domain.name == "example.com"
    assert post.url == "https://example.com/login"
    assert post.status == PostStatus.AUTO_APPROVED


@pytest.mark.parametrize(
    "url",
    [
        "https://[fe80::1%25eth0]/",  # a zone: no browser opens it
        "http://1.2.3.4.5/",
        "https://xn--a.example/",  # not the IDNA encoding of any label
        "https://exa%20mple.com/",
        "https://bad^example.com/",
    ],
)
def test_what_a_browser_would_not_open_is_refused(api: ApiCaller, url: str):
    response = api.post("/api/v1/posts", post_payload("p-1", url=url))
    assert response.status_code == 400, response.json()
    error = response.json()["error"]
    assert error["code"] == "invalid" and "url" in error["fields"]
    assert not Post.objects.exists()
