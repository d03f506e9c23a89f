"""Retention of labelled examples: an example whose decision is older than its source's post
period (Source.retention_days_posts) is deleted, unless a dataset version holds it; then it is
anonymised instead, because the dataset and the models trained on it still need its text,
features and label.

Anonymised: the author's external id and the URL are cleared, and the platform's post id is
replaced by `expired-<internal post id>`, which names nothing outside this database (the post
row is gone by then, moderation.services.retention) yet still groups the examples of one post
for feedback.selectors.effective_examples. Text, preview text, features, scores and label stay.

Batched; the `expired-` prefix marks what is done, so a second run changes nothing."""

from __future__ import annotations

import logging
from datetime import datetime

from django.db import transaction
from django.db.models import CharField, Exists, OuterRef, Value
from django.db.models.functions import Cast, Coalesce, Concat

from core.batches import delete_in_batches
from feedback.models import DatasetMember, LabelledExample
from moderation.models import Source
from moderation.services.retention import BATCH_SIZE, retention_cutoffs

logger = logging.getLogger(__name__)

EXPIRED_PREFIX = "expired-"


def examples_expire(*, source: Source, now: datetime, batch_size: int = BATCH_SIZE) -> dict[str, int]:
    """Delete or anonymise the source's examples past retention. Returns the counts of each."""
    in_dataset = DatasetMember.objects.filter(example_id=OuterRef("pk"))
    expired = LabelledExample.objects.filter(
        source_slug=source.slug, decided_at__lt=retention_cutoffs(source, now).posts
    ).exclude(post_external_id__startswith=EXPIRED_PREFIX)
    deleted = delete_in_batches(expired.exclude(Exists(in_dataset)), batch_size=batch_size)
    anonymised = 0
    while ids := list(expired.order_by("pk").values_list("pk", flat=True)[:batch_size]):
        with transaction.atomic():
            # A queryset update: LabelledExample refuses save() on existing rows.
            anonymised += LabelledExample.objects.filter(pk__in=ids).update(
                author_external_id="",
                url="",
                post_external_id=Concat(
                    Value(EXPIRED_PREFIX), Coalesce(Cast("post_id", CharField()), Cast("id", CharField()))
                ),
            )
    if deleted or anonymised:
        logger.info(
            "feedback.retention_applied", extra={"source": source.slug, "deleted": deleted, "anonymised": anonymised}
        )
    return {"deleted": deleted, "anonymised": anonymised}


def retention_apply(*, now: datetime, batch_size: int = BATCH_SIZE) -> dict[str, dict[str, int]]:
    return {
        source.slug: examples_expire(source=source, now=now, batch_size=batch_size)
        for source in Source.objects.order_by("pk")
    }
