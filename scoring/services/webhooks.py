"""Decision webhooks: when a post gets an automatic or a moderator decision, its source's
callback URL receives a signed JSON event.

Signing (documented for integrators):
    body       = the raw request body (UTF-8 JSON)
    timestamp  = unix seconds at send time
    signature  = hex(HMAC-SHA256(key=source.webhook_secret, msg=f"{timestamp}.{body}"))
    header     X-Moderation-Signature: t=<timestamp>,v1=<signature>
Receivers recompute the HMAC, compare in constant time and reject timestamps older than a few
minutes (replay protection); `verify_signature` does exactly that. Each event has a unique id
(X-Moderation-Event-Id, also in the body) so receivers can drop the duplicates that
at-least-once delivery implies.

An undone decision (moderation.services.bulk.bulk_undo) sends the same event type with the
restored status - whatever it is, `queued` included - and `data.undo` set, so a platform that
hid a post on the moderator's word shows it again.

Besides decisions, three event types concern no single decision: `enforcement` (an author
warned, limited, suspended or trusted, a post hidden pending review, a domain or IP blocked or
trusted, or any of them lifted; `data` names the target, the action, the reason code and note
and the expiry), `appeal.decided` (an appeal upheld or overturned) and `statement_of_reasons`
(the statement of a restriction, `data.statement.dsa` in the fields of the EU DSA transparency
database: docs/statements-of-reasons.md). All are signed and delivered the same way
(webhook_enqueue_event).

Delivery never blocks scoring: rows are written in the scoring transaction, the HTTP POST
happens in the deliver_webhook task (defined at the end of this module) after commit, with short timeouts and backoff.

Every attempt checks the callback URL again (core.webhook_targets: https, public addresses
only) and connects to the very address it checked, so a DNS answer that changed since (DNS
rebinding) cannot aim the worker at an internal service. A source without a webhook secret
is never sent to: an empty key would sign with nothing. Only the status code is kept from the
receiver's answer, never its body."""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import time
from collections.abc import Iterable
from typing import Any

import certifi
import urllib3
from celery import shared_task
from django.conf import settings
from django.db import InterfaceError, OperationalError, transaction
from django.utils import timezone

from core.metrics import WEBHOOK_FAILURES
from core.webhook_targets import UnsafeWebhookTarget, WebhookTarget, webhook_target
from moderation.models import BulkAction, Decision, Post, PostStatus, Source
from scoring.models import WebhookDelivery

logger = logging.getLogger(__name__)

SIGNATURE_HEADER = "X-Moderation-Signature"
EVENT_ID_HEADER = "X-Moderation-Event-Id"
EVENT_TYPE_HEADER = "X-Moderation-Event"
EVENT_DECISION = "post.decision"
DECISION_STATUSES = frozenset(
    {PostStatus.AUTO_REMOVED, PostStatus.AUTO_APPROVED, PostStatus.REMOVED, PostStatus.APPROVED}
)
AUTOMATIC_STATUSES = frozenset({PostStatus.AUTO_REMOVED, PostStatus.AUTO_APPROVED})


class WebhookDeliveryFailed(Exception):
    """A delivery attempt failed but may succeed later (retried with backoff)."""


# --- Signing -----------------------------------------------------------------------------------


def sign(*, secret: str, body: bytes, timestamp: int) -> str:
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={mac}"


def verify_signature(
    *, secret: str, header: str, body: bytes, tolerance_s: int = 300, now: float | None = None
) -> bool:
    """True when `header` is a valid signature of `body` made within `tolerance_s`."""
    try:
        parts = dict(item.split("=", 1) for item in header.split(","))
        timestamp = int(parts["t"])
        given = parts["v1"]
    except (KeyError, ValueError):
        return False
    current = time.time() if now is None else now
    if abs(current - timestamp) > tolerance_s:
        return False
    expected = sign(secret=secret, body=body, timestamp=timestamp).split("v1=", 1)[1]
    return hmac.compare_digest(expected, given)


def encode_body(payload: dict[str, Any]) -> bytes:
    return json.dumps(payload, separators=(",", ":"), sort_keys=True).encode()


# --- Enqueueing --------------------------------------------------------------------------------


def _event_id(post: Post) -> str:
    # Deterministic per (post, status, change time): enqueueing the same decision twice (a task
    # re-run) hits the unique event_id instead of sending a second event.
    raw = f"{post.pk}:{post.status}:{post.status_changed_at.isoformat()}"
    return "evt_" + hashlib.sha256(raw.encode()).hexdigest()[:32]


