"""A small, realistic-looking world for the browser tests and screenshots."""

from __future__ import annotations

import random
from datetime import timedelta
from typing import TypedDict

from django.utils import timezone

from moderation.models import Author, Domain, Post, PostStatus, Source
from moderation.services.priority import posts_report_weight_refresh
from tests.dashboard.dashboard_factories import (
    AuthorFactory,
    DomainFactory,
    IpFactory,
    LinkFactory,
    PostFactory,
    ReportFactory,
    ScoreFactory,
    SourceFactory,
)

TEXTS = [
    ("Limited offer!!! Get 90% off designer watches, today only, click the link", 0.97),
    ("Earn $500/day from home with this one simple trick — DM me for details", 0.94),
    ("Your account has been locked. Verify your password here to avoid suspension", 0.92),
    ("Free crypto airdrop for the first 1000 followers, connect your wallet", 0.89),
    ("Check out my new blog post about sourdough baking and starter care", 0.71),
    ("Anyone going to the meetup on Thursday? Slides from last time are here", 0.58),
    ("Great thread, thanks for sharing the benchmark results", 0.44),
    ("Looking for feedback on my open-source CLI for parsing log files", 0.38),
    ("Cheap followers and likes, instant delivery, best price guaranteed", 0.86),
    ("Photos from the trail run this morning, the fog was unreal", 0.27),
    ("Buy verified accounts in bulk, aged 5+ years, PayPal accepted", 0.91),
    ("Recipe: lemon ricotta pancakes, takes 20 minutes", 0.22),
]

# As the real pipeline stores contributions: Triton model names, contracts.feature_schema names.
CONTRIB = {
    "fusion_model": {
        "text_prob": 0.42,
        "behaviour_prob": 0.31,
        "link_prob": 0.18,
        "report_count": 0.12,
        "preview_prob": -0.04,
        "bias": -0.9,
    },
    "link_model": {
        "url_age_hours": 0.61,
        "domain_report_count": 0.35,
        "url_tld_risky": 0.22,
        "url_subdomain_count": 0.09,
        "url_reputation": -0.27,
        "url_post_count": 0.05,
        "bias": -1.1,
    },
    "behaviour_model": {
        "user_age_days": 0.48,
        "journey_seconds": 0.37,
        "user_followers": -0.21,
        "user_spam_posts": 0.19,
        "user_verified": -0.08,
        "user_email_disposable": 0.16,
        "bias": -1.3,
    },
}


class World(TypedDict):
    posts: list[Post]
    spammer: Author
    shady: Domain
    source: Source


def seed_world(*, n_extra: int = 0) -> World:
    rng = random.Random(7)
    now = timezone.now()
    source = SourceFactory(name="Chirp", slug="chirp")
    shady = DomainFactory(name="cheap-deals.shop", report_count=14, post_count=40)
    domains = [shady, DomainFactory(name="medium.com"), DomainFactory(name="github.com"), DomainFactory(name="bit.ly")]
    spammer = AuthorFactory(source=source, username="deal_hunter_99", external_id="u-991", followers_count=3)
    authors = [spammer] + [
        AuthorFactory(
            source=source, username=name, followers_count=rng.randint(10, 900), friends_count=rng.randint(5, 300)
        )
        for name in ("maria.k", "devon_codes", "trailrunner", "bakes_bread")
    ]
    shared_ip = IpFactory(address="203.0.113.7")
    posts: list[Post] = []
    for i, (text, score) in enumerate(TEXTS * (1 + n_extra)):
        spammy = score > 0.8
        author = spammer if spammy and i % 2 == 0 else authors[1 + i % 4]
        domain = shady if spammy else domains[1 + i % 3]
        link = LinkFactory(domain=domain, url=f"https://{domain.name}/p/{i}-{rng.randint(1000, 9999)}")
        post = PostFactory(
            source=source,
            author=author,
            text=text,
            link=link,
            url=link.url,
            ip=shared_ip if spammy else IpFactory(),
            final_score=round(score - rng.random() * 0.02, 3),
            report_count=(rng.randint(1, 6) if spammy else rng.choice([0, 0, 1])),
            received_at=now - timedelta(minutes=rng.randint(2, 60 * 30)),
            preview_title="Designer watches — 90% off" if spammy else "",
        )
        ScoreFactory(
            post=post,
            text_score=min(1.0, score + rng.uniform(-0.1, 0.05)),
            link_score=min(1.0, score + rng.uniform(-0.3, 0.05)),
            behaviour_score=min(1.0, score + rng.uniform(-0.2, 0.05)),
            preview_score=min(1.0, score + rng.uniform(-0.2, 0.05)),
            final_score=post.final_score,
            contributions=CONTRIB,
        )
        for r in range(min(post.report_count, 3)):
            ReportFactory(
                post=post, reason=["spam", "scam", "phishing"][r], details="Looks like a scam" if r == 0 else ""
            )
        posts.append(post)
    PostFactory(
        source=source, author=spammer, status=PostStatus.REMOVED, final_score=0.93, link=LinkFactory(domain=shady)
    )
    # Factories write rows directly: weigh the reports and set the queue priority as reports and
    # scoring do in the running system.
    posts_report_weight_refresh(post_ids=[p.pk for p in posts])
    return {"posts": posts, "spammer": spammer, "shady": shady, "source": source}
