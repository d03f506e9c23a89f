from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from contracts.feature_schema import BEHAVIOUR_FEATURES, LINK_FEATURES
from moderation.models import BlockKind, Report, SourceDomainStats, SourceIpStats, SourceLinkStats
from moderation.services.blocklists import source_block_add
from scoring.features.extract import (
    PostFeatures,
    SourceBlockHits,
    features_for_loaded_posts,
    features_for_posts,
    post_with_features,
    posts_for_scoring,
    posts_with_features,
)
from tests.scoring.pipeline_support import make_author, make_ip, make_link, make_post, make_source

pytestmark = pytest.mark.django_db


def _batch(n: int) -> list[int]:
    source = make_source()
    ids = []
    for i in range(n):
        author = make_author(source)
        link = make_link()
        post = make_post(author=author, link=link, ip=make_ip(), text=f"text {i}")
        Report.objects.create(post=post, reporter_id="r1", reason="spam")
        ids.append(post.id)
    return ids


@pytest.mark.parametrize("size", [1, 25])
def test_query_count_is_fixed_whatever_the_batch_size(size, django_assert_num_queries):
    ids = _batch(size)
    with django_assert_num_queries(8):
        features = features_for_posts(ids)
    assert set(features) == set(ids)


def test_features_follow_the_schema_and_read_the_database():
    source = make_source()
    author = make_author(
        source,
        account_created_at=timezone.now() - timedelta(days=10),
        email_domain="mailinator.com",
        friends_count=3,
        verified=True,
        post_count=4,
        spam_count=1,
    )
    link = make_link("https://bit.ly/abc", domain="bit.ly")
    # The all-sources counters are never read: the post's own source's are.
    link.domain.post_count, link.domain.spam_count, link.domain.report_count = 1000, 0, 99
    link.domain.save()
    ip = make_ip(post_count=1000, spam_count=0)
    SourceDomainStats.objects.create(source=source, domain=link.domain, post_count=10, spam_count=5, report_count=2)
    SourceIpStats.objects.create(source=source, ip=ip, post_count=8, spam_count=2)
    SourceLinkStats.objects.create(source=source, link=link, post_count=3)
    first = make_post(author=author, link=link, ip=ip, text="buy now")
    post = make_post(
        author=author,
        link=link,
        ip=ip,
        text="buy now",
        share_count=7,
        preview_title="Title",
        preview_text="page text",
        journey=[
            {"step": "open_composer", "at": "2026-01-01T00:00:00Z"},
            {"step": "submit", "at": "2026-01-01T00:00:04Z"},
        ],
    )
    Report.objects.create(post=post, reporter_id="a", reason="spam")
    Report.objects.create(post=post, reporter_id="a", reason="abuse")
    Report.objects.create(post=post, reporter_id="b", reason="spam")

    f = features_for_posts([post.id, first.id])[post.id]
    assert list(f.link) == list(LINK_FEATURES)
    assert list(f.behaviour) == list(BEHAVIOUR_FEATURES)
    assert f.link["url_present"] == 1.0
    assert f.link["url_is_shortener"] == 1.0
    assert f.link["domain_spam_rate"] == 0.5
    assert f.link["domain_report_count"] == 2.0
    assert f.link["ip_spam_rate"] == 0.25
    assert f.link["ip_post_count"] == 8.0 and f.link["url_post_count"] == 3.0
    assert f.link["post_share_count"] == 7.0
    assert f.behaviour["user_link_count"] == 2.0
    assert f.behaviour["user_post_count"] == 2.0
    assert f.behaviour["report_count"] == 3.0
    assert f.behaviour["report_distinct_reporters"] == 2.0
    assert f.behaviour["report_spam_reason_count"] == 2.0
    assert f.behaviour["user_email_disposable"] == 1.0
    assert f.behaviour["user_verified"] == 1.0
    assert f.behaviour["user_spam_rate"] == 0.25
    assert 9.9 < f.behaviour["user_age_days"] < 10.1
    assert f.behaviour["journey_step_count"] == 2.0
    assert f.behaviour["journey_seconds"] == 4.0
    assert f.text == "buy now"
    assert f.preview_text == "Title\npage text"


def test_post_without_link_or_ip_has_zero_link_features():
    post = make_post(text="hi")
    f = features_for_posts([post.id])[post.id]
    assert f.link["url_present"] == 0.0
    assert f.link["ip_post_count"] == 0.0
    assert f.behaviour["user_link_count"] == 0.0
    assert f.preview_text == ""


def _loaded_fields(post) -> dict:
    """The post's and its joined rows' field values, as the features read them."""
    rows = {"post": post, "source": post.source, "author": post.author, "link": post.link, "ip": post.ip}
    rows["domain"] = post.link.domain if post.link is not None else None
    return {
        name: None if row is None else {f.attname: getattr(row, f.attname) for f in type(row)._meta.concrete_fields}
        for name, row in rows.items()
    }


