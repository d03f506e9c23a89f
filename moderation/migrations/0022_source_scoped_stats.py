"""Per-source link, domain and IP counters, filled from the posts already stored: the features
read these instead of the all-sources counters (moderation.models.SourceDomainStats)."""

import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models
from django.db.models.functions import Concat

# Copied, not imported: a migration does not depend on code that may change.
_SPAM_STATUSES = ("removed", "auto_removed")


def backfill(apps, schema_editor):
    Post = apps.get_model("moderation", "Post")
    Report = apps.get_model("moderation", "Report")
    spam = models.Count("id", filter=models.Q(status__in=_SPAM_STATUSES))
    first, posts = models.Min("received_at"), models.Count("id")
    SourceLinkStats = apps.get_model("moderation", "SourceLinkStats")
    rows = Post.objects.exclude(link=None).values("source_id", "link_id").annotate(n=posts, at=first).order_by()
    SourceLinkStats.objects.bulk_create(
        [
            SourceLinkStats(source_id=r["source_id"], link_id=r["link_id"], post_count=r["n"], first_seen_at=r["at"])
            for r in rows
        ],
        batch_size=2000,
    )
    # A reporter counts once per post, whatever reasons they gave.
    reports = {
        (r["post__source_id"], r["post__link__domain_id"]): r["n"]
        for r in Report.objects.exclude(post__link=None)
        .values("post__source_id", "post__link__domain_id")
        .annotate(
            n=models.Count(
                Concat("post_id", models.Value(":"), "reporter_id", output_field=models.CharField()),
                distinct=True,
            )
        )
        .order_by()
    }
    SourceDomainStats = apps.get_model("moderation", "SourceDomainStats")
    rows = (
        Post.objects.exclude(link=None)
        .values("source_id", "link__domain_id")
        .annotate(n=posts, at=first, spam=spam)
        .order_by()
    )
    SourceDomainStats.objects.bulk_create(
        [
            SourceDomainStats(
                source_id=r["source_id"],
                domain_id=r["link__domain_id"],
                post_count=r["n"],
                spam_count=r["spam"],
                report_count=reports.get((r["source_id"], r["link__domain_id"]), 0),
                first_seen_at=r["at"],
            )
            for r in rows
        ],
        batch_size=2000,
    )
    SourceIpStats = apps.get_model("moderation", "SourceIpStats")
    rows = Post.objects.exclude(ip=None).values("source_id", "ip_id").annotate(n=posts, at=first, spam=spam).order_by()
    SourceIpStats.objects.bulk_create(
        [
            SourceIpStats(
                source_id=r["source_id"],
                ip_id=r["ip_id"],
                post_count=r["n"],
                spam_count=r["spam"],
                first_seen_at=r["at"],
            )
            for r in rows
        ],
        batch_size=2000,
    )


class Migration(migrations.Migration):
    dependencies = [
        ("moderation", "0021_author_erasure"),
    ]

    operations = [
        migrations.CreateModel(
            name="SourceDomainStats",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("first_seen_at", models.DateTimeField(default=django.utils.timezone.now)),
                ("post_count", models.PositiveIntegerField(default=0)),
                ("spam_count", models.PositiveIntegerField(default=0)),
                ("report_count", models.PositiveIntegerField(default=0)),
                (
                    "domain",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="source_stats", to="moderation.domain"
                    ),
                ),
                (
                    "source",
                    models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="moderation.source",
                    ),
                ),
            ],
            options={
                "verbose_name_plural": "source domain stats",
                "constraints": [models.UniqueConstraint(fields=("source", "domain"), name="sourcedomainstats_uniq")],
            },
        ),
        migrations.CreateModel(
            name="SourceIpStats",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("first_seen_at", models.DateTimeField(default=django.utils.timezone.now)),
                ("post_count", models.PositiveIntegerField(default=0)),
                ("spam_count", models.PositiveIntegerField(default=0)),
                (
                    "ip",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="source_stats",
                        to="moderation.ipaddress",
                    ),
                ),
                (
                    "source",
                    models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="moderation.source",
                    ),
                ),
            ],
            options={
                "verbose_name_plural": "source IP stats",
                "constraints": [models.UniqueConstraint(fields=("source", "ip"), name="sourceipstats_uniq")],
            },
        ),
        migrations.CreateModel(
            name="SourceLinkStats",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("first_seen_at", models.DateTimeField(default=django.utils.timezone.now)),
                ("post_count", models.PositiveIntegerField(default=0)),
                (
                    "link",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="source_stats", to="moderation.link"
                    ),
                ),
                (
                    "source",
                    models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="moderation.source",
                    ),
                ),
            ],
            options={
                "verbose_name_plural": "source link stats",
                "constraints": [models.UniqueConstraint(fields=("source", "link"), name="sourcelinkstats_uniq")],
            },
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop),
    ]
