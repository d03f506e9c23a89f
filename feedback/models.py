"""The feedback loop: moderators' decisions frozen into labelled examples, immutable dataset
versions built from them, retraining runs, and the registry of model versions served by Triton.

Immutability is part of the contract, not a convention: LabelledExample and DatasetVersion
refuse `save()` on an existing row, and a PostgreSQL trigger (migration 0002) rejects any UPDATE
of their tables, so neither an admin form nor a stray queryset `.update()` can rewrite history.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone


class ImmutableRowError(RuntimeError):
    """An attempt to change a row that is frozen once written."""


class ImmutableModel(models.Model):
    """Rows are written once. Deleting stays possible (retention, erasure requests)."""

    class Meta:
        abstract = True

    def save(self, *args: Any, **kwargs: Any) -> None:
        if self.pk is not None and not self._state.adding:
            raise ImmutableRowError(f"{type(self).__name__} rows are immutable once created")
        super().save(*args, **kwargs)


class ExampleOrigin(models.TextChoices):
    DECISION = "decision", "Moderator decision"
    IMPORT = "import", "Imported dataset"


class LabelledExample(ImmutableModel):
    """What the model saw when a moderator labelled a post, frozen at decision time.

    One row per moderator decision (or per imported row). Later edits to the post, the author or
    the scores do not reach it. Conflicting labels on one post are not resolved here but when a
    dataset is built: see `feedback.selectors.effective_examples` for the rule.
    """

    origin = models.CharField(max_length=10, choices=ExampleOrigin.choices, default=ExampleOrigin.DECISION)
    # Weak references on purpose: an example outlives the post and decision it came from (a post
    # deleted by retention must not delete or rewrite the training data that was built from it).
    decision = models.OneToOneField(
        "moderation.Decision",
        null=True,
        blank=True,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        related_name="labelled_example",
    )
    post = models.ForeignKey(
        "moderation.Post",
        null=True,
        blank=True,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        related_name="labelled_examples",
    )
    score_id = models.BigIntegerField(null=True, blank=True, help_text="The Score row the features came from.")
    # Identity, as text, so the example stays meaningful without the rows it came from.
    source_slug = models.CharField(max_length=60, db_index=True)
    post_external_id = models.CharField(max_length=255, blank=True)
    author_external_id = models.CharField(max_length=255, blank=True)
    # What was posted.
    text = models.TextField(blank=True)
    preview_text = models.TextField(blank=True)
    url = models.CharField(max_length=2048, blank=True)
    # What the models saw and said.
    features = models.JSONField(default=dict, blank=True, help_text="Feature values at scoring time.")
    sub_scores = models.JSONField(default=dict, blank=True, help_text="text/preview/link/behaviour probabilities.")
    final_score = models.FloatField(null=True, blank=True)
    model_set = models.CharField(max_length=200, blank=True)
    model_versions = models.JSONField(default=dict, blank=True)
    # The label and who gave it.
    label = models.CharField(max_length=4, choices=[("spam", "Spam"), ("ham", "Ham")])
    reason_code = models.CharField(max_length=64, blank=True)
    # The decision's category (moderation.categories); a dataset for a model takes only its own.
    category = models.CharField(max_length=32, blank=True, default="", db_index=True)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        related_name="+",
    )
    decided_by_username = models.CharField(max_length=150, blank=True)
    decided_by_admin = models.BooleanField(default=False, help_text="The decider held the admin role then.")
    decided_at = models.DateTimeField(db_index=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [
            models.Index(fields=["post", "decided_at"], name="example_post_idx"),
            models.Index(fields=["origin", "decided_at"], name="example_origin_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.label} {self.source_slug}:{self.post_external_id or self.pk}"


class DatasetOrigin(models.TextChoices):
    SNAPSHOT = "snapshot", "Snapshot of labelled examples"
    IMPORT = "import", "Imported file"


class DatasetVersion(ImmutableModel):
    """An immutable, versioned snapshot of labelled examples with its files on disk.

    Files live under ARTIFACTS_DIR/datasets/<version>/ (data.jsonl, data.parquet, data.csv and
    manifest.json). The manifest's `content_sha256` hashes the canonical JSONL, so the same
    examples always give the same hash; training re-checks it before it reads the data.
    """

    version = models.PositiveIntegerField(unique=True)
    name = models.CharField(max_length=120, blank=True)
    origin = models.CharField(max_length=10, choices=DatasetOrigin.choices, default=DatasetOrigin.SNAPSHOT)
    content_sha256 = models.CharField(max_length=64)
    manifest = models.JSONField(default=dict)
    example_count = models.PositiveIntegerField()
    spam_count = models.PositiveIntegerField()
    ham_count = models.PositiveIntegerField()
    path = models.CharField(max_length=500, help_text="Directory relative to ARTIFACTS_DIR.")
    examples = models.ManyToManyField(LabelledExample, through="DatasetMember", related_name="datasets")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-version"]

    def __str__(self) -> str:
        return f"dataset v{self.version} ({self.example_count} examples)"


class Split(models.TextChoices):
    TRAIN = "train", "Train"
    VALIDATION = "validation", "Validation"
    TEST = "test", "Test"


class DatasetMember(models.Model):
    """Which examples a dataset holds and on which side of the split each one fell."""

    dataset = models.ForeignKey(DatasetVersion, on_delete=models.CASCADE, related_name="members")
    example = models.ForeignKey(LabelledExample, on_delete=models.PROTECT, related_name="memberships")
    split = models.CharField(max_length=10, choices=Split.choices)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["dataset", "example"], name="dataset_member_uniq")]
        indexes = [models.Index(fields=["dataset", "split"], name="dataset_member_split_idx")]

    def __str__(self) -> str:
        return f"v{self.dataset_id} #{self.example_id} {self.split}"


class TrainingScope(models.TextChoices):
    TABULAR = "tabular", "Feature models and fusion (seconds)"
    TEXT = "text", "Text model fine-tune (minutes)"
    ALL = "all", "Everything"
    ABUSE = "abuse", "Abuse model (seconds; abuse/harassment and hate labels + insults replay)"


class RunStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    SUCCEEDED = "succeeded", "Succeeded"
    FAILED = "failed", "Failed"


class TrainingData(models.TextChoices):
    CUMULATIVE = "cumulative", "Cumulative labels + replay of earlier training data (keeps what the model knew)"
    DATASET_ONLY = "dataset_only", "This dataset only"


class RunKind(models.TextChoices):
    RETRAINING = "retraining", "Retraining (started by an admin)"
    ADAPTATION = "adaptation", "Adaptation (automatic, as labels arrive)"


class TrainingRun(models.Model):
    dataset = models.ForeignKey(DatasetVersion, on_delete=models.PROTECT, related_name="training_runs")
    scope = models.CharField(max_length=10, choices=TrainingScope.choices)
    # An adaptation refits the text model's lexical half and familiarity reference, sometimes
    # fine-tuning its transformer (feedback.services.adaptation), or retrains the abuse model
    # (scope "abuse", feedback.services.abuse_adaptation); it is judged by the same suites and gate.
    kind = models.CharField(max_length=12, choices=RunKind.choices, default=RunKind.RETRAINING)
    training_data = models.CharField(max_length=16, choices=TrainingData.choices, default=TrainingData.CUMULATIVE)
    status = models.CharField(max_length=10, choices=RunStatus.choices, default=RunStatus.QUEUED)
    progress = models.FloatField(default=0.0, help_text="0..1")
    progress_message = models.CharField(max_length=255, blank=True)
    log = models.TextField(blank=True)
    auto_promote = models.BooleanField(default=False, help_text="Promote if the guarded-metrics rule passes.")
    # model name -> artifact directory of the candidate (relative to ARTIFACTS_DIR).
    candidate_artifacts = models.JSONField(default=dict, blank=True)
    candidate_metrics = models.JSONField(default=dict, blank=True)
    production_metrics = models.JSONField(default=dict, blank=True)
    report = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)
    task_id = models.CharField(max_length=64, blank=True)
    started_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["status", "created_at"], name="run_status_idx")]

    def __str__(self) -> str:
        return f"run #{self.pk} {self.scope} on dataset v{self.dataset.version} ({self.status})"

    @property
    def is_finished(self) -> bool:
        return self.status in (RunStatus.SUCCEEDED, RunStatus.FAILED)


class ModelBundle(models.TextChoices):
    """Models that are trained, published and rolled back together."""

    TABULAR = "tabular", "Feature models + fusion (link_model, behaviour_model, fusion_model)"
    TEXT = "text", "Text model (tokenizer, text_classifier)"
    ABUSE = "abuse", "Abuse model (abuse.joblib, served from the tokenizer's folder)"


class ModelVersion(models.Model):
    """One served version of a model bundle and where it came from.

    `version` is the Triton version folder number of the bundle's lead model (fusion_model for
    tabular, text_classifier for text); `triton_versions` holds every member's number. A rollback
    is a new row too: Triton serves the old files again under a new, higher number.
    """

    name = models.CharField(max_length=16, choices=ModelBundle.choices)
    version = models.PositiveIntegerField(help_text="Triton version folder number of the lead model.")
    triton_versions = models.JSONField(default=dict, blank=True, help_text="Triton model name -> version.")
    dataset = models.ForeignKey(
        DatasetVersion, null=True, blank=True, on_delete=models.PROTECT, related_name="model_versions"
    )
    training_run = models.ForeignKey(
        TrainingRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="model_versions"
    )
    metrics = models.JSONField(default=dict, blank=True)
    artifact_path = models.CharField(max_length=500, blank=True)
    is_production = models.BooleanField(default=False)
    # The version that was in production when this one was promoted: the one-click rollback.
    rollback_target = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    # Set when this row re-serves an older version (a rollback).
    restored_from = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    promoted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    promoted_at = models.DateTimeField(null=True, blank=True)
    note = models.CharField(max_length=255, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name", "-version"]
        constraints = [
            models.UniqueConstraint(fields=["name", "version"], name="model_version_uniq"),
            models.UniqueConstraint(fields=["name"], condition=Q(is_production=True), name="one_production_per_model"),
        ]

    def __str__(self) -> str:
        return f"{self.name}:{self.version}{' (production)' if self.is_production else ''}"


class SuiteKind(models.TextChoices):
    BOOTSTRAP = "bootstrap", "Bootstrap SMS test split"
    DATASET_TEST = "dataset_test", "Test split of a dataset version"
    IMPORTED = "imported", "Imported set marked as a suite"
    BENIGN = "benign", "Benign text of another kind (false positives only)"


class EvaluationSuite(ImmutableModel):
    """A named, frozen evaluation set. Every candidate and production are scored on every active
    suite, and the promotion gate compares the two suite by suite.

    Frozen by copy: the rows are written once to ARTIFACTS_DIR/<path>/rows.jsonl and
    `content_sha256` hashes that file, so editing or deleting the dataset, its examples or the
    bootstrap corpus later never changes what a suite measures (loading re-checks the hash).
    The one planned change is an author's data erased on request: the file is rewritten without
    their rows and a SuiteErasure records the new hash and counts, so the counts here are those
    at freezing (the latest erasure holds the current ones).
    """

    name = models.CharField(max_length=120, unique=True)
    kind = models.CharField(max_length=16, choices=SuiteKind.choices)
    # The model whose suites these are, by its category (moderation.categories.MODEL_CATEGORIES):
    # the spam bundles (text, tabular) are compared on "spam" suites, the abuse model on "abuse".
    category = models.CharField(max_length=32, default="spam", db_index=True)
    dataset = models.ForeignKey(
        DatasetVersion, null=True, blank=True, on_delete=models.SET_NULL, related_name="evaluation_suites"
    )
    description = models.CharField(max_length=255, blank=True)
    content_sha256 = models.CharField(max_length=64)
    row_count = models.PositiveIntegerField(help_text="Rows when frozen.")
    spam_count = models.PositiveIntegerField(help_text="Spam rows when frozen.")
    featured_count = models.PositiveIntegerField(
        default=0, help_text="Rows with frozen features: the tabular models are scored on these."
    )
    path = models.CharField(max_length=500, help_text="Directory relative to ARTIFACTS_DIR.")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["dataset", "kind"], condition=Q(dataset__isnull=False), name="one_suite_per_dataset_kind"
            )
        ]

    def __str__(self) -> str:
        return f"suite {self.name} ({self.row_count} rows)"


class DatasetErasure(models.Model):
    """Rows taken out of a frozen dataset version because their author's data was erased on
    request. The version's row stays as it was (immutable, with its original content hash); its
    files are rewritten without those rows and this record says how many went and what the
    data file hashes to now, so `dataset_verify` still detects any other change."""

    dataset = models.ForeignKey(DatasetVersion, on_delete=models.CASCADE, related_name="erasures")
    examples_removed = models.PositiveIntegerField()
    content_sha256 = models.CharField(max_length=64, help_text="SHA-256 of data.jsonl after the removal.")
    reason = models.CharField(max_length=255, default="author's data erased on request")
    # The model versions trained on this dataset version: their weights were fitted on the
    # erased rows, so they are listed for retraining ([{"id", "name", "version",
    # "is_production"}], as they stood at the erasure).
    models_to_retrain = models.JSONField(
        default=list, blank=True, help_text="Model versions trained on the erased rows: retrain them."
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return f"{self.examples_removed} rows erased from dataset v{self.dataset.version}"


class SuiteErasure(models.Model):
    """Rows taken out of an evaluation suite because their author's data was erased on request.
    The suite's row stays as it was (immutable, with the hash and counts at freezing); its rows
    file is rewritten without those rows and this record holds what the file hashes to now and
    the counts left, so `suite_rows` still refuses any other change. A suite left with no rows
    stays (its history and the runs that used it still refer to it); evaluation skips it."""

    suite = models.ForeignKey(EvaluationSuite, on_delete=models.CASCADE, related_name="erasures")
    rows_removed = models.PositiveIntegerField()
    row_count = models.PositiveIntegerField(help_text="Rows left after the removal.")
    spam_count = models.PositiveIntegerField(help_text="Spam rows left after the removal.")
    content_sha256 = models.CharField(max_length=64, help_text="SHA-256 of rows.jsonl after the removal.")
    reason = models.CharField(max_length=255, default="author's data erased on request")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return f"{self.rows_removed} rows erased from suite {self.suite.name}"


class SuiteReference(models.Model):
    """What production scored on a suite the first time a candidate was compared with it there:
    the floor every later candidate of that bundle is held to on that suite, beside the
    production of the day (feedback.services.gate, feedback.services.suite_references).

    Comparing each candidate only with the production of the day lets small losses add up: every
    adaptation round may lose up to the gate's tolerance against the round before it. The
    reference does not move with promotions. It is measured again, from the production of the
    day, when the suite's rows change (an erasure; `content_sha256` says which rows it was
    measured on), a rate when its threshold changes, and after an admin cleared it or overrode
    the gate against it (audited)."""

    suite = models.ForeignKey(EvaluationSuite, on_delete=models.CASCADE, related_name="references")
    bundle = models.CharField(max_length=16, help_text="The model bundle compared: text, tabular or abuse.")
    # {"f1": ..., "at_remove.fpr": ..., "at_remove.threshold": ...}: the gated metrics by their
    # path, and the threshold each rate was measured at.
    metrics = models.JSONField(default=dict)
    production_version = models.PositiveIntegerField(
        null=True, blank=True, help_text="The bundle's production version the metrics were measured on."
    )
    content_sha256 = models.CharField(max_length=64, help_text="SHA-256 of the suite's rows it was measured on.")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["suite_id", "bundle"]
        constraints = [models.UniqueConstraint(fields=["suite", "bundle"], name="one_reference_per_suite_bundle")]

    def __str__(self) -> str:
        return f"{self.bundle} reference on {self.suite.name}"
