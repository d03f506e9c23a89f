"""Does learning a second kind of text make the real text model forget SMS?

Starting from a fine-tuned text checkpoint (the bootstrap model), fine-tune twice on a second
kind of text, with the retraining recipe of feedback.services.text (TrainConfig budget knobs,
per-text weights, temperature calibration on validation):

- "this dataset only": the second kind of text alone;
- "cumulative + replay": the same texts plus the bootstrap replay sample of
  feedback.services.replay (a stratified, seeded sample of the SMS train/validation splits,
  FEEDBACK_REPLAY_BOOTSTRAP_MAX texts at most), weighted by FEEDBACK_REPLAY_WEIGHTS.

and report F1(spam) at 0.5 on the SMS test split (the first domain) and on a held-out test split
of the second kind, before and after each, with the PyTorch fp32 model. The target: with replay,
SMS F1 stays within 1 point of the starting model's.

The second kind of text: classifieds and forum posts generated here with Faker (already a
dependency through factory_boy), seeded. It is built to disagree with SMS where real platforms
do: honest sellers write prices, phone numbers, "call", "text me", "free delivery" (which SMS
spam taught the model to flag), while the spam is long, formal scam copy (fake jobs, investment
schemes, link farms). That is the situation in which a model trained on the new kind alone
forgets the first: it learns that a price and a phone number are harmless.

    .venv/bin/python benchmarks/forgetting.py --base var/models/text/current \
        --train 1200 --epochs 1 --json var/forgetting.json

Bounded for 2 CPU cores: --train texts of the second kind (default 1200), --epochs (1),
--max-steps, --replay (the bootstrap replay cap, default FEEDBACK_REPLAY_BOOTSTRAP_MAX).
A run takes about 10-20 minutes here. It never runs inside the test suite.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402

from feedback.services.replay import bootstrap_replay_rows, replay_weights  # noqa: E402
from modelops.text.calibrate import calibrate_text_model  # noqa: E402
from modelops.text.data import load_sms_splits  # noqa: E402
from modelops.text.finetune import TrainConfig, load_base, predict_proba, train_text_model  # noqa: E402
from modelops.text.metrics import spam_metrics  # noqa: E402

PRODUCTS = ("bike", "sofa", "iPhone 12", "pram", "desk", "guitar", "washing machine", "PS5", "lawn mower", "kettle")
SCAMS = (
    "Our international logistics partner is hiring remote package inspectors. No experience is required and "
    "the position pays {money} per week. Complete the onboarding form at {url} and provide your bank details "
    "so that the signing bonus can be transferred today.",
    "Dear valued community member, {company} has selected a limited number of investors for an exclusive "
    "digital asset programme returning {pct}% per month. Secure your allocation at {url} before {date}; "
    "places are allocated strictly in order of deposit.",
    "Official notice: your account on this platform will be suspended within 24 hours because of unusual "
    "activity. To keep your listings visible, verify your identity at {url} using your login and card number.",
    "Looking for reliable backlinks? {company} provides {n} high authority guest posts per month across our "
    "network of sites. Rankings guaranteed. Packages from {money}; see the price list at {url}.",
    "Congratulations on your recent listing. A buyer from {country} has paid {money} for your item through our "
    "escrow service. Release the funds by paying the courier insurance fee at {url}.",
)
LISTINGS = (
    "Selling my {product}, {adj} condition, {money} ono. Call or text {phone} after 6pm. Free delivery in {city}.",
    "{product} for sale, barely used, {money}. Text me on {phone} if interested, collection from {city}.",
    "FREE {product} to a good home, you collect from {city}. Call {phone}, first come first served!",
    "Urgent sale: moving abroad, {product} only {money}. Ring {phone} or message me here. Cash on collection.",
    "Has anyone in {city} got a {product} they could lend me this weekend? Happy to pay {money}, text {phone}.",
)
FORUM = (
    "Does anyone know a good mechanic near {city}? My {product} has been making a noise since {day}.",
    "Thanks everyone for the advice last week, the {product} works again. {sentence}",
    "Reminder: the {city} residents meeting is on {day} at 7pm in the library. {sentence}",
    "{sentence} {sentence} Anyone else seeing this in {city}?",
)


def second_kind(count: int, *, seed: int) -> list[tuple[str, int]]:
    """`count` (text, label) pairs of the second kind, 40 % spam, reproducible from `seed`."""
    from faker import Faker

    fake = Faker("en_GB")
    fake.seed_instance(seed)
    rng = random.Random(seed)
    out: list[tuple[str, int]] = []
    for i in range(count):
        spam = i % 5 < 2
        values = {
            "product": rng.choice(PRODUCTS),
            "adj": rng.choice(("good", "excellent", "used", "mint", "fair")),
            "money": f"£{rng.randint(5, 900)}",
            "phone": fake.phone_number(),
            "city": fake.city(),
            "day": fake.day_of_week(),
            "sentence": fake.sentence(nb_words=rng.randint(6, 14)),
            "company": fake.company(),
            "url": f"https://{fake.domain_word()}-{rng.choice(('secure', 'verify', 'invest', 'jobs'))}.{fake.tld()}/",
            "pct": rng.randint(8, 40),
            "date": fake.date_between("+1d", "+30d").isoformat(),
            "n": rng.randint(10, 200),
            "country": fake.country(),
        }
        template = rng.choice(SCAMS) if spam else rng.choice(LISTINGS if rng.random() < 0.6 else FORUM)
        text = template
        for key, value in values.items():
            while "{" + key + "}" in text:  # a template may use a field twice (two sentences)
                replacement = fake.sentence(nb_words=rng.randint(6, 14)) if key == "sentence" else str(value)
                text = text.replace("{" + key + "}", replacement, 1)
        out.append((text, 1 if spam else 0))
    rng.shuffle(out)
    return out


def f1_on(model: Any, tokenizer: Any, texts: list[str], labels: list[int], max_length: int) -> dict[str, float]:
    probs, _ = predict_proba(model, tokenizer, texts, max_length=max_length)
    m = spam_metrics(labels, probs)
    return {"f1": round(m["f1"], 4), "precision": round(m["precision"], 4), "recall": round(m["recall"], 4)}


def fine_tune(
    base: str,
    texts: list[str],
    labels: list[int],
    weights: list[float],
    val: tuple[list[str], list[int]],
    args: argparse.Namespace,
) -> tuple[Any, Any, float, dict[str, Any]]:
    config = TrainConfig(
        base=base,
        max_length=args.max_length,
        epochs=args.epochs,
        max_steps=args.max_steps,
        time_budget_s=args.time_budget,
    )
    started = time.monotonic()
    trained = train_text_model(
        texts, labels, val[0], val[1], config, progress=False, log=lambda m: print("   ", m), train_weights=weights
    )
    calibration = calibrate_text_model(
        trained.model, trained.tokenizer, validation=val, test=None, max_length=args.max_length
    )
    return trained.model, trained.tokenizer, time.monotonic() - started, calibration


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", default=str(Path(settings.ARTIFACTS_DIR) / "text" / "current"))
    parser.add_argument("--train", type=int, default=1200, help="texts of the second kind to learn")
    parser.add_argument("--test", type=int, default=600, help="held-out texts of the second kind")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--max-steps", type=int, default=None)
    parser.add_argument("--time-budget", type=float, default=20 * 60)
    parser.add_argument("--max-length", type=int, default=int(getattr(settings, "TEXT_MAX_LENGTH", 128)))
    parser.add_argument("--replay", type=int, default=int(getattr(settings, "FEEDBACK_REPLAY_BOOTSTRAP_MAX", 2000)))
    parser.add_argument("--only", choices=("dataset_only", "replay"), default=None, help="run one variant")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()

    sms = load_sms_splits()
    rows = second_kind(args.train + args.train // 4 + args.test, seed=7)
    train2 = rows[: args.train]
    val2 = rows[args.train : args.train + args.train // 4]
    test2 = rows[args.train + args.train // 4 :]
    sms_test = (sms.test.texts, sms.test.labels)
    kind2_test = ([t for t, _ in test2], [y for _, y in test2])
    result: dict[str, Any] = {
        "base": args.base,
        "second_kind": {"train": len(train2), "validation": len(val2), "test": len(test2), "spam_share": 0.4},
        "settings": {k: v for k, v in vars(args).items() if k != "json"} | {"json": str(args.json)},
        "replay_weights": replay_weights(),
    }
    print(f"second kind: {len(train2)} train / {len(val2)} validation / {len(test2)} test; example: {train2[0][0]!r}")

    model, tokenizer = load_base(args.base)
    result["before"] = {
        "sms_test": f1_on(model, tokenizer, *sms_test, args.max_length),
        "second_kind_test": f1_on(model, tokenizer, *kind2_test, args.max_length),
    }
    print("before:", result["before"])

    weights = replay_weights()
    variants: dict[str, tuple[list[tuple[str, int]], list[float], tuple[list[str], list[int]]]] = {}
    if args.only in (None, "dataset_only"):
        variants["dataset_only"] = (train2, [1.0] * len(train2), ([t for t, _ in val2], [y for _, y in val2]))
    if args.only in (None, "replay"):
        replay = bootstrap_replay_rows(args.replay)
        replay_train = [(r["text"], 1 if r["label"] == "spam" else 0) for r in replay if r["split"] == "train"]
        replay_val = [(r["text"], 1 if r["label"] == "spam" else 0) for r in replay if r["split"] == "validation"]
        variants["replay"] = (
            train2 + replay_train,
            [weights["dataset"]] * len(train2) + [weights["bootstrap"]] * len(replay_train),
            ([t for t, _ in val2 + replay_val], [y for _, y in val2 + replay_val]),
        )
    for name, (train, train_weights, val) in variants.items():
        print(f"{name}: fine-tuning on {len(train)} texts ...", flush=True)
        model, tokenizer, seconds, calibration = fine_tune(
            args.base, [t for t, _ in train], [y for _, y in train], train_weights, val, args
        )
        entry = {
            "train_texts": len(train),
            "seconds": round(seconds, 1),
            "temperature": calibration.get("temperature"),
            "sms_test": f1_on(model, tokenizer, *sms_test, args.max_length),
            "second_kind_test": f1_on(model, tokenizer, *kind2_test, args.max_length),
        }
        entry["sms_f1_change_points"] = round((entry["sms_test"]["f1"] - result["before"]["sms_test"]["f1"]) * 100, 2)
        result[name] = entry
        print(f"{name}:", entry, flush=True)
        if args.json:
            args.json.parent.mkdir(parents=True, exist_ok=True)
            args.json.write_text(json.dumps(result, indent=2))

    print()
    print("| model | SMS test F1 | second kind test F1 | fine-tune s |")
    print("|---|---|---|---|")
    before = result["before"]
    print(f"| starting model | {before['sms_test']['f1']:.4f} | {before['second_kind_test']['f1']:.4f} | - |")
    for name in variants:
        e = result[name]
        print(
            f"| {name} | {e['sms_test']['f1']:.4f} ({e['sms_f1_change_points']:+.2f} points) | "
            f"{e['second_kind_test']['f1']:.4f} | {e['seconds']:.0f} |"
        )
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
