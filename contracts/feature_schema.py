"""The feature vector layout shared by the synthetic generator, the trainers, the Triton
models and the pipeline that computes features from the database. Order matters: a vector is
`[values[name] for name in NAMES]`. Changing a list means retraining the model that reads it.

Pure Python on purpose: the Triton python-backend models import nothing from Django."""

from __future__ import annotations

from collections.abc import Mapping

# Angle 1: link and IP (docs/design.md).
LINK_FEATURES: tuple[str, ...] = (
    "url_present",  # 0/1; a post without a link gets NO_LINK_VALUES for the URL-dependent features
    "url_age_hours",  # hours since this service first saw the normalized URL
    "domain_age_hours",  # hours since the registrable domain was first seen here
    "url_is_shortener",  # antispam-link-shorteners list
    "url_is_ip_host",  # http://1.2.3.4/...
    "url_tld_risky",  # TLD in a short list of TLDs abused by spam campaigns
    "url_subdomain_count",
    "url_path_depth",
    "url_path_token_count",
    "url_length",
    "url_has_query",
    "url_digit_ratio",  # digits in host+path / length
    "url_post_count",  # posts that carried this URL here
    "domain_post_count",
    "domain_report_count",
    "domain_spam_rate",  # spam decisions / posts for this domain (0 when unseen)
    "post_share_count",
    "post_comment_count",
    "url_reputation",  # pluggable provider (url_wot_score / url_google_score style), 0..1, 0.5 unknown
    "ip_post_count",
    "ip_spam_rate",
)

# Angle 2: social behaviour: profile, journey, reports on the post (docs/design.md).
BEHAVIOUR_FEATURES: tuple[str, ...] = (
    "user_age_days",
    "user_email_disposable",
    "user_email_free_provider",
    "user_friends",
    "user_followers",
    "user_verified",
    "user_posts",  # platform-side post count
    "user_spam_posts",  # platform-side
    "user_spam_report",  # platform-side reports against the user
    "user_seen_posts",  # posts this service saw from the author
    "user_spam_rate",  # this service's spam decisions / seen posts
    "user_link_count",  # times this user shared this link
    "user_post_count",  # times this user posted this same text
    "journey_step_count",
    "journey_seconds",  # first step to last
    "journey_steps_per_second",
    "journey_bot_pattern",  # 0/1: a known bot-like sequence (e.g. direct API submit, paste+submit < 1s)
    "journey_paste",  # 0/1: a paste step
    "report_count",
    "report_distinct_reporters",
    "report_spam_reason_count",
    # Near-copies of the post's text across accounts (its campaign; 0 when in none). Counted
    # after campaign detection has put the post in one, so the post itself is a member.
    "campaign_size",  # posts in the campaign
    "campaign_authors",  # distinct authors in the campaign
)

# The fusion tree sees the sub-model probabilities plus a few raw signals.
FUSION_FEATURES: tuple[str, ...] = (
    "text_prob",
    "preview_prob",  # -1 when the platform sent no link preview
    "link_prob",
    "behaviour_prob",
    "url_present",
    "report_count",
    "user_age_days",
    "domain_report_count",
    "campaign_size",
    "campaign_authors",
)


# What the dashboard shows for a feature name (the model explanation); a name missing here is
# shown with its underscores as spaces.
FEATURE_DISPLAY_NAMES: Mapping[str, str] = {
    "url_present": "Has a link",
    "url_age_hours": "Link first seen (hours ago)",
    "domain_age_hours": "Domain first seen (hours ago)",
    "url_is_shortener": "Link shortener",
    "url_is_ip_host": "Link to a bare IP address",
    "url_tld_risky": "Risky top-level domain",
    "url_subdomain_count": "Subdomains in the link",
    "url_path_depth": "Link path depth",
    "url_path_token_count": "Words in the link path",
    "url_length": "Link length",
    "url_has_query": "Link has a query string",
    "url_digit_ratio": "Digits in the link",
    "url_post_count": "Posts with this link",
    "domain_post_count": "Posts with this domain",
    "domain_report_count": "Reports on this domain",
    "domain_spam_rate": "Domain spam rate",
    "post_share_count": "Shares",
    "post_comment_count": "Comments",
    "url_reputation": "Link reputation",
    "ip_post_count": "Posts from this IP",
    "ip_spam_rate": "IP spam rate",
    "user_age_days": "Account age (days)",
    "user_email_disposable": "Disposable email address",
    "user_email_free_provider": "Free email provider",
    "user_friends": "Friends",
    "user_followers": "Followers",
    "user_verified": "Verified account",
    "user_posts": "Posts on the platform",
    "user_spam_posts": "Spam posts on the platform",
    "user_spam_report": "Reports against the author",
    "user_seen_posts": "Author's posts seen here",
    "user_spam_rate": "Author's spam rate",
    "user_link_count": "Times the author shared this link",
    "user_post_count": "Times the author posted this text",
    "journey_step_count": "Steps before posting",
    "journey_seconds": "Time to post (seconds)",
    "journey_steps_per_second": "Posting speed (steps per second)",
    "journey_bot_pattern": "Bot-like posting pattern",
    "journey_paste": "Text was pasted",
    "report_count": "Reports",
    "report_distinct_reporters": "Distinct reporters",
    "report_spam_reason_count": "Reports giving spam as the reason",
    "campaign_size": "Near-copies in its campaign",
    "campaign_authors": "Accounts in its campaign",
    "text_prob": "Text model score",
    "preview_prob": "Linked page model score",
    "link_prob": "Link model score",
    "behaviour_prob": "Behaviour model score",
}


def feature_display_name(name: str) -> str:
    """A person's name for a feature: the schema's, else the key with spaces, capitalised."""
    known = FEATURE_DISPLAY_NAMES.get(name)
    if known:
        return known
    words = name.replace("_", " ").strip()
    return words[:1].upper() + words[1:]


# A post without a link: the URL-dependent LINK_FEATURES take these values (url_reputation is
# "unknown", everything else 0). post_share_count, post_comment_count, ip_post_count and
# ip_spam_rate describe the post and its IP and are filled for every post, link or not; the
# behaviour feature user_link_count is 0 without a link.
POST_LEVEL_LINK_FEATURES: tuple[str, ...] = ("post_share_count", "post_comment_count", "ip_post_count", "ip_spam_rate")
NO_LINK_VALUES: Mapping[str, float] = {
    name: (0.5 if name == "url_reputation" else 0.0) for name in LINK_FEATURES if name not in POST_LEVEL_LINK_FEATURES
}


def no_link_values() -> dict[str, float]:
    """A fresh copy of ``NO_LINK_VALUES``."""
    return dict(NO_LINK_VALUES)


def vector(values: Mapping[str, float], names: tuple[str, ...]) -> list[float]:
    """Lay out `values` in the order of `names`; a missing feature is an error, not a zero."""
    missing = [n for n in names if n not in values]
    if missing:
        raise KeyError(f"missing features: {', '.join(missing)}")
    return [float(values[n]) for n in names]
