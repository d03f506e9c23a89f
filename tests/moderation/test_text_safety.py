"""The mixed-script warning knows which scripts share words: Japanese mixes kanji and kana,
Korean hangul and hanja, and Latin may join them; Latin with Cyrillic or Greek in one word is
the spoofing it is there for."""

from __future__ import annotations

import pytest

from moderation.text_safety import mixed_script_words, spoofing_warnings


@pytest.mark.parametrize(
    "text",
    [
        "コーヒーを飲みました。東京は人々で賑やかです",  # kanji, hiragana, katakana, ー and 々
        "新しいTシャツとDVDプレーヤーを買った",  # Latin inside Japanese words
        "한국語 공부를 합니다",  # hangul with hanja
        "注音ㄅㄆㄇ",  # Han with Bopomofo
        "Београд и Beograd",  # Serbian in both alphabets, word by word
        "café naïve Ελληνικά 123 ١٢٣",
    ],
)
def test_writing_systems_that_belong_together_get_no_warning(text):
    assert mixed_script_words(text) == []
    assert spoofing_warnings(text) == []


def test_words_mixing_lookalike_alphabets_are_flagged():
    # Cyrillic а in paypal, Greek Ο in GOOGLE, Cyrillic о inside a Latin Serbian word, Cyrillic in kana.
    text = "pаypal GΟOGLE Beоgrad カタカナд"
    assert mixed_script_words(text) == ["pаypal", "GΟOGLE", "Beоgrad", "カタカナд"]
    assert spoofing_warnings(text) == ["mixes writing systems in: pаypal, GΟOGLE, Beоgrad"]
