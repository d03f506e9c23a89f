"""Policy categories: what kind of harm a decision, a strike or a statement is about. The one
place their codes live; a reason code belongs to one category through REASON_CATEGORY, and a
code not listed there falls in OTHER."""

from __future__ import annotations

from django.db import models


class PolicyCategory(models.TextChoices):
    SPAM = "spam", "Spam"
    SCAM = "scam", "Scam or phishing"
    ABUSE = "abuse", "Abuse or harassment"
    HATE = "hate", "Hate"
    SEXUAL = "sexual", "Sexual content"
    VIOLENCE = "violence", "Violence"
    SELF_HARM = "self_harm", "Self-harm"
    OTHER = "other", "Other"


# The default reason codes by family (moderation migration 0002); a code added later by an admin
# without an entry here counts as OTHER until it gets one.
REASON_CATEGORY: dict[str, str] = {
    "commercial-spam": PolicyCategory.SPAM,
    "bot-activity": PolicyCategory.SPAM,
    "repetitive": PolicyCategory.SPAM,
    "phishing": PolicyCategory.SCAM,
    "scam": PolicyCategory.SCAM,
    "malware": PolicyCategory.SCAM,
    "abuse": PolicyCategory.ABUSE,
}


def category_for_reason(reason_code: str) -> str:
    return REASON_CATEGORY.get(reason_code, PolicyCategory.OTHER)
