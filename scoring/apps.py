from django.apps import AppConfig


class ScoringConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "scoring"

    def ready(self) -> None:
        # Registers the task names the services publish by (core.tasks.task_named).
        import scoring.tasks  # noqa: F401
        from moderation.signals import decision_recorded, decisions_undone
        from scoring.webhooks_receivers import on_decision_recorded, on_decisions_undone

        decision_recorded.connect(on_decision_recorded, dispatch_uid="scoring.decision_webhook")
        decisions_undone.connect(on_decisions_undone, dispatch_uid="scoring.undo_webhook")
