from django.apps import AppConfig


class ScoringConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "scoring"

    def ready(self) -> None:
        from moderation.signals import (
            author_erased,
            decision_recorded,
            decisions_undone,
            platform_event,
            post_reported,
            posts_stored,
        )
        from scoring import (
            checks,  # noqa: F401  (registers the deployment checks)
            tasks,  # noqa: F401  (registers the tasks in every process)
        )
        from scoring.receivers import on_post_reported, on_posts_stored
        from scoring.services import campaigns
        from scoring.webhooks_receivers import (
            on_author_erased,
            on_decision_recorded,
            on_decisions_undone,
            on_platform_event,
        )

        # Ingest announces, scoring publishes its work after the commit (scoring.receivers).
        posts_stored.connect(on_posts_stored, dispatch_uid="scoring.score_new_posts")
        post_reported.connect(on_post_reported, dispatch_uid="scoring.rescore_reported_post")
        decision_recorded.connect(on_decision_recorded, dispatch_uid="scoring.decision_webhook")
        decisions_undone.connect(on_decisions_undone, dispatch_uid="scoring.undo_webhook")
        platform_event.connect(on_platform_event, dispatch_uid="scoring.platform_event_webhook")
        author_erased.connect(on_author_erased, dispatch_uid="scoring.erase_score_features")
        author_erased.connect(campaigns.on_author_erased, dispatch_uid="scoring.erase_campaign_buckets")
