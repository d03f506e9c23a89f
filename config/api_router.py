"""Every /api/v1/ route, one include per app."""

from django.urls import include, path

urlpatterns = [
    path("", include("api.urls")),
]
