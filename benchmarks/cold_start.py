"""Leave-one-corpus-out: does benign writing of other kinds teach the text model legitimate
writing, or only the style of its corpora?

Variants, each a fresh fine-tune of the transformer (the lexical half learns from the SMS splits
alone, as in the bootstrap, so it is the same in every variant):
- ``sms_only``: the SMS collection alone (the bootstrap model before broader data);
- ``all``: SMS + every benign corpus + SMS spam placed in benign writing (what bootstrap trains);
- ``all_no_context``: the same without the spam placed in writing (the guard switched off);
- ``without_<corpus>``: ``all`` with one corpus held out entirely, measured on that corpus.

``--layers 6,3,2`` trains every variant once per depth: the base checkpoint keeps its embeddings
and its lowest N transformer layers (dropping the top layers costs least, Sajjad et al. 2023,
"On the effect of dropping layers of pre-trained transformer models"), and the variant is named
``<variant>@<N>L``. That measures what a shallower, faster served model would cost in quality.

Measured per held-out corpus and per scorer (transformer, lexical half, served blend at the
served lexical weight): legitimate texts at or above 0.5 and at or above the remove threshold,
and the recall of SMS test spam placed inside that corpus's writing (spam from elsewhere, in a
style the model never saw spam in); and the SMS test F1 of every variant.

Three steps, so the transformer fine-tunes can run where they are fast (a GPU machine with
torch and transformers but without scikit-learn or this project's data packages):

    python benchmarks/cold_start.py prepare --carry var/gpu_carry    # here: data + base checkpoint
    python benchmarks/cold_start.py transformers --carry var/gpu_carry --out DIR   # anywhere
    python benchmarks/cold_start.py report --carry var/gpu_carry --probs DIR/probs.json \
        --out benchmarks/results/cold_start.json                       # here: lexical half + tables

``transformers`` on this 2-core CPU takes several minutes per variant; ``--epochs`` and
``--variants`` shrink it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

DATA_FILE = "cold_start.json"
REMOVE_THRESHOLD = 0.9  # scoring.services.policy.DEFAULT_REMOVE_THRESHOLD (asserted in prepare)
LEXICAL_WEIGHT = 0.5  # modelops.text.baseline.DEFAULT_LEXICAL_WEIGHT (asserted in prepare)


def prepare(args: argparse.Namespace) -> None:
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")
    django.setup()
    from django.conf import settings

    from modelops.text.baseline import DEFAULT_LEXICAL_WEIGHT
    from modelops.text.benign_corpora import load_benign_splits
    from modelops.text.data import load_sms_splits
    from scoring.services.policy import DEFAULT_REMOVE_THRESHOLD

    assert DEFAULT_REMOVE_THRESHOLD == REMOVE_THRESHOLD and DEFAULT_LEXICAL_WEIGHT == LEXICAL_WEIGHT
    sms = load_sms_splits()
    benign = load_benign_splits(Path(settings.BENIGN_DATA_CACHE))
    data = {
        "sms": {
            name: {"texts": part.texts, "labels": part.labels}
            for name, part in (("train", sms.train), ("validation", sms.validation), ("test", sms.test))
        },
        "benign": {"train": benign.train, "validation": benign.validation, "held_out": benign.held_out},
        "summary": benign.summary(),
    }
    args.carry.mkdir(parents=True, exist_ok=True)
    (args.carry / DATA_FILE).write_text(json.dumps(data) + "\n")
    print(
        f"{args.carry / DATA_FILE}: {(args.carry / DATA_FILE).stat().st_size / 2**20:.1f} MiB; missing {benign.missing}"
    )


def _load(carry: Path) -> tuple[Any, Any, dict[str, Any]]:
    from modelops.text.benign_corpora import BenignSplits
    from modelops.text.data import SmsSplits, TextSplit

    data = json.loads((carry / DATA_FILE).read_text())
    parts = {name: TextSplit(d["texts"], d["labels"]) for name, d in data["sms"].items()}
    sms = SmsSplits(parts["train"], parts["validation"], parts["test"], 42, 0, 0, 0)
    b = data["benign"]
    return sms, BenignSplits(b["train"], b["validation"], b["held_out"], {}), data


def variants(benign: Any) -> dict[str, tuple[list[str], bool]]:
    """name -> (benign corpora trained on, spam placed in writing)."""
    names = sorted(benign.train)
    out = {"sms_only": ([], False), "all": (names, True), "all_no_context": (names, False)}
    out.update({f"without_{name}": ([n for n in names if n != name], True) for name in names})
    return out


def training_data(sms: Any, benign: Any, corpora: list[str], context: bool) -> Any:
    from modelops.text.benign_corpora import BenignSplits
    from modelops.text.cold_start import mix_benign
    from modelops.text.data import TextSplit

    subset = BenignSplits({n: benign.train[n] for n in corpora}, {n: benign.validation[n] for n in corpora}, {}, {})
    mixed = mix_benign(sms, subset)
    if context or not corpora:
        return mixed

    # The guard off: benign writing as ham, no spam placed in it.
    def strip(split: Any, original: Any) -> Any:
        keep = [
            i
            for i, (t, y) in enumerate(zip(split.texts, split.labels, strict=True))
            if y == 0 or t in set(original.texts)
        ]
        return TextSplit([split.texts[i] for i in keep], [split.labels[i] for i in keep])

    return type(mixed)(strip(mixed.train, sms.train), strip(mixed.validation, sms.validation), mixed.test, 42, 0, 0, 0)


def evaluation_texts(sms: Any, benign: Any) -> dict[str, list[str]]:
    from modelops.text.benign_corpora import in_context

    spam = [t for t, y in zip(sms.test.texts, sms.test.labels, strict=True) if y == 1]
    texts = {"sms_test": sms.test.texts}
    for name, held in benign.held_out.items():
        texts[f"legit:{name}"] = held
        texts[f"spam_in:{name}"] = in_context(spam, held, seed=7)
    return texts


def truncated_base(base: Path, layers: int, out: Path) -> Path:
    """The base checkpoint with its embeddings and lowest ``layers`` transformer layers.

    The carried base (scripts/gpu_session.py prepare) is what this truncates: the GPU machine has
    no packaged BERT for modelops.text.convert.build_base_checkpoint(layers=...) to convert."""
    from transformers import AutoTokenizer, DistilBertForSequenceClassification

    model = DistilBertForSequenceClassification.from_pretrained(base)
    if not 1 <= layers <= model.config.n_layers:
        raise SystemExit(f"--layers {layers}: 1 to the base's {model.config.n_layers}")
    model.distilbert.transformer.layer = model.distilbert.transformer.layer[:layers]
    model.config.n_layers = layers
    model.save_pretrained(out)
    AutoTokenizer.from_pretrained(base).save_pretrained(out)
    return out


def transformers(args: argparse.Namespace) -> None:
    import tempfile

    sms, benign, _ = _load(args.carry)
    texts = evaluation_texts(sms, benign)
    if args.limit:
        texts = {key: values[: args.limit] for key, values in texts.items()}
    chosen = variants(benign)
    if args.variants:
        chosen = {k: v for k, v in chosen.items() if k in args.variants}
    args.out.mkdir(parents=True, exist_ok=True)
    probs: dict[str, Any] = {}
    scratch = Path(tempfile.mkdtemp(prefix="cold_start_"))
    depths: list[int | None] = list(args.layers) if args.layers else [None]
    for layers in depths:
        base = args.carry / "base"
        if layers is not None:
            base = truncated_base(base, layers, scratch / f"base-{layers}")
        for name, (corpora, context) in chosen.items():
            key = name if layers is None else f"{name}@{layers}L"
            probs[key] = _train_and_score(args, sms, benign, texts, base, corpora, context)
            row = probs[key]
            print(f"{key}: {row['train_texts']} texts, {row['train_seconds']}s on {row['device']}", flush=True)
            (args.out / "probs.json").write_text(json.dumps(probs) + "\n")


def _train_and_score(
    args: argparse.Namespace,
    sms: Any,
    benign: Any,
    texts: dict[str, list[str]],
    base: Path,
    corpora: list[str],
    context: bool,
) -> dict[str, Any]:
    from modelops.text.finetune import TrainConfig, predict_proba, select_device, to_device, train_text_model

    data = training_data(sms, benign, corpora, context)
    if args.limit:
        data = type(data)(
            type(data.train)(data.train.texts[: args.limit], data.train.labels[: args.limit]),
            type(data.train)(data.validation.texts[: args.limit], data.validation.labels[: args.limit]),
            data.test,
            42,
            0,
            0,
            0,
        )
    config = TrainConfig(
        base=str(base),
        epochs=args.epochs,
        threads=os.cpu_count() or 2,
        time_budget_s=None,
        seed=args.seed,
    )
    started = time.monotonic()
    trained = train_text_model(
        data.train.texts, data.train.labels, data.validation.texts, data.validation.labels, config, progress=False
    )
    to_device(trained.model, select_device(config.device))
    return {
        "train_seconds": round(time.monotonic() - started, 1),
        "device": trained.device,
        "train_texts": len(data.train),
        "layers": trained.model.config.n_layers,
        "probs": {
            key: predict_proba(trained.model, trained.tokenizer, values, max_length=config.max_length)[0].tolist()
            for key, values in texts.items()
        },
    }


def _rate(values: Any, threshold: float) -> float:
    import numpy as np

    arr = np.asarray(values, dtype=np.float64)
    return round(float((arr >= threshold).mean()), 4) if len(arr) else 0.0


def report(args: argparse.Namespace) -> None:
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")
    django.setup()
    import numpy as np

    from modelops.text.baseline import blend, train_baseline
    from modelops.text.metrics import spam_metrics

    sms, benign, data = _load(args.carry)
    texts = evaluation_texts(sms, benign)
    transformer = json.loads(args.probs.read_text())
    rows: dict[str, Any] = {}
    # As run_training does: the lexical half learns from the SMS splits alone in every variant.
    lexical = train_baseline(sms.train.texts, sms.train.labels, sms.validation.texts, sms.validation.labels)
    known = variants(benign)
    for name in transformer:
        variant = name.split("@")[0]  # "<variant>@<N>L" for a truncated model (--layers)
        if variant not in known:
            continue
        scores: dict[str, dict[str, Any]] = {"transformer": {}, "lexical": {}, "served": {}}
        for key, values in texts.items():
            t = np.asarray(transformer[name]["probs"][key])
            lx = lexical.predict_proba(values) if values else np.zeros(0)
            scores["transformer"][key], scores["lexical"][key] = t, lx
            scores["served"][key] = blend(t, lx, LEXICAL_WEIGHT)
        evaluated = [variant[len("without_") :]] if variant.startswith("without_") else sorted(benign.held_out)
        row: dict[str, Any] = {"train_texts": transformer[name]["train_texts"], "sms_test_f1": {}, "corpora": {}}
        for scorer, by_key in scores.items():
            row["sms_test_f1"][scorer] = round(spam_metrics(sms.test.labels, by_key["sms_test"])["f1"], 4)
        for corpus in evaluated:
            row["corpora"][corpus] = {
                scorer: {
                    "fp_at_0.5": _rate(by_key[f"legit:{corpus}"], 0.5),
                    "fp_at_remove": _rate(by_key[f"legit:{corpus}"], REMOVE_THRESHOLD),
                    "spam_in_context_recall": _rate(by_key[f"spam_in:{corpus}"], 0.5),
                }
                for scorer, by_key in scores.items()
            }
        rows[name] = row
    result = {"remove_threshold": REMOVE_THRESHOLD, "data": data["summary"], "variants": rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(markdown(result))


def markdown(result: dict[str, Any]) -> str:
    lines = [
        "| variant | corpus | scorer | FP ≥0.5 | FP ≥remove | spam-in-writing recall | SMS F1 |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, row in result["variants"].items():
        for corpus, by_scorer in row["corpora"].items():
            for scorer, m in by_scorer.items():
                lines.append(
                    f"| {name} | {corpus} | {scorer} | {m['fp_at_0.5']:.3f} | {m['fp_at_remove']:.3f} "
                    f"| {m['spam_in_context_recall']:.3f} | {row['sms_test_f1'][scorer]:.4f} |"
                )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="step", required=True)
    prep = sub.add_parser("prepare")
    prep.add_argument("--carry", type=Path, default=ROOT / "var" / "gpu_carry")
    tr = sub.add_parser("transformers")
    tr.add_argument("--carry", type=Path, default=ROOT / "var" / "gpu_carry")
    tr.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", "var/cold_start")))
    tr.add_argument("--epochs", type=int, default=3, help="the bootstrap's (TrainConfig) default: 3")
    tr.add_argument("--seed", type=int, default=42)
    tr.add_argument("--variants", type=lambda v: v.split(","), default=None)
    tr.add_argument("--limit", type=int, default=0, help="smoke run: this many texts per part")
    tr.add_argument(
        "--layers",
        type=lambda v: [int(x) for x in v.split(",")],
        default=None,
        help="train each variant per depth, keeping the lowest N layers (module docstring)",
    )
    rep = sub.add_parser("report")
    rep.add_argument("--carry", type=Path, default=ROOT / "var" / "gpu_carry")
    rep.add_argument("--probs", type=Path, required=True)
    rep.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "cold_start.json")
    args = parser.parse_args()
    {"prepare": prepare, "transformers": transformers, "report": report}[args.step](args)


if __name__ == "__main__":
    main()
