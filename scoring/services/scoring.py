"""Score posts: features from the database, block-list short-circuits, one Triton call for
the batch, the decision policy, and one transaction that writes the Score rows, moves the
posts through the state machine and updates the spam counters.

Idempotent by construction: posts are re-read under a row lock inside the write transaction,
so a post that another run already moved (or a moderator decided) is skipped, and Score rows
are unique per (post, model_set, revision). Running the same batch twice leaves one Score
per post."""

from __future__ import annotations

import functools
import logging
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from contracts.feature_schema import BEHAVIOUR_FEATURES, LINK_FEATURES, vector
from core.json_rows import insert_rows
from core.metrics import DECISIONS, POSTS_SCORED, SCORING_BATCH_SIZE
from moderation.models import POST_TRANSITIONS, RESCORABLE_STATUSES, Post, PostStatus
from moderation.services.priority import posts_priority_refresh
from moderation.services.score_rows import posts_lock_for_scoring, posts_score_fields_write, spam_counters_add
from scoring.features.extract import PostFeatures, posts_with_features
from scoring.models import Action, DecisionPolicy, Score
from scoring.services.enforcement import enforced_action
from scoring.services.inference import (
    ScoringClient,
    ScoringInput,
    ScoringOutput,
    TritonError,
    TritonUnavailable,
    get_client,
)
from scoring.services.policy import language_routing_reason, policy_actions, policy_active, strongest_sub_score
from scoring.services.removal_statements import removal_statements_publish
from scoring.services.shortcircuit import SHORT_CIRCUIT_MODEL_SET, short_circuit_reason
from scoring.services.webhooks import webhooks_enqueue_for_posts

logger = logging.getLogger(__name__)

ACTION_STATUS: dict[str, str] = {
    Action.REMOVE: PostStatus.AUTO_REMOVED,
    Action.QUEUE: PostStatus.QUEUED,
    Action.APPROVE: PostStatus.AUTO_APPROVED,
}
# Statuses a first score may leave; statuses a re-score may touch. Moderator decisions
# (REMOVED, APPROVED) are in neither: scoring never overrides a human. Nor is AUTO_REMOVED: a new
# score could not move it anywhere, only rewrite the score a moderator sees next to the removal.
INITIAL_FROM = frozenset({PostStatus.RECEIVED})
RESCORE_FROM = RESCORABLE_STATUSES - INITIAL_FROM
POST_SCORE_FIELDS = ["status", "status_changed_at", "final_score", "model_version", "scored_at"]
# Model output failed for this post alone (TritonError on its own): a human looks at it.
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
    score: Score | None = field(default=None, repr=False, compare=False)  # the row written


@dataclass
class _Item:
    post: Post
    features: PostFeatures
    reason: str | None = None
    output: ScoringOutput | None = None
    model_error: str = ""
    revision: int = 0
    latency_ms: float = 0.0
    extra: dict[str, object] = field(default_factory=dict)

    @functools.cached_property
    def model_set(self) -> str:  # read three times per post by persist; computed once
        if self.reason is not None:
            return SHORT_CIRCUIT_MODEL_SET
        assert self.output is not None
        return model_set_of(self.output.model_versions)


def model_set_of(model_versions: dict[str, str]) -> str:
    return ",".join(f"{name}:{version}" for name, version in sorted(model_versions.items()))[:200]


def scoring_input(features: PostFeatures) -> ScoringInput:
    return ScoringInput(
        text=features.text,
        preview_text=features.preview_text,
        link=vector(features.link, LINK_FEATURES),
        behaviour=vector(features.behaviour, BEHAVIOUR_FEATURES),
    )


def infer(items: Sequence[_Item], *, client: ScoringClient) -> None:
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


def prepare(posts: Iterable[Post], *, features: dict[int, PostFeatures]) -> list[_Item]:
    """`features`: loaded with the posts (extract.posts_with_features, one statement)."""
    return [
        _Item(post=p, features=features[p.id], reason=short_circuit_reason(p, features[p.id].source_blocks))
        for p in posts
    ]


