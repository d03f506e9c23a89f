"""Django admin of the moderation models: pages load, key actions work, audit is read-only."""

from __future__ import annotations

import re

import pytest
from django.contrib import admin
from django.contrib.messages import get_messages
from django.urls import reverse

from moderation.models import ApiKey, AuditLog, Decision
from moderation.services.api_keys import hash_key
from tests.factories import (
    AuditLogFactory,
    DecisionFactory,
    DomainFactory,
    IpAddressFactory,
    LinkFactory,
    PostFactory,
    ReportFactory,
    SourceFactory,
    UserFactory,
    api_key_with_row,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff_client(client):
    user = UserFactory(is_staff=True, is_superuser=True)
    client.force_login(user)
    return client


def test_every_moderation_model_is_registered():
    from django.apps import apps

    models = set(apps.get_app_config("moderation").get_models())
    assert models <= set(admin.site._registry)


def test_changelists_and_change_pages_load(staff_client, django_assert_max_num_queries):
    post = PostFactory(link=LinkFactory(), ip=IpAddressFactory())
    ReportFactory(post=post)
    DecisionFactory(post=post)
    AuditLogFactory()
    api_key_with_row(post.source)
    for model in admin.site._registry:
        if model._meta.app_label != "moderation":
            continue
        url = reverse(f"admin:moderation_{model._meta.model_name}_changelist")
        with django_assert_max_num_queries(20):
            response = staff_client.get(url)
        assert response.status_code == 200, url
        obj = model._default_manager.first()
        if obj is not None:
            change = reverse(f"admin:moderation_{model._meta.model_name}_change", args=[obj.pk])
            assert staff_client.get(change).status_code == 200, change
    search = staff_client.get(reverse("admin:moderation_post_changelist"), {"q": post.external_id})
    assert search.status_code == 200 and post.external_id in search.content.decode()


def test_a_key_is_created_with_its_scopes_and_shown_once(staff_client):
    source = SourceFactory()
    response = staff_client.post(
        reverse("admin:moderation_source_changelist"),
        {"action": "create_api_key", "_selected_action": [source.pk]},
    )
    assert response.status_code == 302 and response["Location"].endswith(f"?source={source.pk}")
    add_url = reverse("admin:moderation_apikey_add")
    assert staff_client.get(response["Location"]).status_code == 200
    response = staff_client.post(add_url, {"source": source.pk, "name": "ingest only", "scopes": ["posts:write"]})
    assert response.status_code == 302, response.content.decode()[:2000]
    text = " ".join(str(m) for m in get_messages(response.wsgi_request))
    shown = re.search(r"(mk_[0-9a-f]{8}\.\S+)", text)
    assert shown is not None
    raw = shown.group(1)
    key = ApiKey.objects.get(source=source)
    assert key.hashed_key == hash_key(raw) and key.scopes == ["posts:write"]
    staff_client.get(reverse("admin:moderation_source_changelist"))  # the message is displayed once here
    change_url = reverse("admin:moderation_apikey_change", args=[key.pk])
    page = staff_client.get(change_url).content.decode()
    assert raw not in page and key.prefix in page and "posts:write" in page

    # Scopes stay editable; the key keeps its secret and its source.
    response = staff_client.post(change_url, {"name": "ingest and read", "scopes": ["posts:write", "read"]})
    assert response.status_code == 302
    key.refresh_from_db()
    assert key.scopes == ["posts:write", "read"] and key.hashed_key == hash_key(raw) and key.source == source


def test_revoke_action(staff_client):
    key, _ = api_key_with_row()
    response = staff_client.post(
        reverse("admin:moderation_apikey_changelist"), {"action": "revoke", "_selected_action": [key.pk]}
    )
    assert response.status_code == 302
    key.refresh_from_db()
    assert key.revoked_at is not None


def test_decisions_and_audit_log_are_read_only(staff_client):
    decision = DecisionFactory()
    entry = AuditLogFactory()
    assert staff_client.get(reverse("admin:moderation_decision_add")).status_code == 403
    assert staff_client.get(reverse("admin:moderation_auditlog_add")).status_code == 403
    for name, obj in (("decision", decision), ("auditlog", entry)):
        url = reverse(f"admin:moderation_{name}_delete", args=[obj.pk])
        assert staff_client.post(url, {"post": "yes"}).status_code == 403
    assert Decision.objects.count() == 1 and AuditLog.objects.count() == 1


def test_a_global_block_in_the_admin_is_audited_and_never_a_public_suffix(staff_client):
    from moderation.models import AuditLog, Domain, ListStatus

    domain = DomainFactory(name="spam-kit.com")
    url = reverse("admin:moderation_domain_change", args=[domain.pk])
    form = {"name": "spam-kit.com", "status": "block", "status_reason": "kit", "post_count": 0}
    form |= {"spam_count": 0, "report_count": 0}
    assert staff_client.post(url, form).status_code == 302
    domain.refresh_from_db()
    assert (domain.status, domain.status_reason) == (ListStatus.BLOCK, "kit")
    entry = AuditLog.objects.get(action="domain.block")
    assert entry.actor is not None and entry.after["name"] == "spam-kit.com"

    suffix = DomainFactory(name="co.uk")
    refused = staff_client.post(reverse("admin:moderation_domain_change", args=[suffix.pk]), {**form, "name": "co.uk"})
    assert refused.status_code == 200 and "public suffix" in refused.content.decode()
    assert Domain.objects.get(pk=suffix.pk).status == ListStatus.UNKNOWN
