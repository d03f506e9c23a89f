"""What the scoring pipeline writes: one Score per post per model-version set, the versioned
decision policy, and the webhook delivery log."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from core.db_fields import RowJSONField, StoredJSONField


class Action(models.TextChoices):
    REMOVE = "remove", "Remove"
    QUEUE = "queue", "Queue for review"
    APPROVE = "approve", "Approve"


class Score(models.Model):
    # No index of its own: the unique (post, model_set, revision) leads with post_id.
    post = models.ForeignKey("moderation.Post", on_delete=models.CASCADE, related_name="scores", db_index=False)
    # Identifies the model versions that produced this row, e.g. "text:3,link:1,behaviour:1,fusion:2"
    # or "short_circuit" when a block list decided before any model ran.
    model_set = models.CharField(max_length=200)
    # Bumped when a new report (a behaviour feature) triggers a re-score with the same models.
    revision = models.PositiveIntegerField(default=0)
    text_score = models.FloatField(null=True, blank=True)
    preview_score = models.FloatField(null=True, blank=True)
    link_score = models.FloatField(null=True, blank=True)
    behaviour_score = models.FloatField(null=True, blank=True)
    final_score = models.FloatField()
    # The abuse model's calibrated probability; None when the served bundle had no abuse model.
    abuse_score = models.FloatField(null=True, blank=True)
    action = models.CharField(max_length=10, choices=Action.choices)
    short_circuit_reason = models.CharField(max_length=255, blank=True)
    # Why the policy queued a post it would otherwise have auto-approved, when that reason is
    # not in the numbers, e.g. "language not validated: es" (scoring.services.policy).
    routing_reason = models.CharField(max_length=255, blank=True)
    policy = models.ForeignKey("DecisionPolicy", null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    features = StoredJSONField(default=dict, help_text="Feature values as seen at scoring time.")
    contributions = StoredJSONField(default=dict, help_text="model -> feature -> contribution (pred_contribs).")
    model_versions = StoredJSONField(default=dict, help_text="model name -> version.")
    latency_ms = models.FloatField(default=0.0)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["post", "model_set", "revision"], name="score_post_modelset_rev_uniq")
        ]
        indexes = [models.Index(fields=["created_at"], name="score_created_idx")]

    def __str__(self) -> str:
        return f"post {self.post_id}: {self.final_score:.3f} ({self.model_set})"


class DecisionPolicy(models.Model):
    """Thresholds mapping a final score to an action. Versioned: edits create a new active row."""

    version = models.PositiveIntegerField(unique=True)
    remove_threshold = models.FloatField(default=0.9, help_text="final >= this: auto-remove")
    approve_threshold = models.FloatField(default=0.2, help_text="final < this: auto-approve")
    # The fusion tree can be outvoted by one confident sub-model (a benign text with a fresh
    # shortener link from a throw-away account): a human looks instead of auto-approving.
    escalate_threshold = models.FloatField(
        default=0.9,
        help_text="any sub-score (text, preview, link, behaviour) >= this: never auto-approve; 1 disables",
    )
    is_active = models.BooleanField(default=False)
    note = models.CharField(max_length=255, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name_plural = "decision policies"
        constraints = [
            models.UniqueConstraint(fields=["is_active"], condition=models.Q(is_active=True), name="one_active_policy"),
            models.CheckConstraint(
                condition=models.Q(approve_threshold__lte=models.F("remove_threshold")),
                name="policy_thresholds_ordered",
            ),
        ]

    def __str__(self) -> str:
        return f"v{self.version} ({self.approve_threshold:.2f} / {self.remove_threshold:.2f})"


class WebhookDelivery(models.Model):
    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        DELIVERED = "delivered", "Delivered"
        FAILED = "failed", "Failed (gave up)"

    source = models.ForeignKey("moderation.Source", on_delete=models.CASCADE, related_name="webhook_deliveries")
    # Empty for events about an author, a domain or an IP (enforcement), which concern no post.
    post = models.ForeignKey(
        "moderation.Post", null=True, blank=True, on_delete=models.CASCADE, related_name="webhook_deliveries"
    )
    event_id = models.CharField(max_length=64, unique=True)
    event_type = models.CharField(max_length=64)
    payload = RowJSONField()
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    last_status_code = models.PositiveIntegerField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name_plural = "webhook deliveries"
        indexes = [models.Index(fields=["status", "created_at"], name="webhook_status_idx")]

    def __str__(self) -> str:
        return f"{self.event_type} {self.event_id} ({self.status})"


class CampaignBucket(models.Model):
    """One LSH band bucket of a post's MinHash (scoring.services.campaigns): posts of one
    source sharing a bucket are near-duplicate candidates. Kept in PostgreSQL rather than in
    datasketch's Redis storage: durable, per source by a column, written in the transaction that
    assigns the campaign, and deleted with its post."""

    source = models.ForeignKey("moderation.Source", on_delete=models.CASCADE, related_name="+", db_index=False)
    bucket = models.BigIntegerField()
    post = models.ForeignKey("moderation.Post", on_delete=models.CASCADE, related_name="+")

    class Meta:
        constraints = [
            # Also the look-up index: every candidate query is (source, bucket IN ...).
            models.UniqueConstraint(fields=["source", "bucket", "post"], name="campaign_bucket_uniq")
        ]

    def __str__(self) -> str:
        return f"{self.source_id}:{self.bucket}:{self.post_id}"
