"""The application's Prometheus counters and histograms, defined once and incremented by the
services that do the work (moderation, scoring, feedback). config.metrics exports them and
documents each one; this module imports no app.

Hot path: ingest and scoring touch a metric once per request or batch, never per post."""

from __future__ import annotations

from prometheus_client import Counter, Histogram

POSTS_INGESTED = Counter("moderation_posts_ingested", "Posts created by ingest.")
POSTS_SCORED = Counter("moderation_posts_scored", "Posts given their Score row by the scoring pipeline.")
POSTS_TEXT_MODEL_SKIPPED = Counter(
    "moderation_posts_text_model_skipped",
    "Scored posts whose text score the text cascade decided without the transformer.",
)
SCORING_BATCH_SIZE = Histogram(
    "moderation_scoring_batch_size",
    "Posts per scoring batch (one Triton round, one write transaction).",
    buckets=(1, 2, 4, 8, 16, 32, 64, 128),
)
# category: the policy category the decision is about (moderation.categories); an automatic
# decision is "abuse" when the abuse rule chose its action, else "spam".
DECISIONS = Counter(
    "moderation_decisions", "Decisions by who made them, their action and category.", ["source", "action", "category"]
)
TRITON_SECONDS = Histogram(
    "moderation_triton_request_seconds",
    "Duration of one spam_pipeline request (up to 32 posts), answered or failed.",
    ["server"],
    buckets=(0.005, 0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12),
)
TRITON_ERRORS = Counter("moderation_triton_errors", "Failed spam_pipeline requests.", ["server", "kind"])
WEBHOOK_FAILURES = Counter("moderation_webhook_failures", "Webhook delivery attempts that failed.")
TRAINING_RUNS = Counter("moderation_training_runs", "Finished training runs by outcome.", ["status"])
