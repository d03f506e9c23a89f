"""Warnings for text that can display as something it is not: bidirectional control characters
(right-to-left override turns "txt.exe" into "exe.txt") and words that mix writing systems
("paypal" spelt with a Cyrillic a). Hand-written on unicodedata: the standard library has no Unicode
Script property, so the script of a letter is the first word of its character name (LATIN,
CYRILLIC, GREEK, ...), which holds for the alphabetic scripts that homoglyph spoofing uses."""

from __future__ import annotations

import re
import unicodedata

# Embeddings, overrides and isolates (U+202A-U+202E, U+2066-U+2069) and the Arabic letter mark.
_BIDI = re.compile("[\u202a-\u202e\u2066-\u2069\u061c]")
# Japanese and Korean words mix these by design; they count as one script here.
_EAST_ASIAN = frozenset({"CJK", "HIRAGANA", "KATAKANA", "HANGUL", "HALFWIDTH", "FULLWIDTH"})
_WORD = re.compile(r"[^\s/\\.:@?#=&_\-]+")


def _script(ch: str) -> str | None:
    if not ch.isalpha():
        return None
    name = unicodedata.name(ch, "")
    if not name:
        return None
    script = name.split(" ", 1)[0]
    return "CJK" if script in _EAST_ASIAN else script


def mixed_script_words(text: str) -> list[str]:
    """Words (split also at URL punctuation) whose letters come from more than one script."""
    out: list[str] = []
    for word in _WORD.findall(text):
        scripts = {s for ch in word if (s := _script(ch)) is not None}
        if len(scripts) > 1:
            out.append(word)
    return out


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
