"""The operations endpoints (/healthz, /readyz, /metrics), answered ahead of the rest.

First in settings.MIDDLEWARE, so that these requests
- skip the Host check: kubelet and Prometheus address a pod by its IP, which is not in
  ALLOWED_HOSTS, and would otherwise get 400 from CommonMiddleware;
- skip SECURE_SSL_REDIRECT: probes and scrapes speak plain HTTP inside the cluster;
- skip sessions, CSRF, authentication and the URL resolver: a probe costs what its check costs.

Nothing else is routed here: every other path goes down the normal middleware chain.
"""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, JsonResponse

from config import health, metrics


def _route(path: str) -> Callable[[HttpRequest], HttpResponse] | None:
    return {
        "/healthz": health.healthz,
        "/readyz": health.readyz,
        "/metrics": metrics.metrics_view,
    }.get(path.rstrip("/") or "/")


class OpsEndpointsMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        view = _route(request.path_info)
        if view is None:
            return self.get_response(request)
        if request.method not in ("GET", "HEAD"):
            from api.errors import error_body

            response: HttpResponse = JsonResponse(
                error_body("method_not_allowed", f'Method "{request.method}" not allowed.'), status=405
            )
            response["Allow"] = "GET, HEAD"
            return response
        return view(request)
