"""The text cascade's rule (modelops/text/cascade.py): which bounds the validation sample allows,
which texts skip the transformer and what they score, and spam_pipeline's copy of the rule
(TextCascade) held to it."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from modelops import model_repository
from modelops.text.cascade import (
    CascadeBounds,
    cascade_text_probs,
    decision_bucket,
    fit_bounds,
    read_bounds,
    skipped_texts,
    write_bounds,
)

BOUNDS = CascadeBounds(low=0.1, high=0.95, approve_threshold=0.2, remove_threshold=0.9)


def test_fitted_bounds_keep_every_sample_decision_and_are_the_widest_that_do():
    rng = np.random.default_rng(3)
    lexical = rng.random(2000)
    transformer = np.clip(lexical + rng.normal(0, 0.25, 2000), 0, 1)
    blended = 0.5 * transformer + 0.5 * lexical
    bounds = fit_bounds(lexical, blended)
    low, high = lexical < bounds.low, lexical > bounds.high
    assert low.any() and high.any()
    assert (decision_bucket(blended[low], approve=0.2, remove=0.9) == -1).all()
    assert (decision_bucket(blended[high], approve=0.2, remove=0.9) == 1).all()
    # Widest: the sample that sets each bound is one whose decision would have changed.
    at_low = np.flatnonzero(lexical == bounds.low)
    assert at_low.size and (decision_bucket(blended[at_low], approve=0.2, remove=0.9) != -1).all()
    at_high = np.flatnonzero(lexical == bounds.high)
    assert at_high.size and (decision_bucket(blended[at_high], approve=0.2, remove=0.9) != 1).all()


def test_bounds_never_pass_the_policy_thresholds():
    # The blend agrees everywhere: the lexical probability alone must still decide as the policy.
    lexical = np.array([0.01, 0.3, 0.5, 0.99])
    bounds = fit_bounds(lexical, lexical, np.full(4, 0.5))
    assert bounds.low == 0.2
    assert 0.5 <= bounds.high < 0.9
    assert (decision_bucket(np.array([np.nextafter(bounds.high, 1)]), approve=0.2, remove=0.9) == 1).all()
    assert bounds.max_unfamiliarity == 1.0  # nothing disagreed: only unfamiliar texts run it


def test_the_familiarity_limit_is_the_most_familiar_text_where_the_halves_disagree():
    lexical = np.array([0.01, 0.02, 0.95, 0.5])
    blended = np.array([0.05, 0.45, 0.96, 0.5])  # the second would change decision if skipped
    bounds = fit_bounds(lexical, blended, np.array([0.2, 0.7, 0.9, 0.1]))
    assert bounds.max_unfamiliarity == 0.7
    assert bounds.low == 0.02  # below the disagreeing window's lexical probability


BOUNDS_U = CascadeBounds(low=0.1, high=0.95, approve_threshold=0.2, remove_threshold=0.9, max_unfamiliarity=0.8)


@pytest.mark.parametrize(
    ("windows", "unfamiliarity", "skips"),
    [
        ([0.02], 0.5, True),  # confidently ham
        ([0.99], 0.5, True),  # confidently spam
        ([0.5], 0.5, False),  # undecided
        ([0.02], 0.8, False),  # at the familiarity limit: never skips
        ([0.99], 1.2, False),  # unfamiliar
        ([0.02], -1.0, False),  # not measured
        ([0.3, 0.99, 0.02], 0.5, True),  # one spam window decides the maximum of a long text
        ([0.02, 0.03], 0.5, False),  # a long text is not decided by ham windows
        ([0.02, 0.5, 0.03], 0.5, False),
    ],
)
def test_which_texts_skip(windows, unfamiliarity, skips):
    owners = np.zeros(len(windows), dtype=np.int64)
    assert skipped_texts(owners, np.array(windows), np.array([unfamiliarity]), BOUNDS_U).tolist() == [skips]


def test_a_skipped_text_scores_its_lexical_maximum_and_the_cascade_off_is_the_blend():
    owners = np.array([0, 1, 1, 2])
    transformer = np.array([0.9, 0.1, 0.8, 0.4])
    lexical = np.array([0.05, 0.97, 0.4, 0.5])
    unfamiliarity = np.array([0.5, 0.5, 0.5])
    probs, skip = cascade_text_probs(owners, transformer, lexical, unfamiliarity, BOUNDS, weight=0.5)
    assert skip.tolist() == [True, True, False]
    assert probs[0] == 0.05 and probs[1] == 0.97
    assert probs[2] == pytest.approx(0.45)  # classified: the blend
    off, none = cascade_text_probs(owners, transformer, lexical, unfamiliarity, None, weight=0.5)
    assert not none.any()
    assert off.tolist() == pytest.approx([0.475, 0.6, 0.45])


def test_bounds_round_trip_through_serving_json(tmp_path: Path):
    (tmp_path / "serving.json").write_text(json.dumps({"model_file": "model.onnx"}))
    assert read_bounds(tmp_path) is None
    write_bounds(tmp_path, BOUNDS)
    assert read_bounds(tmp_path) == BOUNDS
    assert json.loads((tmp_path / "serving.json").read_text())["model_file"] == "model.onnx"


def _served_cascade() -> type:
    """spam_pipeline's TextCascade, compiled from its source (the module needs Triton's stub)."""
    source = (model_repository.SOURCE_REPOSITORY / "spam_pipeline" / "model.py").read_text()
    nodes = [n for n in ast.parse(source).body if getattr(n, "name", None) == "TextCascade"]
    namespace: dict[str, Any] = {"json": json, "np": np}
    exec(compile(ast.Module(body=nodes, type_ignores=[]), "spam_pipeline/model.py", "exec"), namespace)  # noqa: S102
    return namespace["TextCascade"]


def test_the_served_rule_is_this_rule(tmp_path: Path):
    (tmp_path / "serving.json").write_text(json.dumps({"cascade": BOUNDS_U.as_json()}))
    served = _served_cascade()(tmp_path, enabled=True, usable=True)
    rng = np.random.default_rng(0)
    owners = np.sort(rng.integers(0, 300, 1000))
    owners = np.unique(owners, return_inverse=True)[1]  # every text has a window
    texts = int(owners.max()) + 1
    lexical = rng.choice([0.01, 0.05, 0.2, 0.5, 0.93, 0.97, 0.999], size=1000)
    unfamiliarity = rng.choice([-1.0, 0.3, 0.79, 0.8, 1.5], size=texts)
    got = served.decide(owners, lexical, unfamiliarity)
    assert got.tolist() == skipped_texts(owners, lexical, unfamiliarity, BOUNDS_U).tolist()
    assert got.any() and not got.all()


@pytest.mark.parametrize(("enabled", "usable"), [(False, True), (True, False)])
def test_the_served_cascade_is_off_when_turned_off_or_unusable(tmp_path: Path, enabled: bool, usable: bool):
    (tmp_path / "serving.json").write_text(json.dumps({"cascade": BOUNDS.as_json()}))
    served = _served_cascade()(tmp_path, enabled=enabled, usable=usable)
    assert not served.active
    assert served.decide(np.array([0]), np.array([0.001]), np.array([0.1])).tolist() == [False]


@pytest.mark.parametrize("enabled", [True, False])
def test_publish_bundles_the_bounds_unless_the_deployment_turned_the_cascade_off(tmp_path: Path, settings, enabled):
    import shutil

    from modelops.model_repository import Artifacts, publish
    from modelops.text.baseline import save_lexical, train_baseline
    from modelops.text.data import load_sms_splits
    from modelops.tiny import cached_tiny_artifacts

    tiny = cached_tiny_artifacts().text
    assert tiny is not None
    text_dir = tmp_path / "text"
    shutil.copytree(tiny, text_dir)
    splits = load_sms_splits()
    save_lexical(
        train_baseline(
            splits.train.texts[:300],
            splits.train.labels[:300],
            splits.validation.texts[:100],
            splits.validation.labels[:100],
        ),
        text_dir,
    )
    write_bounds(text_dir, BOUNDS)
    settings.TEXT_CASCADE = enabled
    publish(Artifacts(text=text_dir), repository=tmp_path / "repo")
    bundled = json.loads((tmp_path / "repo" / "tokenizer" / "1" / "serving.json").read_text())
    assert bundled.get("cascade") == (BOUNDS.as_json() if enabled else None)
