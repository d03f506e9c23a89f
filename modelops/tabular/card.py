"""MODEL_CARD.md for a feature-model version, rendered from its metrics and the generator's
parameters (so the card cannot drift from what was trained)."""

from __future__ import annotations

from typing import Any

from modelops.calibration import calibration_markdown

__all__ = ["render_card"]

_METRIC_COLUMNS = ("n", "positives", "precision", "recall", "f1", "accuracy", "pr_auc", "roc_auc")


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4f}"
    return str(value)


def _param(value: Any) -> str:
    if isinstance(value, list | tuple):
        return "(" + ", ".join(_param(v) for v in value) + ")"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _table(rows: dict[str, dict[str, Any]]) -> str:
    lines = ["| model | " + " | ".join(_METRIC_COLUMNS) + " |", "|---" * (len(_METRIC_COLUMNS) + 1) + "|"]
    for name, m in rows.items():
        lines.append(f"| {name} | " + " | ".join(_fmt(m.get(c, "")) for c in _METRIC_COLUMNS) + " |")
    return "\n".join(lines)


def _archetype_table(distributions: dict[str, Any]) -> str:
    archetypes = distributions["archetypes"]
    fields = [k for k in archetypes[0] if k not in ("name", "label")]
    lines = [
        "| parameter | " + " | ".join(f"{a['name']} ({'spam' if a['label'] else 'ham'})" for a in archetypes) + " |"
    ]
    lines.append("|---" * (len(archetypes) + 1) + "|")
    for field in fields:
        lines.append(f"| {field} | " + " | ".join(_param(a[field]) for a in archetypes) + " |")
    return "\n".join(lines)


def _link_table(distributions: dict[str, Any]) -> str:
    kinds = distributions["link_kinds"]
    fields = list(kinds[0])
    lines = ["| " + " | ".join(fields) + " |", "|---" * len(fields) + "|"]
    for kind in kinds:
        lines.append("| " + " | ".join(_param(kind[f]) for f in fields) + " |")
    return "\n".join(lines)


