from django.apps import AppConfig


class DashboardConfig(AppConfig):
    """The moderators' web dashboard: pages over the moderation app's models and services.

    It owns no models; it reads through its selectors and acts through moderation's services."""

    name = "dashboard"
