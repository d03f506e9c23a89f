"""What one ingest costs: queries per new post and per batch (Zulip's query-count habit), and
the API-key cache that takes authentication off PostgreSQL, revocation included."""

from __future__ import annotations

from unittest import mock

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from moderation.models import ApiKey, Author, Domain, IpAddress, Link, Post
from moderation.services.api_keys import api_key_revoke
from moderation.services.ingest import post_ingest
from tests.factories import SourceFactory, api_key_with_row
from tests.moderation.api_helpers import ApiCaller, post_payload

pytest_plugins = ["tests.moderation.api_fixtures"]

pytestmark = pytest.mark.django_db


def _fresh(i: int, run: str = "n") -> dict:
    """A post whose author, link, domain and IP are all new."""
    return post_payload(
        f"{run}{i}",
        url=f"https://h{i}.{run}site{i}.com/x",
        ip=f"10.{i // 250}.{i % 250}.1",
        author={"external_id": f"{run}u{i}"},
    )


def _key_queries(ctx: CaptureQueriesContext) -> list[str]:
    return [q["sql"] for q in ctx.captured_queries if "moderation_apikey" in q["sql"]]


def test_single_new_post_query_count(api: ApiCaller, django_assert_num_queries):
    api.post("/api/v1/posts", post_payload("warm"))  # key cached, author/link/domain/IP exist
    # SELECT post, BEGIN, author upsert+count, SELECT domain, link upsert+count, domain count,
    # IP upsert+count, the source's link, domain and IP counts (one statement), INSERT post,
    # COMMIT. Authentication: none (cached key).
    with django_assert_num_queries(10):
        assert api.post("/api/v1/posts", post_payload("p-2")).status_code == 201
    with django_assert_num_queries(1):
        assert api.post("/api/v1/posts", post_payload("p-2")).status_code == 200


def test_a_new_link_costs_no_extra_query(api: ApiCaller, django_assert_num_queries):
    api.post("/api/v1/posts", post_payload("warm"))  # the domain exists
    with django_assert_num_queries(10):
        response = api.post("/api/v1/posts", post_payload("p-4", url="https://promo.example.co.uk/other"))
    assert response.status_code == 201
    link = Link.objects.get(url="https://promo.example.co.uk/other")
    assert (link.post_count, link.domain.post_count) == (1, 2)


def test_single_post_without_link_or_ip(api: ApiCaller, django_assert_num_queries):
    api.post("/api/v1/posts", post_payload("warm"))
    # SELECT post, BEGIN, author upsert+count, INSERT post, COMMIT.
    with django_assert_num_queries(5):
        assert api.post("/api/v1/posts", post_payload("p-3", url="", ip=None)).status_code == 201


@pytest.mark.parametrize("size", [2, 40])
def test_batch_query_count_does_not_grow_with_the_batch(api: ApiCaller, size, django_assert_num_queries):
    api.post("/api/v1/posts", post_payload("warm"))
    # Everything new: SELECT posts, BEGIN, upsert authors, SELECT domains, INSERT domains,
    # SELECT domains, upsert links, domain counts, upsert IPs, upsert the source's link, domain
    # and IP counts (one statement), INSERT posts, COMMIT. Each multi-row upsert locks the
    # existing rows in primary-key order inside its own statement (core.counters: no deadlock
    # with the scoring worker).
    with django_assert_num_queries(12):
        response = api.post("/api/v1/posts/batch", {"posts": [_fresh(i) for i in range(size)]})
    assert response.json()["created"] == size
    # Everything known but the posts: no domain inserts.
    with django_assert_num_queries(10):
        response = api.post(
            "/api/v1/posts/batch", {"posts": [_fresh(i) | {"external_id": f"again{i}"} for i in range(size)]}
        )
    assert response.json()["created"] == size
    assert Author.objects.get(source=api.source, external_id="nu1").post_count == 2
    assert Link.objects.get(url="https://h1.nsite1.com/x").post_count == 2
    assert Domain.objects.get(name="nsite1.com").post_count == 2
    assert IpAddress.objects.get(address="10.0.1.1").post_count == 2


def test_ingest_keeps_author_profile_semantics():
    source = SourceFactory()
    from tests.moderation.test_api_posts import _validated

    first = post_payload("a", author={"external_id": "u", "username": "ann", "followers_count": 3})
    post_ingest(source=source, payload=_validated(first))
    author = Author.objects.get(source=source)
    stamp = author.updated_at
    # Same profile: nothing but the counter changes.
    post_ingest(source=source, payload=_validated(post_payload("b", author={"external_id": "u", "username": "ann"})))
    author.refresh_from_db()
    assert (author.post_count, author.username, author.followers_count, author.updated_at) == (2, "ann", 3, stamp)
    # A changed field moves updated_at; absent fields keep their stored value.
    post_ingest(source=source, payload=_validated(post_payload("c", author={"external_id": "u", "followers_count": 9})))
    author.refresh_from_db()
    assert (author.post_count, author.username, author.followers_count) == (3, "ann", 9)
    assert author.updated_at > stamp


def test_authentication_is_served_from_the_cache(api: ApiCaller):
    api.post("/api/v1/posts", post_payload("a"))
    with CaptureQueriesContext(connection) as ctx:
        assert api.post("/api/v1/posts", post_payload("b")).status_code == 201
    assert _key_queries(ctx) == []


def test_revoking_a_cached_key_takes_effect_at_once(db, clean_throttle):
    key, raw = api_key_with_row()
    api = ApiCaller(key.source, raw)
    assert api.post("/api/v1/posts", post_payload("a")).status_code == 201
    assert api.post("/api/v1/posts", post_payload("b")).status_code == 201  # served from the cache
    api_key_revoke(api_key=ApiKey.objects.get(pk=key.pk))
    assert api.post("/api/v1/posts", post_payload("c")).status_code == 401
    assert not Post.objects.filter(external_id="c").exists()


def test_deleting_a_cached_key_takes_effect_at_once(api: ApiCaller):
    assert api.post("/api/v1/posts", post_payload("a")).status_code == 201
    ApiKey.objects.get(source=api.source).delete()
    assert api.post("/api/v1/posts", post_payload("b")).status_code == 401


def test_disabling_the_source_of_a_cached_key_takes_effect_at_once(api: ApiCaller):
    assert api.post("/api/v1/posts", post_payload("a")).status_code == 201
    api.source.is_active = False
    api.source.save(update_fields=["is_active"])
    assert api.post("/api/v1/posts", post_payload("b")).status_code == 401


def test_a_cache_outage_falls_back_to_postgresql(api: ApiCaller):
    from redis.exceptions import ConnectionError as RedisConnectionError

    broken = mock.patch("moderation.selectors.api_keys.cache.get", side_effect=RedisConnectionError("down"))
    with broken, CaptureQueriesContext(connection) as ctx:
        assert api.post("/api/v1/posts", post_payload("a")).status_code == 201
    assert len(_key_queries(ctx)) >= 1
    api_key_revoke(api_key=ApiKey.objects.get(source=api.source))
    with broken:
        assert api.post("/api/v1/posts", post_payload("b")).status_code == 401
