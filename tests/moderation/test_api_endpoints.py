"""Reports, author profiles, block lists, throttling, and the OpenAPI schema."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from api.throttling import ApiKeyRateThrottle
from moderation.models import AuditLog, Author, Domain, IpAddress, ListStatus, Post, Report, SourceBlock
from tests.factories import DomainFactory, IpAddressFactory
from tests.moderation.api_helpers import ApiCaller, post_payload

pytest_plugins = ["tests.moderation.api_fixtures"]
pytestmark = pytest.mark.django_db


# --- reports --------------------------------------------------------------------------------------


def test_report_created_then_existing(api: ApiCaller):
    api.post("/api/v1/posts", post_payload("p-1"))
    body = {"post_external_id": "p-1", "reporter_id": "r-1", "reason": "spam", "details": "scam"}
    first = api.post("/api/v1/reports", body)
    assert first.status_code == 201, first.json()
    assert first.json()["post_report_count"] == 1
    again = api.post("/api/v1/reports", body)
    assert again.status_code == 200 and again.json()["id"] == first.json()["id"]
    # Another reason from the same reporter is recorded, and the reporter still counts once.
    other_reason = api.post("/api/v1/reports", {**body, "reason": "abuse"})
    assert other_reason.status_code == 201 and other_reason.json()["post_report_count"] == 1
    other_reporter = api.post("/api/v1/reports", {**body, "reporter_id": "r-2"})
    assert other_reporter.status_code == 201 and other_reporter.json()["post_report_count"] == 2
    assert Report.objects.count() == 3
    post = Post.objects.select_related("link__domain").get()
    assert post.link is not None
    assert (post.report_count, post.link.report_count, post.link.domain.report_count) == (2, 2, 2)


def test_report_on_unknown_or_foreign_post_is_404(api: ApiCaller, other_api: ApiCaller):
    other_api.post("/api/v1/posts", post_payload("theirs"))
    for external_id in ("nope", "theirs"):
        response = api.post("/api/v1/reports", {"post_external_id": external_id, "reporter_id": "r", "reason": "spam"})
        assert response.status_code == 404
        assert response.json()["error"]["code"] == "post_not_found"
    assert not Report.objects.exists()


def test_report_validation(api: ApiCaller):
    response = api.post("/api/v1/reports", {"post_external_id": "p", "reason": "x" * 65})
    assert response.status_code == 400
    assert {"reporter_id", "reason"} <= set(response.json()["error"]["fields"])


# --- authors --------------------------------------------------------------------------------------


def test_author_put_creates_then_updates(api: ApiCaller):
    created = api.put("/api/v1/authors/u-5", {"username": "eve", "followers_count": 10, "verified": True})
    assert created.status_code == 201, created.json()
    assert created.json()["external_id"] == "u-5"
    updated = api.put("/api/v1/authors/u-5", {"followers_count": 11, "spam_report_count": 3})
    assert updated.status_code == 200
    author = Author.objects.get(source=api.source, external_id="u-5")
    assert (author.username, author.followers_count, author.verified, author.platform_spam_report_count) == (
        "eve",
        11,
        True,
        3,
    )


def test_author_put_is_per_source(api: ApiCaller, other_api: ApiCaller):
    api.put("/api/v1/authors/u-1", {"username": "a"})
    assert other_api.put("/api/v1/authors/u-1", {"username": "b"}).status_code == 201
    assert sorted(Author.objects.values_list("username", flat=True)) == ["a", "b"]


def test_author_put_validation(api: ApiCaller):
    response = api.put("/api/v1/authors/u-1", {"friends_count": -3, "verified": "no", "email_domain": 4})
    assert response.status_code == 400
    assert {"friends_count", "verified", "email_domain"} <= set(response.json()["error"]["fields"])
    assert api.put("/api/v1/authors/a%00b", {}).status_code == 400
    assert api.put("/api/v1/authors/" + "x" * 300, {}).status_code == 400
    assert not Author.objects.exists()


def test_author_email_is_reduced_to_its_domain(api: ApiCaller):
    api.put("/api/v1/authors/u-1", {"email_domain": "Someone@Example.ORG"})
    assert Author.objects.get().email_domain == "example.org"


# --- block lists ----------------------------------------------------------------------------------


def test_domain_block_list_flow(api: ApiCaller):
    created = api.post("/api/v1/blocklist/domains", {"domain": "https://a.b.Spam.co.uk/x", "reason": "phishing"})
    assert created.status_code == 201, created.json()
    assert created.json()["name"] == "spam.co.uk" and created.json()["reason"] == "phishing"
    assert api.post("/api/v1/blocklist/domains", {"domain": "spam.co.uk", "reason": "phishing"}).status_code == 200
    api.post("/api/v1/blocklist/domains", {"domain": "other.example", "reason": "malware"})
    DomainFactory(name="innocent.example")

    listed = api.get("/api/v1/blocklist/domains")
    assert [d["name"] for d in listed.json()["results"]] == ["other.example", "spam.co.uk"]
    filtered = api.get("/api/v1/blocklist/domains", {"name": "spam"})
    assert [d["name"] for d in filtered.json()["results"]] == ["spam.co.uk"]
    page = api.get("/api/v1/blocklist/domains", {"page_size": 1})
    assert len(page.json()["results"]) == 1 and page.json()["next"]
    second = api.client.get(page.json()["next"])
    assert [d["name"] for d in second.json()["results"]] == ["spam.co.uk"]
    # A source's block never touches the global list.
    assert not Domain.objects.filter(status=ListStatus.BLOCK).exists()

    assert api.delete("/api/v1/blocklist/domains/spam.co.uk").status_code == 204
    assert api.delete("/api/v1/blocklist/domains/spam.co.uk").status_code == 404
    assert api.delete("/api/v1/blocklist/domains/innocent.example").status_code == 404
    actions = list(AuditLog.objects.order_by("id").values_list("action", "actor_id"))
    assert actions == [("domain.source_block", None), ("domain.source_block", None), ("domain.source_unblock", None)]


@pytest.mark.parametrize("suffix", ["com", "co.uk", "https://co.uk/", "COM.", "uk"])
def test_a_public_suffix_is_never_a_block(api: ApiCaller, suffix: str):
    response = api.post("/api/v1/blocklist/domains", {"domain": suffix, "reason": "everything"})
    assert response.status_code == 400, response.json()
    assert response.json()["error"]["fields"]["domain"]
    assert not SourceBlock.objects.exists() and not Domain.objects.filter(status=ListStatus.BLOCK).exists()


@pytest.mark.parametrize("address", ["203.0.113.0/24", "10.0.0.0/8", "2001:db8::/32", "0.0.0.0/0"])
def test_an_ip_range_is_never_a_block(api: ApiCaller, address: str):
    response = api.post("/api/v1/blocklist/ips", {"address": address, "reason": "everyone"})
    assert response.status_code == 400 and response.json()["error"]["fields"]["address"]
    assert not SourceBlock.objects.exists()


def test_domain_block_validation(api: ApiCaller):
    response = api.post("/api/v1/blocklist/domains", {"domain": "not a domain", "reason": ""})
    assert response.status_code == 400
    assert {"domain", "reason"} <= set(response.json()["error"]["fields"])
    assert api.get("/api/v1/blocklist/domains", {"blocked_after": "garbage"}).status_code == 400
    # Offsets PostgreSQL would reject (found by schemathesis) and overflowing years are normalized or 400.
    assert api.get("/api/v1/blocklist/domains", {"blocked_after": "2026-06-10T13:52:47-22:35"}).status_code == 200
    assert api.get("/api/v1/blocklist/ips", {"blocked_before": "0001-01-01T00:00:00+05:00"}).status_code == 400


def test_ip_block_list_flow(api: ApiCaller):
    created = api.post("/api/v1/blocklist/ips", {"address": "2001:DB8::0:1", "reason": "bursts"})
    assert created.status_code == 201, created.json()
    assert created.json()["address"] == "2001:db8::1"
    IpAddressFactory(address="192.0.2.1")
    listed = api.get("/api/v1/blocklist/ips")
    assert [i["address"] for i in listed.json()["results"]] == ["2001:db8::1"]
    assert api.get("/api/v1/blocklist/ips", {"address": "2001:db8::1"}).json()["results"]
    assert api.get("/api/v1/blocklist/ips", {"address": "not-an-ip"}).status_code == 400
    assert api.get("/api/v1/blocklist/ips", {"reason": "a\x00b"}).status_code == 400
    assert api.delete("/api/v1/blocklist/ips/2001:db8::1").status_code == 204
    assert api.delete("/api/v1/blocklist/ips/2001:db8::1").status_code == 404
    assert api.delete("/api/v1/blocklist/ips/garbage").status_code == 404
    assert not IpAddress.objects.filter(status=ListStatus.BLOCK).exists()


def test_ip_block_validation(api: ApiCaller):
    response = api.post("/api/v1/blocklist/ips", {"address": "300.1.1.1", "reason": "x"})
    assert response.status_code == 400 and "address" in response.json()["error"]["fields"]


def test_list_query_count(api: ApiCaller, django_assert_max_num_queries):
    for n in range(30):
        api.post("/api/v1/blocklist/domains", {"domain": f"d{n}.example", "reason": "x"})
    with django_assert_max_num_queries(3):
        assert len(api.get("/api/v1/blocklist/domains").json()["results"]) == 30


def test_blocklists_require_a_key(db, clean_throttle):
    from rest_framework.test import APIClient

    client = APIClient()
    assert client.get("/api/v1/blocklist/domains").status_code == 401
    assert client.post("/api/v1/blocklist/ips", {"address": "1.1.1.1", "reason": "x"}, format="json").status_code == 401


# --- throttling -----------------------------------------------------------------------------------


def test_throttle_per_key_answers_429_with_retry_after(api: ApiCaller, other_api: ApiCaller, monkeypatch):
    monkeypatch.setattr(ApiKeyRateThrottle, "THROTTLE_RATES", {"api_key": "3/min"})
    # The window is fixed (minute n), so a real clock crossing a minute boundary mid-test would
    # open a fresh budget; hold the clock in the middle of one window.
    now = (time.time() // 60) * 60 + 30
    monkeypatch.setattr(ApiKeyRateThrottle, "timer", lambda self: now)
    for n in range(3):
        assert api.post("/api/v1/posts", post_payload(f"t{n}")).status_code == 201
    limited = api.post("/api/v1/posts", post_payload("t3"))
    assert limited.status_code == 429
    assert limited.json()["error"]["code"] == "throttled"
    assert 0 < int(limited.headers["Retry-After"]) <= 60
    assert not Post.objects.filter(external_id="t3").exists()
    # Another key of another source has its own budget.
    assert other_api.post("/api/v1/posts", post_payload("t3")).status_code == 201


# --- schema and migrations ------------------------------------------------------------------------


def test_openapi_schema_validates_without_warnings(tmp_path: Path):
    out = tmp_path / "schema.yaml"
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(out))
    text = out.read_text()
    for route in (
        "/api/v1/posts:",
        "/api/v1/posts/batch:",
        "/api/v1/posts/{external_id}:",
        "/api/v1/reports:",
        "/api/v1/authors/{external_id}:",
        "/api/v1/blocklist/domains:",
        "/api/v1/blocklist/ips/{address}:",
    ):
        assert route in text
    assert "ApiKeyAuth" in text and "wait_ms" in text


def test_schema_and_docs_are_served(client):
    assert client.get("/api/schema/").status_code == 200
    assert client.get("/api/docs/").status_code == 200


def test_docs_page_loads_swagger_ui_from_this_server_not_a_cdn(client):
    from django.contrib.staticfiles import finders

    html = client.get("/api/docs/").content.decode()
    assert "cdn.jsdelivr.net" not in html
    assert "/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js" in html
    assert finders.find("drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js")


def test_migrations_are_applied_and_complete():
    executor = MigrationExecutor(connection)
    assert connection.vendor == "postgresql"
    assert executor.migration_plan(executor.loader.graph.leaf_nodes()) == []
    call_command("makemigrations", "moderation", "--check", "--dry-run", verbosity=0)


def test_a_source_sees_and_lifts_only_its_own_blocks(api: ApiCaller, other_api: ApiCaller):
    from moderation.models import BlockKind
    from moderation.services.blocklists import global_block
    from tests.factories import UserFactory

    api.post("/api/v1/blocklist/domains", {"domain": "mine.example", "reason": "spam"})
    global_block(kind=BlockKind.DOMAIN, value="moderated.example", reason="phishing", actor=UserFactory())
    global_block(kind=BlockKind.IP, value="192.0.2.7", reason="bursts", actor=UserFactory())

    # Neither the global list nor another source's blocks (nor their reasons) are visible.
    assert [d["name"] for d in api.get("/api/v1/blocklist/domains").json()["results"]] == ["mine.example"]
    assert other_api.get("/api/v1/blocklist/domains").json()["results"] == []
    assert other_api.get("/api/v1/blocklist/ips").json()["results"] == []

    # Another source's "unblock" finds nothing to lift; its own block of the same domain is its own.
    assert other_api.delete("/api/v1/blocklist/domains/mine.example").status_code == 404
    again = other_api.post("/api/v1/blocklist/domains", {"domain": "mine.example", "reason": "other reason"})
    assert again.status_code == 201 and again.json()["reason"] == "other reason"
    assert api.get("/api/v1/blocklist/domains").json()["results"][0]["reason"] == "spam"
    # Nobody lifts a moderator's block through the API.
    assert api.delete("/api/v1/blocklist/domains/moderated.example").status_code == 404
    assert api.delete("/api/v1/blocklist/ips/192.0.2.7").status_code == 404
    assert api.delete("/api/v1/blocklist/domains/mine.example").status_code == 204
    assert SourceBlock.objects.filter(value="mine.example").count() == 1
    assert Domain.objects.get(name="moderated.example").status == ListStatus.BLOCK
    assert IpAddress.objects.get(address="192.0.2.7").status == ListStatus.BLOCK


def test_throttle_fails_open_when_the_cache_is_down(api: ApiCaller, monkeypatch):
    def down(*args, **kwargs):
        raise ConnectionError("redis down")

    monkeypatch.setattr(ApiKeyRateThrottle, "_increment", down)
    assert api.post("/api/v1/posts", post_payload("while-redis-is-down")).status_code == 201


def test_throttle_counter_expires_with_its_window(api: ApiCaller, monkeypatch):
    import redis
    from django.conf import settings as dj_settings
    from django.core.cache import cache

    monkeypatch.setattr(ApiKeyRateThrottle, "THROTTLE_RATES", {"api_key": "5/min"})
    api.post("/api/v1/posts", post_payload("ttl"))
    client = redis.Redis.from_url(dj_settings.CACHES["default"]["LOCATION"])
    keys = [k for k in client.keys(f"{cache.key_prefix}*throttle_api_key_{api.source.api_keys.get().pk}:*")]
    assert len(keys) == 1
    count = client.get(keys[0])
    assert count is not None and int(count) == 1
    assert 0 < client.ttl(keys[0]) <= 61
