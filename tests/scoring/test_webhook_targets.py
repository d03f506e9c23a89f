"""Where webhooks may go (core.webhook_targets): checked when a callback URL is saved and
again at delivery, the connection pinned to the checked address (no DNS rebinding), TLS
verified against the URL's host, a secret required, and no receiver body kept."""

from __future__ import annotations

import http.server
import socket
import ssl
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.urls import reverse

from core.webhook_targets import UnsafeWebhookTarget, webhook_target
from moderation.models import PostStatus, Source
from scoring.models import WebhookDelivery
from scoring.services.webhooks import WebhookDeliveryFailed, webhook_deliver, webhook_enqueue_for_decision
from tests.scoring.pipeline_support import make_post, make_source
from tests.scoring.webhook_receiver import start_receiver

PUBLIC = "93.184.216.34"
REFUSED_URLS = [
    "ftp://hooks.example.com/x",
    "file:///etc/passwd",
    "http://hooks.example.com/x",  # plain http
    "https://127.0.0.1/x",
    "https://[::1]/x",
    "https://169.254.169.254/latest/meta-data/",
    "https://10.1.2.3/x",
    "https://192.168.0.10/x",
    "https://172.16.5.4/x",
    "https://100.64.0.1/x",
    "https://[fd00::1]/x",
    "https://[fe80::1]/x",
    "https://[::ffff:127.0.0.1]/x",
    "https://0.0.0.0/x",
    "https://224.0.0.1/x",
    "https://user:pw@hooks.example.com/x",
]


