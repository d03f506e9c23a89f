"""Response headers and error pages: the dashboard's CSP allows only this site's files, the
headers `check --deploy` does not cover are sent, API errors are JSON even when Django answers
(DisallowedHost), and the HTML error pages show no internal detail."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from django.test import Client, override_settings
from django.urls import reverse

from tests.dashboard.dashboard_factories import UserFactory

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def admin_client(db: Any) -> Client:
    client = Client()
    client.force_login(UserFactory(username="u-admin", role="admin"))
    return client


def csp(response: Any) -> dict[str, list[str]]:
    header = response["Content-Security-Policy"]
    return {d.split()[0]: d.split()[1:] for d in (p.strip() for p in header.split(";")) if d}


@pytest.mark.parametrize("page", ["dashboard:queue", "dashboard:audit", "dashboard:metrics", "feedback:datasets"])
def test_dashboard_pages_send_a_self_only_csp_and_the_other_headers(admin_client: Client, page: str) -> None:
    response = admin_client.get(reverse(page))
    assert response.status_code == 200
    policy = csp(response)
    assert policy["script-src"] == ["'self'"] and policy["style-src"] == ["'self'"]
    assert policy["default-src"] == ["'self'"] and policy["object-src"] == ["'none'"]
    assert policy["frame-ancestors"] == ["'none'"]
    assert response["Referrer-Policy"] == "same-origin"
    assert response["Cross-Origin-Opener-Policy"] == "same-origin"
    assert response["X-Content-Type-Options"] == "nosniff"
    assert "camera=()" in response["Permissions-Policy"]
    # What the policy forbids is not in the page: no inline script, style block or attribute.
    html = response.content.decode()
    assert not re.search(r"<script(?![^>]*\bsrc=)", html)
    assert "<style" not in html and " style=" not in html
    assert not re.search(r"\son[a-z]+=", html)


def test_no_template_has_inline_script_or_style() -> None:
    for path in (ROOT / "templates").rglob("*.html"):
        text = path.read_text()
        assert not re.search(r"<script(?![^>]*\bsrc=)", text), path
        assert "<style" not in text and " style=" not in text, path


@pytest.mark.django_db
def test_a_disallowed_host_on_an_api_path_is_a_json_400() -> None:
    response = Client().get("/api/v1/posts/p-1", HTTP_HOST="evil.example")
    assert response.status_code == 400
    assert response["Content-Type"] == "application/json"
    assert response.json()["error"]["code"] == "bad_request"


@pytest.mark.django_db
def test_a_disallowed_host_on_a_page_is_the_styled_400_page() -> None:
    response = Client().get("/dashboard/", HTTP_HOST="evil.example")
    assert response.status_code == 400
    assert b"Bad request" in response.content and b"dashboard/app.css" in response.content


@pytest.mark.django_db
@pytest.mark.parametrize(("path", "code"), [("/no/such/page/", 404), ("/api/v1/no-such-endpoint", 404)])
def test_a_missing_page_shows_no_url_patterns(path: str, code: int) -> None:
    response = Client().get(path)
    assert response.status_code == code
    assert b"URLconf" not in response.content and b"urlpatterns" not in response.content


def test_the_500_page_is_styled_and_says_nothing_internal() -> None:
    from django.test import RequestFactory

    from config.views import server_error

    page = server_error(RequestFactory().get("/dashboard/")).content.decode()
    assert "Something went wrong" in page and "dashboard/app.css" in page
    assert "Traceback" not in page and "SECRET_KEY" not in page


def test_the_local_settings_leave_debug_off_unless_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib

    monkeypatch.delenv("DEBUG", raising=False)
    from config.settings import local

    assert importlib.reload(local).DEBUG is False
    monkeypatch.setenv("DEBUG", "1")
    assert importlib.reload(local).DEBUG is True


@override_settings(DEBUG=False)
@pytest.mark.django_db
def test_the_api_docs_page_loads_its_script_from_a_file(admin_client: Client) -> None:
    response = admin_client.get(reverse("api-docs"))
    assert response.status_code == 200
    assert not re.search(r"<script(?![^>]*\bsrc=)", response.content.decode())
    assert "'unsafe-inline'" in csp(response)["style-src"] and csp(response)["script-src"] == ["'self'"]
