"""What goes into and comes out of a scoring call, whichever client makes it (one server,
scoring.triton_client; several, scoring.triton_pool)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from contracts.feature_schema import BEHAVIOUR_FEATURES, LINK_FEATURES, vector
from scoring.triton_errors import TritonError


@dataclass(frozen=True)
class ScoringInput:
    """One post. link/behaviour: vectors in contracts/feature_schema.py order, or mappings by
    feature name (laid out with feature_schema.vector; a missing name is an error)."""

    text: str
    preview_text: str | None  # None or "" = the platform sent no link preview
    link: Sequence[float] | Mapping[str, float]
    behaviour: Sequence[float] | Mapping[str, float]

    def link_vector(self) -> list[float]:
        return _as_vector(self.link, LINK_FEATURES)

    def behaviour_vector(self) -> list[float]:
        return _as_vector(self.behaviour, BEHAVIOUR_FEATURES)


def _as_vector(values: Sequence[float] | Mapping[str, float], names: tuple[str, ...]) -> list[float]:
    if isinstance(values, Mapping):
        try:
            return vector(values, names)
        except KeyError as exc:
            raise TritonError(str(exc)) from exc
    out = [float(v) for v in values]
    if len(out) != len(names):
        raise TritonError(f"expected {len(names)} feature values, got {len(out)}")
    return out


@dataclass(frozen=True)
class ScoringOutput:
    text_prob: float
    preview_prob: float | None  # None: no preview text was sent
    link_prob: float
    behaviour_prob: float
    final_prob: float
    # model -> feature name -> contribution to that model's margin (log-odds); incl. "bias".
    contributions: dict[str, dict[str, float]] = field(default_factory=dict)
    # model -> version that produced this output (tokenizer, text_classifier, link_model,
    # behaviour_model, fusion_model, spam_pipeline)
    model_versions: dict[str, str] = field(default_factory=dict)
    # How unfamiliar the text is to the text model: >= 1 unfamiliar (scoring.services.policy);
    # None when the published text model has no familiarity reference.
    unfamiliarity: float | None = None
    # The abuse model's calibrated probability; None when the served bundle has no abuse model.
    abuse_prob: float | None = None
    # True where the text cascade decided text_prob without the transformer (the lexical
    # probability; modelops/text/cascade.py).
    text_model_skipped: bool = False

    @property
    def final_margin(self) -> float:
        """The fusion model's log-odds: equals sum(contributions["fusion_model"].values())."""
        p = min(max(self.final_prob, 1e-7), 1 - 1e-7)
        return math.log(p / (1 - p))
