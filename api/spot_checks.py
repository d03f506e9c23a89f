"""How often the automation is wrong on the caller's own content: the spot-check figures
(moderation.selectors.spot_checks) of the API key's source, for a platform's own reports and
alerts. Counts and shares only: no post, text or other source's figure."""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING

from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from api.authentication import request_source
from api.views import ERRORS, JsonApiView
from moderation.models import ApiScope
from moderation.selectors.spot_checks import SpotCheckShare, spot_check_figures
from scoring import api as scoring

if TYPE_CHECKING:
    from scoring.services.approval_levels import SourceApproval

MAX_DAYS = 365


class SpotCheckWindowInputSerializer(serializers.Serializer):
    days = serializers.IntegerField(
        min_value=1, max_value=MAX_DAYS, default=30, help_text="Posts received in this many days count."
    )


class SpotCheckShareOutputSerializer(serializers.Serializer):
    checked = serializers.IntegerField(
        help_text="Of the drawn posts received since `since`, those a moderator decided."
    )
    wrong = serializers.IntegerField(
        help_text="Of them, approved posts that broke the rules, or removed posts that were legitimate."
    )
    waiting = serializers.IntegerField(help_text="Drawn posts not decided yet.")
    share = serializers.FloatField(allow_null=True, help_text="wrong / checked; null when none was checked.")
    interval = serializers.ListField(
        child=serializers.FloatField(),
        min_length=2,
        max_length=2,
        help_text="The share's 95 % Wilson interval, [low, high] ([0, 1] when none was checked).",
    )
    coverage = serializers.FloatField(
        allow_null=True,
        help_text="checked / drawn; null when none was drawn. Below 1 the share is provisional: it leans towards "
        "errors.",
    )
    possible = serializers.ListField(
        child=serializers.FloatField(),
        min_length=2,
        max_length=2,
        allow_null=True,
        help_text="Where the share ends once every waiting draw is decided, [all right, all wrong]; null when none "
        "was drawn.",
    )


class ApprovalStepOutputSerializer(serializers.Serializer):
    level = serializers.FloatField(help_text="The level this step opens.")
    labelled = serializers.IntegerField(
        help_text="Posts the gate held in the slice of the band this step adds, received in its window, that "
        "have ended (decided by a moderator, or removed by a later re-score)."
    )
    removed = serializers.IntegerField(help_text="Of them, removed.")
    upper_bound = serializers.FloatField(help_text="The removed share's 95 % Wilson upper bound.")
    labels_to_open = serializers.IntegerField(
        allow_null=True,
        help_text="Labels of this slice still needed if none is removed (0: opens at the next check); null: more "
        "than 10,000.",
    )


class ApprovalOutputSerializer(serializers.Serializer):
    level = serializers.FloatField(
        help_text="How far the models may approve on their own: 0 only the surest posts, 1 the policy's full band."
    )
    approves_below_score = serializers.FloatField(help_text="The models approve alone only below this final score …")
    approves_below_abuse = serializers.FloatField(help_text="… and below this abuse score.")
    next_step = ApprovalStepOutputSerializer(allow_null=True, help_text="null: the full band is open.")


class SpotChecksOutputSerializer(serializers.Serializer):
    since = serializers.DateTimeField(help_text="Posts received from this moment on count.")
    approve = SpotCheckShareOutputSerializer(help_text="The models' own approvals drawn for a check.")
    remove = SpotCheckShareOutputSerializer(help_text="The models' own removals drawn for a check.")
    approval = ApprovalOutputSerializer(
        allow_null=True,
        help_text="Earned approval: how far the models may approve this source's posts on their own, and what the "
        "next step still needs (not windowed by `days`); null when the deployment switched it off.",
    )


def _approval(approval: SourceApproval | None) -> dict[str, object] | None:
    if approval is None:
        return None
    step = approval.next_step
    return {
        "level": approval.level,
        "approves_below_score": approval.gate.final_below,
        "approves_below_abuse": approval.gate.abuse_below,
        "next_step": None
        if step is None
        else {
            "level": step.level,
            "labelled": step.labelled,
            "removed": step.removed,
            "upper_bound": step.upper_bound,
            "labels_to_open": approval.to_open,
        },
    }


def _share(part: SpotCheckShare) -> dict[str, object]:
    possible = part.possible
    return {
        "checked": part.checked,
        "wrong": part.wrong,
        "waiting": part.waiting,
        "share": part.share,
        "interval": list(part.interval),
        "coverage": part.coverage,
        "possible": list(possible) if possible is not None else None,
    }


class SpotChecksView(JsonApiView):
    required_scopes = {"GET": ApiScope.READ}

    @extend_schema(
        operation_id="spot_checks_retrieve",
        summary="How often the automation is wrong on your content",
        description="Of the posts received in the last `days` that the models approved or removed on their own and "
        "that were drawn for a moderator to check (`SPOT_CHECK_RATE`, or the source's own rate), how many a moderator "
        "has decided and how many the models got wrong, with the share and its 95 % interval. The draw is uniform, so "
        "once every draw is decided the shares estimate the error of all the automatic decisions; until then "
        "(`coverage` below 1) they are provisional. With them, how far the models may approve on their own "
        "(earned approval) and how many labels the next step still needs. Only the caller's source.",
        parameters=[SpotCheckWindowInputSerializer],
        responses={200: SpotChecksOutputSerializer, **ERRORS},
    )
    def get(self, request: Request) -> Response:
        # A plain dict, not the QueryDict: DRF reads "?days=" from a form-like input as absent
        # and would answer the default; an empty value is a 400 like any other bad one.
        raw = request.query_params.get("days")
        window = SpotCheckWindowInputSerializer(data={} if raw is None else {"days": raw})
        window.is_valid(raise_exception=True)
        since = timezone.now() - timedelta(days=window.validated_data["days"])
        source = request_source(request)
        empty = SpotCheckShare(checked=0, wrong=0, waiting=0)
        figures = spot_check_figures(since=since, source_id=source.pk)  # this source's, or none
        body = {
            "since": since,
            "approve": _share(figures[0].approve if figures else empty),
            "remove": _share(figures[0].remove if figures else empty),
            "approval": _approval(approvals[0] if (approvals := scoring.source_approvals([source])) else None),
        }
        return Response(SpotChecksOutputSerializer(body).data)
