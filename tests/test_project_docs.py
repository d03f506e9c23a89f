"""The docs are a reference: every file or folder of this repository that README.md or
docs/*.md names exists (UPGRADING.md is left out: it names paths that moved away). A path is a
backticked token under a top-level folder of the repository (or a root file such as
`UPGRADING.md`), or a relative link; commands are read up to their first space, and
placeholders (`<name>`), globs and URLs are left alone."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")])
ROOT_FILE = re.compile(r"^([A-Z][A-Za-z_-]*\.md|pyproject\.toml|requirements\.txt|Makefile|Dockerfile)$")
# Top-level folders of the repository: a backticked path must start with one of them (or be a
# file at the root) to count as a path of this repository, not a URL path or a host's file.
TOP = {p.name for p in ROOT.iterdir() if not p.name.startswith(".")} | {".ci", ".venv"}
# Made by `make run`, `make test` or a benchmark, not kept in git.
GENERATED = ("var/", ".venv/", "benchmarks/results/")

BACKTICKED = re.compile(r"`([^`\n]+)`")
LINKED = re.compile(r"\]\(([^)\s#]+)(?:#[^)]*)?\)")


def _candidate(token: str) -> str | None:
    token = token.strip().split()[0] if token.strip() else ""
    token = token.rstrip(".,:;)")
    if not token or any(c in token for c in "<>*{}$=:@?") or token.startswith(("-", "/", "~")):
        return None
    first = token.split("/", 1)[0]
    if "/" in token and first in TOP:
        return token
    if "/" not in token and ROOT_FILE.match(token):
        return token
    return None


def referenced_paths(doc: Path) -> set[str]:
    text = doc.read_text(encoding="utf-8")
    found = {c for t in BACKTICKED.findall(text) if (c := _candidate(t))}
    for link in LINKED.findall(text):
        if "://" in link or link.startswith("mailto:"):
            continue
        target = (doc.parent / link).resolve()
        found.add(str(target.relative_to(ROOT)) if target.is_relative_to(ROOT) else link)
    return {p for p in found if not p.startswith(GENERATED)}


@pytest.mark.parametrize("doc", DOCS, ids=[str(d.relative_to(ROOT)) for d in DOCS])
def test_every_path_a_doc_names_exists(doc: Path) -> None:
    paths = referenced_paths(doc)
    missing = sorted(p for p in paths if not (ROOT / p).exists())
    assert not missing, f"{doc.relative_to(ROOT)} names paths that do not exist: {missing}"


def test_the_check_reads_paths_from_the_docs() -> None:
    assert "scoring/workqueue.py" in referenced_paths(ROOT / "docs" / "architecture.md")
    assert "UPGRADING.md" in referenced_paths(ROOT / "README.md")
