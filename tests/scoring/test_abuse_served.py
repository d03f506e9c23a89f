"""spam_pipeline's hand-written abuse scoring (BundledAbuse in triton_repository/
spam_pipeline/model.py) gives predict_proba's numbers for the same fitted pipeline."""

from __future__ import annotations

import ast
import math
from collections import Counter
from pathlib import Path
from typing import Any

import joblib
import numpy as np

from modelops import model_repository
from modelops.text.abuse import ABUSE_FILE, _pipeline, fold_platt


def _served_class() -> Any:
    """BundledAbuse and the hashing helper it shares with the lexical half, compiled from their
    source (the module itself needs Triton's stub)."""
    source = (model_repository.SOURCE_REPOSITORY / "spam_pipeline" / "model.py").read_text()
    wanted = {"BundledAbuse", "_hashed_columns"}
    nodes: list[ast.stmt] = [
        n for n in ast.parse(source).body if isinstance(n, ast.ClassDef | ast.FunctionDef) and n.name in wanted
    ]
    assert len(nodes) == len(wanted)
    namespace: dict[str, Any] = {"np": np, "math": math, "Counter": Counter}
    exec(compile(ast.Module(body=nodes, type_ignores=[]), "spam_pipeline/model.py", "exec"), namespace)  # noqa: S102
    return namespace["BundledAbuse"]


TRAIN = [
    ("you worthless idiot", 1),
    ("shut up moron, nobody likes you", 1),
    ("you are a pathetic loser", 1),
    ("thanks for the recipe", 0),
    ("the match starts at eight tonight", 0),
    ("I disagree with your point about taxes", 0),
] * 4
TEXTS = [
    "You are a worthless pathetic idiot, everyone here hates you, just disappear already",
    "Thanks, see you at eight",
    "",
    "   ",
    "Ünïcödé — naïve café «idiot» 🙂",
    "word " * 300,
    "idiot",
]


def test_served_abuse_scores_equal_predict_proba(tmp_path: Path):
    pipe = _pipeline(4.0).fit([t for t, _ in TRAIN], [y for _, y in TRAIN])
    fold_platt(pipe, 1.2, -0.4)
    joblib.dump(pipe, tmp_path / ABUSE_FILE)
    served = _served_class()(tmp_path).probs([t.encode() for t in TEXTS])
    expected = pipe.predict_proba(TEXTS)[:, 1]
    np.testing.assert_allclose(served, expected.astype(np.float32), rtol=0, atol=1e-6)
    assert served[0] > 0.5 > served[1]


def test_without_an_abuse_model_every_row_scores_minus_one(tmp_path: Path):
    served = _served_class()(tmp_path).probs([b"a", b"b"])
    assert served.tolist() == [-1.0, -1.0]
