"""A security matrix generated from the URL conf, so a new view is covered the day it lands.

- every dashboard view sends anonymous users to the login page (or answers 403), answers 403 to
  a logged-in user without a role, and 403 to every role it does not allow;
- every API endpoint answers 401/403 to anonymous callers and to a dashboard session (the API
  takes API keys only), for every method;
- any other URL is refused to anonymous users unless it is listed in PUBLIC below;
- CSRF: every POST to a session-authenticated URL without a token is refused, and every
  rendered POST form carries the token;
- API keys are only ever stored hashed; throttling answers 429 with Retry-After;
- every API method declares the scope it needs, and a key without that scope gets 403
  `insufficient_scope` (a key without scopes can do nothing).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from django.apps import apps
from django.conf import settings
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.cache import cache
from django.db import models
from django.shortcuts import resolve_url
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from django.urls.resolvers import RoutePattern

from api.throttling import ApiKeyRateThrottle
from moderation.models import ALL_SCOPES, ApiKey
from moderation.permissions import Role
from moderation.services.api_keys import api_key_create
from tests.factories import PostFactory, SourceFactory

# URL names anyone may reach, each with the reason. A new public URL must be added here on
# purpose; anything else must refuse anonymous users.
PUBLIC = {
    "login": "the login form itself",
    "logout": "POST-only; logging out an anonymous user is harmless",
    "api-schema": "the OpenAPI schema documents the public API (no data)",
    "api-docs": "the API docs page renders the schema",
}
API_PREFIX = "api/v1/"
DASHBOARD_PREFIX = "dashboard/"
METHODS = ("get", "post", "put", "patch", "delete")
FORM_RE = re.compile(r"<form\b[^>]*>.*?</form>", re.S | re.I)


@dataclass(frozen=True)
class Route:
    route: str  # e.g. "dashboard/posts/<int:post_id>/"
    name: str | None
    callback: Any

    @property
    def id(self) -> str:
        return self.route or "<root>"

    def path(self, sample_int: int = 1) -> str:
        def fill(match: re.Match[str]) -> str:
            converter = match.group(1) or "str"
            return str(sample_int) if converter == "int" else "x"

        return "/" + re.sub(r"<(?:(\w+):)?(\w+)>", fill, self.route)

    @property
    def allowed_roles(self) -> frozenset[Role] | None:
        view_class = getattr(self.callback, "view_class", None)
        if view_class is not None:
            return getattr(view_class, "allowed_roles", None)
        return getattr(self.callback, "allowed_roles", None)


def _walk(resolver: URLResolver, prefix: str = "") -> Iterator[Route]:
    for entry in resolver.url_patterns:
        if isinstance(entry, URLResolver):
            route = prefix + str(entry.pattern)
            if route.startswith("admin/"):
                continue  # Django's admin: covered by test_admin_refuses_anonymous below
            yield from _walk(entry, route)
        elif isinstance(entry, URLPattern):
            if not isinstance(entry.pattern, RoutePattern):
                raise AssertionError(f"re_path {prefix}{entry.pattern}: give it a sample in this matrix")
            yield Route(prefix + str(entry.pattern), entry.name, entry.callback)


ROUTES = sorted(_walk(get_resolver()), key=lambda r: r.route)
DASHBOARD = [r for r in ROUTES if r.route.startswith(DASHBOARD_PREFIX)]
API = [r for r in ROUTES if r.route.startswith(API_PREFIX)]
OTHER = [r for r in ROUTES if r not in DASHBOARD and r not in API and r.name not in PUBLIC and r.route != ""]
SESSION_URLS = DASHBOARD + [r for r in ROUTES if r.name in ("login", "logout")]


def _ids(routes: list[Route]) -> list[str]:
    return [r.id for r in routes]


def _is_login_redirect(response: Any) -> bool:
    return response.status_code == 302 and response["Location"].startswith(resolve_url(settings.LOGIN_URL))


def _refused(response: Any) -> bool:
    """Login redirect, 403, or 405 (a method the view never serves: nothing is revealed)."""
    return _is_login_redirect(response) or response.status_code in (403, 405)


@pytest.fixture
def superuser() -> Any:
    return get_user_model().objects.create_superuser("matrix-admin", "matrix@example.org", "pw")


def _user_with(role: Role | None) -> Any:
    user = get_user_model().objects.create_user(f"matrix-{role or 'norole'}", password="pw")
    if role is not None:
        group, _ = Group.objects.get_or_create(name=role.value)
        user.groups.add(group)
    return user


def test_the_matrix_sees_the_url_conf() -> None:
    """Guards the walker itself: if it found nothing, every test below would pass vacuously."""
    assert API, "no /api/v1/ routes found"
    assert DASHBOARD, "no /dashboard/ routes found"


@pytest.mark.django_db
@pytest.mark.parametrize("route", DASHBOARD, ids=_ids(DASHBOARD))
@pytest.mark.parametrize("method", ["get", "post"])
def test_dashboard_refuses_anonymous(client: Client, route: Route, method: str) -> None:
    response = getattr(client, method)(route.path())
    assert _refused(response), f"{method.upper()} {route.path()} -> {response.status_code} for an anonymous user"


@pytest.mark.parametrize("route", DASHBOARD, ids=_ids(DASHBOARD))
def test_dashboard_view_declares_its_roles(route: Route) -> None:
    """Wrapped in moderation.permissions.role_required (or RoleRequiredMixin)."""
    assert route.allowed_roles, f"{route.id} is not wrapped in role_required / RoleRequiredMixin"


@pytest.mark.django_db
@pytest.mark.parametrize("route", DASHBOARD, ids=_ids(DASHBOARD))
def test_dashboard_refuses_users_without_the_role(client: Client, route: Route) -> None:
    allowed = route.allowed_roles or frozenset()
    refused: list[Role | None] = [None, *(role for role in Role if role not in allowed)]
    # An admin holds every role, so a role outside `allowed` never includes admin by design.
    for role in refused:
        if role is Role.ADMIN:
            continue
        client.force_login(_user_with(role))
        for method in ("get", "post"):
            response = getattr(client, method)(route.path())
            assert response.status_code in (403, 405), (
                f"{method.upper()} {route.path()} -> {response.status_code} for role {role or 'none'}"
            )
        client.logout()


@pytest.mark.django_db
@pytest.mark.parametrize("route", API, ids=_ids(API))
def test_api_refuses_anonymous_and_sessions(client: Client, superuser: Any, route: Route) -> None:
    for label in ("anonymous", "dashboard session"):
        if label == "dashboard session":
            client.force_login(superuser)
        for method in METHODS:
            response = getattr(client, method)(route.path(), content_type="application/json")
            assert response.status_code in (401, 403), (
                f"{method.upper()} {route.path()} ({label}) -> {response.status_code}"
            )
            assert response.json()["error"]["code"] in (
                "not_authenticated",
                "authentication_failed",
                "permission_denied",
            )


@pytest.mark.django_db
@pytest.mark.parametrize("route", API, ids=_ids(API))
def test_api_rejects_a_wrong_or_revoked_key(client: Client, route: Route) -> None:
    api_key, raw = api_key_create(source=SourceFactory(), name="revoked", scopes=ALL_SCOPES)
    ApiKey.objects.filter(pk=api_key.pk).update(revoked_at=api_key.created_at)
    for key in ("mk_00000000.not-a-key", raw):
        response = client.get(route.path(), HTTP_AUTHORIZATION=f"Api-Key {key}")
        assert response.status_code == 401, f"GET {route.path()} with a bad key -> {response.status_code}"


@pytest.mark.django_db
def test_other_urls_refuse_anonymous(client: Client) -> None:
    """URLs outside /dashboard/ and /api/v1/ (none today besides PUBLIC): refused unless public."""
    for route in OTHER:
        response = client.get(route.path())
        assert response.status_code in (401, 403) or _is_login_redirect(response), (
            f"{route.path()} (name {route.name!r}) answered {response.status_code} to an anonymous user; "
            "if it is meant to be public, add it to PUBLIC in tests/test_security_matrix.py with the reason"
        )


@pytest.mark.django_db
def test_public_urls_are_only_the_listed_ones(client: Client) -> None:
    """Every PUBLIC name still exists (a stale entry would silently widen the list)."""
    names = {r.name for r in ROUTES}
    assert set(PUBLIC) <= names, set(PUBLIC) - names


@pytest.mark.django_db
def test_admin_refuses_anonymous(client: Client) -> None:
    urls = [reverse("admin:index")]
    for model in admin.site._registry:
        info = (model._meta.app_label, model._meta.model_name)
        urls += [reverse(f"admin:{info[0]}_{info[1]}_changelist"), reverse(f"admin:{info[0]}_{info[1]}_add")]
    assert len(urls) > 1, "no model registered in the admin"
    for url in urls:
        response = client.get(url)
        assert response.status_code == 302 and reverse("admin:login") in response["Location"], url


@pytest.mark.django_db
@pytest.mark.parametrize("route", SESSION_URLS, ids=_ids(SESSION_URLS))
def test_csrf_token_required_on_every_session_post(superuser: Any, route: Route) -> None:
    client = Client(enforce_csrf_checks=True)
    if route.name != "login":
        client.force_login(superuser)
    response = client.post(route.path(), {"label": "spam"})
    assert response.status_code == 403, f"POST {route.path()} without a CSRF token -> {response.status_code}"


@pytest.mark.django_db
def test_admin_login_requires_csrf_token() -> None:
    client = Client(enforce_csrf_checks=True)
    response = client.post(reverse("admin:login"), {"username": "x", "password": "y"})
    assert response.status_code == 403


@pytest.mark.django_db
def test_every_rendered_post_form_carries_the_csrf_token(client: Client, superuser: Any) -> None:
    post = PostFactory()
    client.force_login(superuser)
    rendered = 0
    for route in DASHBOARD + [r for r in ROUTES if r.name == "login"]:
        response = client.get(route.path(sample_int=post.pk))
        if response.status_code != 200 or "html" not in response.get("Content-Type", ""):
            continue
        rendered += 1
        for form in FORM_RE.findall(response.content.decode()):
            if re.search(r'method\s*=\s*["\']?post', form, re.I):
                assert "csrfmiddlewaretoken" in form, f"{route.path()}: POST form without CSRF token:\n{form[:300]}"
    assert rendered >= 2, "expected at least the queue and a post detail page to render"


def _text_fields() -> Iterator[tuple[type[models.Model], str]]:
    for model in apps.get_models():
        for field in model._meta.concrete_fields:
            if isinstance(field, models.CharField | models.TextField | models.JSONField):
                yield model, field.name


@pytest.mark.django_db
def test_api_keys_are_only_stored_hashed(client: Client) -> None:
    source = SourceFactory()
    api_key, raw = api_key_create(source=source, name="hash check", scopes=ALL_SCOPES)
    secret = raw.rsplit(".", 1)[-1]
    # The key works, and using it must not write it anywhere either.
    response = client.get("/api/v1/posts/nothing-here", HTTP_AUTHORIZATION=f"Api-Key {raw}")
    assert response.status_code == 404
    api_key.refresh_from_db()
    assert api_key.hashed_key == hashlib.sha256(raw.encode()).hexdigest()
    assert secret not in api_key.prefix
    leaks = [
        f"{model.__name__}.{name}"
        for model, name in _text_fields()
        if model._default_manager.filter(**{f"{name}__contains": secret}).exists()
    ]
    assert leaks == [], f"the raw API key is stored in {leaks}"


@pytest.mark.django_db
def test_throttling_answers_429_with_retry_after(client: Client, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ApiKeyRateThrottle, "THROTTLE_RATES", {"api_key": "3/min"})
    api_key, raw = api_key_create(source=SourceFactory(), name="throttled", scopes=ALL_SCOPES)
    cache.delete(ApiKeyRateThrottle.cache_format % {"scope": "api_key", "ident": api_key.pk})
    statuses = [
        client.get("/api/v1/posts/nothing-here", HTTP_AUTHORIZATION=f"Api-Key {raw}").status_code for _ in range(3)
    ]
    assert statuses == [404, 404, 404]
    response = client.get("/api/v1/posts/nothing-here", HTTP_AUTHORIZATION=f"Api-Key {raw}")
    assert response.status_code == 429
    assert int(response["Retry-After"]) > 0
    assert response.json()["error"]["code"] == "throttled"
    # Another key of the same source has its own budget.
    _, other = api_key_create(source=api_key.source, name="other", scopes=ALL_SCOPES)
    assert client.get("/api/v1/posts/nothing-here", HTTP_AUTHORIZATION=f"Api-Key {other}").status_code == 404


def _scoped_methods(route: Route) -> list[tuple[str, str]]:
    """(method, required scope) for every method the API view serves."""
    view_class = route.callback.view_class
    declared = getattr(view_class, "required_scopes", {})
    return [(m, declared.get(m.upper(), "")) for m in METHODS if hasattr(view_class, m)]


@pytest.mark.parametrize("route", API, ids=_ids(API))
def test_api_view_declares_a_scope_for_every_method(route: Route) -> None:
    """api.permissions.HasScope refuses a method without a scope to every key; this
    names the view that forgot to declare one."""
    methods = _scoped_methods(route)
    assert methods, f"{route.id} serves no method"
    for method, scope in methods:
        assert scope in ALL_SCOPES, f"{method.upper()} {route.id} declares no scope in required_scopes"


@pytest.mark.django_db
@pytest.mark.parametrize("route", API, ids=_ids(API))
def test_api_refuses_a_key_without_the_scope(client: Client, route: Route) -> None:
    source = SourceFactory()
    for method, scope in _scoped_methods(route):
        _, lacking = api_key_create(source=source, name="lacking", scopes=[s for s in ALL_SCOPES if s != scope])
        _, holding = api_key_create(source=source, name="holding", scopes=[scope])
        refused = getattr(client, method)(route.path(), content_type="application/json", HTTP_X_API_KEY=lacking)
        assert refused.status_code == 403, f"{method.upper()} {route.path()} without {scope} -> {refused.status_code}"
        assert refused.json()["error"]["code"] == "insufficient_scope"
        served = getattr(client, method)(route.path(), content_type="application/json", HTTP_X_API_KEY=holding)
        assert served.status_code not in (401, 403), f"{method.upper()} {route.path()} with {scope} -> refused"


@pytest.mark.django_db
def test_a_key_without_scopes_can_do_nothing(client: Client) -> None:
    _, raw = api_key_create(source=SourceFactory(), name="empty", scopes=[])
    for route in API:
        for method, _ in _scoped_methods(route):
            response = getattr(client, method)(route.path(), content_type="application/json", HTTP_X_API_KEY=raw)
            assert response.status_code == 403, f"{method.upper()} {route.path()} -> {response.status_code}"
