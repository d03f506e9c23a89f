"""Campaigns end to end: API ingest, a real Celery worker, the real Triton with the tiny models.
Five near-copies of one offer from five new authors, each with its own domain and IP, come back
from the API with one campaign id."""

from __future__ import annotations

import pytest

from tests.integration.conftest import wait_until
from tests.integration.test_pipeline_e2e import SCORED_TIMEOUT, all_scored, payload

pytestmark = pytest.mark.integration

COPIES = [
    "Congratulations! You have won a 1000 pound voucher. Call 09061743811 now to claim at www.win-big.com",
    "Congratulations!! You have won a 2000 pound voucher. Call 09061743999 now to claim at http://prize.biz/x",
    "congratulations you have won a 500 pound voucher, call 0800 now to claim at www.claim-now.net",
    "Congratulations! You won have a 1000 pound voucher. Call 09061743811 today to claim at www.win-big.com",
    "CONGRATULATIONS! You have won a 1000 pound gift voucher. Call 09061743811 now to claim!",
]
OTHER = "Are we still meeting for lunch tomorrow at the station? Let me know by tonight please"


def _ingest(api, n: int, text: str) -> tuple[int, str]:
    body = payload(
        n,
        text=text,
        url=f"https://offer{n}.example{n}.com/claim",
        author={"external_id": f"new-author-{n}", "account_created_at": "2026-11-20T08:00:00Z"},
        ip=f"203.0.113.{n + 1}",
    )
    response = api.post("posts", body)
    assert response.status_code == 201, response.content
    return response.json()["id"], body["external_id"]


def test_five_near_copies_from_five_new_authors_share_a_campaign_id(api, worker):
    posts = [_ingest(api, n, text) for n, text in enumerate(COPIES)]
    other = _ingest(api, 9, OTHER)
    ids = [pk for pk, _ in [*posts, other]]
    wait_until(lambda: all_scored(ids), timeout=SCORED_TIMEOUT, message=f"6 posts scored\n{worker.log_tail()}")
    bodies = [api.client.get(f"/api/v1/posts/{external_id}").json() for _, external_id in posts]
    campaigns = [body["campaign"] for body in bodies]
    assert campaigns[0] is not None, bodies[0]
    assert {c["id"] for c in campaigns} == {campaigns[0]["id"]}
    # Counts as of the newest member's reading: all five, from five authors.
    assert (campaigns[0]["member_count"], campaigns[0]["author_count"]) == (5, 5)
    assert api.client.get(f"/api/v1/posts/{other[1]}").json()["campaign"] is None
