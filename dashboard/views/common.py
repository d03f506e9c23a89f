from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.http import HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.utils.http import url_has_allowed_host_and_scheme


def wants_json(request: HttpRequest) -> bool:
    return "application/json" in request.headers.get("Accept", "")


def is_htmx(request: HttpRequest) -> bool:
    return request.headers.get("HX-Request") == "true"


def safe_next(request: HttpRequest, default: str) -> str:
    target = request.POST.get("next") or request.GET.get("next") or ""
    if target and url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}):
        return target
    return default


def redirect_next(request: HttpRequest, default: str) -> HttpResponseRedirect:
    return HttpResponseRedirect(safe_next(request, default))


def json_error(message: str, *, code: str, status: int, fields: dict[str, Any] | None = None) -> JsonResponse:
    return JsonResponse({"error": {"code": code, "message": message, "fields": fields or {}}}, status=status)


def with_query(url: str, params: dict[str, str]) -> str:
    return f"{url}?{urlencode(params)}" if params else url


def no_content() -> HttpResponse:
    return HttpResponse(status=204)
