"""Out-of-domain benign text: how often the served text model and the lexical baseline (TF-IDF +
logistic regression, trained on the same SMS train split as the model card's) call formal,
longer English text spam. Neither saw any of it in training.

Texts (all ham, from packages installed here, nothing downloaded):
- package_docs: paragraphs of the long descriptions in the installed Python packages' metadata
  (README-style English prose: release notes, install steps, feature lists, some promotional);
- faker_posts:  Faker en_US paragraphs (English words, random order).
Reported per set and length bucket: the false-positive rate at 0.5, the share at or above the
escalate threshold 0.9, and the mean spam probability: the transformer alone (head only, then
with windows) and the served text score (windows, blended with the lexical model when the
model dir has one, modelops.text.baseline); with the SMS test split's F1 of each.

    .venv/bin/python benchmarks/out_of_domain.py --model var/models/text/current [--write]

--write adds the summary to the model directory's metrics.json ("out_of_domain") and re-renders
its MODEL_CARD.md.

Without labelled out-of-domain spam, recall cannot be measured here. Never part of the tests."""

from __future__ import annotations

import argparse
import email
import importlib.metadata
import json
import random
import re
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from modelops.text.baseline import train_baseline  # noqa: E402
from modelops.text.data import load_sms_splits  # noqa: E402
from modelops.text.familiarity import load_familiarity  # noqa: E402
from modelops.text.inference import OnnxTextClassifier  # noqa: E402
from modelops.text.metrics import spam_metrics  # noqa: E402

_MARKUP = re.compile(r"[`*#=>|_\[\]()<]+|https?://\S+")


def package_paragraphs(limit: int, seed: int) -> list[str]:
    found: list[str] = []
    for dist in importlib.metadata.distributions():
        text = dist.read_text("METADATA") or ""
        body = email.message_from_string(text).get_payload()
        if not isinstance(body, str):
            continue
        for para in re.split(r"\n\s*\n", body):
            clean = " ".join(_MARKUP.sub(" ", para).split())
            words = clean.split()
            # prose only: long enough, mostly alphabetic words
            if len(clean) >= 200 and sum(w.isalpha() for w in words) >= 0.7 * len(words):
                found.append(clean[:3000])
    random.Random(seed).shuffle(found)
    return found[:limit]


def faker_paragraphs(limit: int, seed: int) -> list[str]:
    from faker import Faker

    fake = Faker("en_US")
    fake.seed_instance(seed)
    return [fake.paragraph(nb_sentences=random.Random(seed + i).randint(2, 30)) for i in range(limit)]


def summary(probs: np.ndarray) -> dict[str, float]:
    return {
        "false_positive_rate": round(float(np.mean(probs >= 0.5)), 4),
        "at_or_above_0.9": round(float(np.mean(probs >= 0.9)), 4),
        "mean": round(float(np.mean(probs)), 4),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", type=Path, default=REPO / "var" / "models" / "text" / "current")
    parser.add_argument("--count", type=int, default=400)
    parser.add_argument("--windows", type=int, default=4)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--write", action="store_true", help="record the summary in the model's metrics and card")
    args = parser.parse_args()
    splits = load_sms_splits()
    baseline = train_baseline(
        splits.train.texts, splits.train.labels, splits.validation.texts, splits.validation.labels
    )
    head = OnnxTextClassifier(args.model, max_windows=1, lexical_weight=0.0, threads=1)
    windowed = OnnxTextClassifier(args.model, max_windows=args.windows, lexical_weight=0.0, threads=1)
    served = OnnxTextClassifier(args.model, max_windows=args.windows, threads=1)
    familiarity = load_familiarity(args.model)
    sets = {
        "package_docs": package_paragraphs(args.count, args.seed),
        "faker_posts": faker_paragraphs(args.count, args.seed),
    }
    report: dict[str, object] = {
        "sms_test_f1": {
            "transformer_head": round(spam_metrics(splits.test.labels, head.predict_proba(splits.test.texts))["f1"], 4),
            "tfidf_lr": round(spam_metrics(splits.test.labels, baseline.predict_proba(splits.test.texts))["f1"], 4),
            "served": round(spam_metrics(splits.test.labels, served.predict_proba(splits.test.texts))["f1"], 4),
        }
    }
    print(json.dumps(report), flush=True)
    for name, texts in sets.items():
        tokens = np.asarray([len(ids) for ids in head.tokenizer(texts, truncation=False)["input_ids"]])
        scored = {
            "transformer_head": head.predict_proba(texts),
            f"transformer_windows_{args.windows}": windowed.predict_proba(texts),
            "tfidf_lr": baseline.predict_proba(texts),
            f"served_blend_{served.lexical_weight:g}_windows_{args.windows}": served.predict_proba(texts),
        }
        per_set: dict[str, object] = {"texts": len(texts), "median_tokens": int(np.median(tokens))}
        if familiarity is not None:
            # Familiarity routing queues an unfamiliar post whatever its score: the score decides
            # the rest. So what a higher score costs in queue is the familiar texts it moves.
            familiar = familiarity.unfamiliarity(texts) < 1.0
            served_probs = scored[f"served_blend_{served.lexical_weight:g}_windows_{args.windows}"]
            per_set["unfamiliar"] = round(float(np.mean(~familiar)), 4)
            per_set["familiar_and_served_at_or_above_0.5"] = round(float(np.mean(familiar & (served_probs >= 0.5))), 4)
        for model, probs in scored.items():
            per_set[model] = summary(probs)
            per_set[f"{model}_by_length"] = {
                label: summary(probs[mask])
                for label, mask in (
                    ("<=128 tokens", tokens <= 128),
                    ("129-512", (tokens > 128) & (tokens <= 512)),
                    (">512", tokens > 512),
                )
                if mask.any()
            }
        report[name] = per_set
        print(json.dumps({name: per_set}), flush=True)
    print(json.dumps(report, indent=1))
    if args.write:
        write(args, report)


def write(args: argparse.Namespace, report: dict[str, object]) -> None:
    import django

    django.setup()
    from modelops.text.card import write_model_card
    from modelops.text.train import read_metrics, write_metrics

    metrics = read_metrics(args.model)
    metrics["out_of_domain"] = {
        "method": (
            f"{args.count} benign texts per set, seed {args.seed}, benchmarks/out_of_domain.py; "
            "package_docs: prose paragraphs of installed packages' descriptions, faker_posts: Faker en_US paragraphs"
        ),
        "sms_test_f1": report["sms_test_f1"],
        "sets": {
            name: {model: value for model, value in per_set.items() if isinstance(value, dict) and "mean" in value}
            for name, per_set in report.items()
            if name != "sms_test_f1" and isinstance(per_set, dict)
        },
    }
    write_metrics(args.model, metrics)
    write_model_card(args.model, metrics)


if __name__ == "__main__":
    main()
