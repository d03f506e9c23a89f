"""spam_pipeline's cache of text-model scores (triton_repository/spam_pipeline/model.py), on a
real Triton: a hit returns the bit-identical score without reaching text_classifier, the cache
is bounded and can be turned off, and versions never share entries.

Each spam_pipeline instance has its own cache, so a private server runs it with one instance:
which instance answers a request is the scheduler's choice, and the counts asserted here would
depend on it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from contracts.feature_schema import BEHAVIOUR_FEATURES, LINK_FEATURES
from modelops import model_repository
from modelops.tiny import cached_tiny_artifacts
from scoring.serving import ScoringInput
from tests.fixtures.triton import TritonTestServer, start_tiny_triton

pytestmark = pytest.mark.integration


def _row(text: str, preview: str = "") -> ScoringInput:
    return ScoringInput(
        text=text, preview_text=preview, link=[0.1] * len(LINK_FEATURES), behaviour=[0.2] * len(BEHAVIOUR_FEATURES)
    )


def _classified(server: TritonTestServer) -> int:
    """Rows text_classifier has run, over all its versions."""
    return sum(int(s.get("inference_count", 0)) for s in server.client().statistics("text_classifier"))


def _text_prob(server: TritonTestServer, text: str) -> tuple[float, int, str]:
    """(text_prob, rows the classifier ran for it, text_classifier version reported)."""
    before = _classified(server)
    [out] = server.client().score([_row(text)])
    return out.text_prob, _classified(server) - before, out.model_versions["text_classifier"]


def _reload_pipeline(server: TritonTestServer, cache_size: int) -> None:
    """spam_pipeline with one instance and `cache_size` entries (a fresh, empty cache)."""
    import tritonclient.grpc as grpcclient

    client = grpcclient.InferenceServerClient(server.grpc_url)
    config: dict[str, Any] = client.get_model_config("spam_pipeline", as_json=True)["config"]
    config["parameters"]["TEXT_CACHE_SIZE"] = {"string_value": str(cache_size)}
    config["instance_group"] = [{"count": 1, "kind": "KIND_CPU"}]
    client.load_model("spam_pipeline", config=json.dumps(config), client_timeout=120)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TritonTestServer]:
    with start_tiny_triton(tmp_path_factory.mktemp("cache")) as private:
        _reload_pipeline(private, cache_size=64)
        yield private


def test_the_committed_config_turns_the_cache_on():
    text = (model_repository.SOURCE_REPOSITORY / "spam_pipeline" / "config.pbtxt").read_text()
    assert 'key: "TEXT_CACHE_SIZE", value: { string_value: "0" }' not in text
    assert 'key: "TEXT_CACHE_SIZE"' in text


def test_repeated_text_gets_the_identical_score_without_the_classifier(server):
    text = "URGENT cache test: you have won a 2000 prize, call 09061701461 now"
    first, ran_first, version = _text_prob(server, text)
    again, ran_again, version_again = _text_prob(server, text)
    assert ran_first == 1 and ran_again == 0
    assert again == first  # bit-identical, not approximately
    assert version_again == version
    # The uncased tokenizer gives these the same ids, so they are the same entry...
    folded, ran_folded, _ = _text_prob(server, "urgent CACHE test: you have WON a 2000 prize, call 09061701461 now ")
    assert (folded, ran_folded) == (first, 0)
    # ...while anything that changes the ids is a different text.
    _, ran_other, _ = _text_prob(server, text + "!")
    assert ran_other == 1


def test_repeats_within_one_request_are_classified_once(server):
    text = "cache test: free entry into our weekly draw, txt WIN to 80086"
    before = _classified(server)
    outs = server.client().score([_row(text), _row(text.upper()), _row(text, preview=text)])
    assert _classified(server) - before == 1
    assert len({o.text_prob for o in outs} | {outs[2].preview_prob}) == 1


def test_cache_is_bounded_can_be_turned_off_and_is_keyed_by_version(server):
    # Runs last in this module: it publishes a second text model into the private server.
    a, b = "cache test: claim your reward today", "cache test: see you at the station at 5"
    _reload_pipeline(server, cache_size=1)
    a1, ran, version = _text_prob(server, a)
    assert (ran, version) == (1, "1")
    assert _text_prob(server, a)[:2] == (a1, 0)
    assert _text_prob(server, b)[1] == 1  # evicts a: one entry only
    assert _text_prob(server, a)[:2] == (a1, 1)

    _reload_pipeline(server, cache_size=0)
    assert _text_prob(server, a)[:2] == (a1, 1)
    assert _text_prob(server, a)[:2] == (a1, 1)

    # A new text model (other weights, same tokenizer) under version 2: the same text must
    # be classified again by version 2, not answered from version 1's entry.
    _reload_pipeline(server, cache_size=16)
    assert _text_prob(server, a)[:2] == (a1, 1)
    v2 = cached_tiny_artifacts(seed=1)
    assert v2.text is not None
    published = model_repository.publish(
        model_repository.Artifacts(text=v2.text, tabular=None), repository=server.repository
    )
    # The pipeline bundles the tokenizer, so a new text model comes with a new pipeline version.
    assert published == {"tokenizer": 2, "text_classifier": 2, "spam_pipeline": 2}
    client = server.client()
    client.load_model("tokenizer")
    client.load_model("text_classifier")
    # Between the classifier's load and the new bundle's, the old pipeline's pinned request
    # finds version 1 gone: it answers from the loaded classifier and caches nothing.
    assert _text_prob(server, b)[1] == 1
    assert _text_prob(server, b)[1] == 1
    _reload_pipeline(server, cache_size=16)  # the new bundle (one instance, as above)
    a2, ran, version = _text_prob(server, a)
    assert (ran, version) == (1, "2")
    assert a2 != a1
    assert _text_prob(server, a) == (a2, 0, "2")
