"""The review queue's rows as HTML, built in Python with format_html.

Why not a template: a queue row shows about thirty values (score and priority, three sub-score
bars, language, routing reason, report reasons, spoofing warnings, SLA timer), and Django's
template engine spent about 1 ms of CPU per row resolving, filtering and escaping them: half of
a 50-row page's time, more than its queries (benchmarks/dashboard_queue.py). The same markup
from Python costs a fraction of that. format_html escapes every value as the template's
autoescape does; the link paths are reversed once per page instead of twice per row.

The page around the rows (filters, bulk bar, the empty state, "Load more") stays in
templates/dashboard/_queue_rows.html and queue.html; both the first page and the "Load more"
fragment render rows through ``render_queue_rows``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from django.template.defaultfilters import date as format_date
from django.template.defaultfilters import floatformat
from django.urls import reverse
from django.utils import formats, timezone
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe
from django.utils.text import Truncator

from dashboard.selectors.queue import QueueRow
from dashboard.templatetags.dashboard import language_name, pct5, percent, score_band, short_age, sla_left
from moderation.models import ListStatus, PostStatus
from moderation.services.decisions import post_version
from moderation.services.priority import PriorityParts
from moderation.text_safety import bidi_controls_visible, spoofing_warnings
from scoring.api import abuse_thresholds

TEXT_PREVIEW_CHARS = 160
WARNING_SCAN_CHARS = 2000  # spoofing is looked for in the head of a long text only
_PK_MARK = 987654321987  # an id no route holds literally, replaced per row


def _path_of(route: str) -> Callable[[int], str]:
    """The route's path for any post id, from one reverse() per page instead of one per row."""
    head, tail = reverse(route, args=[_PK_MARK]).split(str(_PK_MARK))
    return lambda pk: f"{head}{pk}{tail}"


def _local(value: datetime) -> datetime:
    return timezone.localtime(value) if timezone.is_aware(value) else value


def _score_cell(row: QueueRow, thresholds: Any, policy_title: str) -> SafeString:
    p = row.post
    score = floatformat(p.final_score, 2) if p.final_score is not None else "—"
    cell = format_html(
        '<span class="score score-{}" title="{}">{}</span>', score_band(p.final_score, thresholds), policy_title, score
    )
    if row.priority is not None:
        parts = row.priority
        title = (
            f"Priority {parts.total:.2f} = score {parts.score or 0:.2f} + reports {parts.report_weight:.2f}"
            f" + waited {parts.waited_slas:.2f} (time waited / SLA)"
        )
        cell += format_html('<span class="prio" title="{}" data-priority>{}</span>', title, priority_reasons(parts))
    if p.abuse_score is not None and p.abuse_score >= abuse_thresholds(p.source).queue:
        cell += format_html(
            '<span class="badge badge-danger" title="Abuse model score" data-category="abuse">abuse {}</span>',
            floatformat(p.abuse_score, 2),
        )
    return cell


def priority_reasons(parts: PriorityParts) -> str:
    """ "2 reports · due in 3.7 h · score 0.83": what puts the post where it is in the queue."""
    reasons = []
    if parts.report_count:
        reasons.append(f"{parts.report_count} report{'s' if parts.report_count != 1 else ''}")
    hours = abs(parts.due_in_seconds) / 3600
    span = f"{hours:.1f} h" if hours >= 1 else f"{max(1, round(hours * 60))} min"
    reasons.append(f"due in {span}" if parts.due_in_seconds > 0 else f"overdue {span}")
    reasons.append(f"score {parts.score:.2f}" if parts.score is not None else "not scored")
    return " · ".join(reasons)


def _warnings(text: str, template: str) -> SafeString:
    found = spoofing_warnings(text)
    return format_html(template, "; ".join(found)) if found else mark_safe("")