def score_posts(
    *, post_ids: Iterable[int], client: ScoringClient | None = None, started: float | None = None
) -> list[ScoreResult]:
    """Score the posts among `post_ids` still waiting for their first score."""
    started = time.perf_counter() if started is None else started
    ids = list(dict.fromkeys(post_ids))
    loaded = posts_with_features(ids)  # the posts, their joins and their features: one query
    results = [ScoreResult(post_id=i, status="", skipped="gone") for i in ids if i not in loaded]
    pending = [p for p, _ in loaded.values() if p.status in INITIAL_FROM]
    results += [
        ScoreResult(post_id=p.id, status=p.status, skipped="not_pending")
        for p, _ in loaded.values()
        if p.status not in INITIAL_FROM
    ]
    if not pending:
        return results
    items = prepare(pending, features={p.id: loaded[p.id][1] for p in pending})
    infer(items, client=client or get_client())
    return results + persist(items, allowed_from=INITIAL_FROM, started=started)


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
    last_revision = Score.objects.filter(post_id=post_id, model_set=item.model_set).aggregate(r=Max("revision"))["r"]
    item.revision = 0 if last_revision is None else last_revision + 1
    (result,) = persist([item], allowed_from=RESCORE_FROM, started=started)
    if result.skipped == "already_scored":
        # A concurrent re-score took this revision, possibly without the newest report.
        raise RescoreConflict(f"post {post_id} revision {item.revision} written concurrently")
    return result


def _final(item: _Item) -> float:
    if item.reason is not None:
        return 1.0
    assert item.output is not None
    return float(item.output.final_prob)


def _actions(
    items: Sequence[_Item],
    policy: DecisionPolicy,
    report_counts: Sequence[int],
    routing_reasons: Sequence[str] = (),
) -> list[Action]:
    """The policy's action for each item, in ONE policy_actions call: the same rule as
    policy_decide, without its per-post numpy overhead (8 % of the worker's CPU as a call per
    post, py-spy). A short-circuited post is removed whatever the policy says.
    `routing_reasons`: language_routing_reason per item (none given: no item is routed)."""
    strongest = [
        strongest_sub_score((o.text_prob, o.preview_prob, o.link_prob, o.behaviour_prob))
        if (o := item.output) is not None
        else 0.0
        for item in items
    ]
    decided = policy_actions(
        policy=policy,
        final_scores=np.asarray([_final(item) for item in items], dtype=np.float64),
        report_counts=np.asarray(report_counts, dtype=np.float64),
        strongest_sub_scores=np.asarray(strongest, dtype=np.float64),
        languages_unvalidated=np.asarray([bool(r) for r in routing_reasons], dtype=bool) if routing_reasons else None,
    )
    return [
        Action.REMOVE if item.reason is not None else Action(str(action))
        for item, action in zip(items, decided, strict=True)
    ]


def _enforce(items: Sequence[_Item], actions: Sequence[Action]) -> list[Action]:
    """The policy's actions as a moderator's enforcement (suspension, trust) changes them
    (scoring.services.enforcement), from the rows loaded with the posts: no query."""
    now = timezone.now()
    enforced: list[Action] = []
    for item, action in zip(items, actions, strict=True):
        final, why = enforced_action(post=item.post, action=action, short_circuited=item.reason is not None, now=now)
        if why:
            item.extra["enforcement"] = why  # kept in the Score's features: the evidence page shows it
        enforced.append(final)
    return enforced


def _score_row(item: _Item, *, action: Action, policy: DecisionPolicy, latency_ms: float, routing_reason: str) -> Score:
    out = item.output
    return Score(
        post_id=item.post.id,
        model_set=item.model_set,
        revision=item.revision,
        text_score=out.text_prob if out else None,
        preview_score=out.preview_prob if out else None,
        link_score=out.link_prob if out else None,
        behaviour_score=out.behaviour_prob if out else None,
        final_score=_final(item),
        action=action,
        short_circuit_reason=(item.reason or "")[:255],
        # Only where it decided: a removed post was not routed, a queued one may have been.
        routing_reason=routing_reason[:255] if action == Action.QUEUE else "",
        policy=None if item.reason is not None else policy,
        features={"link": item.features.link, "behaviour": item.features.behaviour, **item.extra},
        contributions=dict(out.contributions) if out else {},
        model_versions=dict(out.model_versions) if out else {},
        latency_ms=round(latency_ms, 3),
    )


