"""Promotion and rollback: write a candidate into the Triton model repository as a new version,
load it without downtime (explicit model control: the old version serves until the new one is
ready), and record it in the registry. Rollback re-serves an older version the same way.

Auto-promotion rule (documented on the run report page too): a run started with
auto_promote=True is promoted only if, for every bundle it trained,
  - a production version exists to compare with, and
  - the test split has at least AUTO_MIN_TEST_ROWS rows with AUTO_MIN_PER_CLASS of each class, and
  - the candidate is at least as good as production on every guarded metric (PR-AUC, F1,
    precision at the auto-remove threshold: higher or equal; false-positive rate at the
    auto-remove threshold: lower or equal), and strictly better on at least one. A model that
    auto-removes nothing on the test split counts as precision 1.0 at the remove threshold, and
  - the promotion gate passes: on no evaluation suite does the candidate lose more than the
    tolerated F1 or gain more than the tolerated false-positive rate at the remove threshold
    (feedback.services.gate; the gate holds the promote button back too, unless an admin
    overrides it with a typed reason and a confirmation, which is audited).
Anything else waits for an admin.

The abuse model (bundle "abuse") is served from the tokenizer's folder: promoting or rolling it
back re-publishes the served text pair under its next number with only the abuse files
replaced (modelops.model_repository.publish_abuse), so the text model serves on unchanged; the
text registry gets a row for that number that re-serves its current version. Rolling the text
model back keeps the abuse model served now.

Loading goes to every Triton replica (scoring.triton_replicas): a promotion or rollback is
done only when each replica has loaded the new versions and answers that it serves them. If
writing, loading or that check fails on any replica, the promotion fails as a whole: the new
version folders are removed and every replica reloads, so each serves again what it served
before (a replica that cannot be reached then loads the same older versions when it next
starts, as the folders are gone), the registry keeps its production version, and the error,
naming the replicas that failed, is raised to the caller.

Every promotion and rollback changes what scores posts (each publishes a new spam_pipeline
version), so once it commits the posts waiting for a moderator are re-scored with the new
models (scoring.services.queue_rescore, through scoring.api; QUEUE_RESCORE_AFTER_PROMOTION).
That runs on a scoring worker: a Triton failure there never fails the promotion.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from contracts.triton import served_models
from core.errors import ApplicationError, Conflict
from feedback.models import ModelBundle, ModelVersion, RunStatus, TrainingRun
from feedback.permissions import check_ml_admin
from feedback.services.datasets import artifacts_dir
from moderation.services.audit import audit_record
from scoring.api import waiting_rescore_on_commit
from scoring.triton_replicas import load_everywhere

logger = logging.getLogger(__name__)

MEMBERS: dict[str, tuple[str, ...]] = {
    ModelBundle.TABULAR: ("link_model", "behaviour_model", "fusion_model"),
    ModelBundle.TEXT: ("tokenizer", "text_classifier"),
    # The abuse model is served from the tokenizer's folder (modelops.model_repository.publish_abuse).
    ModelBundle.ABUSE: ("tokenizer",),
}
LEAD: dict[str, str] = {
    ModelBundle.TABULAR: "fusion_model",
    ModelBundle.TEXT: "text_classifier",
    ModelBundle.ABUSE: "tokenizer",
}
# Bundles whose lead version folders are theirs alone; the abuse model's registry is kept by
# its promotions and rollbacks (_abuse_registry_sync), as text promotions carry it along.
FOLDER_BUNDLES = (ModelBundle.TABULAR, ModelBundle.TEXT)
TREE_FILES = {"link": "link_model", "behaviour": "behaviour_model", "fusion": "fusion_model"}
PIPELINE_MODEL = "spam_pipeline"
AUTO_MIN_TEST_ROWS = 50
AUTO_MIN_PER_CLASS = 10


class PromotionFailed(ApplicationError):
    code = "promotion_failed"
    status_code = 502


def repository() -> Path:
    return Path(str(settings.TRITON_MODEL_REPOSITORY))


def _versions(model: str) -> list[int]:
    """Version folders of `model` (the repository layout of modelops/model_repository.py)."""
    root = repository() / model
    if not root.is_dir():
        return []
    return sorted(int(p.name) for p in root.iterdir() if p.is_dir() and p.name.isdigit())


def served_version(model: str) -> int | None:
    """Triton serves the newest version folder (version_policy latest 1)."""
    found = _versions(model)
    return found[-1] if found else None


def served_tabular_files() -> dict[str, Path] | None:
    """Booster files of the served link/behaviour/fusion versions, or None if any is missing."""
    files: dict[str, Path] = {}
    for kind, model in TREE_FILES.items():
        number = served_version(model)
        if number is None:
            return None
        folder = repository() / model / str(number)
        path = next((folder / n for n in ("model.json", "model.ubj") if (folder / n).exists()), None)
        if path is None:
            return None
        files[kind] = path
    return files


def served_text_dir() -> tuple[Path, Path] | None:
    """(text_classifier version folder, tokenizer version folder) being served, or None."""
    clf, tok = served_version("text_classifier"), served_version("tokenizer")
    if clf is None or tok is None:
        return None
    return repository() / "text_classifier" / str(clf), repository() / "tokenizer" / str(tok)


# --- registry -----------------------------------------------------------------------------


@transaction.atomic
def registry_sync() -> None:
    """Record versions found in the repository that the registry does not know (the bootstrap
    models, or a manual publish_models), and mark the served one as production."""
    for bundle in FOLDER_BUNDLES:
        members, lead = MEMBERS[bundle], LEAD[bundle]
        lead_versions = _versions(lead)
        if not lead_versions:
            continue
        member_versions = {m: _versions(m) for m in members}
        known = set(ModelVersion.objects.filter(name=bundle).values_list("version", flat=True))
        for number in lead_versions:
            if number in known:
                continue
            ModelVersion.objects.create(
                name=bundle,
                version=number,
                triton_versions={m: number for m in members if number in member_versions[m]},
                note="found in the model repository (bootstrap or publish_models)",
            )
        served = lead_versions[-1]
        current = ModelVersion.objects.filter(name=bundle, is_production=True).first()
        if current is None or current.version != served:
            ModelVersion.objects.filter(name=bundle, is_production=True).update(is_production=False)
            ModelVersion.objects.filter(name=bundle, version=served).update(is_production=True)

    _abuse_registry_sync()


def _abuse_registry_sync() -> None:
    """The bootstrap abuse model: with no abuse row yet, the served tokenizer version that
    carries abuse.joblib is recorded as the abuse model's production version. Later rows come
    from promotions and rollbacks only: a text promotion carries the served abuse model into
    its tokenizer folder (modelops.text.abuse.abuse_carry), which is no new abuse version."""
    from modelops.text.abuse import ABUSE_FILE

    if ModelVersion.objects.filter(name=ModelBundle.ABUSE).exists():
        return
    number = served_version("tokenizer")
    if number is None or not (repository() / "tokenizer" / str(number) / ABUSE_FILE).is_file():
        return
    ModelVersion.objects.create(
        name=ModelBundle.ABUSE,
        version=number,
        triton_versions={"tokenizer": number},
        is_production=True,
        note="found in the model repository (bootstrap or publish_models)",
    )


# --- loading with undo --------------------------------------------------------------------


def _publish_and_load(write: Any) -> dict[str, int]:
    """Run `write()` (which creates new version folders and returns {model: version}), then
    load every touched model on every Triton replica and check each serves the new versions;
    on any failure remove the new folders and reload, so the server
    goes back to the versions it served before."""
    published: dict[str, int] = {}
    try:
        published = dict(write())
        # Models this deployment does not load (the standalone tokenizer and trees, unless
        # switched on) stay published on disk only.
        served = served_models(standalone=settings.TRITON_STANDALONE_MODELS)
        loaded = [m for m in published if m in served]
        order = [m for m in loaded if m != PIPELINE_MODEL] + [m for m in loaded if m == PIPELINE_MODEL]
        load_everywhere(order, expected={m: published[m] for m in order})
    except Exception as exc:
        for model, number in published.items():
            shutil.rmtree(repository() / model / str(number), ignore_errors=True)
        try:
            load_everywhere([m for m in published if m in served_models(standalone=settings.TRITON_STANDALONE_MODELS)])
        except Exception:
            logger.exception("feedback.promotion_reload_failed")
        raise PromotionFailed(f"Publishing or loading the new version failed; production is unchanged: {exc}") from exc
    return published


def _record(
    *,
    bundle: str,
    published: Mapping[str, int],
    user: Any,
    action: str,
    run: TrainingRun | None = None,
    restored_from: ModelVersion | None = None,
    note: str = "",
) -> ModelVersion:
    previous = ModelVersion.objects.select_for_update().filter(name=bundle, is_production=True).first()
    if previous is not None:
        ModelVersion.objects.filter(pk=previous.pk).update(is_production=False)
    source = restored_from
    version = ModelVersion.objects.create(
        name=bundle,
        version=published[LEAD[bundle]],
        triton_versions={m: published[m] for m in MEMBERS[bundle] if m in published},
        dataset=run.dataset if run else (source.dataset if source else None),
        training_run=run if run else (source.training_run if source else None),
        metrics=(run.candidate_metrics.get(bundle) or {}) if run else (source.metrics if source else {}),
        artifact_path=(run.candidate_artifacts.get(bundle, "") if run else (source.artifact_path if source else "")),
        is_production=True,
        rollback_target=previous,
        restored_from=restored_from,
        promoted_by=user,
        promoted_at=timezone.now(),
        note=note[:255],
    )
    audit_record(
        actor=user,
        action=action,
        target=version,
        before={"bundle": bundle, "version": previous.version if previous else None},
        after={
            "bundle": bundle,
            "version": version.version,
            "triton_versions": version.triton_versions,
            "run": run.pk if run else None,
            "restored_from": restored_from.version if restored_from else None,
        },
    )
    return version


def _record_text_carried(*, published: Mapping[str, int], user: Any, note: str) -> ModelVersion | None:
    """An abuse promotion or rollback re-publishes the served text model unchanged under a new
    number (publish_abuse): the text registry gets a row for it that re-serves the current
    one, so the served number has a production row and a text rollback can name it."""
    if "text_classifier" not in published:
        return None
    current = ModelVersion.objects.select_for_update().filter(name=ModelBundle.TEXT, is_production=True).first()
    if current is not None:
        ModelVersion.objects.filter(pk=current.pk).update(is_production=False)
    return ModelVersion.objects.create(
        name=ModelBundle.TEXT,
        version=published["text_classifier"],
        triton_versions={m: published[m] for m in MEMBERS[ModelBundle.TEXT] if m in published},
        dataset=current.dataset if current else None,
        training_run=current.training_run if current else None,
        metrics=current.metrics if current else {},
        artifact_path=current.artifact_path if current else "",
        is_production=True,
        rollback_target=current,
        restored_from=current,
        promoted_by=user,
        promoted_at=timezone.now(),
        note=note[:255],
    )


# --- promotion ----------------------------------------------------------------------------


class GateHeld(Conflict):
    code = "gate_held"


def _check_promotable(run: TrainingRun) -> None:
    """A finished run with a candidate on disk that was not promoted before, or a Conflict."""
    if run.status != RunStatus.SUCCEEDED or not run.candidate_artifacts:
        raise Conflict(f"Run #{run.pk} has no candidate to promote (status {run.status}).", code="no_candidate")
    if ModelVersion.objects.filter(training_run=run, restored_from__isnull=True).exists():
        raise Conflict(f"Run #{run.pk} was already promoted.", code="already_promoted")
    missing = [rel for rel in run.candidate_artifacts.values() if not (artifacts_dir() / rel).is_dir()]
    if missing:
        raise Conflict(
            f"Run #{run.pk}'s candidate files are gone ({', '.join(missing)}): removed by the model storage "
            "retention (MODEL_STORAGE_KEEP) or by hand. Start a new run to promote its models.",
            code="candidate_removed",
        )


def promote_run(
    *,
    run: TrainingRun,
    user: Any,
    automatic: bool = False,
    note: str = "",
    override_reason: str = "",
    override_confirmed: bool = False,
) -> list[ModelVersion]:
    """Publish every candidate of a succeeded run as new Triton versions and serve them.

    A run the promotion gate holds back (feedback.services.gate) is promoted only by an admin
    with a typed `override_reason` and `override_confirmed`; never automatically. The override
    is audited with the regressions it accepted, and clears the suite references it fell below
    (feedback.services.suite_references)."""
    from feedback.services.gate import gate_reasons
    from feedback.services.suite_references import references_accept_override
    from modelops.model_repository import Artifacts, publish, publish_abuse

    if not automatic:
        check_ml_admin(user)
    _check_promotable(run)
    held = gate_reasons(run.report or {})
    override_reason = override_reason.strip()
    if held:
        if automatic:
            raise GateHeld("The promotion gate holds this candidate back: " + "; ".join(held))
        if not override_reason or not override_confirmed:
            raise GateHeld(
                "The promotion gate holds this candidate back ("
                + "; ".join(held)
                + "). Promoting it anyway takes a typed reason and the confirmation box.",
                fields={"override_reason": ["required to override the gate"]},
            )
    registry_sync()
    root = artifacts_dir()
    if ModelBundle.ABUSE in run.candidate_artifacts:
        abuse_dir = root / run.candidate_artifacts[ModelBundle.ABUSE]
        published = _publish_and_load(lambda: publish_abuse(abuse_dir, repository=repository()))
    else:
        served = served_text_dir()
        if "text" in run.candidate_artifacts and served is not None:
            from modelops.text.abuse import abuse_carry

            # The abuse model served now, not the one served when the text run trained: an abuse
            # promotion in between must not be undone by this text promotion.
            abuse_carry(from_dir=served[1], to_dir=root / run.candidate_artifacts["text"])
        artifacts = Artifacts(
            text=root / run.candidate_artifacts["text"] if "text" in run.candidate_artifacts else None,
            tabular=root / run.candidate_artifacts["tabular"] if "tabular" in run.candidate_artifacts else None,
        )
        published = _publish_and_load(lambda: publish(artifacts, repository=repository()))
    out = []
    with transaction.atomic():
        if ModelBundle.ABUSE in run.candidate_artifacts:
            _record_text_carried(published=published, user=user, note=f"unchanged; serves abuse run #{run.pk}")
        for bundle in (b for b in ModelBundle.values if b in run.candidate_artifacts):
            out.append(
                _record(
                    bundle=bundle,
                    published=published,
                    user=user,
                    action="model.promote.auto" if automatic else "model.promote",
                    run=run,
                    note=note or ("automatic: better on every guarded metric" if automatic else ""),
                )
            )
        if held:
            audit_record(
                actor=user,
                action="model.promote.gate_override",
                target=run,
                before={"gate": (run.report or {}).get("gate"), "held_because": held},
                after={"reason": override_reason, "versions": {mv.name: mv.version for mv in out}},
            )
            # The floor the admin just overrode: later rounds are held to the new production.
            references_accept_override(gate=(run.report or {}).get("gate") or {}, actor=user, run_id=run.pk)
        # The waiting posts' scores came from the models just replaced: re-scored after the commit.
        waiting_rescore_on_commit(reason="model.promote " + ", ".join(f"{mv.name} v{mv.version}" for mv in out))
    logger.info("feedback.promoted", extra={"run_id": run.pk, "published": published})
    return out


def auto_promotion_check(run: TrainingRun) -> tuple[bool, list[str]]:
    """The documented rule (module docstring). Returns (promote?, reasons)."""
    from feedback.services.gate import gate_reasons

    reasons: list[str] = []
    guarded = (run.report or {}).get("guarded") or {}
    if not guarded:
        reasons.append("the run has no comparison")
    for bundle, summary in guarded.items():
        if not summary.get("has_production"):
            reasons.append(f"{bundle}: no production version to compare with")
            continue
        metrics = (run.candidate_metrics.get(bundle) or {}).get("final") if bundle == "tabular" else None
        metrics = metrics or run.candidate_metrics.get(bundle) or {}
        n, spam = int(metrics.get("n", 0)), int(metrics.get("spam", 0))
        if n < AUTO_MIN_TEST_ROWS or min(spam, n - spam) < AUTO_MIN_PER_CLASS:
            reasons.append(
                f"{bundle}: test split too small for automatic promotion ({n} rows, {spam} spam; need "
                f"{AUTO_MIN_TEST_ROWS} with {AUTO_MIN_PER_CLASS} per class)"
            )
        for row in summary.get("metrics", []):
            if row.get("ok") is not True:
                reasons.append(
                    f"{bundle}: {row['metric']} candidate {row['candidate']} vs production {row['production']}"
                )
        if not summary.get("better_on_all"):
            reasons.append(f"{bundle}: not strictly better on any guarded metric")
    reasons += [f"promotion gate: {r}" for r in gate_reasons(run.report or {})]
    return (not reasons, reasons)


def promote_if_better(*, run: TrainingRun) -> list[ModelVersion]:
    ok, reasons = auto_promotion_check(run)
    decision: dict[str, Any] = {"promoted": False, "reasons": reasons, "checked_at": timezone.now().isoformat()}
    promoted: list[ModelVersion] = []
    if ok:
        try:
            promoted = promote_run(run=run, user=run.started_by, automatic=True)
            decision["promoted"] = True
            decision["versions"] = {mv.name: mv.version for mv in promoted}
        except ApplicationError as exc:
            decision["reasons"] = [exc.message]
    report = dict(run.report or {})
    report["auto_promotion"] = decision
    TrainingRun.objects.filter(pk=run.pk).update(report=report)
    return promoted


# --- rollback -----------------------------------------------------------------------------


def rollback_to(*, target: ModelVersion, user: Any) -> ModelVersion:
    """Serve `target` again: its files are copied into a new, higher version and loaded."""
    from modelops.model_repository import publish_abuse, publish_pipeline, rollback

    check_ml_admin(user)
    if target.is_production:
        raise Conflict(f"{target.name} v{target.version} is already in production.", code="already_production")
    members = MEMBERS[target.name]
    missing = [m for m in members if m not in target.triton_versions]
    if missing:
        raise ApplicationError(f"Version {target.version} does not record {', '.join(missing)}.", code="incomplete")
    gone = [
        f"{m}/{target.triton_versions[m]}"
        for m in members
        if not (repository() / m / str(target.triton_versions[m])).is_dir()
    ]
    if gone:
        raise Conflict(
            f"{target.name} v{target.version}'s Triton folders are gone ({', '.join(gone)}): removed by the model "
            "storage retention (MODEL_STORAGE_KEEP) or by hand.",
            code="version_removed",
        )

    def write() -> dict[str, int]:
        if target.name == ModelBundle.ABUSE:  # its files, beside the text model served now
            number = int(target.triton_versions["tokenizer"])
            return publish_abuse(repository() / "tokenizer" / str(number), repository=repository(), rollback_of=number)
        out: dict[str, int] = {}
        for model in members:
            if model in out:  # the text pair moves together in one rollback call
                continue
            # A text rollback keeps the abuse model served now: it is rolled back on its own.
            out.update(
                rollback(
                    model,
                    int(target.triton_versions[model]),
                    repository=repository(),
                    bundle=False,
                    keep_abuse=True,
                )
            )
        # One new spam_pipeline bundle for all the parts rolled back.
        out.update(publish_pipeline(repository=repository()))
        return out

    registry_sync()
    published = _publish_and_load(write)
    with transaction.atomic():
        if target.name == ModelBundle.ABUSE:
            _record_text_carried(
                published=published, user=user, note=f"unchanged; serves the abuse model v{target.version} again"
            )
        restored = _record(
            bundle=target.name,
            published=published,
            user=user,
            action="model.rollback",
            restored_from=target,
            note=f"rollback to v{target.version}",
        )
        waiting_rescore_on_commit(reason=f"model.rollback {restored.name} v{restored.version}")
        return restored


def promotion_plan(*, run: TrainingRun) -> dict[str, Any]:
    """What promoting `run` would change, for the confirmation page: per bundle the production
    version now and the Triton version numbers the candidate would get; the gate's verdict; the
    live thresholds the new models would be judged by (promotion does not change them)."""
    from feedback.services.evaluation import current_thresholds
    from feedback.services.gate import gate_reasons, suite_table

    bundles = []
    for bundle in (b for b in ModelBundle.values if b in (run.candidate_artifacts or {})):
        # The abuse model's new number is the text pair's (publish_abuse re-publishes both).
        members = MEMBERS[ModelBundle.TEXT] if bundle == ModelBundle.ABUSE else MEMBERS[bundle]
        current = ModelVersion.objects.filter(name=bundle, is_production=True).first()
        # publish() numbers a bundle's new folders one past the highest existing one.
        next_number = max((served_version(m) or 0) for m in members) + 1
        bundles.append(
            {
                "bundle": bundle,
                "current": current,
                "current_triton": {m: served_version(m) for m in members},
                "next_triton": {m: next_number for m in members},
            }
        )
    return {
        "bundles": bundles,
        "pipeline_next": (served_version(PIPELINE_MODEL) or 0) + 1,
        "held": gate_reasons(run.report or {}),
        "gate": (run.report or {}).get("gate"),
        "suites": suite_table(run.report or {}),
        "thresholds": current_thresholds(),
        "run_thresholds": (run.report or {}).get("thresholds"),
    }