def _payload(post: Post, event_id: str, decision: Decision | None) -> dict[str, Any]:
    data: dict[str, Any] = {
        "post": {
            "id": post.pk,
            "external_id": post.external_id,
            "status": post.status,
            "final_score": post.final_score,
            "category_scores": post.category_scores,
            "model_version": post.model_version,
            "report_count": post.report_count,
            "status_changed_at": post.status_changed_at.isoformat(),
            # Near-copies of the post in the same source share it (scoring.services.campaigns).
            "campaign_id": post.campaign_id,
        },
        "automatic": post.status in AUTOMATIC_STATUSES,
    }
    if decision is not None:
        data["decision"] = {
            "label": decision.label,
            "reason_code": decision.reason_code,
            "category": decision.category,
            "created_at": decision.created_at.isoformat(),
        }
    return {"id": event_id, "type": EVENT_DECISION, "created": timezone.now().isoformat(), "data": data}


def webhooks_enqueue_for_posts(posts: Iterable[Post]) -> list[WebhookDelivery]:
    """Delivery rows for the posts whose source has a callback URL and whose status is a
    decision; the POSTs are sent by the deliver_webhook task after the transaction commits.
    Expects post.source loaded (select_related) to stay at two queries for any batch."""
    return _enqueue_rows([_row(post) for post in posts if post.status in DECISION_STATUSES])


def webhooks_enqueue_for_undo(
    posts: Iterable[Post], *, bulk_action: BulkAction | None, decision_ids: Iterable[int] = ()
) -> list[WebhookDelivery]:
    """Delivery rows telling each post's platform that a moderator's decision (one, or a bulk
    action's) was undone and the post is back in its restored status (call inside the undo's
    transaction, after the statuses were restored). Expects post.source loaded, like
    webhooks_enqueue_for_posts."""
    undone_at = bulk_action.undone_at if bulk_action is not None else None
    undo = {
        "bulk_action_id": bulk_action.pk if bulk_action is not None else None,
        "decision_ids": sorted(decision_ids),
        "undone_at": (undone_at or timezone.now()).isoformat(),
    }
    return _enqueue_rows([_row(post, undo=undo) for post in posts])


def _row(post: Post, *, undo: dict[str, Any] | None = None) -> WebhookDelivery | None:
    if not post.source.callback_url:
        return None
    event_id = _event_id(post)
    payload = _payload(post, event_id, None)
    if undo is not None:
        payload["data"]["undo"] = undo
    return WebhookDelivery(
        source_id=post.source_id, post=post, event_id=event_id, event_type=EVENT_DECISION, payload=payload
    )


def _enqueue_rows(candidates: Iterable[WebhookDelivery | None]) -> list[WebhookDelivery]:
    rows = [row for row in candidates if row is not None]
    if not rows:
        return []
    WebhookDelivery.objects.bulk_create(rows, ignore_conflicts=True)
    created = list(
        WebhookDelivery.objects.filter(
            event_id__in=[r.event_id for r in rows], status=WebhookDelivery.Status.PENDING, attempts=0
        )
    )
    _deliver_on_commit([d.pk for d in created])
    return created


def webhook_enqueue_for_decision(post: Post, *, decision: Decision | None = None) -> WebhookDelivery | None:
    """For the dashboard: call after a moderator decision changed the post's status (inside
    its transaction). Returns None when the source has no callback URL."""
    if post.status not in DECISION_STATUSES or not post.source.callback_url:
        return None
    event_id = _event_id(post)
    delivery, created = WebhookDelivery.objects.get_or_create(
        event_id=event_id,
        defaults={
            "source_id": post.source_id,
            "post": post,
            "event_type": EVENT_DECISION,
            "payload": _payload(post, event_id, decision),
        },
    )
    if created:
        _deliver_on_commit([delivery.pk])
    return delivery


EVENT_ENFORCEMENT = "enforcement"
EVENT_APPEAL = "appeal.decided"


def webhook_enqueue_event(
    *, sources: Iterable[Source], event_type: str, key: str, data: dict[str, Any], post: Post | None = None
) -> list[WebhookDelivery]:
    """One signed event to each of `sources` that has a callback URL: an enforcement (suspend,
    block, allow and their lifting) or an appeal's outcome. `key` identifies the occurrence (an
    audit entry's id): enqueueing it twice sends one event per source. Call inside the
    transaction that made the change."""
    rows = []
    for source in sources:
        if not source.callback_url:
            continue
        event_id = "evt_" + hashlib.sha256(f"{event_type}:{key}:{source.pk}".encode()).hexdigest()[:32]
        payload = {"id": event_id, "type": event_type, "created": timezone.now().isoformat(), "data": data}
        rows.append(
            WebhookDelivery(source_id=source.pk, post=post, event_id=event_id, event_type=event_type, payload=payload)
        )
    return _enqueue_rows(rows)


def _deliver_on_commit(delivery_ids: list[int]) -> None:
    if not delivery_ids:
        return

    def send() -> None:
        for delivery_id in delivery_ids:
            try:
                deliver_webhook.delay(delivery_id)
            except Exception:  # broker down: the row stays pending; the sweeper re-sends
                logger.warning("scoring.webhook_enqueue_failed delivery_id=%s", delivery_id, exc_info=True)

    transaction.on_commit(send)


