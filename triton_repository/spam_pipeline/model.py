"""Triton python backend (BLS): the one entry point the application calls.

One request row = TEXT, PREVIEW_TEXT (empty = the platform sent no link preview),
LINK_FEATURES and BEHAVIOUR_FEATURES (vectors in contracts/feature_schema.py order). It returns
every sub-score, the fused score, the per-feature contributions of the three tree models
(feature order of the schema, then the bias) and the version of every model that produced
them (MODEL_VERSIONS, a JSON object per row).

What runs where: the text model (DistilBERT) is the one sub-model called over BLS
(text_classifier, its own instances and dynamic batcher; a TensorRT plan in the GPU profile).
The tokenizer and the three XGBoost models run inside this process, from copies bundled into
this model's version folder at publish time (modelops/model_repository.py):

    <n>/bundle.json              {"tokenizer": 7, "link_model": 3, ...}: the versions copied
    <n>/tokenizer/               tokenizer.json + serving.json of that tokenizer version
    <n>/<tree model>/model.json  the booster of that tree version (+ features.json)

Why: every BLS hop costs a round trip through the Triton core and a second stub process, about
1 ms of CPU and 0.5-1 ms of latency each, and tokenizing (~0.1 ms) or a tree call (~0.3 ms)
is cheaper than its hop. With five hops a one-post request spent 10.9 ms of Triton CPU at
p50 9.0 ms; with one hop 6.0-7.6 ms at p50 6.4 ms (benchmarks/pipeline_stages.py),
with bit-identical outputs. The tokenizer and tree models stay published and served on their
own (same files, same numbers) for direct callers and for the tests that compare the two.
A publish writes a new bundle whenever one of its parts changes, so loading spam_pipeline
switches tokenizer and trees at once; text_classifier is asked for the very version bundled
with the tokenizer (they share a number).

Why BLS and not an ensemble: the preview is optional (an ensemble would classify an empty
string for every post without one), the fusion vector is assembled by feature *name* from the
sub-scores and the raw vectors, and the versions that answered are reported per request.

Batching: execute is a coroutine; the texts (and non-empty previews) of all rows of all
requests handed to it go to text_classifier in chunks of TEXT_CHUNK, sent concurrently
(unpadded rows; the classifier trims the padding and groups rows by length), while the trees
score the [rows, n] matrices here. The classifier's batcher merges chunks of concurrent
executions.

Text-score cache (spam campaigns repeat themselves): a bounded LRU per instance of spam
probabilities keyed by (text version, the token ids of one model input). The ids are
exactly what the classifier sees, so the key is the most that can be normalised without
changing a score: case, whitespace and anything else the uncased tokenizer folds map to one
entry; nothing that changes the ids does. Each window of a long text is its own entry. A hit therefore returns
the bit-identical probability (the served int8 model is batch-invariant; an fp32 model's
scores may already differ by ~1e-6 with batch composition) and skips the classifier. While a
publish has loaded the new classifier but not yet this bundle, the pinned request fails and
the chunk falls back to the unpinned classifier without caching. TEXT_CACHE_SIZE (config
parameter, entries per instance; 0 = off).

Text score = the transformer blended with the lexical model bundled beside the tokenizer
(BundledLexical; modelops/text/baseline.py says why), when the published text model has one.

Abuse score (ABUSE_PROB): the abuse model bundled beside the tokenizer (BundledAbuse), run
here on the post texts while the classifier works; -1 when the published text model has none.

Long texts: a text longer than max_length tokens (TEXT_MAX_LENGTH, 128) is scored on up to
max_windows inputs spread from its head to its tail, taking the maximum (text_windows; the
text model's card records the measured choice). A text that fits is the one input it always
was, so short texts score exactly as before, and the windows are rows like any other in the
classifier's batches.

Cascade (TextCascade, modelops/text/cascade.py for the rule and how its bounds are fitted): a
familiar text whose lexical probability is already confidently low or high skips the
transformer, and its text score is that lexical probability (the blend tends to it there); of a
long text, one confidently spam window decides and no window is classified.
TEXT_MODEL_SKIPPED says per row whether the post's text skipped. The bounds come with the
bundle; the TEXT_CASCADE config parameter ("on"/"off") turns them off without a publish.

Familiarity: how far each post's text is from what the text model trained on
(BundledFamiliarity, familiarity.joblib beside the tokenizer), returned as UNFAMILIARITY;
computed here while the classifier works, like the trees.

The version folder also carries schema.json, a copy of the feature lists written by publish
(no import of the Django project here).
"""

