"""Benign writing for the cold-start text data: the package readers, the mix and its report."""

from __future__ import annotations

import json
import random
import re
from collections.abc import Sequence
from io import StringIO
from pathlib import Path

import numpy as np
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from pytest_django import Settings

from modelops.text import benign_corpora
from modelops.text.benign_corpora import BenignSplits, in_context, load_benign_splits, sentences_to_posts
from modelops.text.cold_start import benign_report, mix_benign
from modelops.text.data import SmsSplits, TextSplit
from modelops.text.tiny import build_tiny_checkpoint
from modelops.text.train import current_model_dir


def _splits() -> SmsSplits:
    train = TextSplit(["hi mum", "WIN a prize now call 0800", "see you at 5", "free entry txt WIN"], [0, 1, 0, 1])
    val = TextSplit(["ok lol", "claim your cash prize"], [0, 1])
    test = TextSplit(["on my way", "urgent you have won"], [0, 1])
    return SmsSplits(train, val, test, seed=42, raw_rows=8, duplicates_removed=0, conflicting_dropped=0)


def _benign() -> BenignSplits:
    return BenignSplits(
        train={"headlines": ["The council met on Tuesday to discuss the budget.", "Rain is expected later."]},
        validation={"headlines": ["Shares fell sharply in early trading."]},
        held_out={"headlines": ["The minister resigned after the vote.", "Local team wins the cup final."]},
        missing={},
    )


def test_sentences_become_post_sized_pieces() -> None:
    sentences = [f"Sentence number {i} is here." for i in range(40)] + ["x" * 500]
    pieces = list(sentences_to_posts(sentences, random.Random(1)))
    assert pieces and all(benign_corpora.MIN_CHARS <= len(p) <= benign_corpora.MAX_CHARS for p in pieces)
    assert not any("x" * 500 in p for p in pieces)  # too long for a post: left out


def test_in_context_keeps_the_spam_text_whole_inside_benign_writing() -> None:
    spam = ["WIN a prize now", "free entry txt WIN"]
    placed = in_context(spam, ["It rained all day.", "The bus was late."], seed=3)
    assert len(placed) == 2
    for text, original in zip(placed, spam, strict=True):
        assert original in text and text != original


def test_mix_adds_benign_ham_and_spam_in_context_and_keeps_the_test_split() -> None:
    splits, benign = _splits(), _benign()
    mixed = mix_benign(splits, benign)
    assert mixed.test == splits.test
    pairs = dict(zip(mixed.train.texts, mixed.train.labels, strict=True))
    assert pairs["The council met on Tuesday to discuss the budget."] == 0
    assert pairs["WIN a prize now call 0800"] == 1
    placed = [t for t, y in pairs.items() if y == 1 and t not in splits.train.texts]
    assert len(placed) == 2 and all(any(s in t for s in splits.train.texts) for t in placed)
    assert len(mixed.validation) == len(splits.validation) + 1 + 1
    assert "benign writing (headlines)" in mixed.source


def test_report_counts_false_positives_per_threshold_and_recall_in_context() -> None:
    def scorer(texts: Sequence[str]) -> np.ndarray:  # spam words score 0.95, "minister" 0.6, else 0.1
        return np.array([0.95 if "won" in t else 0.6 if "minister" in t else 0.1 for t in texts])

    report = benign_report({"s": scorer}, _benign(), ["urgent you have won"], remove_threshold=0.9)
    row = report["corpora"]["headlines"]["s"]  # type: ignore[index]
    assert row["false_positive"] == {"at_or_above_0.5": 0.5, "at_or_above_remove": 0.0}
    assert row["spam_in_context_recall_at_0.5"] == 1.0


def test_a_real_package_is_fetched_read_and_split_without_overlap(tmp_path: Path) -> None:
    splits = load_benign_splits(
        tmp_path, ["brown"], train_per_corpus=50, validation_per_corpus=10, held_out_per_corpus=20
    )
    assert not splits.missing
    parts = [splits.train["brown"], splits.validation["brown"], splits.held_out["brown"]]
    assert [len(p) for p in parts] == [50, 10, 20]
    assert len({t for p in parts for t in p}) == 80
    assert not any(re.search(r"\w/(nn|at|in|vbd|np)\b", t) for p in parts for t in p)  # the tags are gone


def test_an_unavailable_corpus_is_reported_not_fatal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(benign_corpora, "FORTUNES_DIR", tmp_path / "absent")
    splits = load_benign_splits(tmp_path, ["fortunes"])
    assert "fortunes" in splits.missing and "fortunes" not in splits.train
    # Without download, an empty cache is a missing corpus, never a fetch.
    offline = load_benign_splits(tmp_path / "empty", ["brown"], download=False)
    assert "not in the cache" in offline.missing["brown"] and not (tmp_path / "empty").exists()


def test_command_trains_on_benign_writing_and_reports_it(
    tmp_path: Path, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = build_tiny_checkpoint(tmp_path / "tiny")
    monkeypatch.setattr("modelops.management.commands.train_text_model.load_sms_splits", lambda seed: _splits())
    monkeypatch.setattr(
        "modelops.management.commands.train_text_model.load_benign_splits", lambda cache, names, seed: _benign()
    )
    settings.TEXT_MODEL_BASE = str(base)
    settings.ARTIFACTS_DIR = tmp_path / "artifacts"
    settings.TEXT_MAX_LENGTH = 32
    args = ["--max-steps", "1", "--epochs", "1", "--threads", "1", "--no-progress", "--benign-corpora", "brown"]
    call_command("train_text_model", *args, stdout=StringIO())
    metrics = json.loads((current_model_dir(tmp_path / "artifacts" / "text") / "metrics.json").read_text())
    assert metrics["data"]["splits"]["train"]["size"] == 4 + 2 + 2
    assert set(metrics["cold_start"]["corpora"]["headlines"]) >= {"transformer", "lexical", "served"}
    with pytest.raises(CommandError, match="unknown benign corpora"):
        call_command("train_text_model", "--benign-corpora", "nope", stdout=StringIO())


def test_retraining_replays_the_bootstrap_mix(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    from feedback.services.replay import bootstrap_replay_rows
    from modelops.text import cold_start

    monkeypatch.setattr(cold_start, "load_sms_splits", lambda seed: _splits())
    monkeypatch.setattr(cold_start, "load_benign_splits", lambda cache, names, seed, download: _benign())
    assert cold_start.bootstrap_text_splits([], Path("unused")) == (_splits(), {})
    settings.TEXT_BENIGN_CORPORA = ["headlines"]
    rows = {row["text"]: row["label"] for row in bootstrap_replay_rows(10_000)}
    assert rows["The council met on Tuesday to discuss the budget."] == "ham"
    assert rows["Shares fell sharply in early trading."] == "ham"  # validation side too
    assert "The minister resigned after the vote." not in rows  # held out: never replayed
    assert any(
        label == "spam" and "WIN a prize now call 0800" in text and text != "WIN a prize now call 0800"
        for text, label in rows.items()
    )
