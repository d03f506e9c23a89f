from django.apps import AppConfig


class ScoringConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "scoring"

    def ready(self) -> None:
        from moderation.signals import decision_recorded
        from scoring.webhooks_receivers import on_decision_recorded

        decision_recorded.connect(on_decision_recorded, dispatch_uid="scoring.decision_webhook")
