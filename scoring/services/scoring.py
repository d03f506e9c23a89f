"""Score posts: features from the database, block-list short-circuits, one Triton call for
the batch, the decision policy, and one transaction that writes the Score rows, moves the
posts through the state machine and updates the spam counters.

Idempotent by construction: posts are re-read under a row lock inside the write transaction,
so a post that another run already moved (or a moderator decided) is skipped, and Score rows
are unique per (post, model_set, revision). Running the same batch twice leaves one Score
per post."""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from django.conf import settings
from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from contracts.feature_schema import BEHAVIOUR_FEATURES, LINK_FEATURES, vector
from core.json_rows import insert_rows
from core.metrics import DECISIONS, POSTS_SCORED, POSTS_TEXT_MODEL_SKIPPED, SCORING_BATCH_SIZE
from moderation.categories import ABUSE, SPAM
from moderation.models import RESCORABLE_STATUSES, Campaign, Post, PostStatus
from moderation.services.assignment import posts_route_to_specialists
from moderation.services.audit import audit_record
from moderation.services.priority import posts_priority_refresh
from moderation.services.score_rows import posts_lock_for_scoring, posts_score_fields_write, spam_counters_add
from scoring.features.extract import PostFeatures, posts_with_features, with_campaign_features
from scoring.models import Action, DecisionPolicy, Score
from scoring.services.campaigns import campaigns_detect
from scoring.services.decide import MODEL_ERROR, Decision, Item, decide
from scoring.services.inference import (
    ScoringClient,
    ScoringInput,
    TritonError,
    TritonUnavailable,
    get_client,
)
from scoring.services.policy import policy_active
from scoring.services.removal_statements import removal_statements_publish
from scoring.services.shortcircuit import short_circuit_reason
from scoring.services.webhooks import webhooks_enqueue_for_posts

logger = logging.getLogger(__name__)

# Statuses a first score may leave; statuses a re-score may touch. Moderator decisions
# (REMOVED, APPROVED) are in neither: scoring never overrides a human. Nor is AUTO_REMOVED: a new
# score could not move it anywhere, only rewrite the score a moderator sees next to the removal.
INITIAL_FROM = frozenset({PostStatus.RECEIVED})
RESCORE_FROM = RESCORABLE_STATUSES - INITIAL_FROM
POST_SCORE_FIELDS = [
    "status",
    "status_changed_at",
    "final_score",
    "abuse_score",
    "model_version",
    "scored_at",
    "spot_check_action",
]
# The model version a model_error post is written with (decide.MODEL_ERROR): a human looks at it.
MODEL_ERROR_VERSION = "model_error"


class RescoreConflict(Exception):
    """Another re-score of the post wrote the same revision first; retry to write the next."""


@dataclass
class ScoreResult:
    post_id: int
    status: str
    score_id: int | None = None
    action: str | None = None
    final_score: float | None = None
    skipped: str = ""  # why nothing was written: "not_pending", "no_new_reports", "gone", ...
    # The harm the action is about: abuse when the abuse rule chose it, else spam (the metrics).
    category: str = SPAM
    score: Score | None = field(default=None, repr=False, compare=False)  # the row written


def scoring_input(features: PostFeatures) -> ScoringInput:
    return ScoringInput(
        text=features.text,
        preview_text=features.preview_text,
        link=vector(features.link, LINK_FEATURES),
        behaviour=vector(features.behaviour, BEHAVIOUR_FEATURES),
    )


def infer(items: Sequence[Item], *, client: ScoringClient) -> None:
    """One batched call; if the server rejects the batch, each post alone, so one bad post
    does not block the others. TritonUnavailable propagates (the task retries the batch)."""
    todo = [i for i in items if i.reason is None]
    if not todo:
        return
    started = time.perf_counter()
    try:
        outputs = client.score([scoring_input(i.features) for i in todo])
    except TritonUnavailable:
        raise  # the server, not the batch: the task retries the whole batch later
    except TritonError as exc:
        if len(todo) == 1:
            todo[0].model_error = str(exc)[:255]
            return
        logger.warning("scoring.batch_rejected size=%s error=%s; scoring one by one", len(todo), exc)
        for item in todo:
            infer([item], client=client)
        return
    elapsed_ms = (time.perf_counter() - started) * 1000.0
    if len(outputs) != len(todo):
        raise TritonError(f"{len(outputs)} outputs for {len(todo)} inputs")
    for item, output in zip(todo, outputs, strict=True):
        item.output = output
        item.extra["model_ms"] = round(elapsed_ms, 3)


