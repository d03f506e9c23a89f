"""Language detection at ingest (moderation.language): stored on the post, shown and filtered
on the queue."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone
from faker import Faker

from modelops.text.data import load_sms_splits, read_sms_collection
from moderation import language
from moderation.language import (
    UNDETERMINED,
    detect_language,
    detect_languages,
    post_language,
    post_languages,
)
from moderation.models import Post
from moderation.services.ingest import post_ingest, posts_ingest_batch
from tests.dashboard.dashboard_factories import PostFactory, ScoreFactory
from tests.dashboard.dashboard_fixtures import *  # noqa: F403
from tests.factories import SourceFactory

SPAM_BY_LANGUAGE = {
    "es": "¡Felicidades! Has ganado un iPhone gratis. Haz clic aquí para reclamar tu premio ahora mismo",
    "pt": "Parabéns! Você ganhou um prêmio de mil reais. Clique no link para resgatar agora",
    "ru": "Поздравляем! Вы выиграли новый телефон. Нажмите на ссылку, чтобы получить приз",
    "zh": "恭喜您中奖了！点击链接领取您的奖品",
}


@pytest.mark.parametrize(("code", "text"), sorted(SPAM_BY_LANGUAGE.items()))
def test_other_languages_are_detected(code, text):
    assert detect_language(text) == code


def test_english_sms_rarely_reads_as_another_language(settings):
    # The text model's own validation texts: 3 of 680 clear the lower bar for another
    # language (a review each); with one bar for all, none.
    texts = load_sms_splits().test.texts
    foreign = [t for t in texts if detect_language(t) not in ("en", UNDETERMINED)]
    assert len(foreign) <= len(texts) // 100
    assert sum(detect_language(t) == "en" for t in texts) > len(texts) // 2
    settings.LANGUAGE_UNVALIDATED_MIN_CONFIDENCE = settings.LANGUAGE_MIN_CONFIDENCE
    assert {detect_language(t) for t in texts} <= {"en", UNDETERMINED}


@pytest.mark.parametrize(("text", "code"), [("Haz clic aquí ya", "es"), ("Oferta especial, compre já", "pt")])
def test_an_unvalidated_language_has_the_lower_bar(settings, text, code):
    model = language._model(tuple(settings.LANGUAGE_CANDIDATES))
    guess, confidence = model.classify(text)
    assert guess == code
    assert settings.LANGUAGE_UNVALIDATED_MIN_CONFIDENCE <= confidence < settings.LANGUAGE_MIN_CONFIDENCE
    assert detect_language(text) == detect_languages([text] * 4)[0] == code
    settings.TEXT_VALIDATED_LANGUAGES = ["en", code]  # validated: the main bar applies
    assert detect_language(text) == detect_languages([text] * 4)[0] == UNDETERMINED


def test_empty_and_whitespace_are_undetermined():
    assert detect_language("") == detect_language("   \n") == UNDETERMINED


def test_a_post_without_text_takes_its_previews_language():
    assert post_language(text=" ", preview_text=SPAM_BY_LANGUAGE["es"]) == "es"
    assert post_language(text="Are you coming to the meeting tomorrow at noon?", preview_text="Hola") == "en"


def test_only_the_first_max_chars_are_read(settings):
    settings.LANGUAGE_MAX_CHARS = 60
    english = "Please call me back when you get home, we need to talk about dinner. "
    assert detect_language(english + SPAM_BY_LANGUAGE["ru"] * 20) == "en"


def _many_scripts() -> list[str]:
    """The SMS collection, Faker prose in a dozen languages and scripts, and odd inputs."""
    texts = [text for text, _ in read_sms_collection()]
    for locale in ("es_ES", "ru_RU", "zh_CN", "ja_JP", "ar_AA", "de_DE", "pl_PL", "vi_VN", "uk_UA", "el_GR", "hi_IN"):
        fake = Faker(locale)
        fake.seed_instance(7)
        texts += [fake.text(max_nb_chars=400) for _ in range(20)]
    return [
        *texts,
        "",
        "   ",
        "A",
        "ÀÉÎ",
        "\ud800 lone",
        "CALL NOW FREE PRIZE",
        "x" * 300,
        "😀😀 ok",
        "\x00\x01",
        *SPAM_BY_LANGUAGE.values(),
    ]


def test_texts_in_many_scripts_and_odd_inputs_are_detected_without_error():
    texts = _many_scripts()
    assert {"es", "ru", "zh", "ja", "ar", "de", "pl", "vi", "uk", "en"} <= set(detect_languages(texts))
    pairs = [(" ", SPAM_BY_LANGUAGE["es"]), ("Are you coming to the meeting tomorrow at noon?", "Hola")] * 4
    assert post_languages(pairs) == [post_language(text=t, preview_text=p) for t, p in pairs]


def _payload(external_id: str, text: str) -> dict:
    now = timezone.now()
    return {
        "external_id": external_id,
        "text": text,
        "author": {"external_id": "u-1"},
        "journey": [{"step": "submit", "at": now - timedelta(seconds=1)}],
        "created_at": now,
    }


@pytest.mark.django_db
def test_ingest_stores_the_language_single_and_batch():
    source = SourceFactory()
    post, _ = post_ingest(source=source, payload=_payload("one", SPAM_BY_LANGUAGE["es"]))
    results = posts_ingest_batch(
        source=source,
        payloads=[
            _payload("two", SPAM_BY_LANGUAGE["ru"]),
            _payload("three", "Are you free for lunch tomorrow? I was thinking about the new place near the station."),
            *(_payload(f"zh-{n}", SPAM_BY_LANGUAGE["zh"]) for n in range(4)),  # a batch request
        ],
    )
    assert Post.objects.get(pk=post.pk).language == "es"
    stored = dict(Post.objects.filter(pk__in=[p.pk for p, _ in results]).values_list("external_id", "language"))
    assert stored == {"two": "ru", "three": "en", **{f"zh-{n}": "zh" for n in range(4)}}


@pytest.mark.django_db
def test_queue_filters_by_language_and_shows_it_with_the_routing_reason(mod_client):
    spanish = PostFactory(text=SPAM_BY_LANGUAGE["es"], language="es", final_score=0.1)
    ScoreFactory(post=spanish, routing_reason="language not validated: es")
    english = PostFactory(text="see you at lunch", language="en", final_score=0.5)
    html = mod_client.get(reverse("dashboard:queue"), {"language": "es"}).content.decode()
    assert f'data-post-id="{spanish.pk}"' in html
    assert f'data-post-id="{english.pk}"' not in html
    assert "language not validated: es" in html
    detail = mod_client.get(reverse("dashboard:post_detail", args=[spanish.pk])).content.decode()
    assert "language <span data-language>Spanish</span>" in detail and "language not validated: es" in detail
