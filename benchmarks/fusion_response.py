"""The final score against the text score in a neutral context, per feature-model artifact.

Neutral context (``modelops.tabular.response``): the first post of an author the platform sent
nothing about, no link, no preview, no reports. The link and behaviour models of each artifact
score that context; its fusion tree then scores text 0.0, 0.1, ..., 1.0. A fusion that follows
its text score where the context says nothing rises with it; one that overrules uncertainty is
a step (every text score under the step gives the same near-zero final score).

    # feature-model artifacts to compare (the previous code's and this code's, same text model)
    .venv/bin/python manage.py train_feature_models --output /tmp/fusion --model-version after --no-current
    .venv/bin/python benchmarks/fusion_response.py /tmp/fusion/before /tmp/fusion/after

Prints a markdown table (one column per artifact, named by its folder) and, per artifact, the
largest jump between neighbouring text scores and whether the curve ever falls; then every SMS
test text as such a post (text scores from --text-model-dir, else the TF-IDF stand-in the
feature models train on without a text model): legitimate texts auto-removed and spam
auto-approved at the default policy thresholds. Never part of the tests."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import django  # noqa: E402

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")
django.setup()

from modelops.tabular.response import TEXT_GRID, neutral_response  # noqa: E402
from modelops.tabular.text_probs import resolve_text_probabilities  # noqa: E402
from modelops.tabular.train import TrainedModel, load_model  # noqa: E402
from modelops.text.data import load_sms_splits  # noqa: E402
from scoring.services.policy import DEFAULT_APPROVE_THRESHOLD, DEFAULT_REMOVE_THRESHOLD  # noqa: E402


def load_models(version_dir: Path) -> dict[str, TrainedModel]:
    return {kind: load_model(version_dir / f"{kind}.json", kind) for kind in ("link", "behaviour", "fusion")}


def day_one(models: dict[str, dict[str, TrainedModel]], text_model_dir: Path | None) -> None:
    """Every SMS test text as a neutral-context post, at the default policy thresholds."""
    splits = load_sms_splits()
    text = resolve_text_probabilities(
        text_dirs=[text_model_dir] if text_model_dir else [],
        train_texts=splits.train.texts,
        train_labels=splits.train.labels,
    )
    probs = text.predict_proba(splits.test.texts)
    labels = np.asarray(splits.test.labels)
    spam, ham = int(labels.sum()), int((labels == 0).sum())
    print(f"\nSMS test split ({len(labels)} texts, {spam} spam) as neutral-context posts, text: {text.kind}")
    print("| model | legitimate auto-removed (>= 0.9) | spam auto-approved (< 0.2) | queued |")
    print("|---|---|---|---|")
    for name, m in models.items():
        final = neutral_response(m, probs.tolist())
        removed = int(((final >= DEFAULT_REMOVE_THRESHOLD) & (labels == 0)).sum())
        approved = int(((final < DEFAULT_APPROVE_THRESHOLD) & (labels == 1)).sum())
        queued = float(((final >= DEFAULT_APPROVE_THRESHOLD) & (final < DEFAULT_REMOVE_THRESHOLD)).mean())
        print(f"| {name} | {removed} of {ham} | {approved} of {spam} | {queued:.1%} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "versions", nargs="+", type=Path, help="feature-model artifact folders (link/behaviour/fusion.json)"
    )
    parser.add_argument(
        "--text-model-dir", type=Path, default=None, help="text model for the SMS test split (default: TF-IDF stand-in)"
    )
    args = parser.parse_args()
    models = {path.name: load_models(path) for path in args.versions}
    curves = {name: neutral_response(m, TEXT_GRID) for name, m in models.items()}
    print("| text score | " + " | ".join(curves) + " |")
    print("|---" * (len(curves) + 1) + "|")
    for i, text in enumerate(TEXT_GRID):
        print(f"| {text:.1f} | " + " | ".join(f"{curve[i]:.3f}" for curve in curves.values()) + " |")
    print()
    for name, curve in curves.items():
        steps = np.diff(curve)
        print(
            f"{name}: largest jump {steps.max():.3f} (text {TEXT_GRID[int(steps.argmax())]:.1f} -> "
            f"{TEXT_GRID[int(steps.argmax()) + 1]:.1f}), falls anywhere: {bool((steps < -1e-6).any())}, "
            f"final at text 0.5-0.8: {', '.join(f'{v:.3f}' for v in curve[5:9])}"
        )
    day_one(models, args.text_model_dir)


if __name__ == "__main__":
    main()