@transaction.atomic
def webhook_retry(*, delivery: WebhookDelivery) -> WebhookDelivery:
    """Admin action: send a failed (or stuck) delivery again."""
    delivery.status = WebhookDelivery.Status.PENDING
    delivery.last_error = ""
    delivery.save(update_fields=["status", "last_error"])
    _deliver_on_commit([delivery.pk])
    return delivery


# --- Delivering --------------------------------------------------------------------------------


def webhook_deliver(*, delivery_id: int) -> WebhookDelivery:
    """One attempt. Raises WebhookDeliveryFailed while attempts remain so the task retries with
    backoff; marks the row FAILED after WEBHOOK_MAX_ATTEMPTS."""
    delivery = WebhookDelivery.objects.select_related("source").get(pk=delivery_id)
    if delivery.status != WebhookDelivery.Status.PENDING:
        return delivery
    source = delivery.source
    if not source.callback_url:
        delivery.status = WebhookDelivery.Status.FAILED
        delivery.last_error = "source has no callback_url"
        delivery.save(update_fields=["status", "last_error"])
        return delivery

    if not source.webhook_secret:
        delivery.status = WebhookDelivery.Status.FAILED
        delivery.last_error = "source has no webhook secret"
        delivery.save(update_fields=["status", "last_error"])
        return delivery

    body = encode_body(delivery.payload)
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "moderation-webhooks/1",
        EVENT_ID_HEADER: delivery.event_id,
        EVENT_TYPE_HEADER: delivery.event_type,
        SIGNATURE_HEADER: sign(secret=source.webhook_secret, body=body, timestamp=int(time.time())),
    }
    status_code: int | None = None
    error = ""
    try:
        target = webhook_target(source.callback_url, allow_private=settings.WEBHOOK_ALLOW_PRIVATE_TARGETS)
        status_code = _post(target, body=body, headers=headers)
        if not 200 <= status_code < 300:
            error = f"HTTP {status_code}"
    except UnsafeWebhookTarget as exc:
        error = f"refused target: {exc}"[:500]
    except (urllib3.exceptions.HTTPError, OSError) as exc:
        error = f"{type(exc).__name__}"

    delivery.attempts += 1
    if error:
        WEBHOOK_FAILURES.inc()
    delivery.last_status_code = status_code
    delivery.last_error = error
    fields = ["attempts", "last_status_code", "last_error", "status"]
    if not error:
        delivery.status = WebhookDelivery.Status.DELIVERED
        delivery.delivered_at = timezone.now()
        fields.append("delivered_at")
        logger.info("scoring.webhook_delivered delivery_id=%s attempts=%s", delivery.pk, delivery.attempts)
    elif delivery.attempts >= settings.WEBHOOK_MAX_ATTEMPTS:
        delivery.status = WebhookDelivery.Status.FAILED
        logger.warning("scoring.webhook_failed delivery_id=%s error=%s", delivery.pk, error)
    delivery.save(update_fields=fields)
    if delivery.status == WebhookDelivery.Status.PENDING:
        raise WebhookDeliveryFailed(error)
    return delivery


def _post(target: WebhookTarget, *, body: bytes, headers: dict[str, str]) -> int:
    """POST to the checked address of `target`; the status code. TLS still verifies the
    certificate against the URL's host name (server_hostname/assert_hostname), which is also
    the Host header. No redirect is followed and the answer's body is not read."""
    timeout = urllib3.Timeout(connect=settings.WEBHOOK_CONNECT_TIMEOUT_S, read=settings.WEBHOOK_READ_TIMEOUT_S)
    pool: urllib3.HTTPConnectionPool
    if target.scheme == "https":
        pool = urllib3.HTTPSConnectionPool(
            target.address,
            target.port,
            timeout=timeout,
            retries=False,
            cert_reqs="CERT_REQUIRED",
            ca_certs=settings.WEBHOOK_CA_BUNDLE or certifi.where(),
            server_hostname=target.host,
            assert_hostname=target.host,
        )
    else:
        pool = urllib3.HTTPConnectionPool(target.address, target.port, timeout=timeout, retries=False)
    with pool:
        response = pool.urlopen(
            "POST",
            target.path,
            body=body,
            headers={**headers, "Host": target.host_header},
            redirect=False,
            retries=False,
            preload_content=False,
        )
        response.close()
        return int(response.status)


@shared_task(
    name="scoring.deliver_webhook",
    autoretry_for=(WebhookDeliveryFailed, OperationalError, InterfaceError),
    retry_backoff=settings.SCORING_RETRY_BACKOFF_S,
    retry_backoff_max=settings.WEBHOOK_RETRY_BACKOFF_MAX,
    retry_jitter=True,
    max_retries=settings.WEBHOOK_MAX_ATTEMPTS,
    acks_late=True,
    soft_time_limit=30,
    time_limit=40,
)
def deliver_webhook(delivery_id: int) -> None:
    """Send one delivery (webhook_deliver). Beside the code that publishes it (enqueue on
    commit), so the publish is a typed reference; scoring.tasks exports it."""
    webhook_deliver(delivery_id=delivery_id)
