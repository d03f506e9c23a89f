"""Warnings for text that can display as something it is not: bidirectional control characters
(right-to-left override turns "txt.exe" into "exe.txt") and words that mix writing systems
("paypal" spelt with a Cyrillic a).

Which scripts may share a word follows Unicode's UTS #39 ("Highly Restrictive"): a word is fine
when its letters resolve to one script, counting Han, Hiragana and Katakana as Japanese, Han and
Hangul as Korean, Han and Bopomofo as Chinese, and allowing Latin beside any of those three
(Tシャツ, DVDプレーヤー). Each character's scripts come from the Unicode Script_Extensions
property (fontTools.unicodedata), so the marks shared by two scripts, such as the prolonged sound
mark of コーヒー, count for both, and digits and punctuation for none. Serbian, written in
Cyrillic and in Latin, is fine word by word; a word mixing the two is a spoofing sign."""

from __future__ import annotations

import re
from functools import lru_cache

from fontTools.unicodedata import script_extension

# Embeddings, overrides and isolates (U+202A-U+202E, U+2066-U+2069) and the Arabic letter mark.
_BIDI = re.compile("[\u202a-\u202e\u2066-\u2069\u061c]")
_WORD = re.compile(r"[^\s/\\.:@?#=&_\-]+")
# Common and Inherited: digits, punctuation, combining marks; they belong to no one script.
_NEUTRAL = frozenset({"Zyyy", "Zinh", "Zzzz"})
# UTS #39 augmented script sets: Japanese (Jpan), Korean (Kore), Han with Bopomofo (Hanb).
_AUGMENTED = {
    "Hani": frozenset({"Hani", "Jpan", "Kore", "Hanb"}),
    "Hira": frozenset({"Hira", "Jpan"}),
    "Kana": frozenset({"Kana", "Jpan"}),
    "Hang": frozenset({"Hang", "Kore"}),
    "Bopo": frozenset({"Bopo", "Hanb"}),
}
# The East Asian writing systems Latin may join inside a word.
_WITH_LATIN = frozenset({"Jpan", "Kore", "Hanb"})


@lru_cache(maxsize=4096)
def _scripts(ch: str) -> frozenset[str]:
    """The character's scripts, augmented; empty for a character of no particular script."""
    found = set(script_extension(ch)) - _NEUTRAL
    return frozenset().union(*(_AUGMENTED.get(s, frozenset({s})) for s in found))


def _resolved(chars: str) -> frozenset[str] | None:
    """The scripts every character of `chars` shares; None when no character has a script."""
    resolved: frozenset[str] | None = None
    for ch in chars:
        scripts = _scripts(ch)
        if scripts:
            resolved = scripts if resolved is None else resolved & scripts
    return resolved


def _is_mixed(word: str) -> bool:
    if _resolved(word) != frozenset():
        return False
    rest = _resolved("".join(ch for ch in word if "Latn" not in _scripts(ch)))
    return not (rest and rest & _WITH_LATIN)


def mixed_script_words(text: str) -> list[str]:
    """Words (split also at URL punctuation) whose letters come from more than one script."""
    return [word for word in _WORD.findall(text) if not word.isascii() and _is_mixed(word)]


def spoofing_warnings(text: str) -> list[str]:
    if text.isascii():  # most posts: nothing to look at, decided at C speed
        return []
    warnings: list[str] = []
    if _BIDI.search(text):
        warnings.append("contains right-to-left/bidirectional override characters")
    mixed = mixed_script_words(text)
    if mixed:
        sample = ", ".join(bidi_controls_visible(w) for w in mixed[:3])
        warnings.append(f"mixes writing systems in: {sample}")
    return warnings


def bidi_controls_visible(text: str) -> str:
    return _BIDI.sub(lambda m: f"[U+{ord(m.group()):04X}]", text)
