"""One real retraining cycle: bootstrap data + simulated moderator labels -> dataset ->
retrain (tabular) -> candidate vs production on the same held-out split [-> promote].

    python manage.py feedback_cycle --bootstrap-dir var/models/tabular/current --labels 600

Production is the bootstrap tabular bundle (modelops.tabular, synthetic context on the SMS
texts), published into --repository if it holds no tree model yet. The dataset holds:

- bootstrap rows: synthetic contexts (a new seed) over the SMS train+validation texts, imported
  as a dataset (source "bootstrap") with their features and cross-fitted text probabilities;
- simulated moderator labels: posts built from the SMS *test* texts (never seen by production),
  a share of the spam coming from a campaign production has not seen (aged, clean-looking
  accounts posting bursts of a fresh domain from busy IPs), scored by production, stored as
  real Post/Score rows and decided through moderation's decision_record (so the labels are
  frozen by the decision_recorded signal like any moderator's), with a reviewer error rate.

Text probabilities: the TF-IDF stand-in of modelops.tabular.text_probs (what the bootstrap
uses when no DistilBERT export exists), so production and candidate see the same text model.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from django.conf import settings
from django.contrib.auth.models import Group, User
from django.core.management.base import BaseCommand, CommandParser
from django.db import transaction
from django.test import override_settings
from django.utils import timezone
from sklearn.model_selection import StratifiedKFold

from contracts.feature_schema import BEHAVIOUR_FEATURES, LINK_FEATURES
from feedback.models import TrainingRun, TrainingScope
from feedback.services.datasets import dataset_import, dataset_snapshot
from feedback.services.promotion import GateHeld, promote_run, registry_sync, served_version
from feedback.services.tabular import TabularModels, predict_final
from feedback.services.training import training_run_execute
from moderation.models import Author, Post, PostStatus, Source
from moderation.services.decisions import decision_record
from scoring.models import Score


def _tfidf(texts: list[str], labels: list[int]) -> Any:
    from modelops.tabular.text_probs import TfidfTextProbabilities

    return TfidfTextProbabilities(texts, labels)


def _cross_fitted_text_probs(texts: list[str], labels: list[int], seed: int) -> np.ndarray:
    out = np.zeros(len(texts))
    folds = StratifiedKFold(n_splits=5, shuffle=True, random_state=seed)
    for train, held in folds.split(texts, labels):
        model = _tfidf([texts[i] for i in train], [labels[i] for i in train])
        out[held] = model.predict_proba([texts[i] for i in held])
    return out


def _features(row: Any) -> dict[str, dict[str, float]]:
    return {
        "link": {n: float(row[n]) for n in LINK_FEATURES},
        "behaviour": {n: float(row[n]) for n in BEHAVIOUR_FEATURES},
    }


def _drift(row: dict[str, float], ham_row: Any, rng: random.Random) -> None:
    """A campaign from compromised, aged accounts: the profile and journey of a real user (taken
    from a ham row), links on a days-old domain posted in bursts from busy IPs, no reports yet."""
    for name in BEHAVIOUR_FEATURES:
        row[name] = float(ham_row[name])
    row.update(
        {
            "report_count": 0.0,
            "report_distinct_reporters": 0.0,
            "report_spam_reason_count": 0.0,
            "url_present": 1.0,
            "url_age_hours": rng.uniform(0.5, 72),
            "domain_age_hours": rng.uniform(1, 96),
            "url_is_shortener": 0.0,
            "url_tld_risky": 0.0,
            "url_post_count": float(rng.randint(20, 300)),
            "domain_post_count": float(rng.randint(40, 600)),
            "domain_report_count": 0.0,
            "domain_spam_rate": 0.0,
            "url_reputation": 0.5,
            "ip_post_count": float(rng.randint(50, 900)),
        }
    )


class Command(BaseCommand):
    help = "Run one retraining cycle on bootstrap data plus simulated moderator labels and print the comparison."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--bootstrap-dir", default=None, help="tabular artifact dir (default ARTIFACTS_DIR/tabular/current)"
        )
        parser.add_argument("--repository", default=None, help="Triton model repository (default the setting)")
        parser.add_argument("--labels", type=int, default=600, help="simulated moderator decisions")
        parser.add_argument("--bootstrap-rows", type=int, default=2000)
        parser.add_argument("--spam-share", type=float, default=0.4, help="spam share of the reviewed posts")
        parser.add_argument(
            "--campaign-share", type=float, default=0.5, help="share of labelled spam from the campaign"
        )
        parser.add_argument("--reviewer-error", type=float, default=0.02)
        parser.add_argument("--seed", type=int, default=21)
        parser.add_argument("--promote", action="store_true", help="promote the candidate (needs Triton running)")
        parser.add_argument("--json", default=None, help="write the full report here")

    def handle(self, *args: Any, **options: Any) -> None:
        repo = Path(options["repository"] or settings.TRITON_MODEL_REPOSITORY).resolve()
        with override_settings(TRITON_MODEL_REPOSITORY=repo):
            self._run(repo, options)

    def _run(self, repo: Path, options: dict[str, Any]) -> None:
        from modelops.model_repository import Artifacts, publish
        from modelops.tabular.synthetic import generate
        from modelops.text.data import load_sms_splits

        seed = int(options["seed"])
        rng = random.Random(seed)
        boot_dir = Path(options["bootstrap_dir"] or Path(str(settings.ARTIFACTS_DIR)) / "tabular" / "current").resolve()
        if served_version("fusion_model") is None:
            published = publish(Artifacts(tabular=boot_dir), repository=repo)
            self.stdout.write(f"published the bootstrap bundle into {repo}: {published}")
        registry_sync()
        production = TabularModels.load(
            {
                k: repo / f"{k}_model" / str(served_version(f"{k}_model")) / "model.json"
                for k in ("link", "behaviour", "fusion")
            }
        )
        admin, _ = User.objects.get_or_create(username="cycle-admin", defaults={"is_superuser": True, "is_staff": True})
        moderator, _ = User.objects.get_or_create(username="cycle-moderator")
        moderator.groups.add(Group.objects.get_or_create(name="moderator")[0])

        splits = load_sms_splits()
        # 1. Bootstrap rows (the bootstrap's own distribution), cross-fitted text probabilities.
        boot_texts = splits.train.texts + splits.validation.texts
        boot_labels = splits.train.labels + splits.validation.labels
        boot_probs = _cross_fitted_text_probs(boot_texts, boot_labels, seed)
        frame = generate(boot_texts, boot_labels, seed=seed + 1).sample(
            n=min(int(options["bootstrap_rows"]), len(boot_texts)), random_state=seed
        )
        lines = []
        for i, row in enumerate(frame.itertuples(index=False)):
            r = row._asdict()
            lines.append(
                json.dumps(
                    {
                        "text": r["text"],
                        "label": "spam" if r["label"] else "ham",
                        "source": "bootstrap",
                        "author_external_id": f"boot-{i}",
                        "post_external_id": f"boot-{i}",
                        "features": _features(r),
                        "sub_scores": {"text": float(boot_probs[int(r["text_index"])])},
                    }
                )
            )
        imported = dataset_import(
            content="\n".join(lines).encode(), fmt="jsonl", created_by=admin, name="bootstrap rows"
        )
        self.stdout.write(f"bootstrap rows imported as dataset v{imported.version}: {imported.example_count} rows")

        # 2. Simulated moderator decisions on unseen texts.
        text_model = _tfidf(splits.train.texts, splits.train.labels)
        test_frame = generate(splits.test.texts, splits.test.labels, seed=seed + 2)
        hams = test_frame[test_frame["label"] == 0]
        # Moderators review the queue, which is enriched in spam compared with all traffic.
        n = min(int(options["labels"]), len(test_frame))
        spam_rows = test_frame[test_frame["label"] == 1]
        n_spam = min(len(spam_rows), round(n * float(options["spam_share"])))
        picked = pd.concat(
            [spam_rows.sample(n=n_spam, random_state=seed), hams.sample(n=n - n_spam, random_state=seed)]
        ).sample(frac=1.0, random_state=seed)
        source, _ = Source.objects.get_or_create(slug="sim", defaults={"name": "Simulated platform"})
        stamp = timezone.now().strftime("%Y%m%d%H%M%S")
        records = []
        for row in picked.itertuples(index=False):
            r = {
                k: (float(v) if isinstance(v, int | float | np.floating | np.integer) else v)
                for k, v in row._asdict().items()
            }
            campaign = bool(r["label"]) and rng.random() < float(options["campaign_share"])
            if campaign:
                _drift(r, hams.iloc[rng.randrange(len(hams))], rng)
            records.append((r, campaign))
        text_probs = text_model.predict_proba([r["text"] for r, _ in records])
        rows_for_prod = [
            {"features": _features(r), "sub_scores": {"text": float(p)}}
            for (r, _), p in zip(records, text_probs, strict=True)
        ]
        prod = predict_final(production, rows_for_prod)
        flips = 0
        authors: list[Author] = []
        for i, ((r, campaign), p) in enumerate(zip(records, text_probs, strict=True)):
            # Authors post 1-3 times; the split keeps each author's posts together.
            if not authors or rng.random() < 0.5:
                authors.append(
                    Author.objects.create(
                        source=source, external_id=f"sim-{stamp}-{len(authors)}", username=f"user{len(authors)}"
                    )
                )
            label = "spam" if r["label"] else "ham"
            if rng.random() < float(options["reviewer_error"]):
                label, flips = ("ham" if label == "spam" else "spam"), flips + 1
            with transaction.atomic():
                post = Post.objects.create(
                    source=source,
                    external_id=f"sim-{stamp}-{i}",
                    author=authors[-1],
                    text=r["text"],
                    url=r["url"] or "",
                    created_at=timezone.now(),
                    status=PostStatus.QUEUED,
                    final_score=float(prod["final"][i]),
                    scored_at=timezone.now(),
                    model_version=f"fusion_model:{served_version('fusion_model')}",
                )
                Score.objects.create(
                    post=post,
                    model_set=f"fusion_model:{served_version('fusion_model')},sim",
                    text_score=float(p),
                    link_score=float(prod["link"][i]),
                    behaviour_score=float(prod["behaviour"][i]),
                    final_score=float(prod["final"][i]),
                    action="queue",
                    features={**_features(r), "campaign": campaign},
                    model_versions={
                        m: str(served_version(m)) for m in ("link_model", "behaviour_model", "fusion_model")
                    },
                )
            decision_record(post=post, moderator=moderator, label=label, validate_reason=False)
        self.stdout.write(
            f"simulated {len(records)} moderator decisions ({sum(c for _, c in records)} campaign spam, "
            f"{sum(1 for r, _ in records if r['label'])} spam in all, {flips} reviewer errors)"
        )

        # 3. Snapshot, retrain, compare.
        dataset = dataset_snapshot(created_by=admin, name="bootstrap + simulated moderator labels")
        self.stdout.write(
            f"dataset v{dataset.version}: {dataset.example_count} examples, sha256 {dataset.content_sha256[:16]}, "
            f"splits {json.dumps(dataset.manifest['splits'])}"
        )
        run = TrainingRun.objects.create(dataset=dataset, scope=TrainingScope.TABULAR, started_by=admin)
        run = training_run_execute(run_id=run.pk)
        if run.error:
            self.stderr.write(f"run #{run.pk} failed: {run.error}")
            return
        self._print(run)
        if options["promote"]:
            try:
                versions = promote_run(run=run, user=admin)
            except GateHeld as exc:
                self.stderr.write(f"not promoted: {exc.message}")
            else:
                self.stdout.write(f"promoted: {[(v.name, v.version, v.triton_versions) for v in versions]}")
        if options["json"]:
            Path(options["json"]).write_text(
                json.dumps(
                    {
                        "run": run.pk,
                        "candidate": run.candidate_metrics,
                        "production": run.production_metrics,
                        "report": run.report,
                    },
                    indent=2,
                )
            )

    def _print(self, run: TrainingRun) -> None:
        cand, prod = run.candidate_metrics["tabular"], run.production_metrics["tabular"]
        keys = (
            "n",
            "spam",
            "pr_auc",
            "f1",
            "precision",
            "recall",
            "at_remove.precision",
            "at_remove.recall",
            "at_remove.fpr",
            "at_approve.spam_miss_rate",
        )

        def dig(m: Any, path: str) -> Any:
            for part in path.split("."):
                m = m.get(part) if isinstance(m, dict) else None
            return m

        def fmt(v: Any) -> str:
            return "—" if v is None else (f"{v:.4f}" if isinstance(v, float) else str(v))

        sections = [("all test rows", cand["final"], prod["final"])]
        for source, metrics in cand.get("by_source", {}).items():
            sections.append((f"test rows from {source}", metrics, prod["by_source"].get(source)))
        self.stdout.write(f"run #{run.pk}: thresholds {run.report['thresholds']}")
        for title, c, p in sections:
            self.stdout.write(f"-- {title}")
            self.stdout.write(f"   {'metric':28s} {'production':>10s} {'candidate':>10s}")
            for key in keys:
                self.stdout.write(f"   {key:28s} {fmt(dig(p, key)):>10s} {fmt(dig(c, key)):>10s}")
        guarded = run.report["guarded"]["tabular"]
        self.stdout.write(f"better on every guarded metric: {guarded['better_on_all']}")
        self._campaign(run)

    def _campaign(self, run: TrainingRun) -> None:
        """Recall on the campaign spam of the test split: what the new labels were meant to teach."""
        from feedback.services.datasets import artifacts_dir, dataset_load
        from feedback.services.tabular import usable
        from feedback.services.training import load_production_tabular

        rows = [
            r
            for r in dataset_load(dataset=run.dataset)
            if r["split"] == "test" and usable(r) and r["features"].get("campaign") and r["label"] == "spam"
        ]
        if not rows:
            return
        candidate = TabularModels.load(
            {
                k: artifacts_dir() / run.candidate_artifacts["tabular"] / f"{k}.json"
                for k in ("link", "behaviour", "fusion")
            }
        )
        production = load_production_tabular()
        assert production is not None
        remove = float(run.report["thresholds"]["remove"])
        for name, models in (("production", production), ("candidate", candidate)):
            p = predict_final(models, rows)["final"]
            self.stdout.write(
                f"campaign spam in test ({len(rows)}): {name:10s} recall@0.5={np.mean(p >= 0.5):.4f} "
                f"recall@remove={np.mean(p >= remove):.4f} mean score={np.mean(p):.4f}"
            )
