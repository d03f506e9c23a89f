from __future__ import annotations

import pytest

from contracts.feature_schema import BEHAVIOUR_FEATURES
from scoring.features.email import EMAIL_FEATURES, email_domain, email_features, is_disposable_email, is_free_provider


@pytest.mark.parametrize(
    ("value", "domain"),
    [
        ("Bob@Mail.Example.COM", "mail.example.com"),
        ("gmail.com", "gmail.com"),
        ("  x@gmail.com. ", "gmail.com"),
        ("", ""),
    ],
)
def test_email_domain(value: str, domain: str) -> None:
    assert email_domain(value) == domain


@pytest.mark.parametrize(
    ("value", "disposable", "free"),
    [
        ("someone@mailinator.com", True, False),
        ("guerrillamail.com", True, False),
        ("x@sub.mailinator.com", True, False),
        ("x@gmail.com", False, True),
        ("x@Yahoo.co.uk", False, True),
        ("x@corp-example.com", False, False),
        ("x@acme-widgets.com", False, False),
    ],
)
def test_disposable_and_free(value: str, disposable: bool, free: bool) -> None:
    assert is_disposable_email(value) is disposable
    assert is_free_provider(value) is free


def test_email_features_names_and_unknown() -> None:
    assert set(EMAIL_FEATURES) <= set(BEHAVIOUR_FEATURES)
    assert email_features(None) == {"user_email_disposable": 0.0, "user_email_free_provider": 0.0}
    assert email_features("a@mailinator.com") == {"user_email_disposable": 1.0, "user_email_free_provider": 0.0}
