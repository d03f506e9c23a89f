from django.apps import AppConfig


class ApiConfig(AppConfig):
    """The platform's REST API (/api/v1/): above the moderation workflow and the scoring path,
    which it calls both (docs/architecture.md). No models."""

    name = "api"

    def ready(self) -> None:
        from api import schema  # noqa: F401  (registers the OpenAPI auth extension)
