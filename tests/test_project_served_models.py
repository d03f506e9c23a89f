"""Which models Triton loads: by default only spam_pipeline and the text_classifier it calls;
the standalone tokenizer and trees where TRITON_STANDALONE_MODELS asks for them. The server's
start, the readiness check and every load after a publish follow the same list."""

from __future__ import annotations

from pathlib import Path

import pytest

from contracts.triton import ALL_MODELS, served_models
from feedback.services import promotion
from modelops.triton_server import ServerConfig
from scoring.services.inference import expected_versions


def test_default_loads_only_the_pipeline_and_what_it_calls():
    assert served_models(standalone=False) == ("text_classifier", "spam_pipeline")
    assert served_models(standalone=True) == ALL_MODELS


@pytest.mark.parametrize("standalone", [False, True])
def test_server_start_follows_the_setting(settings, standalone):
    settings.TRITON_STANDALONE_MODELS = standalone
    cfg = ServerConfig.from_settings()
    assert cfg.models == served_models(standalone=standalone)


def test_readiness_expects_only_the_loaded_models(settings, tmp_path: Path):
    settings.TRITON_STANDALONE_MODELS = False
    for model in ALL_MODELS:
        (tmp_path / model / "3").mkdir(parents=True)
    (tmp_path / "text_classifier" / "4").mkdir()
    settings.TRITON_MODEL_REPOSITORY = tmp_path
    assert expected_versions() == {"text_classifier": "4", "spam_pipeline": "3"}

    settings.TRITON_MODEL_REPOSITORY = tmp_path / "not-mounted"
    assert expected_versions() == {"text_classifier": None, "spam_pipeline": None}


class RecordingClient:
    """Records model-control calls; load_model returns None, as the real client's does."""

    def __init__(self) -> None:
        self.loaded: list[str] = []

    def load_model(self, name: str) -> None:
        self.loaded.append(name)


@pytest.mark.parametrize("standalone", [False, True])
def test_promotion_loads_only_the_served_models(settings, monkeypatch, standalone):
    settings.TRITON_STANDALONE_MODELS = standalone
    client = RecordingClient()
    monkeypatch.setattr(promotion, "load_everywhere", lambda models, expected=None: client.loaded.extend(models))

    promotion._publish_and_load(
        lambda: dict.fromkeys(
            ["link_model", "behaviour_model", "fusion_model", "tokenizer", "text_classifier", "spam_pipeline"], 1
        )
    )

    expected = ["tokenizer", "text_classifier"] if standalone else ["text_classifier"]
    trees = ["link_model", "behaviour_model", "fusion_model"] if standalone else []
    assert client.loaded == [*trees, *expected, "spam_pipeline"]
