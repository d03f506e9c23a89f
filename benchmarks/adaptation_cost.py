"""What one adaptation round costs on this CPU, and what it does to the SMS test split.

The round's fitting and evaluation steps (feedback.services.adaptation) on a real text model
artifact, without a database or Triton: the candidate is assembled from the artifact as the
round assembles it from the served version, the lexical half and its blend weight are chosen
(modelops.text.adapt) on the SMS train split (replay) plus `--labels` reviewer-like labels of a
kind the SMS corpus lacks (classifieds), the
familiarity reference on the SMS train texts plus those labels, and production and candidate
are scored on the SMS test split (the bootstrap suite) with ONNX Runtime, as the round does.

    DJANGO_SETTINGS_MODULE=config.settings.test python -m benchmarks.adaptation_cost \\
        --model-dir /path/to/text/current --labels 400
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from pathlib import Path

import django

SPAM = (
    "cheap {item} wholesale prices guaranteed, whatsapp {n} to order in bulk today",
    "earn {n} dollars a week from home selling {item}, no experience, message me now",
    "replica {item} at factory price, free shipping worldwide, reply for the catalogue",
)
HAM = (
    "selling my old {item}, used for {n} months, pick up downtown only",
    "does anyone know a good repair shop for a {item}? mine broke after {n} years",
    "looking to swap my {item} for a bike, can meet on saturday near the park",
)
ITEMS = ("sofa", "laptop", "camera", "guitar", "stroller", "desk", "kettle", "jacket", "lamp")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-dir", type=Path, required=True)
    parser.add_argument("--labels", type=int, default=400)
    args = parser.parse_args()
    django.setup()
    from feedback.services.adaptation import candidate_from_served
    from modelops.text.adapt import Example, fit_adapted_text
    from modelops.text.baseline import DEFAULT_LEXICAL_WEIGHT, save_lexical
    from modelops.text.data import load_sms_splits
    from modelops.text.familiarity import fit_familiarity, save_familiarity
    from modelops.text.inference import OnnxTextClassifier
    from modelops.text.metrics import spam_metrics

    rng = random.Random(0)
    labels = [
        (rng.choice(SPAM if i % 2 == 0 else HAM).format(item=rng.choice(ITEMS), n=rng.randint(2, 90)), 1 - i % 2)
        for i in range(args.labels)
    ]
    cut = int(len(labels) * 0.8)
    splits = load_sms_splits()
    seconds: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "candidate"
        tick = time.monotonic()
        candidate_from_served(clf_dir=args.model_dir, tok_dir=args.model_dir, out_dir=out)
        seconds["assemble"] = time.monotonic() - tick
        tick = time.monotonic()
        served = OnnxTextClassifier(out)
        adapted = fit_adapted_text(
            train=[Example(t, int(y)) for t, y in zip(splits.train.texts, splits.train.labels, strict=True)]
            + [Example(t, y, is_label=True) for t, y in labels[:cut]],
            replay_validation=list(zip(splits.validation.texts, map(int, splits.validation.labels), strict=True)),
            label_validation=labels[cut:],
            transformer=served.transformer_rows,
            served_lexical=served.lexical,
            served_weight=served.lexical_weight or DEFAULT_LEXICAL_WEIGHT,
        )
        save_lexical(adapted.lexical, out)
        serving = json.loads((out / "serving.json").read_text())
        (out / "serving.json").write_text(json.dumps(serving | {"lexical_weight": adapted.lexical_weight}))
        seconds["lexical"] = time.monotonic() - tick
        tick = time.monotonic()
        save_familiarity(fit_familiarity([*splits.train.texts, *(t for t, _ in labels)], splits.test.texts), out)
        seconds["familiarity"] = time.monotonic() - tick
        f1 = {}
        for name, folder in (("production", args.model_dir), ("candidate", out)):
            tick = time.monotonic()
            probs = OnnxTextClassifier(folder).predict_proba(splits.test.texts)
            seconds[f"evaluate_{name}"] = time.monotonic() - tick
            f1[name] = spam_metrics(splits.test.labels, probs)["f1"]
        held = [t for t, _ in labels[cut:]]
        fam = fit_familiarity(splits.train.texts, splits.test.texts).unfamiliarity(held)
        fam_after = fit_familiarity([*splits.train.texts, *(t for t, _ in labels)], splits.test.texts)
    print(
        json.dumps(
            {
                "labels": args.labels,
                "sms_test_f1": {k: round(v, 4) for k, v in f1.items()},
                "chosen": adapted.report["chosen"],
                "seconds": {k: round(v, 1) for k, v in seconds.items()} | {"total": round(sum(seconds.values()), 1)},
                "labelled_unfamiliar_share": {
                    "sms_reference": round(float((fam >= 1).mean()), 3),
                    "with_labels": round(float((fam_after.unfamiliarity(held) >= 1).mean()), 3),
                },
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