def _campaign(row: QueueRow, campaign_of: Callable[[int], str]) -> SafeString:
    campaign = row.post.campaign if row.post.campaign_id is not None else None
    if campaign is None:
        return mark_safe("")
    return format_html(
        '<a class="badge badge-campaign" href="{}" title="Near-copies from several accounts" data-campaign="{}">'
        "campaign · {} post{} · {} author{}</a>",
        campaign_of(campaign.pk),
        campaign.pk,
        campaign.member_count,
        "" if campaign.member_count == 1 else "s",
        campaign.author_count,
        "" if campaign.author_count == 1 else "s",
    )


def _meta(row: QueueRow, user_id: Any, campaign_of: Callable[[int], str]) -> SafeString:
    p = row.post
    parts = [
        format_html('<span title="Author">@{}</span>', bidi_controls_visible(str(p.author))),
        _warnings(p.author.username or "", '<span class="badge badge-danger" title="{}">⚠ name</span>'),
    ]
    if p.link is not None:
        domain = p.link.domain
        blocked = " is-blocked" if domain.status == ListStatus.BLOCK else ""
        parts.append(format_html('<span class="domain{}" title="Link domain">{}</span>', blocked, domain.name))
    parts.append(format_html('<span class="muted">{}</span>', p.source.slug))
    parts.append(_campaign(row, campaign_of))
    if p.language:
        parts.append(
            format_html('<span class="muted" title="Language detected at ingest">{}</span>', language_name(p.language))
        )
    if row.routing_reason:
        parts.append(
            format_html(
                '<span class="badge badge-routed" title="Why the score did not decide it">{}</span>', row.routing_reason
            )
        )
    if p.status != PostStatus.QUEUED:
        parts.append(format_html('<span class="badge badge-{}">{}</span>', p.status, p.get_status_display()))
    if p.claimed_by_id is not None and p.claimed_until is not None and p.claimed_until > timezone.now():
        if p.claimed_by_id == user_id:
            parts.append(mark_safe('<span class="badge badge-claimed">claimed by you</span>'))
        else:
            # A colleague's claim is shown, not hidden: the row stays reachable and can be skipped.
            parts.append(
                format_html(
                    '<span class="badge badge-claimed" data-claimed-by="{}">claimed by {} until {}</span>',
                    p.claimed_by,
                    p.claimed_by,
                    format_date(_local(p.claimed_until), "H:i T"),
                )
            )
    parts.append(_assignee(p, user_id))
    return format_html('<div class="meta">{}</div>', mark_safe("".join(parts)))  # noqa: S308  (parts are escaped)


def _assignee(p: Any, user_id: Any) -> SafeString:
    """Who owns the row (moderation.services.assignment): a moderator, a specialist queue, both."""
    queue = p.assigned_queue if p.assigned_queue_id is not None else None
    if p.assigned_to_id is not None:
        who = "you" if p.assigned_to_id == user_id else str(p.assigned_to)
        return format_html(
            '<span class="badge badge-assigned" data-assignee="{}">assigned to {}{}</span>',
            p.assigned_to,
            who,
            f" · {queue.name}" if queue is not None else "",
        )
    if queue is not None:
        return format_html(
            '<span class="badge badge-assigned" data-assigned-queue="{}">{} queue</span>', queue.pk, queue.name
        )
    return mark_safe("")


def _post_cell(
    row: QueueRow, detail_of: Callable[[int], str], user_id: Any, campaign_of: Callable[[int], str]
) -> SafeString:
    p = row.post
    preview = bidi_controls_visible(Truncator(p.text or "").chars(TEXT_PREVIEW_CHARS)) or "(no text)"
    cell = format_html('<a class="post-link" href="{}">{}</a>', detail_of(p.pk), preview)
    cell += _warnings((p.text or "")[:WARNING_SCAN_CHARS], '<div class="spoof-warning" role="note">⚠ Text {}</div>')
    cell += _meta(row, user_id, campaign_of)
    if row.report_reasons:
        badges = format_html_join(
            "",
            '<span class="badge badge-report">{}{}</span>',
            ((reason, f" ×{n}" if n > 1 else "") for reason, n in row.report_reasons),
        )
        cell += format_html('<div class="reasons" data-report-reasons>{}</div>', badges)
    return cell


