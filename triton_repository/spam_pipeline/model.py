"""Triton python backend (BLS): the one entry point the application calls.

One request row = TEXT, PREVIEW_TEXT (empty = the platform sent no link preview),
LINK_FEATURES and BEHAVIOUR_FEATURES (vectors in scoring/feature_schema.py order). It fans
out to the sub-models and returns every sub-score, the fused score, the per-feature
contributions of the three tree models (feature order of the schema, then the bias) and the
version of every model that produced them (MODEL_VERSIONS, a JSON object per row).

Why BLS and not an ensemble: the preview is optional (an ensemble would classify an empty
string for every post without one), the fusion vector is assembled by feature *name* from the
sub-scores and the raw vectors, and the versions of the models that actually answered are
collected per request.

Batching: execute is a coroutine; all rows of all requests handed to it go to the sub-models
concurrently: texts (and non-empty previews) in chunks of TEXT_CHUNK per tokenizer ->
text_classifier request (the classifier trims the padding and groups rows by
length), the whole [rows, n] matrix in one request per tree model. The sub-models' own dynamic
batchers merge the requests of concurrent executions.

Text-score cache (spam campaigns repeat themselves): a bounded LRU per instance of spam
probabilities keyed by (text_classifier version, the token ids the tokenizer produced). The
ids are exactly what the classifier sees, so the key is the most that can be normalised
without changing a score: case, whitespace and anything else the uncased tokenizer folds, and
text past max_length, map to one entry; nothing that changes the ids does. A hit therefore
returns the bit-identical probability (the served int8 model is batch-invariant; an fp32
model's scores may already differ by ~1e-6 with batch composition). Tokenizing still runs
(~0.1 ms); a hit skips the classifier. The classifier is asked for the very version the
tokenizer reported, so an entry can only hold that version's score; while a publish has
loaded the new tokenizer but not yet the classifier, that request fails and the chunk falls
back to the unpinned classifier without caching. TEXT_CACHE_SIZE (config parameter, entries
per instance; 0 = off).

The version folder carries schema.json, a copy of the feature lists written by publish (no
import of the Django project here).
"""

import asyncio
import json
from collections import OrderedDict
from pathlib import Path

import numpy as np
import triton_python_backend_utils as pb_utils

SUB_MODEL_VERSION_KEYS = ("tokenizer", "text_classifier", "link_model", "behaviour_model", "fusion_model")


class SubModelError(Exception):
    pass


def _bytes_column(request, name, rows):
    tensor = pb_utils.get_input_tensor_by_name(request, name)
    if tensor is None:
        return [b""] * rows
    values = tensor.as_numpy().reshape(-1)
    if values.shape[0] != rows:
        raise ValueError(f"{name} has {values.shape[0]} rows, expected {rows}")
    return [v if isinstance(v, bytes) else str(v).encode() for v in values]


class ScoreCache:
    """Bounded LRU: key -> spam probability (a Python float, i.e. the float64 computed)."""

    def __init__(self, size):
        self.size = size
        self.entries = OrderedDict()
        self.hits = 0
        self.misses = 0

    def get(self, key):
        value = self.entries.get(key)
        if value is None:
            self.misses += 1
            return None
        self.entries.move_to_end(key)
        self.hits += 1
        return value

    def put(self, key, value):
        self.entries[key] = value
        self.entries.move_to_end(key)
        while len(self.entries) > self.size:
            self.entries.popitem(last=False)


def _param(config, name, default):
    value = config.get("parameters", {}).get(name, {}).get("string_value")
    return default if value in (None, "") else value


