"""The ML pages of the dashboard (/dashboard/ml/): datasets, retraining runs and their reports,
the model registry, threshold calibration. Reading needs a dashboard role that sees metrics;
every change needs the admin role (checked here and again in the services)."""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from core.errors import ApplicationError
from feedback import selectors
from feedback.forms import ImportForm, PromoteForm, RunStartForm, SnapshotForm, SuiteMarkForm, ThresholdsForm
from feedback.models import DatasetVersion, ModelVersion, TrainingRun
from feedback.permissions import CAN_ADMINISTER_ML, CAN_VIEW_ML, can_administer_ml
from feedback.services import datasets, gate, promotion, suites, thresholds, training
from moderation.permissions import role_required


def _redirect(name: str, *args: object) -> HttpResponseRedirect:
    return HttpResponseRedirect(reverse(name, args=args))


@role_required(CAN_VIEW_ML)
def index(request: HttpRequest) -> HttpResponse:
    promotion.registry_sync()
    return render(
        request,
        "feedback/index.html",
        {
            "nav": "ml",
            "tab": "index",
            "production": selectors.production_versions(),
            "runs": selectors.training_run_list()[:5],
            "datasets": selectors.dataset_list()[:5],
            "can_admin": can_administer_ml(request.user),
        },
    )


# --- datasets -----------------------------------------------------------------------------


@role_required(CAN_VIEW_ML)
def dataset_list(request: HttpRequest) -> HttpResponse:
    return _datasets_page(request)


def _datasets_page(request: HttpRequest, *, status: int = 200) -> HttpResponse:
    return render(
        request,
        "feedback/datasets.html",
        {
            "nav": "ml",
            "tab": "datasets",
            "datasets": selectors.dataset_list(),
            "snapshot_form": SnapshotForm(),
            "import_form": ImportForm(),
            "can_admin": can_administer_ml(request.user),
            "pending_examples": selectors.labelled_example_count(),
            "suites": selectors.suite_list(),
        },
        status=status,
    )


@role_required(CAN_VIEW_ML)
def dataset_detail(request: HttpRequest, version: int) -> HttpResponse:
    dataset = get_object_or_404(DatasetVersion, version=version)
    context = {
        "nav": "ml",
        "tab": "datasets",
        "dataset": dataset,
        "suites": selectors.suite_list().filter(dataset=dataset),
        "can_admin": can_administer_ml(request.user),
    }
    return render(request, "feedback/dataset_detail.html", context)


@role_required(CAN_VIEW_ML)
def dataset_download(request: HttpRequest, version: int, fmt: str) -> FileResponse:
    dataset = get_object_or_404(DatasetVersion, version=version)
    try:
        path = datasets.dataset_file(dataset=dataset, fmt=fmt)
    except ApplicationError as exc:
        raise Http404(exc.message) from exc
    suffix = "json" if fmt == "manifest" else fmt
    return FileResponse(path.open("rb"), as_attachment=True, filename=f"dataset-v{dataset.version}.{suffix}")


@require_POST
@role_required(CAN_ADMINISTER_ML)
def dataset_create(request: HttpRequest) -> HttpResponse:
    form = SnapshotForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Check the snapshot filters.")
        return _redirect("feedback:datasets")
    try:
        dataset = datasets.dataset_snapshot(
            created_by=request.user,
            name=form.cleaned_data["name"],
            sources=form.source_list() or None,
            since=form.cleaned_data.get("since"),
            until=form.cleaned_data.get("until"),
            model=form.cleaned_data.get("model") or "spam",
        )
    except ApplicationError as exc:
        messages.error(request, exc.message)
        return _redirect("feedback:datasets")
    messages.success(request, f"Dataset v{dataset.version} created with {dataset.example_count} examples.")
    return _redirect("feedback:dataset_detail", dataset.version)


@require_POST
@role_required(CAN_ADMINISTER_ML)
def dataset_import(request: HttpRequest) -> HttpResponse:
    form = ImportForm(request.POST, request.FILES)
    if not form.is_valid():
        for errors in form.errors.values():
            for error in errors:
                messages.error(request, str(error))
        return _redirect("feedback:datasets")
    try:
        dataset = datasets.dataset_import(
            content=form.cleaned_data["file"].read(),
            fmt=form.fmt(),
            created_by=request.user,
            source_slug=form.cleaned_data["source"],
            name=form.cleaned_data["name"],
        )
    except ApplicationError as exc:
        # The list page again, with the problems (line numbers) and the client-error status.
        messages.error(request, exc.message)
        for line in exc.fields.get("file", [])[:10]:
            messages.error(request, line)
        return _datasets_page(request, status=exc.status_code)
    messages.success(request, f"Imported {dataset.example_count} rows as dataset v{dataset.version}.")
    return _redirect("feedback:dataset_detail", dataset.version)


