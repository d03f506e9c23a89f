"""The SMS splits are deduplicated, disjoint, stratified and reproducible."""

from __future__ import annotations

from modelops.text.data import deduplicate, load_sms_splits, normalize_text


def test_splits_are_disjoint_stratified_and_reproducible() -> None:
    splits = load_sms_splits()
    parts = [splits.train, splits.validation, splits.test]
    keys = [{normalize_text(t) for t in part.texts} for part in parts]
    assert all(len(k) == len(p) for k, p in zip(keys, parts, strict=True)), "duplicates inside a split"
    assert not (keys[0] & keys[1]) and not (keys[0] & keys[2]) and not (keys[1] & keys[2])
    total = sum(len(p) for p in parts)
    assert total == splits.raw_rows - splits.duplicates_removed
    assert abs(len(splits.train) / total - 0.70) < 0.01
    rates = [p.spam_count / len(p) for p in parts]
    assert max(rates) - min(rates) < 0.01
    assert set(splits.train.labels) == {0, 1}
    again = load_sms_splits()
    assert again.test.texts == splits.test.texts and again.fingerprint() == splits.fingerprint()


def test_deduplicate_normalises_and_drops_conflicts() -> None:
    rows = [("Hello  there", 0), ("hello there", 0), ("WIN now", 1), ("win now", 0), ("other", 1)]
    kept, removed, conflicting = deduplicate(rows)
    assert kept == [("Hello  there", 0), ("other", 1)]
    assert (removed, conflicting) == (3, 1)


def test_splits_from_lists_wraps_labelled_data() -> None:
    from modelops.text.data import splits_from_lists

    splits = splits_from_lists(
        train=(["a", "b"], [0, 1]), validation=(["c"], [1]), test=(["d"], [0]), source="reviewer labels v1"
    )
    assert splits.train.labels == [0, 1] and splits.summary()["source"] == "reviewer labels v1"
    assert splits.summary()["splits"] == {
        "train": {"size": 2, "spam": 1},
        "validation": {"size": 1, "spam": 1},
        "test": {"size": 1, "spam": 0},
    }
