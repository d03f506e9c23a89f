"""A demo of one feedback cycle through the real product: posts in through the ingest API, scored
by the running scoring worker on Triton, labelled by moderators through the dashboard's decision
service, then snapshot -> retrain -> candidate against production [-> promote].

    DATABASE_URL=... CELERY_BROKER_URL=... CACHE_URL=... TRITON_URL=... \\
    python scripts/feedback_cycle.py --posts 600 [--train-here] [--promote] [--json report.json]

Needs what production needs: PostgreSQL, the broker, a scoring worker consuming its queue and a
Triton server serving the published models; a training worker on the "training" queue, unless
--train-here runs the training in this process (the same function the training task runs).

The posts are texts of the SMS collection's train and validation splits (its test split is the
evaluation suite every candidate is gated on, so retraining drops those texts). A share of the
spam comes from a campaign the models have not seen: aged accounts posting bursts of links
to one fresh domain from a few busy IP addresses. Moderators label every scored post (with a
reviewer error rate), so the retrained candidate learns the campaign; the report compares it
with production on the same held-out split.

It writes into the configured database (a source "feedback-cycle-<run>", its posts, decisions,
a dataset version and a training run): run it against a demo or staging database."""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")

BATCH = 100  # posts per POST /api/v1/posts/batch


@dataclass(frozen=True)
class CycleOptions:
    posts: int = 600
    spam_share: float = 0.4  # moderators review the queue, richer in spam than all traffic
    campaign_share: float = 0.5  # of the spam
    reviewer_error: float = 0.02
    seed: int = 21
    # Names the run's source, authors and posts; empty: a fresh random one. The dataset split
    # hashes the source and author names, so a fixed id gives the same split on every run.
    run_id: str = ""
    train_here: bool = False
    promote: bool = False
    timeout_s: float = 600.0


def wait_for(predicate: Callable[[], Any], *, timeout_s: float, what: str) -> Any:
    deadline = time.monotonic() + timeout_s
    while not (result := predicate()):
        if time.monotonic() > deadline:
            raise TimeoutError(f"gave up waiting for {what} after {timeout_s:.0f} s")
        time.sleep(0.5)
    return result


def payloads(options: CycleOptions, run: str) -> list[tuple[dict[str, Any], int, bool]]:
    """(post payload, true label, from the campaign) for SMS texts outside the evaluation suite."""
    from modelops.text.data import load_sms_splits

    rng = random.Random(options.seed)
    splits = load_sms_splits()
    texts = splits.train.texts + splits.validation.texts
    labels = splits.train.labels + splits.validation.labels
    spam = [t for t, label in zip(texts, labels, strict=True) if label]
    ham = [t for t, label in zip(texts, labels, strict=True) if not label]
    n_spam = min(len(spam), round(options.posts * options.spam_share))
    picked = [(t, 1) for t in rng.sample(spam, n_spam)] + [
        (t, 0) for t in rng.sample(ham, min(len(ham), options.posts - n_spam))
    ]
    rng.shuffle(picked)
    now = datetime.now(UTC)
    out = []
    for i, (text, label) in enumerate(picked):
        campaign = bool(label) and rng.random() < options.campaign_share
        if campaign:  # aged, quiet accounts; one fresh domain; a few busy addresses
            author = {
                "external_id": f"{run}-campaign-{i % 12}",
                "account_created_at": (now - timedelta(days=900 + i % 300)).isoformat(),
                "followers_count": 150 + i % 90,
                "friends_count": 120 + i % 60,
            }
            extra = {"url": f"https://deals-{run}.example/offer/{i}", "ip": f"198.51.100.{i % 4 + 1}"}
        else:  # authors post one to three times
            author = {
                "external_id": f"{run}-user-{i // 2}",
                "account_created_at": (now - timedelta(days=rng.randint(5, 2000))).isoformat(),
                "followers_count": rng.randint(0, 500),
            }
            extra = {"ip": f"203.0.113.{rng.randint(1, 254)}"}
        post = {"external_id": f"{run}-{i}", "text": text, "author": author, "created_at": now.isoformat(), **extra}
        out.append((post, label, campaign))
    return out


