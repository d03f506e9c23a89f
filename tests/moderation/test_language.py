"""Language detection at ingest (moderation.language): stored on the post, shown and filtered
on the queue."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from modelops.text.data import load_sms_splits
from moderation.language import UNDETERMINED, detect_language, post_language
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


def test_english_sms_is_english_or_undetermined_never_another_language():
    # The text model's own validation texts: none may be routed as a foreign language.
    texts = load_sms_splits().test.texts
    found = {detect_language(t) for t in texts}
    assert found <= {"en", UNDETERMINED}
    assert sum(detect_language(t) == "en" for t in texts) > len(texts) // 2


def test_empty_and_whitespace_are_undetermined():
    assert detect_language("") == detect_language("   \n") == UNDETERMINED


def test_a_post_without_text_takes_its_previews_language():
    assert post_language(text=" ", preview_text=SPAM_BY_LANGUAGE["es"]) == "es"
    assert post_language(text="Are you coming to the meeting tomorrow at noon?", preview_text="Hola") == "en"


def test_only_the_first_max_chars_are_read(settings):
    settings.LANGUAGE_MAX_CHARS = 60
    english = "Please call me back when you get home, we need to talk about dinner. "
    assert detect_language(english + SPAM_BY_LANGUAGE["ru"] * 20) == "en"


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
        ],
    )
    assert Post.objects.get(pk=post.pk).language == "es"
    stored = dict(Post.objects.filter(pk__in=[p.pk for p, _ in results]).values_list("external_id", "language"))
    assert stored == {"two": "ru", "three": "en"}


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
    assert "language es" in detail and "language not validated: es" in detail
