from django.apps import AppConfig


class FeedbackConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "feedback"
    verbose_name = "Feedback loop (datasets, retraining, model registry)"

    def ready(self) -> None:
        import feedback.tasks  # noqa: F401  (registers the tasks in every process)
        from feedback.services.adaptation import on_label_recorded
        from feedback.services.erasure import on_author_erased
        from feedback.services.labels import on_decision_recorded
        from moderation.signals import author_erased, decision_recorded

        decision_recorded.connect(on_decision_recorded, dispatch_uid="feedback.label_from_decision")
        decision_recorded.connect(on_label_recorded, dispatch_uid="feedback.adaptation_hint")
        author_erased.connect(on_author_erased, dispatch_uid="feedback.erase_examples")