# --- training runs ------------------------------------------------------------------------


@role_required(CAN_VIEW_ML)
def run_list(request: HttpRequest) -> HttpResponse:
    return render(
        request,
        "feedback/runs.html",
        {
            "nav": "ml",
            "tab": "runs",
            "runs": selectors.training_run_list()[:100],
            "form": RunStartForm(),
            "can_admin": can_administer_ml(request.user),
        },
    )


@require_POST
@role_required(CAN_ADMINISTER_ML)
def run_start(request: HttpRequest) -> HttpResponse:
    form = RunStartForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Choose a dataset and what to retrain.")
        return _redirect("feedback:runs")
    try:
        run = training.training_run_start(
            dataset=form.cleaned_data["dataset"],
            scope=form.cleaned_data["scope"],
            started_by=request.user,
            auto_promote=form.cleaned_data["auto_promote"],
            training_data=form.cleaned_data["training_data"],
        )
    except ApplicationError as exc:
        messages.error(request, exc.message)
        return _redirect("feedback:runs")
    messages.success(request, f"Run #{run.pk} queued on the training queue.")
    return _redirect("feedback:run_detail", run.pk)


def _run_context(request: HttpRequest, run: TrainingRun) -> dict[str, object]:
    return {
        "nav": "ml",
        "tab": "runs",
        "run": run,
        "can_admin": can_administer_ml(request.user),
        "comparison": selectors.run_comparison(run),
        "auto_rule": promotion.__doc__,
        "promoted": run.model_versions.filter(restored_from__isnull=True).exists(),
        "suites": gate.suite_table(run.report or {}),
        "gate_reasons": gate.gate_reasons(run.report or {}) if run.status == "succeeded" else [],
        "calibration": selectors.run_calibration(run),
    }


@role_required(CAN_VIEW_ML)
def run_detail(request: HttpRequest, pk: int) -> HttpResponse:
    run = get_object_or_404(TrainingRun.objects.select_related("dataset", "started_by"), pk=pk)
    return render(request, "feedback/run_detail.html", _run_context(request, run))


@role_required(CAN_VIEW_ML)
def run_progress(request: HttpRequest, pk: int) -> HttpResponse:
    """Polled by htmx every 2 s while the run is queued or running; a finished run makes the
    page reload once so the report appears."""
    run = get_object_or_404(TrainingRun.objects.select_related("dataset"), pk=pk)
    response = render(request, "feedback/_run_progress.html", {"run": run})
    if run.is_finished and request.GET.get("was") in ("queued", "running"):
        response["HX-Refresh"] = "true"
    return response


@role_required(CAN_ADMINISTER_ML)
def run_promote(request: HttpRequest, pk: int) -> HttpResponse:
    """GET: what promoting would change (versions, per-suite deltas, thresholds, the gate's
    verdict) and the confirmation form. POST: promote, once confirmed."""
    run = get_object_or_404(TrainingRun.objects.select_related("dataset"), pk=pk)
    form = PromoteForm(request.POST or None)
    if request.method == "POST":
        if not form.is_valid():
            messages.error(request, "Tick the confirmation box to promote.")
        else:
            try:
                versions = promotion.promote_run(
                    run=run,
                    user=request.user,
                    note=form.cleaned_data["note"],
                    override_reason=form.cleaned_data["override_reason"],
                    override_confirmed=form.cleaned_data["confirm"],
                )
            except ApplicationError as exc:
                messages.error(request, exc.message)
            else:
                messages.success(request, "Promoted: " + ", ".join(f"{v.name} v{v.version}" for v in versions))
                return _redirect("feedback:registry")
    promotion.registry_sync()
    context = {"nav": "ml", "tab": "runs", "run": run, "form": form, "plan": promotion.promotion_plan(run=run)}
    return render(request, "feedback/promote_confirm.html", context, status=400 if form.is_bound else 200)


