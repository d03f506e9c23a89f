"""The "current version" pointer of a folder of versioned artifacts: `<root>/current`, a relative
symlink to one version folder (swapped atomically), or a file holding the version's name where
symlinks are not kept. The text model (modelops.text.train) and the feature models
(modelops.tabular.artifacts) both publish through it."""

from __future__ import annotations

import os
from pathlib import Path

CURRENT = "current"


def set_current(root: Path, version_dir: Path) -> Path:
    """Point ``root/current`` at ``version_dir`` (relative symlink, replaced atomically)."""
    link = root / CURRENT
    tmp = root / f".{CURRENT}.{os.getpid()}"
    if tmp.is_symlink() or tmp.exists():
        tmp.unlink()
    tmp.symlink_to(version_dir.name)
    os.replace(tmp, link)
    return link


def current_dir(root: Path, *, missing: str) -> Path:
    """The version folder ``root/current`` names (a symlink, or a file holding the version's
    name); FileNotFoundError with `missing` when there is none."""
    link = Path(root) / CURRENT
    if link.is_symlink() or link.is_dir():
        return link.resolve()
    if link.is_file():
        return (Path(root) / link.read_text(encoding="utf-8").strip()).resolve()
    raise FileNotFoundError(missing)
