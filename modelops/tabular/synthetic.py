"""Synthetic social context for the bootstrap feature models.

No public data set has the social context (docs/design.md) (account age, friends, journeys, link
history, reports...) next to labelled posts. Until reviewers have labelled real posts (the
retraining issue replaces this data), each real SMS text of the UCI SMS Spam Collection gets one
or more synthetic contexts drawn from distributions that depend on the SMS label. The label of a
row is always the SMS label; the synthetic context only *correlates* with it.

How a row is drawn
1. An author archetype is drawn from the label's mixture (``SPAM_ARCHETYPES`` /
   ``HAM_ARCHETYPES``). With probability ``CROSSOVER_P`` (5 %) the archetype comes from the other
   label's mixture instead: a spam post from a normal-looking account, a real user who looks like
   a bot. Together with the overlapping archetypes (compromised accounts, new users) this keeps
   the models from being trivially perfect. One archetype, ``quiet_newcomer``, has the same
   parameters and the same weight (``QUIET_NEWCOMER_WEIGHT``) in both mixtures: a new account
   with no history, no link and often no profile at all is the common case on a platform's
   first day, among spammers as much as among everyone else. Without it every quiet account in
   the data was ham, and the models learned that a quiet author clears a post.
2. Profile (absent with the archetype's ``no_profile_p``: the platform sent no account data, so
   age, friends, followers, platform counts and e-mail are all 0, as ingest stores them):
   account age (log-normal), e-mail domain (disposable / free / own domain / none, a
   real domain string fed through ``scoring.features.email``), friends and followers
   (log-normal counts), verified (Bernoulli), platform post count (Poisson of age x daily rate),
   platform spam posts (binomial), reports against the user (Poisson), posts this service saw
   and the share decided spam (Poisson, binomial).
3. Journey: a list of UI steps with timestamps, fed through ``scoring.features.journey``.
   Scripted journeys (direct submit, paste+submit under 1 s, fixed 500 ms timer) with the
   archetype's ``bot_journey_p``, otherwise a human one (open composer, focus, 1-6 typing steps
   with log-normal gaps around 2 s, maybe a paste); 20 % of rows have no journey at all.
4. Link: if the SMS itself contains a URL (about a fifth of the spam does) it is used; otherwise
   a URL is attached with ``url_p``: spam draws from fresh random domains on risky TLDs, random
   ``.com``/``.co.uk`` campaign domains with prize-like path tokens, shorteners, bare IPs and
   spam hosted on trusted sites; ham draws mostly from popular sites, some shorteners and small
   sites. Lexical features come from ``scoring.features.url``; history (URL/domain age, post
   counts, reports, domain spam rate) from log-normal/Poisson/beta draws per link kind;
   ``url_reputation`` from ``scoring.features.reputation`` fed that history. A link may carry a
   preview (60 %): the index of another text of the same split whose label is the post's label
   (90 % for spam, 97 % for ham) or the other label, so ``preview_prob`` can be scored by the
   text model on text it never trained on.
5. Post: shares and comments at scoring time, reports on the post (count, distinct reporters,
   spam reasons), IP history (post count, spam rate).
6. Campaign (``CAMPAIGN``): near-copies of the text across accounts. The assumption: most spam
   is in no campaign (a one-off, or copies too few or too far apart to be found), and a quarter
   of it is a blast whose campaign holds 2-50 posts (log-uniform) from 2 to all of those posts'
   authors; ham is in a campaign only as a canned reply ("thanks!", "happy birthday") in 3 % of
   rows, of 2-4 posts from as many authors. Drawn from a stream of its own (seeded from the same
   seed), so the other columns are what they were before the campaign columns existed.

Every number below is in ``ARCHETYPES`` or ``LINK_KINDS`` and is copied into the model card by
``describe_distributions()``. Generation is deterministic for a given seed and input.
"""

from __future__ import annotations

import bisect
import itertools
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

import numpy as np
import pandas as pd