def render_card(metrics: dict[str, Any], distributions: dict[str, Any]) -> str:
    test = metrics["test"]
    text = metrics["text_probabilities"]
    data = metrics["data"]
    sms = data.get("sms", {})
    fallback = text.get("kind") != "onnx"
    models = metrics["models"]
    importance = metrics["importance_test"]
    parts: list[str] = []
    parts.append(f"# Feature models {metrics['version']}: link, behaviour, fusion (XGBoost)\n")
    parts.append(
        "> **Synthetic data.** The social context (profiles, journeys, links and their history, reports, IP "
        "history) of every row below is *synthetic*, drawn by `modelops/tabular/synthetic.py` from the "
        "distributions listed in this card; only the texts and labels are real (UCI SMS Spam Collection). "
        "The link, behaviour and fusion numbers therefore measure how well the models recover the generator's "
        "assumptions, not how they will do on a real platform. The `text_only` rows are the one real measurement "
        "(the text model on real held-out SMS). Retrain from reviewer-labelled posts (feedback app) before "
        "trusting these models.\n"
    )
    if fallback:
        parts.append(
            "> **Fallback text probabilities.** No DistilBERT text model was available when this version was "
            "trained; `text_prob`/`preview_prob` came from a TF-IDF + logistic-regression stand-in. Rebuild once "
            "the text model exists: the fusion tree calibrates itself to the text model it was trained with.\n"
        )
    parts.append("## Models\n")
    parts.append("| model | features | trees | stopping | max_depth | eta |\n|---|---|---|---|---|---|")
    for kind in ("link", "behaviour", "fusion"):
        m = models[kind]
        parts.append(
            f"| {kind} | {m['num_features']} | {m['num_trees']} | {m['stopping']} | "
            f"{m['params'].get('max_depth')} | {m['params'].get('eta')} |"
        )
    parts.append(
        "\nAll: XGBoost `binary:logistic`, `hist`, subsample/colsample 0.9, early stopping on validation "
        "aucpr (link, behaviour) or 5-fold CV on the fusion training rows. The fusion tree is monotone "
        "increasing in text_prob, link_prob, behaviour_prob, report_count, domain_report_count, "
        "campaign_size and campaign_authors, and decreasing in user_age_days. Feature lists: "
        "`contracts/feature_schema.py`; per-file names in `feature_names.json`.\n"
    )
    parts.append("## Evaluation on the SMS test split (threshold 0.5, spam = positive class)\n")
    parts.append(
        _table(
            {
                "fusion (final score)": test["fusion"],
                f"text_only ({text.get('kind')}, real texts)": test["text_only"],
                "behaviour": test["behaviour"],
                "link": test["link"],
                "link, rows with a URL": test["link_rows_with_url"],
                "fusion, rows with a URL": test["fusion_rows_with_url"],
            }
        )
    )
    parts.append(
        "\nEach test text appears with "
        f"{data['contexts_per_text']} synthetic contexts, so n counts (text, context) rows. "
        "Validation-split numbers (including the cross-fitted link/behaviour probabilities the fusion tree "
        "trained on) are in `metrics.json`.\n"
    )
    response = metrics.get("neutral_response")
    if response:
        parts.append("## Final score against the text score in a neutral context\n")
        parts.append(
            "An unknown author's first post, no link, no preview, no reports (`modelops/tabular/response.py`). "
            "The fusion tree is monotone in its sub-scores and reports, and decreasing in account age "
            "(`MONOTONE` in `modelops/tabular/train.py`); it trained beside "
            f"{data.get('uncertain_text_rows', 0)} uncertain-text rows (`modelops/tabular/uncertain_text.py`).\n"
        )
        parts.append("| text score | " + " | ".join(f"{t:.1f}" for t in response["text"]) + " |")
        parts.append("|---" * (len(response["text"]) + 1) + "|")
        parts.append("| final score | " + " | ".join(f"{f:.3f}" for f in response["final"]) + " |\n")
    parts.append("## What drives each model (mean |contribution| on the test split, log-odds)\n")
    for kind in ("link", "behaviour", "fusion"):
        top = ", ".join(f"{i['feature']} {i['mean_abs_contribution']}" for i in importance[kind])
        parts.append(f"- **{kind}**: {top}")
    parts.append("")
    parts.append("## Text probabilities used by the fusion tree\n")
    parts.append(f"- source: **{text.get('kind')}** - {text.get('description')}")
    if text.get("model_dir"):
        parts.append(f"- model directory: `{text['model_dir']}`")
    parts.append(
        "- computed only on validation and test texts, which the text model never trained on (the text model "
        "picks its best epoch on validation F1, so validation probabilities are very slightly optimistic).\n"
    )
    parts.append("## Data and leakage control\n")
    parts.append(
        f"- texts: {sms.get('source', 'SMS splits')}; split seed {sms.get('seed', '?')}, fingerprint "
        f"`{sms.get('fingerprint', '?')}` (the same split as the text model)."
    )
    for name, summary in data["splits"].items():
        parts.append(
            f"- {name}: {summary['texts']} texts x {data['contexts_per_text']} contexts = {summary['rows']} rows, "
            f"{summary['spam_rows']} spam rows, {summary['rows_with_url']} with a URL, "
            f"{summary['rows_with_preview']} with a preview; archetypes {summary['archetypes']}"
        )
    parts.append(
        "- link and behaviour: trained on train rows, early-stopped on validation rows.\n"
        f"- fusion: trained on validation rows only; link_prob/behaviour_prob there are {data['cross_fit_folds']}-fold "
        "cross-fitted (each fold scored by models that never saw it; folds grouped by text), text_prob/preview_prob "
        "from the held-out text model.\n"
        "- test: final models end to end, as served.\n"
    )
    for kind in ("fusion", "link", "behaviour"):
        parts.append("\n".join(calibration_markdown((metrics.get("calibration") or {}).get(kind), model=kind)))
    parts.append("## Synthetic generator (`modelops/tabular/synthetic.py`)\n")
    parts.append(
        "Each SMS gets an author archetype from its label's mixture; with probability "
        f"{distributions['crossover_p']} the archetype comes from the other label's mixture (spam from normal-looking "
        "accounts, bot-looking real users). Log-normal parameters are (median, sigma); beta parameters (a, b); "
        f"counts are Poisson means. {distributions['no_journey_p']:.0%} of rows carry no journey. A link found in "
        "the SMS text is used as the post's link (spam: campaign_domain history, ham: small_site); otherwise a link "
        f"is attached with the archetype's url_p. {distributions['preview_p']:.0%} of links carry a preview: another "
        "text of the same split, of the post's label with probability "
        f"{distributions['preview_same_label_p']}.\n"
    )
    parts.append("### Author archetypes\n")
    parts.append(_archetype_table(distributions))
    parts.append("\n### Link kinds (weights within spam / ham links)\n")
    parts.append(_link_table(distributions))
    parts.append(
        "\n## Limitations\n\n"
        "- The synthetic distributions are assumptions written by an engineer, informed by docs/design.md (bots are "
        "new, efficient, reuse links and texts; spam links are fresh, short-lived, on risky TLDs, shorteners or "
        "abused trusted hosts), not measured on a real platform.\n"
        "- SMS texts are short and old (2000s UK SMS); posts on a social platform differ.\n"
        "- The link model also sees post-level signals (shares, comments, IP history), so it scores posts without a "
        "link too; its quality on link-less posts is mostly those signals.\n"
        "- Thresholds and the review queue's cut-offs belong to the decision policy, not to this card.\n"
    )
    parts.append(
        f"\nTraining time: {metrics['timing_s']['total']} s "
        f"(text probabilities {metrics['timing_s']['text_probabilities']} s).\n"
    )
    return "\n".join(parts)