def _bar(label: str, value: float | None, thresholds: Any) -> SafeString:
    return format_html(
        '<span class="minibar" title="{} {}"><i class="lvl-{} w-{}"></i></span>',
        label,
        percent(value),
        score_band(value, thresholds),
        pct5(value),
    )


def _subs_cell(row: QueueRow, thresholds: Any) -> SafeString:
    label = f"Text {percent(row.text_score)}, link {percent(row.link_score)}, behaviour {percent(row.behaviour_score)}"
    bars = (
        _bar("Text", row.text_score, thresholds)
        + _bar("Link", row.link_score, thresholds)
        + _bar("Behaviour", row.behaviour_score, thresholds)
    )
    return format_html('<div class="subs" role="img" aria-label="{}">{}</div>', label, bars)


def _age_cell(row: QueueRow) -> SafeString:
    received = _local(row.post.received_at)
    cell = format_html(
        '<time datetime="{}" title="{}">{}</time>',
        format_date(received, "c"),
        formats.localize(received),
        short_age(row.post.received_at),
    )
    if row.due_at is not None:
        cell += format_html(
            '<span class="sla{}" data-sla title="SLA deadline {}">{}</span>',
            " sla-breach" if row.sla_breached else "",
            format_date(_local(row.due_at), "Y-m-d H:i T"),
            sla_left(row.sla_seconds_left),
        )
    return cell


def _reports_cell(count: int) -> SafeString:
    if count:
        return format_html('<span class="reports">{}</span>', count)
    return mark_safe('<span class="muted">0</span>')


def _check_cell(post_id: int) -> SafeString:
    return format_html(
        '<input type="checkbox" name="post_ids" value="{}" form="bulk-form" aria-label="Select post {}" data-select>',
        post_id,
        post_id,
    )


def render_queue_rows(
    rows: list[QueueRow],
    *,
    thresholds: Any,
    user_id: Any,
    notes: Mapping[int, SafeString] | None = None,
    selectable: bool = True,
) -> SafeString:
    """The <tr> of every row; `thresholds` is the live policy (for the score colours), `user_id`
    the moderator looking (for "claimed by you"); `notes`: post id -> markup shown under the
    post (the Teach tab's reasons); `selectable`: each row has the bulk form's checkbox."""
    detail_of, decide_of = _path_of("dashboard:post_detail"), _path_of("dashboard:decide")
    campaign_of = _path_of("dashboard:campaign")
    policy_title = (
        f"Score (policy: remove ≥ {formats.localize(thresholds.remove_threshold)}, "
        f"approve < {formats.localize(thresholds.approve_threshold)})"
    )
    html = []
    for row in rows:
        p = row.post
        html.append(
            format_html(
                '<tr class="qrow{}" data-post-id="{}" data-url="{}" data-decide-url="{}" data-version="{}" '
                'tabindex="-1">'
                '<td class="col-check">{}</td>'
                '<td class="col-score">{}</td>'
                '<td class="col-post">{}</td>'
                '<td class="col-subs">{}</td>'
                '<td class="col-num col-reports">{}</td>'
                '<td class="col-num col-age">{}</td>'
                "</tr>\n",
                " is-breached" if row.sla_breached else "",
                p.pk,
                detail_of(p.pk),
                decide_of(p.pk),
                post_version(p),
                _check_cell(p.pk) if selectable else "",
                _score_cell(row, thresholds, policy_title),
                _post_cell(row, detail_of, user_id, campaign_of) + (notes or {}).get(p.pk, mark_safe("")),
                _subs_cell(row, thresholds),
                _reports_cell(p.report_count),
                _age_cell(row),
            )
        )
    return mark_safe("".join(html))  # noqa: S308  (every part went through format_html)