def prepare(posts: Iterable[Post], *, features: dict[int, PostFeatures]) -> list[Item]:
    """`features`: loaded with the posts (extract.posts_with_features, one statement)."""
    return [
        Item(post=p, features=features[p.id], reason=short_circuit_reason(p, features[p.id].source_blocks))
        for p in posts
    ]


def load_in_statuses(
    ids: Sequence[int], *, statuses: frozenset[str], skipped: str
) -> tuple[dict[int, tuple[Post, PostFeatures]], list[Post], list[ScoreResult]]:
    """The posts of `ids` with their joins and features (one query), those in `statuses`, and a
    result for each of the others: "gone", or `skipped` with its status."""
    loaded = posts_with_features(list(ids))
    results = [ScoreResult(post_id=i, status="", skipped="gone") for i in ids if i not in loaded]
    eligible = [p for p, _ in loaded.values() if p.status in statuses]
    results += [
        ScoreResult(post_id=p.id, status=p.status, skipped=skipped)
        for p, _ in loaded.values()
        if p.status not in statuses
    ]
    return loaded, eligible, results


def score_posts(
    *, post_ids: Iterable[int], client: ScoringClient | None = None, started: float | None = None
) -> list[ScoreResult]:
    """Score the posts among `post_ids` still waiting for their first score."""
    started = time.perf_counter() if started is None else started
    ids = list(dict.fromkeys(post_ids))
    loaded, pending, results = load_in_statuses(ids, statuses=INITIAL_FROM, skipped="not_pending")
    if not pending:
        return results
    if settings.CAMPAIGN_DETECTION:
        # Before the model: campaign_size and campaign_authors are model inputs, and the post
        # is a member of the campaign it joins. It also writes the buckets; a decided campaign
        # then holds its members.
        campaigns_detect(posts=pending)
    features = {p.id: with_campaign_features(p, loaded[p.id][1]) for p in pending}
    items = prepare(pending, features=features)
    infer(items, client=client or get_client())
    return results + settle(items, allowed_from=INITIAL_FROM, started=started)


def rescore_post(*, post_id: int, client: ScoringClient | None = None) -> ScoreResult:
    """Score an already-scored post again because something it depends on changed (a new
    report). Revision = latest revision of the resulting model_set + 1; skipped when the latest
    score already saw every report, which makes a duplicate task a no-op."""
    started = time.perf_counter()
    found = posts_with_features([post_id]).get(post_id)
    if found is None:
        return ScoreResult(post_id=post_id, status="", skipped="gone")
    post, features = found
    if post.status not in RESCORE_FROM:
        return ScoreResult(post_id=post_id, status=post.status, skipped="not_rescorable")
    (item,) = prepare([post], features={post_id: features})
    latest = Score.objects.filter(post_id=post_id).order_by("-created_at", "-id").first()
    seen_reports = (latest.features.get("behaviour", {}).get("report_count", 0.0)) if latest else -1.0
    if item.features.behaviour["report_count"] <= float(seen_reports):
        return ScoreResult(post_id=post_id, status=post.status, skipped="no_new_reports")
    infer([item], client=client or get_client())
    if item.model_error:
        return ScoreResult(post_id=post_id, status=post.status, skipped="model_error")
    revisions_assign([item])
    (result,) = settle([item], allowed_from=RESCORE_FROM, started=started)
    if result.skipped == "already_scored":
        # A concurrent re-score took this revision, possibly without the newest report.
        raise RescoreConflict(f"post {post_id} revision {item.revision} written concurrently")
    return result


def revisions_assign(items: Sequence[Item]) -> None:
    """Give each item the next revision of its post under its model set: the latest revision
    written for that (post, model set) + 1, or 0 for a model set the post was never scored by.
    One query for the pass. Read before settle's lock: a concurrent re-score that writes the
    same key first makes settle skip the item as decide.ALREADY_SCORED."""
    if not items:
        return
    latest = {
        (post_id, model_set): revision
        for post_id, model_set, revision in Score.objects.filter(
            post_id__in=[i.post.id for i in items], model_set__in={i.model_set for i in items}
        )
        .values("post_id", "model_set")
        .annotate(r=Max("revision"))
        .values_list("post_id", "model_set", "r")
        .order_by()
    }
    for item in items:
        last = latest.get((item.post.id, item.model_set))
        item.revision = 0 if last is None else last + 1