def run_cycle(options: CycleOptions, *, log: Callable[[str], None] = print) -> dict[str, Any]:
    from django.contrib.auth.models import Group, User
    from django.db.models import Count
    from rest_framework.test import APIClient

    from feedback.models import RunStatus, TrainingRun
    from feedback.services.datasets import dataset_snapshot
    from feedback.services.promotion import GateHeld, promote_run
    from feedback.services.training import training_run_execute, training_run_start
    from moderation.models import ALL_SCOPES, Post, PostStatus, Source
    from moderation.services.api_keys import api_key_create
    from moderation.services.decisions import decision_record

    run = options.run_id or uuid.uuid4().hex[:8]
    rng = random.Random(options.seed + 1)
    source = Source.objects.create(name=f"Feedback cycle {run}", slug=f"feedback-cycle-{run}")
    _, raw_key = api_key_create(source=source, name="feedback cycle", scopes=ALL_SCOPES)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Api-Key {raw_key}")
    admin, _ = User.objects.get_or_create(username="cycle-admin", defaults={"is_superuser": True, "is_staff": True})
    moderator, _ = User.objects.get_or_create(username="cycle-moderator")
    moderator.groups.add(Group.objects.get_or_create(name="moderator")[0])

    # 1. In through the API; the scoring worker picks the posts up.
    items = payloads(options, run)
    for start in range(0, len(items), BATCH):
        body = {"posts": [post for post, _, _ in items[start : start + BATCH]]}
        response = client.post("/api/v1/posts/batch", body, format="json")
        assert response.status_code == 207 and not response.json()["invalid"], response.content[:500]
    log(f"ingested {len(items)} posts through the API as source {source.slug}")
    posts = Post.objects.filter(source=source)
    wait_for(
        lambda: not posts.filter(status=PostStatus.RECEIVED).exists(),
        timeout_s=options.timeout_s,
        what="the scoring worker to score every post",
    )
    statuses = dict(posts.values_list("status").annotate(n=Count("id")).order_by("status"))
    log(f"scored by the worker: {statuses}")

    # 2. Moderators label every post (an auto-decision is theirs to confirm or overturn).
    truth = {post["external_id"]: (label, campaign) for post, label, campaign in items}
    flips = 0
    for post in posts.order_by("id"):
        label, _ = truth[post.external_id]
        if rng.random() < options.reviewer_error:
            label, flips = 1 - label, flips + 1
        decision_record(post=post, moderator=moderator, label="spam" if label else "ham")
    campaign_posts = sum(1 for _, campaign in truth.values() if campaign)
    log(f"moderators labelled {len(items)} posts ({campaign_posts} campaign spam, {flips} reviewer errors)")

    # 3. Snapshot, retrain, compare [, promote].
    dataset = dataset_snapshot(created_by=admin, name=f"feedback cycle {run}")
    log(f"dataset v{dataset.version}: {dataset.example_count} examples")
    training = training_run_start(dataset=dataset, scope="tabular", started_by=admin)
    if options.train_here:
        training = training_run_execute(run_id=training.pk)
    else:
        wait_for(
            lambda: TrainingRun.objects.get(pk=training.pk).is_finished,
            timeout_s=options.timeout_s,
            what="the training worker to finish the run",
        )
        training.refresh_from_db()
    report: dict[str, Any] = {
        "source": source.slug,
        "posts": len(items),
        "campaign_posts": campaign_posts,
        "reviewer_errors": flips,
        "dataset": dataset.version,
        "run": training.pk,
        "status": training.status,
        "error": training.error,
    }
    if training.status != RunStatus.SUCCEEDED:
        log(f"run #{training.pk} {training.status}: {training.error}")
        return report
    report["candidate"] = training.candidate_metrics
    report["production"] = training.production_metrics
    _print_comparison(training, log)
    if options.promote:
        try:
            versions = promote_run(run=training, user=admin)
        except GateHeld as exc:
            log(f"not promoted: {exc.message}")
            report["promoted"] = []
        else:
            report["promoted"] = [(v.name, v.version) for v in versions]
            log(f"promoted: {report['promoted']}")
    return report


def _shown(value: Any) -> str:
    return "-" if value is None else (f"{value:.4f}" if isinstance(value, float) else str(value))


def _print_comparison(run: Any, log: Callable[[str], None]) -> None:
    cand, prod = run.candidate_metrics["tabular"]["final"], run.production_metrics["tabular"]["final"]
    log(f"run #{run.pk} on the held-out split: {'metric':12s} {'production':>10s} {'candidate':>10s}")
    for key in ("n", "spam", "pr_auc", "f1", "precision", "recall"):
        log(f"{'':30s}{key:12s} {_shown(prod.get(key)):>10s} {_shown(cand.get(key)):>10s}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--posts", type=int, default=CycleOptions.posts)
    parser.add_argument("--spam-share", type=float, default=CycleOptions.spam_share)
    parser.add_argument("--campaign-share", type=float, default=CycleOptions.campaign_share)
    parser.add_argument("--reviewer-error", type=float, default=CycleOptions.reviewer_error)
    parser.add_argument("--seed", type=int, default=CycleOptions.seed)
    parser.add_argument("--train-here", action="store_true", help="train in this process, not on a training worker")
    parser.add_argument("--promote", action="store_true", help="promote the candidate if the gate lets it through")
    parser.add_argument("--timeout", type=float, default=CycleOptions.timeout_s, help="seconds per wait")
    parser.add_argument("--json", type=Path, help="write the report here")
    args = parser.parse_args()

    import django

    django.setup()
    report = run_cycle(
        CycleOptions(
            posts=args.posts,
            spam_share=args.spam_share,
            campaign_share=args.campaign_share,
            reviewer_error=args.reviewer_error,
            seed=args.seed,
            train_here=args.train_here,
            promote=args.promote,
            timeout_s=args.timeout,
        )
    )
    if args.json:
        args.json.write_text(json.dumps(report, indent=2, default=str) + "\n")


if __name__ == "__main__":
    main()