import asyncio
import gc
import json
import math
from collections import Counter, OrderedDict
from pathlib import Path

import numpy as np
import triton_python_backend_utils as pb_utils
import xgboost as xgb
from tokenizers import Tokenizer

TREE_MODELS = ("link_model", "behaviour_model", "fusion_model")


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


def text_windows(ids, max_length, max_windows):
    """The model inputs of one tokenized text (special tokens included: ids[0] and ids[-1]),
    each at most max_length tokens. A text that fits is one input, as it is. A longer
    one is up to max_windows inputs of max_length tokens, the first at the head, the last at
    the tail and the others evenly between them (overlapping when max_windows exceeds what
    covers the text), each wrapped in the text's own first and last special tokens; the text
    scores the maximum of its windows. max_windows 1: the head only (plain truncation).

    The same function as modelops/text/inference.py's text_windows (this process cannot
    import the project); tests/modelops/test_text_windows.py holds the two to each other."""
    if len(ids) <= max_length:
        return [list(ids)]
    first, content, last = ids[0], ids[1:-1], ids[-1]
    body = max_length - 2
    count = max(1, min(max_windows, -(-len(content) // body)))
    if count == 1:
        return [[first, *content[:body], last]]
    span = len(content) - body
    starts = sorted({i * span // (count - 1) for i in range(count)})
    return [[first, *content[start : start + body], last] for start in starts]


class BundledTokenizer:
    """The tokenizer model's work (triton_repository/tokenizer/model.py), in this process:
    texts -> model inputs (text_windows: one per text that fits in max_length tokens, up to
    max_windows of a longer one), then rows -> right-padded input_ids / attention_mask (pad
    id 0, attention 0); padded to the next of `buckets` when given (GPU profile: TensorRT
    batches one shape at a time). serving.json's max_windows (default 1: the head only, as a
    bundle published before windows existed) comes from settings.TEXT_MAX_WINDOWS."""

    def __init__(self, folder, buckets):
        serving = json.loads((folder / "serving.json").read_text())
        self.max_length = int(serving["max_length"])
        self.max_windows = max(1, int(serving.get("max_windows", 1)))
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.no_truncation()  # text_windows cuts (and knows whether a text was cut)
        self.pad_id = int(serving.get("pad_token_id", 0))
        self.buckets = buckets

    def windows(self, texts):
        """Per text (bytes): (its model inputs as lists of token ids, whether it fits in one)."""
        encodings = self.tokenizer.encode_batch([t.decode("utf-8", errors="replace") for t in texts])
        return [
            (text_windows(e.ids, self.max_length, self.max_windows), len(e.ids) <= self.max_length) for e in encodings
        ]

    def window_texts(self, text, rows, fits):
        """What the lexical model reads for each model input of `text`: the text itself when it
        fits in one input, else each input's tokens decoded (a window's own words: over the
        whole text, one spam message in pages of padding is diluted to nothing)."""
        if fits:
            return [text]
        return [self.tokenizer.decode(row, skip_special_tokens=True).encode("utf-8") for row in rows]

    def pad(self, rows):
        width = max((len(r) for r in rows), default=0)
        if self.buckets:
            width = next((b for b in self.buckets if b >= width), width)
        ids = np.full((len(rows), width), self.pad_id, dtype=np.int64)
        mask = np.zeros((len(rows), width), dtype=np.int64)
        for i, row in enumerate(rows):
            ids[i, : len(row)] = row
            mask[i, : len(row)] = 1
        return ids, mask


class BundledLexical:
    """The text model's lexical half (modelops/text/baseline.py: hashed TF-IDF + logistic
    regression, lexical.joblib beside the tokenizer), blended into the text score:
    (1 - weight) x transformer + weight x lexical spam probability, as
    modelops.text.baseline.blend computes it offline. Absent file or weight 0: no blend.

    Scored here without the pipeline's predict_proba: its per-call overhead (input checks,
    building a sparse matrix) was 0.45 ms of CPU for one text, 30 times the arithmetic. The
    same numbers from the fitted objects: sklearn's own analyzer (so tokens are identical), the
    column HashingVectorizer gives a token (sklearn's murmurhash3_32, as its FeatureHasher
    computes it), sublinear tf x idf, L2 norm, the logistic regression's weights
    (tests/modelops/test_text_lexical_blend.py holds it to predict_proba). A model published
    before the terms were hashed holds a vocabulary instead (a rollback target): its columns are
    looked up there, the arithmetic is the same."""

    def __init__(self, folder):
        serving = json.loads((folder / "serving.json").read_text())
        self.weight = float(serving.get("lexical_weight", 0.0))
        path = folder / "lexical.joblib"
        self.pipeline = None
        if self.weight > 0 and path.is_file():
            import joblib

            self.pipeline = joblib.load(path)
            steps = self.pipeline.named_steps
            tfidf, lr = steps["tfidf"], steps["lr"]
            if "hash" in steps:
                self.analyze = steps["hash"].build_analyzer()
                self.column = _hashed_columns(steps["hash"].n_features)
            else:
                self.analyze = tfidf.build_analyzer()
                self.column = tfidf.vocabulary_.get
            self.idf = np.asarray(tfidf.idf_, dtype=np.float64)
            self.coef = np.asarray(lr.coef_[0], dtype=np.float64)
            self.bias = float(lr.intercept_[0])

    def _prob(self, text):
        counts = Counter(i for i in map(self.column, self.analyze(text)) if i is not None)
        margin = self.bias
        if counts:
            idx = np.fromiter(counts.keys(), dtype=np.intp, count=len(counts))
            tf = 1.0 + np.log(np.fromiter(counts.values(), dtype=np.float64, count=len(counts)))
            weighted = tf * self.idf[idx]
            norm = math.sqrt(float(weighted @ weighted))
            if norm > 0:  # 0: only columns no training text reached (idf 0), as sklearn's normalize
                margin += float(weighted @ self.coef[idx]) / norm
        if margin >= 0:  # the logistic function without overflow either side
            return 1.0 / (1.0 + math.exp(-margin))
        low = math.exp(margin)
        return low / (1.0 + low)

    def probs(self, texts):
        """The lexical spam probability of each text (bytes); None without a lexical model."""
        if self.pipeline is None or not texts:
            return None
        return np.array([self._prob(t.decode("utf-8", errors="replace")) for t in texts], dtype=np.float64)

    def blend(self, transformer_probs, lexical_probs):
        if lexical_probs is None:
            return transformer_probs
        return (1.0 - self.weight) * np.asarray(transformer_probs, dtype=np.float64) + self.weight * lexical_probs


def _hashed_columns(n_features):
    """token -> its HashingVectorizer column: the absolute signed 32-bit murmurhash3 of the
    UTF-8 token (seed 0) modulo n_features, with sklearn's rule for -2^31 (whose absolute value
    does not fit)."""
    from sklearn.utils import murmurhash3_32

    def column(token):
        h = murmurhash3_32(token.encode("utf-8"), seed=0)
        if h == -2147483648:
            return (2147483647 - (n_features - 1)) % n_features
        return abs(h) % n_features

    return column


class TextCascade:
    """Whether a text needs the transformer (modelops/text/cascade.py, whose rule this is;
    tests/modelops/test_text_cascade.py holds the two together): the bounds on the lexical
    probability fitted on the validation split, from the bundle's serving.json ("cascade",
    absent when the model has none or the publish had settings.TEXT_CASCADE off), unless the
    TEXT_CASCADE config parameter is "off". Without a lexical model there is nothing to decide
    from, and without a familiarity reference no text is known to be familiar: every text runs
    the transformer (usable False)."""

    def __init__(self, folder, enabled, usable):
        serving = json.loads((folder / "serving.json").read_text())
        bounds = serving.get("cascade") if enabled and usable else None
        self.low = float(bounds["low"]) if bounds else None
        self.high = float(bounds["high"]) if bounds else None
        self.max_unfamiliarity = float(bounds.get("max_unfamiliarity", 1.0)) if bounds else 1.0

    @property
    def active(self):
        return self.low is not None

    def decide(self, owners, lexical, unfamiliarity):
        """Per text: whether it skips the transformer (every window of one that does not is
        classified). owners: the text of each window; unfamiliarity: per text (< 0: not
        measured, which never skips)."""
        owners = np.asarray(owners, dtype=np.int64)
        u = np.asarray(unfamiliarity, dtype=np.float64)
        if not self.active:
            return np.zeros(len(u), dtype=bool)
        p = np.asarray(lexical, dtype=np.float64)
        confidence = np.where(p > self.high, 1, np.where(p < self.low, -1, 0))
        any_spam = np.zeros(len(u), dtype=bool)
        any_spam[owners[confidence == 1]] = True
        any_open = np.zeros(len(u), dtype=bool)
        any_open[owners[confidence != -1]] = True
        single = np.bincount(owners, minlength=len(u)) == 1
        familiar = (u >= 0) & (u < self.max_unfamiliarity)
        # One confidently spam window decides a text's maximum; confidently ham decides only a
        # text that fits in one window (in a long one a spam message may hide in benign words).
        return familiar & (any_spam | (single & ~any_open))


class BundledFamiliarity:
    """How unfamiliar each text is to the text model (modelops/text/familiarity.py, whose
    numbers these are, from the same fitted objects in familiarity.joblib beside the tokenizer;
    tests/modelops/test_familiarity.py holds the two together): max(mean cosine distance to
    the k nearest reference texts / its threshold, share of unknown words / its threshold).
    >= 1 is unfamiliar. Absent file: -1 for every text (no familiarity reference published).

    Computed here without sklearn's transform and kneighbors: their per-call input checks cost
    2.1 ms of CPU for one text, twenty times the arithmetic (0.1 ms; benchmarks/familiarity.py
    measures the offline path). The same numbers from the fitted objects: the hasher's own
    analyzer (identical tokens), each token's HashingVectorizer column (_hashed_columns, shared
    with the lexical half), sublinear tf x idf, L2 norm, then the cosine similarity to every
    reference text (the rows NearestNeighbors was fitted on) and the k largest; a word is
    unknown when its column is not among the reference words' (seen_words). A reference
    written before the terms were hashed holds a TfidfVectorizer with a vocabulary instead (a
    rollback target): its columns are looked up there, and a word in it is known.

    The similarities are summed from the reference's stored entries of the text's own columns
    (np.bincount over the column-major reference), not by a scipy sparse product: a text has a
    few dozen columns, and scipy's per-product checks and the dense distance row over every
    reference text cost more than the arithmetic (one text: 0.19-0.20 -> 0.085-0.088 ms of CPU;
    in batches of 64 the same 0.08 ms a text; benchmarks/RESULTS.md, Familiarity)."""

    def __init__(self, folder):
        path = folder / "familiarity.joblib"
        self.loaded = path.is_file()
        if self.loaded:
            import joblib
            import scipy.sparse

            data = joblib.load(path)
            if "vectorizer" in data:
                vectorizer = data["vectorizer"]
                self.analyze = vectorizer.build_analyzer()
                self.column = vectorizer.vocabulary_.get
                self.idf = np.asarray(vectorizer.idf_, dtype=np.float64)
                self.seen = np.ones(len(self.idf), dtype=bool)
            else:
                hasher = data["hasher"]
                self.analyze = hasher.build_analyzer()
                self.column = _hashed_columns(hasher.n_features)
                self.idf = np.asarray(data["tfidf"].idf_, dtype=np.float64)
                self.seen = np.zeros(len(self.idf), dtype=bool)
                self.seen[data["seen_words"]] = True
            # Column-major reference: per term column, the reference texts that hold it.
            by_column = scipy.sparse.csc_matrix(data["reference"], dtype=np.float64)
            by_column.sort_indices()
            self.ref_starts = by_column.indptr.astype(np.intp)
            self.ref_texts = by_column.indices.astype(np.intp)
            self.ref_values = by_column.data
            self.k = int(data["k"])
            self.distance_threshold = float(data["distance_threshold"])
            self.unknown_threshold = float(data["unknown_threshold"])

    def _row(self, columns):
        counts = Counter(i for i in columns if i is not None)
        if not counts:
            return np.zeros(0, dtype=np.intp), np.zeros(0)
        idx = np.fromiter(counts.keys(), dtype=np.intp, count=len(counts))
        weights = (1.0 + np.log(np.fromiter(counts.values(), dtype=np.float64, count=len(counts)))) * self.idf[idx]
        norm = math.sqrt(float(weights @ weights))
        if norm == 0:  # only columns no reference text reached (idf 0): a zero row, as sklearn's normalize
            return np.zeros(0, dtype=np.intp), np.zeros(0)
        return idx, weights / norm

    def _nearest_distance(self, idx, weights):
        """Mean cosine distance of one text (its L2-normed columns and weights) to its k most
        similar reference texts; a reference text sharing no column is at distance 1."""
        starts, ends = self.ref_starts[idx], self.ref_starts[idx + 1]
        lengths = ends - starts
        total = int(lengths.sum())
        if total == 0:
            return 1.0
        # The positions of every stored entry of these columns, column after column.
        offsets = np.repeat(starts - (np.cumsum(lengths) - lengths), lengths)
        positions = offsets + np.arange(total)
        similarity = np.bincount(
            self.ref_texts[positions], weights=np.repeat(weights, lengths) * self.ref_values[positions]
        )
        if len(similarity) > self.k:
            similarity = np.partition(similarity, len(similarity) - self.k)[-self.k :]
        return 1.0 - float(similarity.sum()) / self.k  # the texts not in similarity add 0

    def __call__(self, texts):
        if not self.loaded or not texts:
            return np.full(len(texts), -1.0, dtype=np.float32)
        nearest, unknown = np.empty(len(texts)), np.empty(len(texts))
        for t, text in enumerate(texts):
            tokens = self.analyze(text.decode("utf-8", errors="replace"))
            columns = list(map(self.column, tokens))
            words = [c for token, c in zip(tokens, columns, strict=True) if " " not in token]  # a word's column
            unknown[t] = sum(c is None or not self.seen[c] for c in words) / len(words) if words else 1.0
            idx, weights = self._row(columns)
            nearest[t] = self._nearest_distance(idx, weights) if len(idx) else 1.0
        ratio = np.maximum(nearest / self.distance_threshold, unknown / self.unknown_threshold)
        return ratio.astype(np.float32)


class BundledAbuse:
    """The abuse model (modelops/text/abuse.py: hashed word + character n-grams, a Platt-
    calibrated logistic regression), abuse.joblib beside the tokenizer: the calibrated
    probability that a text is abusive. Absent file: no abuse model, every row scores -1.

    Scored here without the pipeline's predict_proba, which cost about 1.1 ms of CPU for one
    text (feature union, sparse matrices, input checks) against about 0.11 ms for the same
    numbers from the fitted objects: each vectorizer's own analyzer, HashingVectorizer's index
    (_hashed_columns, shared with the lexical half), counts, L2 norm per vectorizer, the
    logistic regression's weights
    (tests/scoring/test_abuse_served.py holds it to predict_proba)."""

    def __init__(self, folder):
        path = folder / "abuse.joblib"
        self.pipeline = None
        if path.is_file():
            import joblib

            self.pipeline = joblib.load(path)
            lr = self.pipeline.named_steps["lr"]
            coef = np.asarray(lr.coef_[0], dtype=np.float64)
            self.bias = float(lr.intercept_[0])
            self.parts, offset = [], 0
            for _name, vectorizer in self.pipeline.named_steps["features"].transformer_list:
                n = int(vectorizer.n_features)
                self.parts.append((vectorizer.build_analyzer(), _hashed_columns(n), coef[offset : offset + n]))
                offset += n

    def _prob(self, text):
        margin = self.bias
        for analyze, column, coef in self.parts:
            counts = Counter(column(token) for token in analyze(text))
            if not counts:
                continue
            idx = np.fromiter(counts.keys(), dtype=np.intp, count=len(counts))
            values = np.fromiter(counts.values(), dtype=np.float64, count=len(counts))
            margin += float(values @ coef[idx]) / math.sqrt(float(values @ values))
        if margin >= 0:  # the logistic function without overflow either side
            return 1.0 / (1.0 + math.exp(-margin))
        low = math.exp(margin)
        return low / (1.0 + low)

    def probs(self, texts):
        if self.pipeline is None:
            return np.full(len(texts), -1.0, dtype=np.float32)
        return np.array([self._prob(t.decode("utf-8", errors="replace")) for t in texts], dtype=np.float32)


class BundledTrees:
    """One XGBoost model's work (triton_repository/xgboost_model.py), in this process:
    FEATURES [rows, n] -> (PROB [rows], CONTRIBUTIONS [rows, n + 1])."""

    def __init__(self, folder):
        features = json.loads((folder / "features.json").read_text())
        model_file = folder / "model.json"
        self.booster = xgb.Booster(model_file=str(model_file if model_file.exists() else folder / "model.ubj"))
        # One thread: DMatrix defaults to every core, and its OpenMP start-up cost more than
        # both predictions of a small batch (0.76 -> 0.28 ms CPU per 1-row call).
        self.booster.set_param({"nthread": 1})
        if self.booster.num_features() != len(features):
            raise pb_utils.TritonModelException(
                f"{folder}: booster expects {self.booster.num_features()} features, features.json lists {len(features)}"
            )
        self.width = len(features)

    def __call__(self, matrix):
        x = np.ascontiguousarray(matrix, dtype=np.float32)
        dmatrix = xgb.DMatrix(x, nthread=1)
        contribs = self.booster.predict(dmatrix, pred_contribs=True, validate_features=False)
        contribs = contribs.astype(np.float32, copy=False).reshape(x.shape[0], -1)
        # TreeSHAP's values sum to the margin up to float rounding (the bias column holds the
        # base score), so the second walk of the trees that output_margin would cost is skipped.
        margin = contribs.sum(axis=1, dtype=np.float64)
        prob = (1.0 / (1.0 + np.exp(-margin))).astype(np.float32)
        return prob, contribs


def _unique_texts(groups, unfamiliarity):
    """(per text of the groups: (group, index of its first occurrence there), per group its
    distinct texts, per group the unfamiliarity of each). unfamiliarity: per text of the
    groups, in order (empty: -1, not measured); a repeat has its first occurrence's measure
    (the same text)."""
    flags = iter(unfamiliarity)
    first, where, unique, unique_measure = {}, [], [[] for _ in groups], [[] for _ in groups]
    for g, texts in enumerate(groups):
        for text in texts:
            measure = float(next(flags, -1.0))
            if text not in first:
                first[text] = (g, len(unique[g]))
                unique[g].append(text)
                unique_measure[g].append(measure)
            where.append(first[text])
    return where, unique, unique_measure


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
        config = json.loads(args["model_config"])
        # The tokenizer and trees this version bundles, and their versions (see the docstring).
        bundle = json.loads((version_dir / "bundle.json").read_text())
        buckets = sorted(int(b) for b in _param(config, "PAD_BUCKETS", "").split(",") if b.strip())
        self.tokenize = BundledTokenizer(version_dir / "tokenizer", buckets)
        self.lexical = BundledLexical(version_dir / "tokenizer")
        self.familiarity = BundledFamiliarity(version_dir / "tokenizer")
        self.cascade = TextCascade(
            version_dir / "tokenizer",
            enabled=_param(config, "TEXT_CASCADE", "on") != "off",
            usable=self.lexical.pipeline is not None and self.familiarity.loaded,
        )

        self.abuse = BundledAbuse(version_dir / "tokenizer")
        self.text_version = str(bundle["tokenizer"])
        self.trees = {model: BundledTrees(version_dir / model) for model in TREE_MODELS}
        self.tree_versions = {model: str(bundle[model]) for model in TREE_MODELS}
        widths = {
            "link_model": self.link_names,
            "behaviour_model": self.behaviour_names,
            "fusion_model": self.fusion_names,
        }
        for model, names in widths.items():
            if self.trees[model].width != len(names):
                raise pb_utils.TritonModelException(
                    f"bundled {model} takes {self.trees[model].width} features, schema.json {len(names)}"
                )
        # MODEL_VERSIONS: fixed for the life of this instance (a publish loads a new one).
        self.versions = self._versions_json()
        self.spam_index = int(schema.get("TEXT_SPAM_INDEX", 1))
        # Texts per tokenizer/text_classifier request (<= their max_batch_size).
        self.text_chunk = int(schema.get("TEXT_CHUNK", 8))
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
        # This stub lives as long as the model version: take what initialize built (imports,
        # sessions, tables) out of the garbage collector's full collections, whose walk of
        # those objects otherwise pauses whichever request triggers it (config/warmup.py).
        gc.freeze()

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

    async def _classify(self, ids, mask, pinned):
        """Logits of text_classifier for padded rows; pinned: ask for the bundled version.
        Returns (logits, whether the bundled version answered)."""
        feeds = [
            pb_utils.Tensor("input_ids", np.ascontiguousarray(ids)),
            pb_utils.Tensor("attention_mask", np.ascontiguousarray(mask)),
        ]
        if not pinned:
            return (await self._infer("text_classifier", feeds, ["logits"]))["logits"].as_numpy(), False
        try:
            out = await self._infer("text_classifier", feeds, ["logits"], int(self.text_version))
            return out["logits"].as_numpy(), True
        except SubModelError:
            # A publish has loaded a new classifier but not yet this model's new bundle:
            # answer from whatever classifier is loaded, but do not cache it as this version.
            return (await self._infer("text_classifier", feeds, ["logits"]))["logits"].as_numpy(), False

    async def _text_chunk(self, rows):
        """Classify up to text_chunk model inputs (token-id lists) in one text_classifier
        request, unless every one is cached."""
        ids, mask = self.tokenize.pad(rows)
        pinned = self.text_version.isdigit()
        if self.cache is None:
            logits, _ = await self._classify(ids, mask, pinned)
            return self._probs(logits, len(rows))
        keys = [(self.text_version, ids[i, : len(row)].tobytes()) for i, row in enumerate(rows)]
        probs = np.zeros(len(rows), dtype=np.float64)
        missing = {}  # key -> rows of this chunk (repeats within a chunk are classified once)
        for i, key in enumerate(keys):
            cached = self.cache.get(key)
            if cached is None:
                missing.setdefault(key, []).append(i)
            else:
                probs[i] = cached
        if not missing:
            return probs
        first = [rows_of[0] for rows_of in missing.values()]
        # The padded width is kept: the GPU profile pads to length buckets so the TensorRT
        # batcher sees few shapes (the CPU classifier trims each row to its mask).
        logits, answered = await self._classify(ids[first], mask[first], pinned)
        fresh = self._probs(logits, len(first))
        for (key, rows_of), prob in zip(missing.items(), fresh, strict=True):
            probs[rows_of] = prob
            if answered:
                self.cache.put(key, float(prob))
        return probs

    def _plan(self, texts, unfamiliarity):
        """One group's model inputs and what the cascade makes of them: (rows of token ids,
        the text of each row, what the lexical model reads per row, its probabilities when
        the cascade needs them first (else None), per text whether it skips the transformer,
        per row whether it is classified)."""
        rows, owner, lexical_texts = [], [], []
        for t, (text_rows, fits) in enumerate(self.tokenize.windows(texts) if texts else []):
            rows.extend(text_rows)
            owner.extend([t] * len(text_rows))
            if self.lexical.pipeline is not None:
                lexical_texts.extend(self.tokenize.window_texts(texts[t], text_rows, fits))
        owners = np.asarray(owner, dtype=np.int64)
        lexical = self.lexical.probs(lexical_texts) if self.cascade.active else None
        if lexical is None:
            return rows, owners, lexical_texts, None, np.zeros(len(texts), dtype=bool), np.ones(len(rows), dtype=bool)
        skip = self.cascade.decide(owners, lexical, unfamiliarity)
        return rows, owners, lexical_texts, lexical, skip, ~skip[owners]

    async def _text_probs(self, *groups, unfamiliarity=()):
        """Spam probability of every text of every group, in order, and whether the cascade let
        it skip the transformer: each text is tokenized into its model inputs (one, or up to
        max_windows for a text longer than max_length tokens; its probability is their
        maximum), and the inputs are classified in chunks sent concurrently (the classifier's
        ragged dynamic batcher merges chunks of concurrent executions); each group is chunked
        on its own. A text repeated anywhere in the execution is sent once (chunks are
        classified concurrently, so the cache could not catch a repeat in another chunk).
        execute passes posts and previews as ONE group: chunking previews apart (a post and its
        preview on the two classifier instances at once) cut p90 at concurrency 1 by ~0.8 ms but
        cost ~0.1-0.25 ms CPU per request and up to 5% throughput at concurrency 4
        (benchmarks/pipeline_stages.py).

        unfamiliarity: per text of the groups (empty: none measured). With the cascade active
        the lexical half runs first and only the texts it leaves undecided go to the
        classifier (TextCascade); without, it runs while the classifier works."""
        where, unique, unique_measure = _unique_texts(groups, unfamiliarity)
        if not where:
            return np.zeros(0, dtype=np.float32), np.zeros(0, dtype=bool)
        size = self.text_chunk
        plans = [self._plan(texts, unique_measure[g]) for g, texts in enumerate(unique)]
        chunks = []  # (group, indices of its rows sent in one request)
        for g, plan in enumerate(plans):
            sent = np.flatnonzero(plan[5])
            chunks.extend((g, sent[i : i + size]) for i in range(0, len(sent), size))
        tasks = [asyncio.ensure_future(self._text_chunk([plans[g][0][i] for i in idx])) for g, idx in chunks]
        # Without the cascade the lexical model runs here while the classifier works: two loop
        # turns first let the chunk tasks send their requests (as execute does before the trees).
        if not self.cascade.active:
            for _ in range(2):
                await asyncio.sleep(0)
            plans = [(r, o, lt, self.lexical.probs(lt), sk, cl) for r, o, lt, _, sk, cl in plans]
        results = await asyncio.gather(*tasks) if tasks else []
        transformer = [np.zeros(len(plan[0]), dtype=np.float64) for plan in plans]
        for (g, idx), probs in zip(chunks, results, strict=True):
            transformer[g][idx] = probs
        flat, skipped = [], []
        for g, texts in enumerate(unique):
            _, owners, _, lexical, skip, classify = plans[g]
            row_probs = self.lexical.blend(transformer[g], lexical)  # each window blended, then the max
            if lexical is not None:
                # The windows of a text the cascade decided count with their lexical probability.
                row_probs = np.where(classify, row_probs, lexical)
            text_probs = np.full(len(texts), -np.inf)
            np.maximum.at(text_probs, owners, row_probs)
            flat.append(text_probs)
            skipped.append(skip)
        probs = np.array([flat[g][i] for g, i in where], dtype=np.float64).astype(np.float32)
        return probs, np.array([skipped[g][i] for g, i in where], dtype=bool)

    def _versions_json(self):
        return json.dumps(
            {
                "tokenizer": self.text_version,
                # tokenizer and text_classifier are published together under one number.
                "text_classifier": self.text_version,
                **self.tree_versions,
                "spam_pipeline": self.version,
            },
            sort_keys=True,
        ).encode()

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

    def _familiarity_first(self, text_inputs):
        """The cascade skips the transformer only for a familiar text, so with it active the
        familiarity of every text (previews included: a preview's text score is decided the
        same way) is measured before the classifier runs. Without it: nothing here, and
        execute measures the posts' texts while the classifier works."""
        if not self.cascade.active:
            return np.zeros(0, dtype=np.float32)
        return self.familiarity(text_inputs)

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
        # The text model is the critical path: its requests go out first, and the trees
        # score here while it runs. Two loop turns let _text_probs start its chunk tasks and
        # each chunk send its request (async_exec submits at once) before the trees take the
        # GIL; a tree call is ~0.3 ms.
        text_inputs = texts + [previews[i] for i in preview_rows]
        measured = self._familiarity_first(text_inputs)
        text_task = asyncio.ensure_future(self._text_probs(text_inputs, unfamiliarity=measured))
        for _ in range(2):
            await asyncio.sleep(0)
        link_prob, link_contrib = self.trees["link_model"](link)
        behaviour_prob, behaviour_contrib = self.trees["behaviour_model"](behaviour)
        unfamiliarity = self.familiarity(texts) if len(measured) == 0 else measured[: len(texts)]

        abuse_prob = self.abuse.probs(texts)
        try:
            all_text_probs, all_skipped = await text_task
        except SubModelError as exc:
            return [pb_utils.InferenceResponse(error=pb_utils.TritonError(str(exc))) for _ in requests]
        text_prob = all_text_probs[: len(texts)]
        # Where the post's text score came without the transformer (the cascade decided it).
        text_skipped = all_skipped[: len(texts)]
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
        final_prob, fusion_contrib = self.trees["fusion_model"](np.stack(columns, axis=1).astype(np.float32))
        versions = self.versions
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
                        pb_utils.Tensor("ABUSE_PROB", col(abuse_prob)),
                        pb_utils.Tensor("LINK_CONTRIBUTIONS", link_contrib[sl]),
                        pb_utils.Tensor("BEHAVIOUR_CONTRIBUTIONS", behaviour_contrib[sl]),
                        pb_utils.Tensor("FUSION_CONTRIBUTIONS", fusion_contrib[sl]),
                        pb_utils.Tensor("MODEL_VERSIONS", np.full((n, 1), versions, dtype=np.object_)),
                        pb_utils.Tensor("UNFAMILIARITY", col(unfamiliarity)),
                        pb_utils.Tensor("TEXT_MODEL_SKIPPED", text_skipped[sl].reshape(-1, 1)),
                    ]
                )
            )
        return responses