from contracts.feature_schema import BEHAVIOUR_FEATURES, LINK_FEATURES, no_link_values
from core.urls import InvalidUrl, normalize_url
from scoring.features.email import email_features
from scoring.features.journey import journey_features
from scoring.features.reputation import LocalReputationProvider, ReputationContext, url_reputation
from scoring.features.url import url_lexical_features

__all__ = [
    "ARCHETYPES",
    "CAMPAIGN",
    "CROSSOVER_P",
    "FEATURE_COLUMNS",
    "LINK_KINDS",
    "META_COLUMNS",
    "QUIET_NEWCOMER_WEIGHT",
    "Archetype",
    "LinkKind",
    "describe_distributions",
    "extract_url",
    "generate",
]

CROSSOVER_P = 0.05
NO_JOURNEY_P = 0.20
PREVIEW_P = 0.60
PREVIEW_SAME_LABEL_P = {1: 0.90, 0: 0.97}
# label -> (share of rows in a campaign, (smallest, largest) campaign size); see step 6 above.
CAMPAIGN: dict[int, tuple[float, tuple[int, int]]] = {1: (0.25, (2, 50)), 0: (0.03, (2, 4))}
_T0 = datetime(2026, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Archetype:
    name: str
    label: int  # which label's mixture it belongs to
    weight: float  # mixture weight within that label
    age_days: tuple[float, float]  # log-normal (median, sigma)
    email_p: tuple[float, float, float, float]  # disposable, free, own domain, none
    friends: tuple[float, float]  # log-normal (median, sigma)
    followers: tuple[float, float]
    verified_p: float
    posts_per_day: float  # platform post count ~ Poisson(min(age, 3650) * rate)
    spam_post_p: float  # share of platform posts that were spam
    report_rate: float  # reports against the user per platform post
    seen_posts: float  # Poisson mean of posts this service saw
    seen_spam_p: float  # share of those decided spam
    url_p: float  # chance the post carries a link (when the text has none)
    repeat_link: float  # Poisson mean of earlier shares of this link by the user
    repeat_text: float  # Poisson mean of earlier posts of this same text
    bot_journey_p: float
    paste_p: float  # paste step in a human journey
    post_reports: float  # Poisson mean of reports on this post
    shares: float  # Poisson mean
    comments: float
    ip_posts: tuple[float, float]  # log-normal (median, sigma)
    ip_spam: tuple[float, float]  # beta(a, b)
    no_profile_p: float = 0.0  # the platform sent no account data (see _row)


QUIET_NEWCOMER_WEIGHT = 0.25
# Shared by both labels (see the module docstring): no history, no link, no reports, a human
# journey or none; half the time no profile at all.
_QUIET_NEWCOMER = Archetype(
    "quiet_newcomer", 0, QUIET_NEWCOMER_WEIGHT, (3, 1.5), (0.05, 0.75, 0.10, 0.10), (2, 1.5), (2, 1.5), 0.0,
    0.3, 0.0, 0.0, 0.3, 0.0, 0.08, 0.0, 0.0, 0.03, 0.2, 0.02, 0.3, 0.3, (3, 1.2), (1, 30), 0.5,
)  # fmt: skip

ARCHETYPES: tuple[Archetype, ...] = (
    # --- spam authors -----------------------------------------------------------------------
    Archetype(
        "bot_farm", 1, 0.34, (6, 1.2), (0.40, 0.45, 0.05, 0.10), (4, 1.3), (8, 1.5), 0.005,
        2.5, 0.30, 0.08, 10, 0.45, 0.75, 4.0, 4.0, 0.70, 0.5, 0.45, 2.0, 0.3, (40, 1.2), (3, 4),
    ),
    Archetype(
        "compromised_account", 1, 0.22, (500, 0.9), (0.02, 0.70, 0.23, 0.05), (120, 1.0), (90, 1.2), 0.04,
        0.35, 0.04, 0.01, 4, 0.15, 0.65, 1.5, 1.0, 0.30, 0.3, 0.35, 1.0, 0.8, (6, 1.0), (1, 12),
    ),
    Archetype(
        "casual_spammer", 1, 0.19, (45, 1.3), (0.15, 0.65, 0.10, 0.10), (25, 1.2), (20, 1.3), 0.01,
        1.0, 0.12, 0.04, 6, 0.30, 0.60, 1.2, 1.5, 0.25, 0.6, 0.50, 1.0, 0.5, (10, 1.2), (2, 8),
    ),
    replace(_QUIET_NEWCOMER, label=1),
    # --- ham authors ------------------------------------------------------------------------
    Archetype(
        "regular_user", 0, 0.58, (700, 0.9), (0.01, 0.72, 0.22, 0.05), (120, 1.0), (100, 1.2), 0.06,
        0.3, 0.003, 0.003, 8, 0.01, 0.15, 0.2, 0.05, 0.02, 0.15, 0.05, 1.5, 2.0, (5, 1.0), (1, 60),
    ),
    Archetype(
        "new_user", 0, 0.13, (12, 1.1), (0.06, 0.75, 0.12, 0.07), (8, 1.2), (5, 1.3), 0.01,
        0.6, 0.01, 0.008, 1.5, 0.03, 0.12, 0.2, 0.2, 0.06, 0.25, 0.08, 0.8, 1.0, (8, 1.2), (1, 30),
    ),
    Archetype(
        "power_user", 0, 0.04, (1500, 0.5), (0.0, 0.40, 0.60, 0.0), (800, 1.0), (3000, 1.5), 0.55,
        1.5, 0.001, 0.002, 20, 0.005, 0.35, 0.8, 0.3, 0.04, 0.3, 0.12, 6.0, 6.0, (4, 1.0), (1, 80),
    ),
    _QUIET_NEWCOMER,
)  # fmt: skip


@dataclass(frozen=True)
class LinkKind:
    name: str
    spam_weight: float
    ham_weight: float
    url_age_hours: tuple[float, float]  # log-normal (median, sigma)
    domain_age_hours: tuple[float, float]
    url_posts: float  # 1 + Poisson mean
    domain_posts: tuple[float, float]  # log-normal (median, sigma)
    domain_spam: tuple[float, float]  # beta(a, b)
    domain_reports_per_post: float
    allow_listed_p: float


LINK_KINDS: tuple[LinkKind, ...] = (
    LinkKind("risky_tld_fresh", 0.25, 0.02, (5, 1.5), (40, 1.5), 6, (25, 1.0), (4, 3), 0.12, 0.0),
    LinkKind("campaign_domain", 0.25, 0.10, (8, 1.5), (200, 1.8), 5, (30, 1.2), (3, 4), 0.08, 0.0),
    LinkKind("shortener", 0.22, 0.10, (20, 2.0), (40000, 0.5), 3, (5000, 1.0), (2, 10), 0.01, 0.0),
    LinkKind("ip_host", 0.06, 0.005, (10, 1.5), (100, 1.5), 4, (10, 1.0), (3, 3), 0.10, 0.0),
    LinkKind("trusted_host_abuse", 0.22, 0.0, (12, 1.8), (60000, 0.4), 3, (20000, 1.0), (1, 40), 0.002, 0.2),
    LinkKind("popular_site", 0.0, 0.63, (300, 2.0), (60000, 0.4), 2, (20000, 1.0), (1, 200), 0.0005, 0.4),
    LinkKind("small_site", 0.0, 0.145, (600, 2.0), (8000, 1.5), 1, (40, 1.2), (1, 25), 0.01, 0.05),
)  # fmt: skip

_RISKY = ("xyz", "top", "click", "link", "win", "loan", "icu", "buzz", "gq", "tk")
_SPAM_WORDS = ("win", "free", "prize", "claim", "offer", "bonus", "cash", "gift", "winner", "ringtone", "txt", "urgent")
_HAM_WORDS = ("news", "story", "photos", "video", "recipe", "review", "blog", "event", "weather", "match", "music")
_SHORTENERS = ("bit.ly", "tinyurl.com", "t.co", "goo.gl", "ow.ly", "is.gd", "cutt.ly", "rebrand.ly")
_TRUSTED = ("sites.google.com", "docs.google.com", "drive.google.com", "github.io", "dropbox.com", "wixsite.com")
_POPULAR = (
    "youtube.com", "bbc.co.uk", "en.wikipedia.org", "github.com", "nytimes.com", "theguardian.com",
    "instagram.com", "spotify.com", "imdb.com", "amazon.co.uk", "reddit.com", "maps.google.com",
)  # fmt: skip
_DISPOSABLE = ("mailinator.com", "guerrillamail.com", "10minutemail.com", "yopmail.com", "trashmail.com")
_FREE = ("gmail.com", "yahoo.com", "hotmail.com", "outlook.com", "aol.com", "icloud.com", "gmx.com")

_ALNUM = "abcdefghijklmnopqrstuvwxyz0123456789"
_URL_IN_TEXT = re.compile(
    r"(?i)\b((?:https?://|www\.)[^\s,;\"<>()]+|[a-z0-9-]+\.(?:com|co\.uk|net|org|biz|info|tv|mobi)(?:/[^\s,;\"<>()]*)?)"
)

# Columns of the frame generate() returns, besides the feature columns.
META_COLUMNS: tuple[str, ...] = (
    "text_index", "context", "text", "label", "archetype", "link_kind", "url", "email_domain", "preview_index",
)  # fmt: skip
FEATURE_COLUMNS: tuple[str, ...] = LINK_FEATURES + tuple(n for n in BEHAVIOUR_FEATURES if n not in LINK_FEATURES)


def extract_url(text: str) -> str | None:
    """The first URL-looking token of an SMS (``www.getzed.co.uk``), normalized, or None."""
    for match in _URL_IN_TEXT.finditer(text):
        candidate = match.group(1).rstrip(".!?:'")
        try:
            url = normalize_url(candidate)
        except InvalidUrl:
            continue
        if "." in (urlsplit(url).hostname or ""):
            return url
    return None


class _Draw:
    """Small helpers over one numpy Generator so every draw goes through the same stream."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng

    def lognormal(self, median: float, sigma: float) -> float:
        return float(median * np.exp(sigma * self.rng.standard_normal()))

    def count(self, median: float, sigma: float) -> int:
        return round(self.lognormal(median, sigma))

    def poisson(self, mean: float) -> int:
        return int(self.rng.poisson(max(mean, 0.0)))

    def bernoulli(self, p: float) -> bool:
        return bool(self.rng.random() < p)

    def beta(self, a: float, b: float) -> float:
        return float(self.rng.beta(a, b))

    def choice(self, items: Sequence[Any]) -> Any:
        return items[int(self.rng.integers(len(items)))]

    def weighted(self, weights: Sequence[float]) -> int:
        cumulative = list(itertools.accumulate(weights))
        return min(bisect.bisect_right(cumulative, self.rng.random() * cumulative[-1]), len(cumulative) - 1)

    def token(self, n: int, alphabet: str = "abcdefghijklmnopqrstuvwxyz") -> str:
        return "".join(alphabet[int(i)] for i in self.rng.integers(len(alphabet), size=n))


def _archetype(d: _Draw, label: int) -> Archetype:
    source_label = 1 - label if d.bernoulli(CROSSOVER_P) else label
    pool = [a for a in ARCHETYPES if a.label == source_label]
    return pool[d.weighted([a.weight for a in pool])]


def _email_domain(d: _Draw, a: Archetype) -> str:
    kind = d.weighted(a.email_p)
    if kind == 0:
        return str(d.choice(_DISPOSABLE))
    if kind == 1:
        return str(d.choice(_FREE))
    if kind == 2:
        return f"{d.token(int(d.rng.integers(4, 10)))}.{d.choice(('com', 'co.uk', 'org', 'net', 'io'))}"
    return ""


def _journey(d: _Draw, a: Archetype, at: datetime) -> list[dict[str, str]]:
    if d.bernoulli(NO_JOURNEY_P):
        return []
    steps: list[tuple[str, float]]
    if d.bernoulli(a.bot_journey_p):
        script = d.weighted([0.35, 0.35, 0.30])
        if script == 0:  # direct submit
            steps = [("submit", 0.0)] if d.bernoulli(0.5) else [("page_view", 0.0), ("submit", d.lognormal(0.8, 0.5))]
        elif script == 1:  # paste and submit in under a second
            t = d.lognormal(0.6, 0.6)
            steps = [("open_composer", 0.0), ("paste", t), ("submit", t + float(d.rng.uniform(0.05, 0.9)))]
        else:  # fixed timer
            gap = float(d.choice((0.25, 0.5, 1.0)))
            steps = [(s, i * gap) for i, s in enumerate(("open_composer", "focus_textarea", "type", "type", "submit"))]
    else:
        t = 0.0
        steps = [("open_composer", t)]
        t += d.lognormal(1.2, 0.6)
        steps.append(("focus_textarea", t))
        if d.bernoulli(a.paste_p):
            t += d.lognormal(2.0, 0.8)
            steps.append(("paste", t))
        for _ in range(int(d.rng.integers(1, 7))):
            t += d.lognormal(2.0, 0.8)
            steps.append(("type", t))
        t += d.lognormal(1.5, 0.7)
        steps.append(("submit", t))
    return [{"step": name, "at": (at + timedelta(seconds=s)).isoformat()} for name, s in steps]


def _url_for(d: _Draw, kind: LinkKind) -> str:
    if kind.name == "risky_tld_fresh":
        host = f"{d.token(int(d.rng.integers(5, 12)), _ALNUM)}.{d.choice(_RISKY)}"
        if d.bernoulli(0.4):
            host = f"{d.choice(('secure', 'login', 'promo', 'win'))}.{host}"
        path = "/".join(d.choice(_SPAM_WORDS) for _ in range(int(d.rng.integers(1, 4))))
        query = f"?id={int(d.rng.integers(10_000, 99_999_999))}" if d.bernoulli(0.6) else ""
        return f"http://{host}/{path}{query}"
    if kind.name == "campaign_domain":
        word = d.choice(_SPAM_WORDS)
        host = f"www.{word}{d.token(int(d.rng.integers(2, 6)), _ALNUM)}"
        host += f".{d.choice(('com', 'co.uk', 'net', 'biz', 'info'))}"
        path = "/".join(d.choice(_SPAM_WORDS) for _ in range(int(d.rng.integers(0, 3))))
        return f"http://{host}/{path}"
    if kind.name == "shortener":
        return f"https://{d.choice(_SHORTENERS)}/{d.token(7, _ALNUM + _ALNUM[:26].upper())}"
    if kind.name == "ip_host":
        octets = ".".join(str(int(x)) for x in d.rng.integers(1, 255, size=4))
        return f"http://{octets}/{d.choice(_SPAM_WORDS)}.php?u={int(d.rng.integers(1000, 99999))}"
    if kind.name == "trusted_host_abuse":
        host = d.choice(_TRUSTED)
        if host in ("github.io", "wixsite.com"):
            host = f"{d.token(8)}.{host}"
        return f"https://{host}/{d.choice(_SPAM_WORDS)}-{d.choice(_SPAM_WORDS)}/{d.token(10)}"
    if kind.name == "popular_site":
        host = d.choice(_POPULAR)
        words = "-".join(d.choice(_HAM_WORDS) for _ in range(int(d.rng.integers(1, 5))))
        return f"https://{host}/{d.choice(('2025', '2026', 'watch', 'r', 'wiki', 'news'))}/{words}"
    # small_site
    host = f"{d.token(int(d.rng.integers(5, 11)))}.{d.choice(('com', 'org', 'co.uk', 'net', 'de', 'xyz'))}"
    return f"https://{host}/{d.choice(_HAM_WORDS)}/{d.choice(_HAM_WORDS)}"


def _link_values(d: _Draw, label: int, url: str, kind: LinkKind) -> dict[str, float]:
    values = url_lexical_features(url)
    domain_posts = max(1, d.count(*kind.domain_posts))
    url_posts = min(domain_posts, 1 + d.poisson(kind.url_posts if label else kind.url_posts / 2))
    domain_spam_rate = d.beta(*kind.domain_spam)
    url_age = d.lognormal(*kind.url_age_hours)
    status = "allow" if d.bernoulli(kind.allow_listed_p) else "unknown"
    context = ReputationContext(
        domain_status=status,
        domain_post_count=domain_posts,
        domain_spam_count=round(domain_spam_rate * domain_posts),
    )
    values.update(
        {
            "url_age_hours": url_age,
            "domain_age_hours": max(url_age, d.lognormal(*kind.domain_age_hours)),
            "url_post_count": float(url_posts),
            "domain_post_count": float(domain_posts),
            "domain_report_count": float(d.poisson(domain_posts * kind.domain_reports_per_post)),
            "domain_spam_rate": domain_spam_rate,
            "url_reputation": url_reputation(url, context, [LocalReputationProvider()]),
        }
    )
    return values


def _link_kind(d: _Draw, label: int, url: str | None) -> LinkKind:
    if url is not None:  # a URL found in the SMS: SMS spam links are small campaign sites
        return next(k for k in LINK_KINDS if k.name == ("campaign_domain" if label else "small_site"))
    return LINK_KINDS[d.weighted([k.spam_weight if label else k.ham_weight for k in LINK_KINDS])]


def _row(d: _Draw, text: str, label: int, at: datetime) -> dict[str, Any]:
    a = _archetype(d, label)
    row: dict[str, Any] = {"archetype": a.name}

    # Profile
    age_days = d.lognormal(*a.age_days)
    posts = d.poisson(min(age_days, 3650) * a.posts_per_day)
    spam_posts = int(d.rng.binomial(posts, a.spam_post_p))
    seen = d.poisson(a.seen_posts)
    seen_spam = int(d.rng.binomial(seen, a.seen_spam_p))
    email_domain = _email_domain(d, a)
    row.update(email_features(email_domain))
    row.update(
        {
            "email_domain": email_domain,
            "user_age_days": age_days,
            "user_friends": float(d.count(*a.friends)),
            "user_followers": float(d.count(*a.followers)),
            "user_verified": float(d.bernoulli(a.verified_p)),
            "user_posts": float(posts),
            "user_spam_posts": float(spam_posts),
            "user_spam_report": float(d.poisson(posts * a.report_rate)),
            "user_seen_posts": float(seen),
            "user_spam_rate": seen_spam / seen if seen else 0.0,
            "user_post_count": float(1 + d.poisson(a.repeat_text)),
        }
    )
    if a.no_profile_p and d.bernoulli(a.no_profile_p):
        # What ingest stores for an author the platform sent nothing about.
        row.update(email_features(""))
        row.update(
            dict.fromkeys(("user_age_days", "user_friends", "user_followers", "user_verified", "user_posts"), 0.0)
            | {"email_domain": "", "user_spam_posts": 0.0, "user_spam_report": 0.0}
        )
    row.update(journey_features(_journey(d, a, at)))

    # Reports on this post
    reports = d.poisson(a.post_reports)
    distinct = min(reports, max(1, int(d.rng.binomial(reports, 0.85)))) if reports else 0
    row.update(
        {
            "report_count": float(reports),
            "report_distinct_reporters": float(distinct),
            "report_spam_reason_count": float(d.rng.binomial(reports, 0.8 if label else 0.35)),
        }
    )

    # Link
    url = extract_url(text)
    kind: LinkKind | None = None
    if url is not None or d.bernoulli(a.url_p):
        kind = _link_kind(d, label, url)
        url = url or normalize_url(_url_for(d, kind))
        row.update(_link_values(d, label, url, kind))
        row["user_link_count"] = float(1 + d.poisson(a.repeat_link))
    else:
        row.update(no_link_values())
        row["user_link_count"] = 0.0
    row["url"] = url or ""
    row["link_kind"] = kind.name if kind else ""

    # Post and IP
    row["post_share_count"] = float(d.poisson(a.shares))
    row["post_comment_count"] = float(d.poisson(a.comments))
    row["ip_post_count"] = float(1 + d.count(*a.ip_posts))
    row["ip_spam_rate"] = d.beta(*a.ip_spam)
    return row


def _campaign_values(d: _Draw, label: int) -> dict[str, float]:
    share, (smallest, largest) = CAMPAIGN[label]
    if not d.bernoulli(share):
        return {"campaign_size": 0.0, "campaign_authors": 0.0}
    size = int(np.clip(round(np.exp(d.rng.uniform(np.log(smallest), np.log(largest)))), smallest, largest))
    # Spam blasts spread over some or all of their posts' accounts; a canned reply is one per person.
    authors = int(d.rng.integers(2, size + 1)) if label else size
    return {"campaign_size": float(size), "campaign_authors": float(authors)}


def generate(
    texts: Sequence[str],
    labels: Sequence[int],
    *,
    seed: int,
    contexts_per_text: int = 1,
) -> pd.DataFrame:
    """One row per (text, context): ``META_COLUMNS`` + ``FEATURE_COLUMNS`` (LINK_FEATURES then
    the BEHAVIOUR_FEATURES not already in it), label from ``labels``. Deterministic in ``seed``.

    ``preview_index`` is the index into ``texts`` of the link preview's text, -1 without one."""
    if len(texts) != len(labels):
        raise ValueError("texts and labels differ in length")
    d = _Draw(np.random.default_rng(seed))
    campaigns = _Draw(np.random.default_rng([seed, 6]))  # step 6's own stream (module docstring)
    by_label = {lab: [i for i, y in enumerate(labels) if int(y) == lab] for lab in (0, 1)}
    rows: list[dict[str, Any]] = []
    for context in range(contexts_per_text):
        for i, (text, label) in enumerate(zip(texts, labels, strict=True)):
            label = int(label)
            at = _T0 + timedelta(seconds=float(d.rng.uniform(0, 30 * 86400)))
            row = _row(d, text, label, at)
            row.update(_campaign_values(campaigns, label))
            preview = -1
            if row["url_present"] and d.bernoulli(PREVIEW_P):
                preview_label = label if d.bernoulli(PREVIEW_SAME_LABEL_P[label]) else 1 - label
                pool = [j for j in by_label[preview_label] if j != i] or [j for j in range(len(texts)) if j != i]
                preview = int(d.choice(pool)) if pool else -1
            row.update({"text_index": i, "context": context, "text": text, "label": label, "preview_index": preview})
            rows.append(row)
    frame = pd.DataFrame(rows, columns=[*META_COLUMNS, *FEATURE_COLUMNS])
    frame[list(FEATURE_COLUMNS)] = frame[list(FEATURE_COLUMNS)].astype("float64")
    return frame


def describe_distributions() -> dict[str, Any]:
    """Every generator parameter, for the model card."""
    return {
        "crossover_p": CROSSOVER_P,
        "no_journey_p": NO_JOURNEY_P,
        "preview_p": PREVIEW_P,
        "preview_same_label_p": {str(k): v for k, v in PREVIEW_SAME_LABEL_P.items()},
        "campaign": {str(k): {"share": p, "size": list(size)} for k, (p, size) in CAMPAIGN.items()},
        "archetypes": [asdict(a) for a in ARCHETYPES],
        "link_kinds": [asdict(k) for k in LINK_KINDS],
    }