def _score_row(decision: Decision, *, policy: DecisionPolicy, latency_ms: float) -> Score:
    item, out = decision.item, decision.item.output
    assert decision.action is not None  # a scored decision has its action
    extra = dict(item.extra)
    # Kept in the Score's features: the evidence page shows them.
    if decision.enforcement:
        extra["enforcement"] = decision.enforcement
    if decision.abuse:
        extra["abuse"] = decision.abuse
    if decision.campaign:
        extra["campaign"] = decision.campaign
    return Score(
        post_id=item.post.id,
        model_set=item.model_set,
        revision=item.revision,
        text_score=out.text_prob if out else None,
        preview_score=out.preview_prob if out else None,
        link_score=out.link_prob if out else None,
        behaviour_score=out.behaviour_prob if out else None,
        final_score=item.final_score,
        abuse_score=out.abuse_prob if out else None,
        action=decision.action,
        short_circuit_reason=(item.reason or "")[:255],
        routing_reason=decision.routing_reason[:255],
        policy=None if item.reason is not None else policy,
        features={
            "link": item.features.link,
            "behaviour": item.features.behaviour,
            # The evidence page shows it; >= 1 is unfamiliar (scoring.services.policy).
            **({"unfamiliarity": round(out.unfamiliarity, 4)} if out and out.unfamiliarity is not None else {}),
            # The metrics page's share of texts the cascade decided without the transformer.
            **({"text_model_skipped": True} if out and out.text_model_skipped else {}),
            **extra,
            **({"campaign_id": item.post.campaign_id} if item.post.campaign_id else {}),
        },
        contributions=dict(out.contributions) if out else {},
        model_versions=dict(out.model_versions) if out else {},
        latency_ms=round(latency_ms, 3),
    )


def settle(
    items: Sequence[Item], *, allowed_from: frozenset[str], started: float, leave_owned: bool = False
) -> list[ScoreResult]:
    """Decide and write a pass's items in one transaction: lock the posts (id order), load the
    policy (and, for a re-score, the Score keys written), decide (pure: decide.decide), persist
    the decisions. The worker's batches, the inline check and re-scores all end here. The query
    count is fixed for any batch size. `leave_owned`: a post a moderator holds under the lock
    (claimed, or assigned to them) is skipped as decide.OWNED (the waiting queue's re-score)."""
    now = timezone.now()
    with transaction.atomic():
        policy = policy_active()
        ids = [i.post.id for i in items]
        rows = posts_lock_for_scoring(post_ids=ids, owned_at=now if leave_owned else None)
        # A post still in `received` has no Score: the one transaction that writes a post's first
        # Score also moves it out of `received`, and the row lock above orders us after it. So
        # only a re-score needs to look (the unique key on Score stays the backstop).
        existing = (
            set()
            if allowed_from == INITIAL_FROM
            else set(Score.objects.filter(post_id__in=ids).values_list("post_id", "model_set", "revision").order_by())
        )
        _campaigns_join(items)
        decisions = decide(items, policy, now, rows=rows, allowed_from=allowed_from, existing=existing)
        results = persist(decisions, policy=policy, now=now, started=started)
    _report(results, started=started)
    return results


