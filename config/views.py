"""Project-wide error pages: API paths get the API's JSON error shape, pages get HTML.

Django answers requests that match no route (or fail outside DRF) itself; without these an API
client would get an HTML page where it expects {"error": {...}}."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views import defaults

from moderation.api.errors import error_body

API_PREFIX = "/api/"


def page_not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    if request.path.startswith(API_PREFIX):
        return JsonResponse(error_body("not_found", "Not found."), status=404)
    return defaults.page_not_found(request, exception)


def server_error(request: HttpRequest) -> HttpResponse:
    if request.path.startswith(API_PREFIX):
        return JsonResponse(error_body("server_error", "Internal server error."), status=500)
    return defaults.server_error(request)
