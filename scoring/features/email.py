"""E-mail domain features of an author (user_email_domain in docs/design.md).

Pure functions. ``disposable`` uses the blocklist of the disposable-email-domains package
(throw-away inboxes: mailinator.com, guerrillamail.com, ...), matching the domain or any parent
domain. ``free provider`` is a short list of large webmail services kept here: harmless on its
own (most people use one) but it tells the model that the address proves no affiliation.
"""

from __future__ import annotations

import contextlib

from disposable_email_domains import allowlist as _disposable_allowlist
from disposable_email_domains import blocklist as _disposable_blocklist

__all__ = [
    "EMAIL_FEATURES",
    "FREE_PROVIDER_DOMAINS",
    "email_domain",
    "email_features",
    "is_disposable_email",
    "is_free_provider",
]

EMAIL_FEATURES: tuple[str, ...] = ("user_email_disposable", "user_email_free_provider")

FREE_PROVIDER_DOMAINS: frozenset[str] = frozenset(
    {
        "gmail.com", "googlemail.com", "yahoo.com", "yahoo.co.uk", "yahoo.fr", "yahoo.de",
        "yahoo.co.jp", "ymail.com", "rocketmail.com", "hotmail.com", "hotmail.co.uk", "hotmail.fr",
        "hotmail.de", "outlook.com", "live.com", "msn.com", "aol.com", "icloud.com", "me.com",
        "mac.com", "mail.com", "gmx.com", "gmx.de", "gmx.net", "web.de", "yandex.ru", "yandex.com",
        "mail.ru", "inbox.ru", "bk.ru", "list.ru", "proton.me", "protonmail.com", "pm.me",
        "zoho.com", "tutanota.com", "tuta.io", "qq.com", "163.com", "126.com", "sina.com",
        "rediffmail.com", "naver.com", "daum.net", "libero.it", "orange.fr", "free.fr",
        "laposte.net", "t-online.de", "seznam.cz", "wp.pl", "o2.pl", "interia.pl", "btinternet.com",
        "comcast.net", "att.net", "verizon.net", "fastmail.com", "hushmail.com",
    }
)  # fmt: skip


def email_domain(value: str) -> str:
    """The lower-cased domain of an address (``Bob@Mail.Example.COM`` -> ``mail.example.com``).

    A value without ``@`` is taken to be a domain already (``Author.email_domain`` stores only
    the domain). Returns "" for an empty value."""
    domain = value.strip().rpartition("@")[2].strip().lower().rstrip(".")
    if domain and not domain.isascii():
        with contextlib.suppress(UnicodeError):
            domain = domain.encode("idna").decode("ascii")
    return domain


def _parents(domain: str) -> list[str]:
    labels = domain.split(".")
    return [".".join(labels[i:]) for i in range(len(labels) - 1)]


def is_disposable_email(value: str) -> bool:
    """Address or domain belongs to a throw-away mail service (or a subdomain of one)."""
    domain = email_domain(value)
    if not domain or domain in _disposable_allowlist:
        return False
    return any(d in _disposable_blocklist for d in _parents(domain))


def is_free_provider(value: str) -> bool:
    domain = email_domain(value)
    return bool(domain) and any(d in FREE_PROVIDER_DOMAINS for d in _parents(domain))


def email_features(value: str | None) -> dict[str, float]:
    """``user_email_disposable`` and ``user_email_free_provider`` (both 0 when no e-mail is known)."""
    if not value:
        return {"user_email_disposable": 0.0, "user_email_free_provider": 0.0}
    return {
        "user_email_disposable": float(is_disposable_email(value)),
        "user_email_free_provider": float(is_free_provider(value)),
    }
