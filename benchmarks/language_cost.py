"""Language detection at ingest (moderation.language): its cost per post and what it answers.

Cost: detect_language timed per call (after one warm-up call, which loads the model) on the
SMS test split (the benchmarks' post texts), detect_languages per post on batches of 64 of
them (what batch ingest calls), on 10,000-character posts (the ingest maximum; only
LANGUAGE_MAX_CHARS are read) and on the multilingual sentences below; p50/p99/max in ms, wall clock and
the calling thread's CPU (the machine is shared: wall-clock tails include waiting for a core).
Answers: how often English SMS (all 4,533 texts of the collection) is called another language
(every such post would be queued, never auto-approved), and how often Faker sentences in 12
other languages are detected as their language (posts that must not be auto-approved).

    DJANGO_SETTINGS_MODULE=config.settings.test .venv/bin/python benchmarks/language_cost.py

Never part of the tests."""

from __future__ import annotations

import json
import random
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

LOCALES = {
    "es": "es_ES",
    "fr": "fr_FR",
    "de": "de_DE",
    "it": "it_IT",
    "nl": "nl_NL",
    "pl": "pl_PL",
    "ru": "ru_RU",
    "uk": "uk_UA",
    "ar": "ar_AA",
    "zh": "zh_CN",
    "ja": "ja_JP",
    "vi": "vi_VN",
}


def timed(fn, texts: list[str]) -> tuple[list[str], dict[str, float]]:  # type: ignore[no-untyped-def]
    out, wall, cpu = [], [], []
    for text in texts:
        started, started_cpu = time.perf_counter(), time.thread_time()
        out.append(fn(text))
        cpu.append((time.thread_time() - started_cpu) * 1000.0)
        wall.append((time.perf_counter() - started) * 1000.0)
    stats: dict[str, float] = {}
    for name, values in (("wall", np.asarray(wall)), ("cpu", np.asarray(cpu))):
        stats[f"{name}_p50_ms"] = round(float(np.percentile(values, 50)), 4)
        stats[f"{name}_p99_ms"] = round(float(np.percentile(values, 99)), 4)
        stats[f"{name}_max_ms"] = round(float(values.max()), 4)
    return out, stats


def main() -> None:
    import django

    django.setup()
    from faker import Faker

    from modelops.text.data import load_sms_splits
    from moderation.language import detect_language, detect_languages

    splits = load_sms_splits()
    started = time.perf_counter()
    detect_language("warm up: loads the model")
    report: dict[str, object] = {"first_call_ms": round((time.perf_counter() - started) * 1000.0, 1)}
    _, report["sms_test_split"] = timed(detect_language, splits.test.texts)
    rng = random.Random(3)
    long_posts = [" ".join(rng.choice(splits.test.texts) for _ in range(200))[:10_000] for _ in range(200)]
    _, report["posts_10000_chars"] = timed(detect_language, long_posts)
    # Batch ingest detects a request's posts together: cost per post of a 64-post batch.
    batches = [splits.test.texts[i : i + 64] for i in range(0, len(splits.test.texts) - 63, 64)]
    _, per_batch = timed(detect_languages, batches)  # type: ignore[arg-type]
    report["sms_batches_of_64_per_post"] = {k: round(v / 64, 4) for k, v in per_batch.items()}
    english = splits.train.texts + splits.validation.texts + splits.test.texts
    answers = Counter(detect_language(t) for t in english)
    report["english_sms"] = {
        "texts": len(english),
        "en": answers["en"],
        "und": answers["und"],
        "other_language": {k: v for k, v in answers.items() if k not in ("en", "und")},
    }
    detected: dict[str, str] = {}
    sentences: list[str] = []
    for code, locale in LOCALES.items():
        fake = Faker(locale)
        fake.seed_instance(1)
        texts = [fake.sentence(nb_words=random.Random(i).randint(4, 14)) for i in range(200)]
        sentences += texts
        got = [detect_language(t) for t in texts]
        detected[code] = f"{sum(g == code for g in got)}/200 (und {got.count('und')}, en {got.count('en')})"
    report["faker_sentences_detected"] = detected
    _, report["faker_sentences_cost"] = timed(detect_language, sentences)
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
