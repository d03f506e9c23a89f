"""An author's strikes and restrictions over the API; another source's author is a 404."""

from __future__ import annotations

import pytest

from moderation.services.enforcement import EnforcementReason
from moderation.services.sanctions import post_hide
from moderation.services.strikes import author_warn
from tests.dashboard.dashboard_factories import UserFactory
from tests.scoring.pipeline_support import make_author, make_post

pytest_plugins = ["tests.moderation.api_fixtures"]
pytestmark = pytest.mark.django_db


def test_strikes_and_restrictions_of_an_author(api, other_api):
    mod = UserFactory(username="api-mod", role="moderator")
    author = make_author(api.source, external_id="u-5")
    post = make_post(author=author, external_id="p-5")
    author_warn(author=author, actor=mod, reason=EnforcementReason("scam", "secret note"), post=post)
    post_hide(post=post, actor=mod, reason=EnforcementReason("abuse"))
    response = api.get("/api/v1/sanctions", {"author_external_id": "u-5"})
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["author_external_id"] == "u-5"
    ((strike,), (hidden,)) = body["strikes"], body["restrictions"]
    assert (strike["category"], strike["reason_code"], strike["post_external_id"]) == ("scam", "scam", "p-5")
    assert strike["revoked_at"] is None and strike["expires_at"]
    assert (hidden["kind"], hidden["post_external_id"], hidden["lifted_at"]) == ("hide", "p-5", None)
    assert "secret note" not in response.content.decode()
    assert other_api.get("/api/v1/sanctions", {"author_external_id": "u-5"}).status_code == 404
    assert api.get("/api/v1/sanctions").status_code == 400


def test_an_author_without_any(api):
    make_author(api.source, external_id="u-clean")
    body = api.get("/api/v1/sanctions", {"author_external_id": "u-clean"}).json()
    assert (body["strikes"], body["restrictions"]) == ([], [])