class TritonPythonModel:
    def initialize(self, args):
        version_dir = Path(args["model_repository"]) / args["model_version"]
        schema = json.loads((version_dir / "schema.json").read_text())
        self.link_names = list(schema["LINK_FEATURES"])
        self.behaviour_names = list(schema["BEHAVIOUR_FEATURES"])
        self.fusion_names = list(schema["FUSION_FEATURES"])
        self.version = str(args["model_version"])
        self._versions_cache = {}
        self.spam_index = int(schema.get("TEXT_SPAM_INDEX", 1))
        # Texts per tokenizer/text_classifier request (<= their max_batch_size).
        self.text_chunk = int(schema.get("TEXT_CHUNK", 8))
        config = json.loads(args["model_config"])
        cache_size = int(_param(config, "TEXT_CACHE_SIZE", "0"))
        self.cache = ScoreCache(cache_size) if cache_size > 0 else None
        # Where each fusion input comes from: a computed sub-score or a raw feature by name.
        self.fusion_sources = []
        computed = {"text_prob", "preview_prob", "link_prob", "behaviour_prob"}
        for name in self.fusion_names:
            if name in computed:
                self.fusion_sources.append(("computed", name))
            elif name in self.link_names:
                self.fusion_sources.append(("link", self.link_names.index(name)))
            elif name in self.behaviour_names:
                self.fusion_sources.append(("behaviour", self.behaviour_names.index(name)))
            else:
                raise pb_utils.TritonModelException(
                    f"fusion feature {name!r} is neither computed nor in an input vector"
                )

    async def _infer(self, model, inputs, outputs, version=-1):
        request = pb_utils.InferenceRequest(
            model_name=model, requested_output_names=outputs, inputs=inputs, model_version=version
        )
        response = await request.async_exec()
        if response.has_error():
            raise SubModelError(f"{model}: {response.error().message()}")
        return {name: pb_utils.get_output_tensor_by_name(response, name) for name in outputs}

    def _probs(self, logits, rows):
        logits = logits.astype(np.float64).reshape(rows, -1)
        exp = np.exp(logits - logits.max(axis=1, keepdims=True))
        return exp[:, self.spam_index] / exp.sum(axis=1)

    async def _text_chunk(self, texts):
        """One tokenizer request and (unless every text is cached) one text_classifier request
        for up to text_chunk texts."""
        tok = await self._infer(
            "tokenizer",
            [pb_utils.Tensor("TEXT", np.array([[t] for t in texts], dtype=np.object_))],
            ["input_ids", "attention_mask", "VERSION"],
        )
        raw_version = tok["VERSION"].as_numpy().reshape(-1)[0]
        version = raw_version.decode() if isinstance(raw_version, bytes) else str(raw_version)
        if self.cache is None:
            out = await self._infer("text_classifier", [tok["input_ids"], tok["attention_mask"]], ["logits"])
            return self._probs(out["logits"].as_numpy(), len(texts)), version
        ids = tok["input_ids"].as_numpy()
        mask = tok["attention_mask"].as_numpy()
        lengths = [max(int(m.sum()), 1) for m in mask]
        keys = [(version, ids[i, : lengths[i]].tobytes()) for i in range(len(texts))]
        probs = np.zeros(len(texts), dtype=np.float64)
        missing = {}  # key -> rows of this chunk (repeats within a chunk are classified once)
        for i, key in enumerate(keys):
            cached = self.cache.get(key)
            if cached is None:
                missing.setdefault(key, []).append(i)
            else:
                probs[i] = cached
        if not missing:
            return probs, version
        first = [rows[0] for rows in missing.values()]
        # The tokenizer's padded width is kept: the GPU profile pads to length buckets so the
        # TensorRT batcher sees few shapes (the CPU classifier trims each row to its mask).
        feeds = [
            pb_utils.Tensor("input_ids", np.ascontiguousarray(ids[first])),
            pb_utils.Tensor("attention_mask", np.ascontiguousarray(mask[first])),
        ]
        pinned = version.isdigit()
        try:
            out = await self._infer("text_classifier", feeds, ["logits"], int(version) if pinned else -1)
        except SubModelError:
            if not pinned:
                raise
            # A publish is between loading the new tokenizer and the new classifier: answer
            # from whatever classifier is loaded, but do not file that under `version`.
            out = await self._infer("text_classifier", feeds, ["logits"])
            pinned = False
        fresh = self._probs(out["logits"].as_numpy(), len(first))
        for (key, rows), prob in zip(missing.items(), fresh, strict=True):
            probs[rows] = prob
            if pinned:
                self.cache.put(key, float(prob))
        return probs, version

    async def _text_probs(self, *groups):
        """Spam probability of every text of every group, in order, in chunks sent
        concurrently (the classifier's ragged dynamic batcher merges chunks of concurrent
        executions); each group is chunked on its own. A text repeated anywhere in the
        execution is sent once (chunks are classified concurrently, so the cache could not
        catch a repeat in another chunk). execute passes posts and previews as ONE group:
        chunking previews apart (a post and its preview on the two classifier instances at
        once) cut p90 at concurrency 1 by ~0.8 ms but cost ~0.1-0.25 ms CPU per request and
        up to 5% throughput at concurrency 4 (benchmarks/pipeline_stages.py, issue 7)."""
        first, where, unique = {}, [], [[] for _ in groups]
        for g, texts in enumerate(groups):
            for text in texts:
                if text not in first:
                    first[text] = (g, len(unique[g]))
                    unique[g].append(text)
                where.append(first[text])
        if not where:
            return np.zeros(0, dtype=np.float32), ""
        size = self.text_chunk
        chunks = [(g, texts[i : i + size]) for g, texts in enumerate(unique) for i in range(0, len(texts), size)]
        results = await asyncio.gather(*[self._text_chunk(chunk) for _, chunk in chunks])
        per_group = [[] for _ in groups]
        for (g, _), (probs, _version) in zip(chunks, results, strict=True):
            per_group[g].append(probs)
        flat = [np.concatenate(p) if p else np.zeros(0) for p in per_group]
        probs = np.array([flat[g][i] for g, i in where], dtype=np.float64).astype(np.float32)
        return probs, results[0][1]

    async def _trees(self, model, matrix):
        out = await self._infer(
            model,
            [pb_utils.Tensor("FEATURES", matrix.astype(np.float32, copy=False))],
            ["PROB", "CONTRIBUTIONS", "VERSION"],
        )
        version = out["VERSION"].as_numpy().reshape(-1)[0]
        return (
            out["PROB"].as_numpy().reshape(-1).astype(np.float32),
            out["CONTRIBUTIONS"].as_numpy().astype(np.float32),
            version.decode() if isinstance(version, bytes) else str(version),
        )

    def _versions_json(self, text_version, link_version, behaviour_version, fusion_version):
        """MODEL_VERSIONS of one execution (memoised: the versions change only on a publish)."""
        key = (text_version, link_version, behaviour_version, fusion_version)
        cached = self._versions_cache.get(key)
        if cached is None:
            cached = json.dumps(
                {
                    "tokenizer": text_version,
                    # tokenizer and text_classifier are published together under one number.
                    "text_classifier": text_version,
                    "link_model": link_version,
                    "behaviour_model": behaviour_version,
                    "fusion_model": fusion_version,
                    "spam_pipeline": self.version,
                },
                sort_keys=True,
            ).encode()
            if len(self._versions_cache) > 64:
                self._versions_cache.clear()
            self._versions_cache[key] = cached
        return cached

    def _parse(self, request):
        link = pb_utils.get_input_tensor_by_name(request, "LINK_FEATURES").as_numpy().astype(np.float32, copy=False)
        behaviour = (
            pb_utils.get_input_tensor_by_name(request, "BEHAVIOUR_FEATURES").as_numpy().astype(np.float32, copy=False)
        )
        link = link.reshape(-1, len(self.link_names))
        behaviour = behaviour.reshape(-1, len(self.behaviour_names))
        rows = link.shape[0]
        if behaviour.shape[0] != rows:
            raise ValueError("LINK_FEATURES and BEHAVIOUR_FEATURES have different row counts")
        texts = _bytes_column(request, "TEXT", rows)
        previews = _bytes_column(request, "PREVIEW_TEXT", rows)
        return texts, previews, link, behaviour

    async def execute(self, requests):
        parsed, errors = [], {}
        for i, request in enumerate(requests):
            try:
                parsed.append(self._parse(request))
            except (ValueError, AttributeError) as exc:
                errors[i] = str(exc)
                parsed.append(None)
        good = [p for p in parsed if p is not None]
        if not good:
            return [pb_utils.InferenceResponse(error=pb_utils.TritonError(errors[i])) for i in range(len(requests))]
        texts = [t for p in good for t in p[0]]
        previews = [t for p in good for t in p[1]]
        link = np.concatenate([p[2] for p in good], axis=0)
        behaviour = np.concatenate([p[3] for p in good], axis=0)
        preview_rows = [i for i, t in enumerate(previews) if t.strip()]
        try:
            # The text chain (tokenizer -> classifier) is the critical path: send it first.
            results = await asyncio.gather(
                self._text_probs(texts + [previews[i] for i in preview_rows]),
                self._trees("link_model", link),
                self._trees("behaviour_model", behaviour),
            )
            all_text_probs, text_version = results[0]
            link_prob, link_contrib, link_version = results[1]
            behaviour_prob, behaviour_contrib, behaviour_version = results[2]
            text_prob = all_text_probs[: len(texts)]
            preview_prob = np.full(len(texts), -1.0, dtype=np.float32)
            preview_prob[preview_rows] = all_text_probs[len(texts) :]
            computed = {
                "text_prob": text_prob,
                "preview_prob": preview_prob,
                "link_prob": link_prob,
                "behaviour_prob": behaviour_prob,
            }
            columns = []
            for kind, key in self.fusion_sources:
                if kind == "computed":
                    columns.append(computed[key])
                elif kind == "link":
                    columns.append(link[:, key])
                else:
                    columns.append(behaviour[:, key])
            fusion = np.stack(columns, axis=1).astype(np.float32)
            final_prob, fusion_contrib, fusion_version = await self._trees("fusion_model", fusion)
        except SubModelError as exc:
            return [pb_utils.InferenceResponse(error=pb_utils.TritonError(str(exc))) for _ in requests]
        versions = self._versions_json(text_version, link_version, behaviour_version, fusion_version)
        responses, row = [], 0
        for i, p in enumerate(parsed):
            if p is None:
                responses.append(pb_utils.InferenceResponse(error=pb_utils.TritonError(errors[i])))
                continue
            n = p[2].shape[0]
            sl = slice(row, row + n)
            row += n

            def col(a, sl=sl):
                return a[sl].reshape(-1, 1).astype(np.float32)

            responses.append(
                pb_utils.InferenceResponse(
                    output_tensors=[
                        pb_utils.Tensor("TEXT_PROB", col(text_prob)),
                        pb_utils.Tensor("PREVIEW_PROB", col(preview_prob)),
                        pb_utils.Tensor("LINK_PROB", col(link_prob)),
                        pb_utils.Tensor("BEHAVIOUR_PROB", col(behaviour_prob)),
                        pb_utils.Tensor("FINAL_PROB", col(final_prob)),
                        pb_utils.Tensor("LINK_CONTRIBUTIONS", link_contrib[sl]),
                        pb_utils.Tensor("BEHAVIOUR_CONTRIBUTIONS", behaviour_contrib[sl]),
                        pb_utils.Tensor("FUSION_CONTRIBUTIONS", fusion_contrib[sl]),
                        pb_utils.Tensor("MODEL_VERSIONS", np.full((n, 1), versions, dtype=np.object_)),
                    ]
                )
            )
        return responses