def _inline_matches_worker(post_id: int, django_assert_num_queries) -> PostFeatures:
    with django_assert_num_queries(1):
        found = post_with_features(post_id)
    assert found is not None
    loaded, inline = found
    worker_post = posts_for_scoring([post_id])[post_id]
    assert inline == features_for_loaded_posts([worker_post])[post_id]
    with django_assert_num_queries(0):  # the joins are cached as select_related leaves them
        assert _loaded_fields(loaded) == _loaded_fields(worker_post)
    return inline


def test_the_inline_one_query_load_computes_the_workers_features(django_assert_num_queries):
    source = make_source()
    author = make_author(source, post_count=5, spam_count=2, email_domain="mailinator.com")
    link = make_link("https://bit.ly/abc", domain="bit.ly")
    ip = make_ip(post_count=8, spam_count=2)
    make_post(author=author, link=link, ip=ip, text="buy now")
    make_post(author=author, link=make_link(), text="buy now")  # same text, other link
    make_post(author=make_author(source), link=link, ip=ip, text="buy now")  # other author
    post = make_post(
        author=author,
        link=link,
        ip=ip,
        text="buy now",
        preview_title="Title",
        journey=[{"step": "submit", "at": "2026-01-01T00:00:04Z"}],
    )
    Report.objects.create(post=post, reporter_id="a", reason="spam")
    Report.objects.create(post=post, reporter_id="a", reason="abuse")
    Report.objects.create(post=post, reporter_id="b", reason="phishing")
    f = _inline_matches_worker(post.id, django_assert_num_queries)
    # The counts are really read (not zero by accident): the inline load sees what the worker sees.
    assert (f.behaviour["user_link_count"], f.behaviour["user_post_count"]) == (2.0, 3.0)
    assert (f.behaviour["report_count"], f.behaviour["report_distinct_reporters"]) == (3.0, 2.0)
    assert f.behaviour["report_spam_reason_count"] == 2.0


def test_the_inline_load_of_a_post_without_link_ip_or_text(django_assert_num_queries):
    author = make_author(make_source())
    make_post(author=author, text="")  # another empty text by the author: not a repeat
    post = make_post(author=author, text="")
    f = _inline_matches_worker(post.id, django_assert_num_queries)
    assert (f.behaviour["user_post_count"], f.link["url_present"]) == (0.0, 0.0)


def test_the_inline_load_of_a_missing_post_is_none():
    assert post_with_features(10**12) is None


def test_the_batch_one_query_load_matches_the_grouped_queries(django_assert_num_queries):
    """The worker's batch load (posts_with_features) against the grouped queries, for posts of
    every shape in one batch: shared authors, links, IPs and texts, reports, no link or IP."""
    source = make_source()
    author = make_author(source, post_count=5, spam_count=2, email_domain="mailinator.com")
    other = make_author(source)
    link = make_link("https://bit.ly/abc", domain="bit.ly")
    ip = make_ip(post_count=8, spam_count=2)
    posts = [
        make_post(author=author, link=link, ip=ip, text="buy now"),
        make_post(author=author, link=make_link(), text="buy now"),
        make_post(author=other, link=link, ip=ip, text="buy now"),
        make_post(author=other, text=""),
        make_post(author=author, link=link, text="hello", preview_title="Title"),
    ]
    Report.objects.create(post=posts[0], reporter_id="a", reason="spam")
    Report.objects.create(post=posts[0], reporter_id="b", reason="abuse")
    assert posts[1].link is not None
    # This source's blocks of the link's domain and the IP; another source's block of the same
    # domain, and one of another domain, that must not show.
    source_block_add(source=source, kind=BlockKind.DOMAIN, value="bit.ly", reason="shortener")
    source_block_add(source=source, kind=BlockKind.IP, value=str(ip.address), reason="")
    source_block_add(source=make_source(), kind=BlockKind.DOMAIN, value=posts[1].link.domain.name, reason="x")
    source_block_add(source=source, kind=BlockKind.DOMAIN, value="unrelated.example", reason="y")
    ids = [p.id for p in posts] + [10**12]  # and one that does not exist
    with django_assert_num_queries(1):
        found = posts_with_features(ids)
    assert sorted(found) == sorted(p.id for p in posts)
    worker = posts_for_scoring(ids)
    grouped = features_for_loaded_posts(worker.values())
    for post_id, (loaded, features) in found.items():
        assert features == grouped[post_id]
        with django_assert_num_queries(0):
            assert _loaded_fields(loaded) == _loaded_fields(worker[post_id])
    # The counts are really read, per post: `author` shared the link twice and posted
    # "buy now" twice; the reports count on their own post only.
    assert found[posts[0].id][1].behaviour["user_link_count"] == 2.0
    assert found[posts[0].id][1].behaviour["user_post_count"] == 2.0
    assert found[posts[0].id][1].behaviour["report_count"] == 2.0
    assert found[posts[0].id][1].source_blocks == SourceBlockHits(domain="shortener", ip="")
    assert found[posts[1].id][1].source_blocks == SourceBlockHits()  # another source's block
    assert found[posts[4].id][1].source_blocks == SourceBlockHits(domain="shortener", ip=None)
    assert found[posts[1].id][1].behaviour["report_count"] == 0.0
    assert posts_with_features([]) == {}


