"""What a source reads about a post a block list removed: a reason code and a public message.
A global block's moderator note may name another tenant or a case, and the author's address is
personal data: neither reaches the API, and the reason does not tell a source whether a global
list or its own matched."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from moderation.models import BlockKind, Domain, IpAddress, ListStatus, Post
from moderation.services.blocklists import source_block_add
from scoring.services.scoring import score_posts
from tests.dashboard.dashboard_factories import UserFactory
from tests.dashboard.dashboard_fixtures import client_for
from tests.moderation.api_helpers import ApiCaller, post_payload
from tests.scoring.pipeline_support import FakeClient

pytest_plugins = ["tests.moderation.api_fixtures"]
pytestmark = pytest.mark.django_db

STAFF_NOTE = "flagged after complaints from other-tenant legal team, case 4711"


def _scored_reason(api: ApiCaller, external_id: str, **payload: Any) -> tuple[str, str]:
    response = api.post("/api/v1/posts", post_payload(external_id, **payload))
    assert response.status_code == 201, response.content
    score_posts(post_ids=[response.json()["id"]], client=FakeClient())
    detail = api.get(f"/api/v1/posts/{external_id}")
    assert detail.status_code == 200
    (score,) = detail.json()["scores"]
    return score["short_circuit_reason"], detail.content.decode()


def test_a_global_domain_block_shows_a_code_and_public_message_not_the_staff_note(api: ApiCaller) -> None:
    Domain.objects.create(name="globally-bad.example", status=ListStatus.BLOCK, status_reason=STAFF_NOTE)
    source_block_add(source=api.source, kind=BlockKind.DOMAIN, value="own-bad.example", reason="ours")

    global_reason, body = _scored_reason(api, "p-global", url="https://globally-bad.example/x", ip="192.0.2.10")
    own_reason, _ = _scored_reason(api, "p-own", url="https://own-bad.example/x", ip="192.0.2.11")

    assert global_reason == "blocked_domain: The post links to a domain on a block list."
    assert "4711" not in body and "legal team" not in body
    # The same answer as the source's own list: the reason does not reveal the global list.
    assert own_reason == global_reason


def test_a_blocked_ip_reason_does_not_carry_the_address_or_the_note(api: ApiCaller) -> None:
    IpAddress.objects.create(address="192.0.2.77", status=ListStatus.BLOCK, status_reason=STAFF_NOTE)

    reason, body = _scored_reason(api, "p-ip", url="https://fine.example/x", ip="192.0.2.77")

    assert reason == "blocked_ip: The post was sent from an address on a block list."
    assert "192.0.2.77" not in reason
    assert "4711" not in body


def test_the_staff_note_stays_on_the_staff_page(api: ApiCaller) -> None:
    Domain.objects.create(name="globally-bad.example", status=ListStatus.BLOCK, status_reason=STAFF_NOTE)
    _scored_reason(api, "p-staff", url="https://globally-bad.example/x", ip="192.0.2.12")
    post = Post.objects.get(source=api.source, external_id="p-staff")

    page = client_for(UserFactory(role="moderator")).get(reverse("dashboard:post_detail", args=[post.pk]))

    assert page.status_code == 200 and STAFF_NOTE in page.content.decode()
