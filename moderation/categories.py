"""The policy's harm categories: what decisions, reports, reason codes and labelled examples
are about, so that a decision trains only the models of its category.

The list is configurable (settings.POLICY_CATEGORIES, ``code:Label`` items); the default is
spam, scam/phishing, abuse/harassment, hate, sexual, violence, self-harm and other. NONE marks
what violates nothing (an approval): the clean negatives every model may learn from. Stored as
plain strings, not database choices, so editing the list needs no migration.
"""

from __future__ import annotations

from django.conf import settings

NONE = "none"
SPAM = "spam"
ABUSE = "abuse"
OTHER = "other"  # a harm no other category names; also where a reason code names none
DEFAULT_CATEGORIES: tuple[tuple[str, str], ...] = (
    ("spam", "Spam"),
    ("scam", "Scam / phishing"),
    ("abuse", "Abuse / harassment"),
    ("hate", "Hate"),
    ("sexual", "Sexual"),
    ("violence", "Violence"),
    ("self_harm", "Self-harm"),
    ("other", "Other"),
)
# The categories the spam model learns from: spam and scam/phishing as positives (the SMS
# collection's spam is largely scams), NONE as the clean negatives; never another harm.
SPAM_MODEL_CATEGORIES: tuple[str, ...] = (SPAM, "scam", NONE)
# The categories the abuse model learns from: abuse/harassment and hate removals as positives,
# NONE (approvals) as negatives; a spam removal is neither abuse nor clean, so it is left out.
ABUSE_MODEL_CATEGORIES: tuple[str, ...] = (ABUSE, "hate", NONE)
# Which model each set of categories trains, by the model's name (feedback's datasets and suites).
MODEL_CATEGORIES: dict[str, tuple[str, ...]] = {SPAM: SPAM_MODEL_CATEGORIES, ABUSE: ABUSE_MODEL_CATEGORIES}
# Report reasons platforms commonly send, by category (the reason itself is free text).
REPORT_REASON_CATEGORIES = {
    "phishing": "scam",
    "fraud": "scam",
    "harassment": "abuse",
    "bullying": "abuse",
    "insult": "abuse",
    "hate_speech": "hate",
    "nudity": "sexual",
    "threat": "violence",
    "suicide": "self_harm",
}


def policy_categories() -> list[tuple[str, str]]:
    """(code, label) of the configured categories, in order."""
    configured = getattr(settings, "POLICY_CATEGORIES", None)
    if not configured:
        return list(DEFAULT_CATEGORIES)
    out = []
    for item in configured:
        code, _, label = str(item).partition(":")
        out.append((code.strip(), label.strip() or code.strip()))
    return out


def category_choices() -> list[tuple[str, str]]:
    return [*policy_categories(), (NONE, "None (no violation)")]


def category_label(code: str) -> str:
    """The configured label of a category code; the code itself when the list no longer has it."""
    return dict(category_choices()).get(code, code)


def is_category(value: str) -> bool:
    return value in dict(category_choices())


def category_for_label(label: str) -> str:
    """The category of a bare spam / ham label: what every label meant before categories."""
    return SPAM if label == "spam" else NONE


def category_for_report_reason(reason: str) -> str:
    key = reason.strip().lower().replace("-", "_").replace(" ", "_")
    codes = dict(policy_categories())
    if key in codes:
        return key
    mapped = REPORT_REASON_CATEGORIES.get(key, "other")
    return mapped if mapped in codes else "other"