def _features_plan_of_a_prolific_author(*, link: bool) -> str:
    """EXPLAIN of the batch load for the latest post of an author with a history (60 posts, a
    link on every other one; with `link`, one popular link that 120 other authors shared too),
    with statistics: on an empty, never analyzed table every index costs the same and the
    planner's pick says nothing. Sequential and bitmap scans are off so that the plan shows
    whether the index matches the predicate."""
    from django.db import connection

    from scoring.features.extract import SPAM_REPORT_REASONS, _features_sql

    source = make_source()
    author = make_author(source)
    if link:
        # The author's link is a popular one (a campaign's): on link_id alone an index finds
        # every post of every author that shared it, so only (author_id, link_id) is narrow.
        popular = make_link()
        for n in range(120):
            make_post(author=make_author(source), link=popular, text=f"shared {n}")
    for n in range(60):
        make_post(author=author, link=(popular if link else make_link()) if n % 2 else None, text=f"post number {n}")
    post = make_post(author=author, link=popular if link else None, text="buy now")
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE moderation_post")
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("SET LOCAL enable_bitmapscan = off")
        cursor.execute("EXPLAIN " + _features_sql(1), [*sorted(SPAM_REPORT_REASONS), post.id])
        return "\n".join(line for (line,) in cursor.fetchall())


def _subplan(plan: str, number: int) -> str:
    """The text of SubPlan `number` of an EXPLAIN (up to the next SubPlan)."""
    return plan.split(f"SubPlan {number}\n")[1].split("SubPlan ")[0]


def test_the_same_text_count_is_an_index_lookup_on_postgresql():
    """user_post_count (the fifth count) reaches post_author_text_md5_idx (moderation 0008)
    through its md5 predicate, rather than reading every post of the author (that scan grew
    with the author's history)."""
    same_text = _subplan(_features_plan_of_a_prolific_author(link=False), 5)
    assert "post_author_text_md5_idx" in same_text
    assert "(author_id = p.author_id) AND (md5(text) = md5(p.text))" in same_text


def test_the_same_link_count_is_an_index_lookup_on_postgresql():
    """user_link_count (the fourth count) reaches post_author_link_idx (moderation 0009) on both
    columns, rather than reading every post of the author and filtering on the link (0.23 ms
    per scored post for an author with ~335 posts, growing with the author's history)."""
    same_link = _subplan(_features_plan_of_a_prolific_author(link=True), 4)
    assert "post_author_link_idx" in same_link
    assert "(author_id = p.author_id) AND (link_id = p.link_id)" in same_link


def test_the_batch_load_becomes_a_prepared_statement_on_postgresql():
    """After psycopg's prepare threshold, the load runs as a server-side prepared statement
    (PostgreSQL stops planning it on every batch), and still answers the same."""
    from django.db import connection

    post = make_post(author=make_author(make_source()), link=make_link(), text="buy now")
    first = posts_with_features([post.id])
    for _ in range(connection.connection.prepare_threshold or 0):
        posts_with_features([post.id])
    again = posts_with_features([post.id])
    assert again[post.id][1] == first[post.id][1]
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements WHERE statement LIKE %s", ["%md5(o.text)%"])
        assert len(cursor.fetchall()) == 1


def test_without_prepared_reads_the_load_is_a_plain_statement(settings):
    """DB_PREPARED_READS=false (a pooler that cannot carry prepared statements): the same rows
    through Django's ordinary cursor, and nothing prepared on the connection."""
    from django.db import connection

    def prepared() -> int:
        # A batch of exactly three posts: its statement ends "IN ($7, $8, $9)" (six reasons first).
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE %s", ["%IN ($7, $8, $9)"])
            return int(cursor.fetchone()[0])

    author = make_author(make_source())
    ids = [make_post(author=author, link=make_link(), text=f"hello {i}").id for i in range(3)]
    before = prepared()
    settings.DB_PREPARED_READS = False
    plain = posts_with_features(ids)
    assert prepared() == before
    settings.DB_PREPARED_READS = True
    assert {i: f for i, (_, f) in posts_with_features(ids).items()} == {i: f for i, (_, f) in plain.items()}
    assert prepared() == 1