def persist(items: Sequence[_Item], *, allowed_from: frozenset[str], started: float) -> list[ScoreResult]:
    """The write transaction. Query count is fixed for any batch size."""
    results: list[ScoreResult] = []
    now = timezone.now()
    with transaction.atomic():
        policy = policy_active()
        ids = [i.post.id for i in items]
        fresh = posts_lock_for_scoring(post_ids=ids)
        # A post still in `received` has no Score: the one transaction that writes a post's first
        # Score also moves it out of `received`, and the row lock above orders us after it. So
        # only a re-score needs to look (the unique key on Score stays the backstop).
        existing = (
            set()
            if allowed_from == INITIAL_FROM
            else set(Score.objects.filter(post_id__in=ids).values_list("post_id", "model_set", "revision").order_by())
        )
        scores: list[Score] = []
        changed: list[Post] = []
        removed_now: list[Post] = []
        to_score: list[tuple[_Item, str, int]] = []  # item, current status, report count
        for item in items:
            post = item.post
            row = fresh.get(post.id)
            if row is None or row["status"] not in allowed_from:
                results.append(ScoreResult(post_id=post.id, status=row["status"] if row else "", skipped="not_pending"))
                continue
            current = row["status"]
            if item.model_error:
                # Fail towards a human: queue it without a score rather than retry forever.
                post.status, post.status_changed_at, post.scored_at = PostStatus.QUEUED, now, now
                post.model_version = MODEL_ERROR_VERSION
                changed.append(post)
                results.append(ScoreResult(post_id=post.id, status=post.status, skipped="model_error"))
                logger.error("scoring.model_error post_id=%s error=%s", post.id, item.model_error)
                continue
            if (post.id, item.model_set, item.revision) in existing:
                results.append(ScoreResult(post_id=post.id, status=current, skipped="already_scored"))
                continue
            report_count = max(int(row["report_count"]), int(item.features.behaviour["report_count"]))
            to_score.append((item, current, report_count))
        scored_items = [i for i, _, _ in to_score]
        routing = [language_routing_reason(i.post) for i in scored_items]
        actions = (
            _enforce(scored_items, _actions(scored_items, policy, [r for _, _, r in to_score], routing))
            if to_score
            else []
        )
        for (item, current, _), action, reason in zip(to_score, actions, routing, strict=True):
            post = item.post
            latency_ms = (time.perf_counter() - started) * 1000.0
            score = _score_row(item, action=action, policy=policy, latency_ms=latency_ms, routing_reason=reason)
            scores.append(score)
            target = ACTION_STATUS[action]
            if target != current and target in POST_TRANSITIONS[current]:
                if target == PostStatus.AUTO_REMOVED:
                    removed_now.append(post)
                post.status, post.status_changed_at = target, now
            else:
                post.status = current
            post.final_score = score.final_score
            post.model_version = item.model_set[:120]
            post.scored_at = now
            changed.append(post)
            results.append(
                ScoreResult(post_id=post.id, status=post.status, action=action, final_score=score.final_score)
            )
        insert_rows(scores)  # Score.objects.bulk_create, all rows as one JSON parameter
        by_post = {s.post_id: s for s in scores}
        for r in results:
            if r.post_id in by_post:
                r.score = by_post[r.post_id]
                r.score_id = r.score.pk
        posts_score_fields_write(posts=changed, fields=POST_SCORE_FIELDS)
        # The queue's priority follows the new score: one UPDATE for the batch.
        posts_priority_refresh(post_ids=[p.id for p in changed if p.status == PostStatus.QUEUED])
        spam_counters_add(posts=removed_now)
        webhooks_enqueue_for_posts(p for p in changed if p.id in by_post)
        removal_statements_publish(post_ids=[p.id for p in removed_now])
    # One INFO line per batch; the per-post line is DEBUG: formatting and writing 32 lines per
    # batch was 4 % of the worker's CPU (py-spy), for a trail the Score rows keep anyway.
    written = [r for r in results if r.score_id is not None]
    if written:
        by_action = Counter(str(r.action) for r in written)
        # Metrics once per batch and action, never per post (config.metrics).
        POSTS_SCORED.inc(len(written))
        SCORING_BATCH_SIZE.observe(len(written))
        for action_name, n in by_action.items():
            DECISIONS.labels("auto", action_name).inc(n)
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
    return results
