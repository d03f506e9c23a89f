"""Statements of reasons: the mapping to the DSA transparency database's fields (table-driven,
no database) and the statements the restrictions write."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from moderation.services.statements import Automation, StatementAction, StatementFacts, statement_fields

APPLIED = datetime(2026, 3, 4, 23, 30, tzinfo=UTC)
POSTED = datetime(2026, 3, 1, 8, 0, tzinfo=UTC)
ENDS = datetime(2026, 4, 1, 0, 0, tzinfo=UTC)


def facts(**overrides):
    base = {
        "action": StatementAction.REMOVAL,
        "category": "spam",
        "reason_code": "commercial-spam",
        "reason_label": "Commercial spam / advertising",
        "note": "",
        "automated_detection": True,
        "automated_decision": Automation.NONE,
        "application_date": APPLIED,
        "puid": "chirp:post:p-1",
        "content_date": POSTED,
        "content_language": "en",
        "territorial_scope": ("DE", "FR"),
    }
    return StatementFacts(**{**base, **overrides})


RESTRICTIONS: list[tuple[str, dict[str, object]]] = [
    (StatementAction.REMOVAL, {"decision_visibility": ["DECISION_VISIBILITY_CONTENT_REMOVED"]}),
    (
        StatementAction.HIDE,
        {
            "decision_visibility": ["DECISION_VISIBILITY_CONTENT_DISABLED"],
            "end_date_visibility_restriction": "2026-04-01",
        },
    ),
    (
        StatementAction.LIMIT_REACH,
        {
            "decision_visibility": ["DECISION_VISIBILITY_CONTENT_DEMOTED"],
            "end_date_visibility_restriction": "2026-04-01",
        },
    ),
    (
        StatementAction.LIMIT_RATE,
        {"decision_provision": "DECISION_PROVISION_PARTIAL_SUSPENSION", "end_date_service_restriction": "2026-04-01"},
    ),
    (
        StatementAction.SUSPENSION,
        {"decision_account": "DECISION_ACCOUNT_SUSPENDED", "end_date_account_restriction": "2026-04-01"},
    ),
]
RESTRICTION_KEYS = {key for _, expected in RESTRICTIONS for key in expected}


@pytest.mark.parametrize(("action", "expected"), RESTRICTIONS, ids=[a for a, _ in RESTRICTIONS])
def test_each_restriction_fills_its_own_fields_only(action, expected):
    fields = statement_fields(facts=facts(action=action, end_date=ENDS))
    assert {key: fields[key] for key in RESTRICTION_KEYS if key in fields} == expected


@pytest.mark.parametrize(
    ("category", "dsa_category"),
    [
        ("spam", "STATEMENT_CATEGORY_SCOPE_OF_PLATFORM_SERVICE"),
        ("scam", "STATEMENT_CATEGORY_SCAMS_AND_FRAUD"),
        ("abuse", "STATEMENT_CATEGORY_ILLEGAL_OR_HARMFUL_SPEECH"),
        ("hate", "STATEMENT_CATEGORY_ILLEGAL_OR_HARMFUL_SPEECH"),
        ("sexual", "STATEMENT_CATEGORY_PORNOGRAPHY_OR_SEXUALIZED_CONTENT"),
        ("violence", "STATEMENT_CATEGORY_VIOLENCE"),
        ("self_harm", "STATEMENT_CATEGORY_SELF_HARM"),
        ("other", "STATEMENT_CATEGORY_SCOPE_OF_PLATFORM_SERVICE"),
    ],
)
def test_categories(category, dsa_category):
    assert statement_fields(facts=facts(category=category))["category"] == dsa_category


@pytest.mark.parametrize(
    ("automation", "detected", "notified", "expected"),
    [
        (Automation.NONE, True, False, ("Yes", "AUTOMATED_DECISION_NOT_AUTOMATED", "SOURCE_VOLUNTARY")),
        (Automation.NONE, False, True, ("No", "AUTOMATED_DECISION_NOT_AUTOMATED", "SOURCE_ARTICLE_16")),
        (Automation.PARTIAL, False, False, ("No", "AUTOMATED_DECISION_PARTIALLY", "SOURCE_VOLUNTARY")),
        (Automation.FULL, True, False, ("Yes", "AUTOMATED_DECISION_FULLY", "SOURCE_VOLUNTARY")),
    ],
)
def test_automation_and_source(automation, detected, notified, expected):
    fields = statement_fields(
        facts=facts(automated_decision=automation, automated_detection=detected, notified=notified)
    )
    assert (fields["automated_detection"], fields["automated_decision"], fields["source_type"]) == expected


def test_terms_ground_by_default_with_the_clause_and_the_terms_url():
    fields = statement_fields(facts=facts(note="@bob's link farm", terms_url="https://chirp.example/terms#spam"))
    assert fields["decision_ground"] == "DECISION_GROUND_INCOMPATIBLE_CONTENT"
    assert fields["incompatible_content_ground"] == "Commercial spam / advertising (commercial-spam)"
    assert fields["incompatible_content_explanation"] == (
        "The post was removed by a moderator for Commercial spam / advertising (commercial-spam)."
    )
    assert "@bob" not in json.dumps(fields)  # a moderator's note never goes to the public database
    assert fields["incompatible_content_illegal"] == "No"
    assert fields["decision_ground_reference_url"] == "https://chirp.example/terms#spam"
    assert not any(key.startswith("illegal_content") for key in fields)


def test_illegal_ground_when_the_category_has_a_legal_reference():
    fields = statement_fields(facts=facts(category="hate", legal_ground="StGB § 130"))
    assert fields["decision_ground"] == "DECISION_GROUND_ILLEGAL_CONTENT"
    assert fields["illegal_content_legal_ground"] == "StGB § 130"
    assert fields["illegal_content_explanation"].startswith("The post was removed by a moderator")
    assert not any(key.startswith("incompatible_content") for key in fields)


def test_dates_language_scope_and_identity():
    fields = statement_fields(facts=facts(content_language="und"))
    assert (fields["application_date"], fields["content_date"]) == ("2026-03-04", "2026-03-01")
    assert "content_language" not in fields  # "und" is no ISO 639-1 code
    assert statement_fields(facts=facts())["content_language"] == "EN"
    assert fields["territorial_scope"] == ["DE", "FR"]
    assert fields["puid"] == "chirp:post:p-1"
    assert fields["content_type"] == ["CONTENT_TYPE_TEXT"]
    assert None not in fields.values()


def test_a_permanent_restriction_has_no_end_date():
    fields = statement_fields(facts=facts(action=StatementAction.SUSPENSION, end_date=None))
    assert "end_date_account_restriction" not in fields