def persist(
    decisions: Sequence[Decision], *, policy: DecisionPolicy, now: datetime, started: float
) -> list[ScoreResult]:
    """Write what `decisions` say, inside the caller's transaction, and nothing else: the Score
    rows, the posts' status and score fields, the queue priority of queued posts, the spam
    counters of posts removed now, and the webhook rows of the posts scored."""
    results: list[ScoreResult] = []
    scores: list[Score] = []
    changed: list[Post] = []
    removed_now: list[Post] = []
    for decision in decisions:
        item, post = decision.item, decision.item.post
        if decision.skipped == MODEL_ERROR:
            post.status, post.status_changed_at, post.scored_at = decision.status, now, now
            post.model_version = MODEL_ERROR_VERSION
            changed.append(post)
            logger.error("scoring.model_error post_id=%s error=%s", post.id, item.model_error)
        if not decision.scored:
            results.append(ScoreResult(post_id=post.id, status=decision.status, skipped=decision.skipped))
            continue
        latency_ms = (time.perf_counter() - started) * 1000.0
        score = _score_row(decision, policy=policy, latency_ms=latency_ms)
        scores.append(score)
        if decision.removed_now:
            removed_now.append(post)
        post.status = decision.status
        if decision.status_changed:
            post.status_changed_at = now
        post.final_score = score.final_score
        post.abuse_score = score.abuse_score
        post.model_version = item.model_set[:120]
        post.scored_at = now
        if decision.spot_check:
            post.spot_check_action = str(decision.action)
        changed.append(post)
        if decision.campaign:
            _campaign_audit(decision)
        results.append(
            ScoreResult(
                post_id=post.id,
                status=post.status,
                action=decision.action,
                final_score=score.final_score,
                category=ABUSE if decision.abuse else SPAM,
            )
        )
    insert_rows(scores)  # Score.objects.bulk_create, all rows as one JSON parameter
    by_post = {s.post_id: s for s in scores}
    for r in results:
        if r.post_id in by_post:
            r.score = by_post[r.post_id]
            r.score_id = r.score.pk
    posts_score_fields_write(posts=changed, fields=POST_SCORE_FIELDS)
    # The queue's priority follows the new score: one UPDATE for the batch.
    queued = [p.id for p in changed if p.status == PostStatus.QUEUED]
    posts_priority_refresh(post_ids=queued)
    # A queued post nobody owns goes to its top category's specialist queue, if one routes.
    posts_route_to_specialists(post_ids=queued)
    spam_counters_add(posts=removed_now)
    webhooks_enqueue_for_posts(p for p in changed if p.id in by_post)
    # Their statements of reasons are written after the commit (scoring.services.removal_statements).
    by_abuse = {d.post_id for d in decisions if d.removed_now and d.abuse and d.action == Action.REMOVE}
    removal_statements_publish(post_ids=[p.id for p in removed_now if p.id not in by_abuse], category=SPAM)
    removal_statements_publish(post_ids=[p.id for p in removed_now if p.id in by_abuse], category=ABUSE)
    return results


def _campaigns_join(items: Sequence[Item]) -> None:
    """Cache each post's campaign on it (one query for the pass), so decide reads it without a
    query: campaigns_detect caches the ones it found, a post already in one has only its id."""
    missing = {i.post.campaign_id for i in items if i.post.campaign_id is not None and not _campaign_cached(i.post)}
    if not missing:
        return
    campaigns = Campaign.objects.in_bulk(sorted(missing))
    for item in items:
        campaign = campaigns.get(item.post.campaign_id) if item.post.campaign_id is not None else None
        if campaign is not None and not _campaign_cached(item.post):
            item.post.campaign = campaign


def _campaign_cached(post: Post) -> bool:
    return Post.campaign.is_cached(post)


def _campaign_audit(decision: Decision) -> None:
    """The audit row of a campaign member whose action the decided campaign changed."""
    post, action = decision.item.post, decision.action
    audit_record(
        actor=None,
        action="campaign.member_decided",
        target=post,
        before={"action": decision.campaign_before},
        after={"action": str(action), "campaign_id": post.campaign_id, "reason": decision.campaign},
    )


def _report(results: Sequence[ScoreResult], *, started: float) -> None:
    """Metrics and the log lines of a pass, after its commit."""
    # One INFO line per batch; the per-post line is DEBUG: formatting and writing 32 lines per
    # batch was 4 % of the worker's CPU (py-spy), for a trail the Score rows keep anyway.
    written = [r for r in results if r.score_id is not None]
    if written:
        by_action = Counter(str(r.action) for r in written)
        # Metrics once per batch, action and category, never per post (config.metrics).
        POSTS_SCORED.inc(len(written))
        skipped = sum(1 for r in written if r.score is not None and r.score.features.get("text_model_skipped"))
        if skipped:
            POSTS_TEXT_MODEL_SKIPPED.inc(skipped)
        SCORING_BATCH_SIZE.observe(len(written))
        for (action_name, category), n in Counter((str(r.action), r.category) for r in written).items():
            DECISIONS.labels("auto", action_name, category).inc(n)
        logger.info(
            "scoring.batch_scored posts=%s %s ms=%.1f",
            len(written),
            " ".join(f"{action}={n}" for action, n in sorted(by_action.items())),
            (time.perf_counter() - started) * 1000.0,
            extra={"post_ids": [r.post_id for r in written]},
        )
    if logger.isEnabledFor(logging.DEBUG):
        for r in written:
            logger.debug(
                "scoring.post_scored post_id=%s action=%s status=%s final=%.4f",
                r.post_id,
                r.action,
                r.status,
                r.final_score or 0.0,
            )
