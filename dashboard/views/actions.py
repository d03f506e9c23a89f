"""Bulk decisions, cluster actions with preview/confirmation, undo, and enforcement."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.contrib import messages
from django.db.models import Model
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, HttpResponseRedirect
from django.middleware.csrf import get_token
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.utils.html import format_html
from django.views.decorators.http import require_http_methods, require_POST

from core.errors import ApplicationError
from dashboard.forms import EnforcementForm
from dashboard.selectors.thresholds import live_thresholds
from dashboard.timezones import SESSION_ZONE, zone_remember
from dashboard.views.common import redirect_next, safe_next
from moderation.models import (
    Author,
    BulkAction,
    Campaign,
    Domain,
    IpAddress,
    Label,
    ListStatus,
    Post,
    ReasonCode,
    Restriction,
    RestrictionKind,
    Strike,
)
from moderation.permissions import CAN_MODERATE, role_required
from moderation.services import enforcement, sanctions, strikes
from moderation.services.bulk import (
    CLUSTER_KINDS,
    Cluster,
    bulk_can_undo,
    bulk_decide,
    bulk_undo,
    cluster_preview_count,
    cluster_queryset,
)
from moderation.services.enforcement import EnforcementReason

CLUSTER_MODELS = {"author": Author, "domain": Domain, "ip": IpAddress, "campaign": Campaign}


def _undo_message(request: HttpRequest, bulk: BulkAction) -> None:
    messages.success(
        request,
        format_html(
            'Bulk action #{}: {} posts marked {}. <form method="post" action="{}" class="inline-form">'
            '<input type="hidden" name="csrfmiddlewaretoken" value="{}">'
            '<button type="submit" class="btn btn-small" data-undo>Undo</button></form>',
            bulk.pk,
            len(bulk.previous_statuses),
            bulk.get_label_display().lower(),
            reverse("dashboard:bulk_undo", args=[bulk.pk]),
            get_token(request),
        ),
        extra_tags="undo",
    )


@require_POST
@role_required(CAN_MODERATE)
def bulk(request: HttpRequest) -> HttpResponse:
    try:
        ids = [int(i) for i in request.POST.getlist("post_ids")]
    except ValueError:
        return HttpResponseBadRequest("Bad post ids.")
    label = request.POST.get("label", "")
    try:
        action = bulk_decide(
            moderator=request.user,
            label=label,
            # The bar has one reason list per label button; older clients send reason_code.
            reason_code=request.POST.get(f"reason_code_{label}", "") or request.POST.get("reason_code", ""),
            note=request.POST.get("note", ""),
            post_ids=ids,
        )
    except ApplicationError as exc:
        messages.error(request, exc.message)
    else:
        _undo_message(request, action)
    return redirect_next(request, reverse("dashboard:queue"))


@require_http_methods(["GET", "POST"])
@role_required(CAN_MODERATE)
def cluster(request: HttpRequest, kind: str, pk: int) -> HttpResponse:
    """GET: preview (how many pending posts, a sample) and the confirmation form. POST: act."""
    if kind not in CLUSTER_KINDS:
        return HttpResponseBadRequest("Unknown cluster.")
    target = get_object_or_404(CLUSTER_MODELS[kind], pk=pk)
    selection = Cluster(kind=kind, value=pk)
    if request.method == "POST":
        if request.POST.get("confirm") != "1":
            return HttpResponseBadRequest("Confirmation missing.")
        try:
            action = bulk_decide(
                moderator=request.user,
                label=request.POST.get("label", ""),
                reason_code=request.POST.get("reason_code", ""),
                note=request.POST.get("note", ""),
                cluster=selection,
            )
        except ApplicationError as exc:
            messages.error(request, exc.message)
            return HttpResponseRedirect(reverse("dashboard:cluster", args=[kind, pk]))
        _undo_message(request, action)
        return redirect_next(request, reverse("dashboard:queue"))
    sample = list(
        cluster_queryset(cluster=selection).select_related("author", "link__domain").order_by("-received_at")[:10]
    )
    return render(
        request,
        "dashboard/cluster.html",
        {
            "kind": kind,
            "target": target,
            "count": cluster_preview_count(cluster=selection),
            "sample": sample,
            "labels": Label.choices,
            "label": request.GET.get("label", Label.SPAM),
            "reason_codes": list(ReasonCode.objects.filter(is_active=True)),
            "next": request.GET.get("next", ""),
            "thresholds": live_thresholds(),
        },
    )


@require_POST
@role_required(CAN_MODERATE)
def undo(request: HttpRequest, pk: int) -> HttpResponse:
    action = get_object_or_404(BulkAction, pk=pk)
    if not bulk_can_undo(bulk=action, user=request.user):
        messages.error(request, "This bulk action can no longer be undone.")
        return redirect_next(request, reverse("dashboard:queue"))
    try:
        bulk_undo(bulk=action, moderator=request.user)
    except ApplicationError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, f"Bulk action #{action.pk} undone.")
    return redirect_next(request, reverse("dashboard:queue"))


@dataclass(frozen=True, slots=True)
class _Enforcement:
    model: type[Model]
    title: str  # "Suspend @{}"
    done: str  # "Author {} suspended."
    imposing: bool
    run: Callable[[Any, Any, EnforcementReason], Any]  # (target, actor, reason)
    # What the action imposes or lifts (enforcement.enforcement_reason_label); empty: the
    # target's current list status, which is what taking it off the lists lifts.
    imposed: str = ""
    timed: bool = True  # the form asks for an expiry (a warning's strike expires by itself)

    def reason_label(self, target: Any) -> str | None:
        imposed = self.imposed or getattr(target, "status", "")
        if imposed == ListStatus.UNKNOWN:
            return None
        return enforcement.enforcement_reason_label(imposed=imposed, imposing=self.imposing)


def _list(status: str) -> Callable[[Any, Any, EnforcementReason], Any]:
    return lambda row, actor, reason: enforcement.list_entry_set(row=row, status=status, actor=actor, reason=reason)


ENFORCEMENT: dict[tuple[str, str], _Enforcement] = {
    ("author", "suspend"): _Enforcement(
        Author,
        "Suspend @{}",
        "Author {} suspended.",
        True,
        lambda a, actor, reason: enforcement.author_suspend(author=a, actor=actor, reason=reason),
        "suspend",
    ),
    ("author", "unsuspend"): _Enforcement(
        Author,
        "Lift the suspension of @{}",
        "Author {} unsuspended.",
        False,
        lambda a, actor, reason: enforcement.author_unsuspend(author=a, actor=actor, reason=reason),
        "suspend",
    ),
    ("author", "allowlist"): _Enforcement(
        Author,
        "Trust @{}",
        "Author {} trusted: never removed automatically.",
        True,
        lambda a, actor, reason: enforcement.author_allowlist(author=a, actor=actor, reason=reason),
        "allowlist",
    ),
    ("author", "unallowlist"): _Enforcement(
        Author,
        "Stop trusting @{}",
        "Author {} no longer trusted.",
        False,
        lambda a, actor, reason: enforcement.author_unallowlist(author=a, actor=actor, reason=reason),
        "allowlist",
    ),
    ("author", "warn"): _Enforcement(
        Author,
        "Warn @{}",
        "Author {} warned: a strike is on their record.",
        True,
        lambda a, actor, reason: strikes.author_warn(author=a, actor=actor, reason=reason),
        imposed="restrict",
        timed=False,
    ),
    ("post", "warn"): _Enforcement(
        Post,
        "Warn the author of post {}",
        "The author of post {} was warned: a strike is on their record.",
        True,
        lambda p, actor, reason: strikes.author_warn(author=p.author, actor=actor, reason=reason, post=p),
        imposed="restrict",
        timed=False,
    ),
    ("author", "limit_rate"): _Enforcement(
        Author,
        "Limit the posting rate of @{}",
        "Author {}: posting rate limited.",
        True,
        lambda a, actor, reason: sanctions.author_limit(
            author=a, actor=actor, kind=RestrictionKind.LIMIT_RATE, reason=reason
        ),
        imposed="restrict",
    ),
    ("author", "limit_reach"): _Enforcement(
        Author,
        "Limit the reach of @{}",
        "Author {}: reach limited.",
        True,
        lambda a, actor, reason: sanctions.author_limit(
            author=a, actor=actor, kind=RestrictionKind.LIMIT_REACH, reason=reason
        ),
        imposed="restrict",
    ),
    ("post", "hide"): _Enforcement(
        Post,
        "Hide post {} pending review",
        "Post {} hidden pending review.",
        True,
        lambda p, actor, reason: sanctions.post_hide(post=p, actor=actor, reason=reason),
        imposed="restrict",
    ),
    ("restriction", "lift"): _Enforcement(
        Restriction,
        "Lift: {}",
        "Lifted: {}.",
        False,
        lambda r, actor, reason: sanctions.restriction_lift(restriction=r, actor=actor, reason=reason),
        imposed="restrict",
    ),
    ("strike", "revoke"): _Enforcement(
        Strike,
        "Revoke the warning ({})",
        "Warning revoked ({}).",
        False,
        lambda s, actor, reason: strikes.strike_revoke(strike=s, actor=actor, reason=reason),
        imposed="restrict",
    ),
    ("domain", "block"): _Enforcement(
        Domain, "Block {} and its subdomains", "Domain {} blocked.", True, _list(ListStatus.BLOCK), ListStatus.BLOCK
    ),
    ("domain", "allow"): _Enforcement(
        Domain, "Trust {} and its subdomains", "Domain {} trusted.", True, _list(ListStatus.ALLOW), ListStatus.ALLOW
    ),
    ("domain", "unblock"): _Enforcement(
        Domain, "Take {} off the lists", "Domain {} unlisted.", False, _list(ListStatus.UNKNOWN)
    ),
    ("ip", "block"): _Enforcement(
        IpAddress, "Block IP {}", "IP {} blocked.", True, _list(ListStatus.BLOCK), ListStatus.BLOCK
    ),
    ("ip", "allow"): _Enforcement(
        IpAddress, "Trust IP {}", "IP {} trusted.", True, _list(ListStatus.ALLOW), ListStatus.ALLOW
    ),
    ("ip", "unblock"): _Enforcement(
        IpAddress, "Take IP {} off the lists", "IP {} unlisted.", False, _list(ListStatus.UNKNOWN)
    ),
}


@require_http_methods(["GET", "POST"])
@role_required(CAN_MODERATE)
def enforce(request: HttpRequest, kind: str, pk: int, action: str) -> HttpResponse:
    """GET: the form (reason code, note, expiry). POST: act, audited and sent to the platform."""
    entry = ENFORCEMENT.get((kind, action))
    if entry is None:
        return HttpResponseBadRequest("Unknown action.")
    target = get_object_or_404(entry.model, pk=pk)
    if request.method == "POST" and SESSION_ZONE not in request.session:
        # The expiry is typed in the browser's zone; a first page may not have reported it yet.
        zone_remember(request, request.POST.get("tz", ""), chosen=False)
    form = EnforcementForm(
        request.POST if request.method == "POST" else None,
        imposing=entry.imposing,
        reason_label=entry.reason_label(target),
        timed=entry.timed,
    )
    if request.method == "POST" and form.is_valid():
        try:
            result = entry.run(target, request.user, form.reason())
        except ApplicationError as exc:
            for field, errors in (exc.fields or {}).items():
                form.add_error(field if field in form.fields else None, errors)
            if not exc.fields:
                form.add_error(None, exc.message)
        else:
            done = entry.done.format(target)
            escalated = getattr(result, "escalated", None)
            if escalated is not None:
                done += " The escalation ladder applied: " + (
                    "suspended." if isinstance(escalated, Author) else f"{escalated.get_kind_display().lower()}."
                )
            messages.success(request, done)
            return redirect_next(request, reverse("dashboard:queue"))
    status = 400 if request.method == "POST" else 200
    context = {
        "form": form,
        "kind": kind,
        "action": action,
        "target": target,
        "title": entry.title.format(target),
        "imposing": entry.imposing,
        "next": safe_next(request, reverse("dashboard:queue")),
    }
    return render(request, "dashboard/enforce.html", context, status=status)