@pytest.fixture
def resolve_to(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Make host names resolve to the given addresses (the answers a DNS server would give)."""
    answers: dict[str, list[list[str]]] = {}
    calls: list[str] = []
    real = socket.getaddrinfo

    def fake(host: str, port: int, *args: Any, **kwargs: Any) -> list[tuple[Any, ...]]:
        if host not in answers:
            return real(host, port, *args, **kwargs)
        calls.append(host)
        queue = answers[host]
        addresses = queue.pop(0) if len(queue) > 1 else queue[0]
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, port)) for a in addresses]

    monkeypatch.setattr(socket, "getaddrinfo", fake)

    def set_answers(host: str, *rounds: list[str]) -> list[str]:
        answers[host] = list(rounds)
        return calls

    return set_answers


@pytest.mark.parametrize("url", REFUSED_URLS)
def test_production_refuses_unsafe_callback_urls(url: str, resolve_to: Any) -> None:
    resolve_to("hooks.example.com", [PUBLIC])
    with pytest.raises(UnsafeWebhookTarget):
        webhook_target(url, allow_private=False)


# IPv6 addresses that carry a private IPv4 address, which a network with NAT64, 6to4, Teredo or
# IPv4-compatible routing delivers to it (169.254.169.254 is the cloud metadata service).
EMBEDDED_PRIVATE = [
    "64:ff9b::a9fe:a9fe",  # NAT64, well-known prefix
    "64:ff9b::a00:1",  # NAT64 of 10.0.0.1
    "64:ff9b:1:a9fe:a9:fe00::",  # NAT64 local use, /48 layout (RFC 6052)
    "64:ff9b:1::a9fe:a9fe",  # NAT64 local use, a /96 inside it
    "2002:a9fe:a9fe::1",  # 6to4
    "2002:7f00:1::1",  # 6to4 of 127.0.0.1
    "::a9fe:a9fe",  # IPv4-compatible
    "2001:0:4136:e378:8000:63bf:5601:5601",  # Teredo, client 169.254.169.254 (inverted)
    "2001:0:a9fe:a9fe:8000:63bf:3fff:fdd2",  # Teredo, server 169.254.169.254
]


@pytest.mark.parametrize("address", EMBEDDED_PRIVATE)
def test_an_ipv6_address_carrying_a_private_ipv4_address_is_refused(address: str, resolve_to: Any) -> None:
    with pytest.raises(UnsafeWebhookTarget, match="not a public address"):
        webhook_target(f"https://[{address}]/x", allow_private=False)
    resolve_to("sneaky.example.com", [address])
    with pytest.raises(UnsafeWebhookTarget, match="not a public address"):
        webhook_target("https://sneaky.example.com/x", allow_private=False)


@pytest.mark.parametrize("address", ["2606:4700:4700::1111", "2a00:1450:4001:80b::200e", "64:ff9b::808:808"])
def test_a_public_ipv6_address_is_accepted(address: str) -> None:
    target = webhook_target(f"https://[{address}]/x", allow_private=False)
    assert target.address == address and target.host == address


def test_a_name_with_one_private_answer_is_refused(resolve_to: Any) -> None:
    resolve_to("mixed.example.com", [PUBLIC, "10.0.0.7"])
    with pytest.raises(UnsafeWebhookTarget, match=r"10\.0\.0\.7"):
        webhook_target("https://mixed.example.com/x", allow_private=False)


def test_a_public_https_target_is_accepted_and_pinned(resolve_to: Any) -> None:
    resolve_to("hooks.example.com", [PUBLIC])
    target = webhook_target("https://hooks.example.com:8443/in?x=1", allow_private=False)
    assert (target.address, target.port, target.path, target.host_header) == (
        PUBLIC,
        8443,
        "/in?x=1",
        "hooks.example.com:8443",
    )


def test_local_runs_allow_loopback_and_http_but_never_other_schemes() -> None:
    assert webhook_target("http://127.0.0.1:9/x", allow_private=True).address == "127.0.0.1"
    with pytest.raises(UnsafeWebhookTarget):
        webhook_target("ftp://127.0.0.1/x", allow_private=True)


@pytest.mark.django_db
def test_saving_a_source_checks_the_url_and_requires_a_secret(settings: Any, client: Any) -> None:
    settings.WEBHOOK_ALLOW_PRIVATE_TARGETS = False
    source = Source(name="S", slug="s", callback_url="https://169.254.169.254/latest", webhook_secret="")
    with pytest.raises(ValidationError) as caught:
        source.full_clean()
    assert set(caught.value.message_dict) == {"callback_url", "webhook_secret"}

    # The admin form refuses it too, and nothing is stored.
    root = get_user_model().objects.create_superuser("root", "root@example.org", "pw")
    client.force_login(root)
    response = client.post(
        reverse("admin:moderation_source_add"),
        {
            "name": "Metadata",
            "slug": "metadata",
            "is_active": "on",
            "callback_url": "http://169.254.169.254/latest/meta-data/",
            "webhook_secret": "",
            "created_at_0": "2026-01-01",
            "created_at_1": "00:00:00",
            "api_keys-TOTAL_FORMS": "0",
            "api_keys-INITIAL_FORMS": "0",
        },
    )
    assert response.status_code == 200 and not Source.objects.filter(slug="metadata").exists()
    assert "Required with a callback URL" in response.content.decode()


@pytest.fixture
def receiver() -> Iterator[Any]:
    rec, server = start_receiver(8253)
    yield rec
    server.shutdown()
    server.server_close()


def _delivery(callback_url: str, secret: str = "k") -> WebhookDelivery:  # noqa: S107
    source = make_source(callback_url=callback_url, webhook_secret=secret)
    delivery = webhook_enqueue_for_decision(make_post(source=source, status=PostStatus.REMOVED))
    assert delivery is not None
    return delivery


@pytest.mark.django_db
def test_delivery_checks_again_and_refuses_a_name_that_now_resolves_inside(
    settings: Any, receiver: Any, resolve_to: Any
) -> None:
    """Saved while it pointed outside; the name now answers loopback: nothing is sent."""
    settings.WEBHOOK_ALLOW_PRIVATE_TARGETS = False
    settings.WEBHOOK_MAX_ATTEMPTS = 1
    resolve_to("hooks.example.com", ["127.0.0.1"])
    delivery = _delivery("https://hooks.example.com:8253/hooks/moderation")
    webhook_deliver(delivery_id=delivery.pk)
    delivery.refresh_from_db()
    assert delivery.status == WebhookDelivery.Status.FAILED
    assert delivery.last_error.startswith("refused target") and delivery.last_status_code is None
    assert receiver.received == []


@pytest.mark.django_db
def test_delivery_connects_to_the_address_it_checked(receiver: Any, resolve_to: Any) -> None:
    """DNS rebinding: the first answer is checked and used; a second, different answer is
    never asked for, so it cannot redirect the connection."""
    calls = resolve_to("rebind.test", ["127.0.0.1"], ["10.255.255.1"])
    delivery = _delivery(f"http://rebind.test:{receiver.port}/hooks/moderation")
    webhook_deliver(delivery_id=delivery.pk)
    (got,) = receiver.wait_for(1)
    assert got.headers["Host"] == f"rebind.test:{receiver.port}"
    assert calls == ["rebind.test"]


@pytest.mark.django_db
def test_no_secret_means_nothing_is_sent(receiver: Any) -> None:
    delivery = _delivery(receiver.url, secret="")
    webhook_deliver(delivery_id=delivery.pk)
    delivery.refresh_from_db()
    assert delivery.status == WebhookDelivery.Status.FAILED and delivery.last_error == "source has no webhook secret"
    assert receiver.received == []


@pytest.mark.django_db
def test_only_the_status_code_of_a_failed_answer_is_kept(settings: Any, receiver: Any) -> None:
    settings.WEBHOOK_MAX_ATTEMPTS = 2
    receiver.status = 500
    delivery = _delivery(receiver.url)
    with pytest.raises(WebhookDeliveryFailed):
        webhook_deliver(delivery_id=delivery.pk)
    delivery.refresh_from_db()
    assert (delivery.last_error, delivery.last_status_code) == ("HTTP 500", 500)


# --- https: pinned to the checked address, certificate verified for the URL's host -----------


@pytest.fixture(scope="module")
def tls_receiver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, Path, list[str]]]:
    """An https receiver on 127.0.0.1 with a self-signed certificate for hooks.test."""
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        [
            "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
            "-keyout", str(key), "-out", str(cert), "-subj", "/CN=hooks.test",
            "-addext", "subjectAltName=DNS:hooks.test",
        ],
        check=True,
        capture_output=True,
    )  # fmt: skip
    hosts: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            hosts.append(self.headers.get("Host", ""))
            self.send_response(204)
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1], cert, hosts
    server.shutdown()
    server.server_close()


@pytest.mark.django_db
def test_https_delivery_verifies_the_certificate_for_the_urls_host(
    settings: Any, tls_receiver: tuple[int, Path, list[str]], resolve_to: Any
) -> None:
    port, cert, hosts = tls_receiver
    settings.WEBHOOK_CA_BUNDLE = str(cert)
    settings.WEBHOOK_MAX_ATTEMPTS = 1
    resolve_to("hooks.test", ["127.0.0.1"])
    resolve_to("impostor.test", ["127.0.0.1"])

    good = _delivery(f"https://hooks.test:{port}/in")
    webhook_deliver(delivery_id=good.pk)
    good.refresh_from_db()
    assert good.status == WebhookDelivery.Status.DELIVERED, good.last_error
    assert hosts == [f"hooks.test:{port}"]

    # Same address, another name: the certificate does not match it, nothing is delivered.
    bad = _delivery(f"https://impostor.test:{port}/in")
    webhook_deliver(delivery_id=bad.pk)
    bad.refresh_from_db()
    assert bad.status == WebhookDelivery.Status.FAILED and "SSL" in bad.last_error
    assert hosts == [f"hooks.test:{port}"]


@pytest.mark.django_db
def test_create_source_checks_the_callback_and_issues_a_secret(settings: Any, capsys: Any) -> None:
    from django.core.management import CommandError, call_command

    settings.WEBHOOK_ALLOW_PRIVATE_TARGETS = False
    with pytest.raises(CommandError, match="callback_url"):
        call_command("create_source", "Metadata", "metadata", "--callback-url", "ftp://files.example.com/x")
    assert not Source.objects.filter(slug="metadata").exists()
    settings.WEBHOOK_ALLOW_PRIVATE_TARGETS = True
    call_command("create_source", "Local", "local", "--callback-url", "http://127.0.0.1:9/hook")
    secret = Source.objects.get(slug="local").webhook_secret
    assert len(secret) >= 32 and secret in capsys.readouterr().err
