"""Long texts: recall and false positives of the text model when texts exceed TEXT_MAX_LENGTH
tokens, scored on the head only (max_windows 1, plain truncation) against windows from head to
tail taking the maximum (modelops.text.inference.text_windows, what spam_pipeline serves).

Long texts are built from the SMS test split (never trained on), seed fixed:
- ham_concat:   ham messages joined until the text passes --tokens tokens (label ham);
- spam_tail:    benign ham padding of --tokens tokens, then one spam message (label spam);
- spam_head:    one spam message, then the ham padding (label spam);
- spam_middle:  ham padding, one spam message, ham padding (label spam);
- spam_concat:  spam messages joined (label spam).
For each max_windows it reports, at the model's threshold 0.5: recall per spam kind, the false-
positive rate on ham_concat, the share of ham_concat at or above the escalate threshold (0.9),
and the model inputs per text (cost). Short texts are one window whatever max_windows is, so
the SMS test split's numbers do not move (checked here too).

    .venv/bin/python benchmarks/long_texts.py --model var/models/text/current --windows 1,2,4,8 [--write]

--write adds the table to the model directory's metrics.json ("long_texts") and re-renders its
MODEL_CARD.md, with the served choice (settings.TEXT_MAX_WINDOWS) stated against the numbers.

Never part of the test suite."""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from modelops.text.data import load_sms_splits  # noqa: E402
from modelops.text.inference import OnnxTextClassifier  # noqa: E402
from modelops.text.metrics import spam_metrics  # noqa: E402


def build(
    texts: list[str], labels: list[int], *, tokens: int, count: int, seed: int, tok: OnnxTextClassifier
) -> dict[str, tuple[list[str], int]]:
    rng = random.Random(seed)
    ham = [t for t, y in zip(texts, labels, strict=True) if y == 0]
    spam = [t for t, y in zip(texts, labels, strict=True) if y == 1]

    def pad() -> str:
        parts: list[str] = []
        while len(tok.tokenizer(" ".join(parts))["input_ids"]) < tokens:
            parts.append(rng.choice(ham))
        return " ".join(parts)

    def spam_run() -> str:
        parts: list[str] = []
        while len(tok.tokenizer(" ".join(parts))["input_ids"]) < tokens:
            parts.append(rng.choice(spam))
        return " ".join(parts)

    return {
        "ham_concat": ([pad() for _ in range(count)], 0),
        "spam_tail": ([f"{pad()} {rng.choice(spam)}" for _ in range(count)], 1),
        "spam_head": ([f"{rng.choice(spam)} {pad()}" for _ in range(count)], 1),
        "spam_middle": ([f"{pad()} {rng.choice(spam)} {pad()}" for _ in range(count)], 1),
        "spam_concat": ([spam_run() for _ in range(count // 2)], 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", type=Path, default=REPO / "var" / "models" / "text" / "current")
    parser.add_argument("--windows", default="1,2,4,8")
    parser.add_argument("--tokens", type=int, default=400, help="length of the padding / concatenations")
    parser.add_argument("--count", type=int, default=200, help="texts per kind")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--write", action="store_true", help="record the table in the model's metrics and card")
    args = parser.parse_args()
    splits = load_sms_splits()
    probe = OnnxTextClassifier(args.model, max_windows=1, threads=args.threads)
    kinds = build(
        splits.test.texts, splits.test.labels, tokens=args.tokens, count=args.count, seed=args.seed, tok=probe
    )
    report: dict[str, object] = {"model": str(args.model), "tokens": args.tokens, "count": args.count, "runs": {}}
    for windows in [int(w) for w in args.windows.split(",")]:
        clf = OnnxTextClassifier(args.model, max_windows=windows, threads=args.threads)
        row: dict[str, object] = {}
        started = time.perf_counter()
        for kind, (texts, label) in kinds.items():
            probs = clf.predict_proba(texts)
            inputs = sum(len(w) for w in clf.windows(texts)) / len(texts)
            if label == 1:
                row[kind] = {"recall": float(np.mean(probs >= 0.5)), "inputs_per_text": inputs}
            else:
                row[kind] = {
                    "false_positive_rate": float(np.mean(probs >= 0.5)),
                    "at_or_above_0.9": float(np.mean(probs >= 0.9)),
                    "inputs_per_text": inputs,
                }
        row["seconds"] = round(time.perf_counter() - started, 1)
        sms = spam_metrics(splits.test.labels, clf.predict_proba(splits.test.texts))
        row["sms_test_f1"] = round(float(sms["f1"]), 4)
        report["runs"][str(windows)] = row  # type: ignore[index]
        print(json.dumps({"max_windows": windows, **row}), flush=True)
    print(json.dumps(report, indent=1))
    if args.write:
        write(args, report)


def write(args: argparse.Namespace, report: dict[str, object]) -> None:
    import django

    django.setup()
    from django.conf import settings

    from modelops.text.card import write_model_card
    from modelops.text.train import read_metrics, write_metrics

    runs: dict[str, dict[str, dict[str, float]]] = report["runs"]  # type: ignore[assignment]
    chosen = str(settings.TEXT_MAX_WINDOWS)
    served = runs.get(chosen)
    verdict = (
        f"recall on spam after / inside benign padding {served['spam_tail']['recall']:.3f} / "
        f"{served['spam_middle']['recall']:.3f} (head only: {runs['1']['spam_tail']['recall']:.3f} / "
        f"{runs['1']['spam_middle']['recall']:.3f}), false positives on joined ham "
        f"{served['ham_concat']['false_positive_rate']:.3f}"
        if served and "1" in runs
        else "not among the measured values"
    )
    metrics = read_metrics(args.model)
    metrics["long_texts"] = {
        "method": (
            f"{args.count} texts per kind built from the SMS test split, padding and joins of about "
            f"{args.tokens} tokens, seed {args.seed}, benchmarks/long_texts.py; scored as served, with the "
            "lexical blend when the model has one"
        ),
        "runs": runs,
        "choice": f"max_windows {chosen} (settings.TEXT_MAX_WINDOWS): {verdict}.",
    }
    write_metrics(args.model, metrics)
    write_model_card(args.model, metrics)


if __name__ == "__main__":
    main()
