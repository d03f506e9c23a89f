from django.apps import AppConfig


class ModelopsConfig(AppConfig):
    """Registered for its management commands (train_*, export_text_model, publish_models,
    triton ...); it has no models."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "modelops"