@require_POST
@role_required(CAN_ADMINISTER_ML)
def suite_mark(request: HttpRequest, version: int) -> HttpResponse:
    dataset = get_object_or_404(DatasetVersion, version=version)
    form = SuiteMarkForm(request.POST)
    name = form.cleaned_data["name"] if form.is_valid() else ""
    try:
        suite = suites.suite_mark_dataset(dataset=dataset, user=request.user, name=name)
    except ApplicationError as exc:
        messages.error(request, exc.message)
        return _redirect("feedback:dataset_detail", dataset.version)
    messages.success(
        request, f"{suite.name} is an evaluation suite ({suite.row_count} rows); its texts stay out of training."
    )
    return _redirect("feedback:dataset_detail", dataset.version)


# --- registry -----------------------------------------------------------------------------


@role_required(CAN_VIEW_ML)
def registry(request: HttpRequest) -> HttpResponse:
    promotion.registry_sync()
    return render(
        request,
        "feedback/registry.html",
        {
            "nav": "ml",
            "tab": "registry",
            "groups": selectors.registry_groups(),
            "learning": selectors.learning_over_time(),
            "can_admin": can_administer_ml(request.user),
        },
    )


@require_POST
@role_required(CAN_ADMINISTER_ML)
def rollback(request: HttpRequest, pk: int) -> HttpResponse:
    target = get_object_or_404(ModelVersion, pk=pk)
    try:
        version = promotion.rollback_to(target=target, user=request.user)
    except ApplicationError as exc:
        messages.error(request, exc.message)
        return _redirect("feedback:registry")
    messages.success(request, f"{version.name} now serves v{target.version} again as v{version.version}.")
    return _redirect("feedback:registry")


# --- thresholds ---------------------------------------------------------------------------


@role_required(CAN_VIEW_ML)
def thresholds_page(request: HttpRequest) -> HttpResponse:
    active = thresholds.DecisionPolicy.objects.filter(is_active=True).first()
    initial = {
        "remove_threshold": active.remove_threshold if active else 0.9,
        "approve_threshold": active.approve_threshold if active else 0.2,
        "days": 7,
    }
    form = ThresholdsForm(request.GET or None, initial=initial)
    params = form.cleaned_data if form.is_bound and form.is_valid() else initial
    days = int(params.get("days") or 7)
    outcomes = thresholds.reviewer_outcomes()
    context = {
        "nav": "ml",
        "tab": "thresholds",
        "form": form,
        "table": thresholds.calibration_table(outcomes),
        "outcomes": outcomes,
        "whatif": thresholds.whatif(
            remove_threshold=float(params["remove_threshold"]),
            approve_threshold=float(params["approve_threshold"]),
            days=days,
            outcomes=outcomes,
        ),
        "active": active,
        "can_admin": can_administer_ml(request.user),
    }
    return render(request, "feedback/thresholds.html", context)


@require_POST
@role_required(CAN_ADMINISTER_ML)
def thresholds_save(request: HttpRequest) -> HttpResponse:
    form = ThresholdsForm(request.POST)
    if not form.is_valid():
        for errors in form.errors.values():
            for error in errors:
                messages.error(request, str(error))
        return _redirect("feedback:thresholds")
    # Back to the same proposal when something is missing, so nothing has to be typed again.
    proposal = (
        reverse("feedback:thresholds")
        + "?"
        + urlencode({k: request.POST.get(k, "") for k in ("remove_threshold", "approve_threshold", "days")})
    )
    if request.POST.get("confirm") != "1":
        messages.error(request, "Tick the confirmation: the new policy decides every post from now on.")
        return HttpResponseRedirect(proposal)
    try:
        policy = thresholds.thresholds_save(
            user=request.user,
            remove_threshold=form.cleaned_data["remove_threshold"],
            approve_threshold=form.cleaned_data["approve_threshold"],
            note=form.cleaned_data.get("note") or "",
        )
    except PermissionDenied:
        raise
    except ApplicationError as exc:
        messages.error(request, exc.message)
        return HttpResponseRedirect(proposal)
    messages.success(
        request,
        f"Policy v{policy.version} is active: remove >= {policy.remove_threshold:.2f}, "
        f"approve < {policy.approve_threshold:.2f}.",
    )
    return _redirect("feedback:thresholds")
