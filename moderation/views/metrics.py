from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from moderation.permissions import CAN_VIEW_METRICS, role_required


@role_required(CAN_VIEW_METRICS)
def metrics(request: HttpRequest) -> HttpResponse:
    return render(request, "moderation/metrics.html", {})


@role_required(CAN_VIEW_METRICS)
def triton_panel(request: HttpRequest) -> HttpResponse:
    return render(request, "moderation/_triton.html", {})
