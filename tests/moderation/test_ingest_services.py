"""Services behind the ingest API: keys, links, posts, authors, reports, block lists."""

from __future__ import annotations

from datetime import timedelta
from unittest import mock

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone
from kombu.exceptions import OperationalError

from moderation.links import link_get_or_create
from moderation.models import (
    ALL_SCOPES,
    ApiKey,
    AuditLog,
    Author,
    BlockKind,
    Domain,
    IpAddress,
    Link,
    ListStatus,
    Post,
    SourceDomainStats,
)
from moderation.services.api_keys import api_key_create, api_key_revoke, hash_key
from moderation.services.authors import author_upsert
from moderation.services.blocklists import global_block, global_unblock, source_block_add, source_block_remove
from moderation.services.ingest import post_ingest, posts_ingest_batch
from moderation.services.reports import report_create
from tests.factories import AuthorFactory, PostFactory, SourceFactory, UserFactory

pytestmark = pytest.mark.django_db


# created_at is content (moderation.services.content_hash): payload() twice is one post.
CREATED_AT = timezone.now()


def payload(external_id: str = "p-1", **overrides: object) -> dict:
    now = CREATED_AT
    data = {
        "external_id": external_id,
        "text": "hello",
        "url": "https://www.Example.co.uk/a",
        "author": {"external_id": "u-1", "username": "ann", "platform_post_count": 3},
        "ip": "203.0.113.9",
        "journey": [{"step": "open", "at": now - timedelta(seconds=2)}, {"step": "submit", "at": now}],
        "created_at": now,
    }
    data.update(overrides)
    return data


def test_api_key_create_stores_only_hash():
    source = SourceFactory()
    key, raw = api_key_create(source=source, name="ci", scopes=ALL_SCOPES)
    assert raw.startswith(key.prefix + ".")
    assert key.hashed_key == hash_key(raw)
    assert raw not in {key.hashed_key, key.prefix, key.name}
    assert ApiKey.objects.get().is_active


def test_api_key_revoke_is_idempotent():
    key, _ = api_key_create(source=SourceFactory(), name="ci", scopes=ALL_SCOPES)
    api_key_revoke(api_key=key)
    first = key.revoked_at
    api_key_revoke(api_key=key)
    key.refresh_from_db()
    assert key.revoked_at == first is not None


def test_create_source_command_prints_a_working_key(capsys):
    call_command("create_source", "Demo", "demo")
    raw = capsys.readouterr().out.strip()
    assert ApiKey.objects.get(hashed_key=hash_key(raw)).source.slug == "demo"
    assert ApiKey.objects.get(hashed_key=hash_key(raw)).scopes == list(ALL_SCOPES)
    call_command("create_source", "Demo", "demo", "--scopes", "read, reports:write")  # reuses the source
    raw = capsys.readouterr().out.strip()
    assert ApiKey.objects.get(hashed_key=hash_key(raw)).scopes == ["reports:write", "read"]
    assert ApiKey.objects.filter(source__slug="demo").count() == 2
    with pytest.raises(CommandError):
        call_command("create_source", "Demo", "demo", "--scopes", "admin")


def test_link_get_or_create_normalizes_and_groups_by_registrable_domain():
    a = link_get_or_create(url="HTTPS://a.b.Example.co.uk:443/x#frag")
    b = link_get_or_create(url="https://a.b.example.co.uk/x")
    c = link_get_or_create(url="https://other.example.co.uk/y")
    assert a.pk == b.pk
    assert a.url == "https://a.b.example.co.uk/x"
    assert a.domain.name == "example.co.uk" == c.domain.name
    assert Domain.objects.count() == 1


def test_post_ingest_creates_rows_and_counters():
    source = SourceFactory()
    post, created = post_ingest(source=source, payload=payload())
    assert created
    assert post.status == "received"
    assert post.link is not None and post.link.domain.name == "example.co.uk"
    assert post.journey[0]["step"] == "open" and isinstance(post.journey[0]["at"], str)
    author = Author.objects.get(source=source, external_id="u-1")
    assert (author.post_count, author.platform_post_count, author.username) == (1, 3, "ann")
    assert Link.objects.get().post_count == 1
    assert Domain.objects.get().post_count == 1
    assert IpAddress.objects.get().post_count == 1


def test_post_ingest_is_idempotent_per_source():
    source = SourceFactory()
    first, created = post_ingest(source=source, payload=payload())
    again, created_again = post_ingest(source=source, payload=payload(share_count=7))
    assert created and not created_again
    assert first.pk == again.pk and again.share_count == 0
    assert Link.objects.get().post_count == 1  # a repeat counts nothing
    other, created_other = post_ingest(source=SourceFactory(), payload=payload())
    assert created_other and other.pk != first.pk
    assert Domain.objects.get().post_count == 2


def test_post_ingest_loses_insert_race_gracefully():
    """The unique constraint decides a race: the loser gets the stored post, no error."""
    source = SourceFactory()
    winner = PostFactory(source=source, author=AuthorFactory(source=source), external_id="p-1")
    from moderation.services import ingest

    real = ingest._stored_post
    # The pre-check misses (the other request has not committed yet); the insert then conflicts.
    with mock.patch.object(ingest, "_stored_post", side_effect=[None, real(source=source, external_id="p-1")]):
        post, created = post_ingest(source=source, payload=payload())
    assert not created and post.pk == winner.pk
    assert Post.objects.count() == 1
    assert not Link.objects.exists()  # everything the loser wrote was rolled back


def test_post_ingest_enqueues_scoring_after_commit(django_capture_on_commit_callbacks):
    source = SourceFactory()
    with (
        mock.patch("scoring.tasks.score_batch.delay") as delay,
        django_capture_on_commit_callbacks(execute=True) as cbs,
    ):
        post_ingest(source=source, payload=payload("p-1"))
        delay.assert_not_called()  # nothing is published before the commit
    assert len(cbs) == 1
    delay.assert_called_once_with()  # a kick: no post ids, not a message of the post's own
    # The next post, while that kick is pending, publishes nothing: the kick's task takes it.
    with mock.patch("scoring.tasks.score_batch.delay") as again, django_capture_on_commit_callbacks(execute=True):
        post_ingest(source=source, payload=payload("p-2"))
    again.assert_not_called()


def test_post_ingest_survives_broker_outage(django_capture_on_commit_callbacks, caplog, settings):
    settings.BROKER_PUBLISH_BREAKER_S = 0  # every publish tried (the breaker has its own test)
    outage = mock.patch("scoring.tasks.score_batch.delay", side_effect=OperationalError("broker down"))
    with outage as delay, django_capture_on_commit_callbacks(execute=True):
        post, created = post_ingest(source=SourceFactory(), payload=payload("p-1"))
        post_ingest(source=post.source, payload=payload("p-2"))
    assert created and Post.objects.filter(pk=post.pk, status="received").exists()
    assert "scoring.score_enqueue_failed" in caplog.text
    assert delay.call_count == 2  # a failed publish leaves no mark: the next post tries again


def test_after_a_failed_publish_ingest_does_not_wait_on_the_broker_for_a_while(
    django_capture_on_commit_callbacks, caplog, settings
):
    """A hung broker makes each publish wait its socket timeout before failing. After one
    failure this process skips publishing for BROKER_PUBLISH_BREAKER_S (logged): the posts are
    stored and wait in `received` for the sweeper, as a failed publish leaves them. Then it
    tries again."""
    from core import redis_breaker

    settings.BROKER_PUBLISH_BREAKER_S = 60
    source = SourceFactory()
    outage = mock.patch("scoring.tasks.score_batch.delay", side_effect=OperationalError("timed out"))
    with outage as delay, django_capture_on_commit_callbacks(execute=True):
        for i in range(3):
            post_ingest(source=source, payload=payload(f"p-{i}"))
        posts_ingest_batch(source=source, payloads=[payload("b-1"), payload("b-2")])
    assert delay.call_count == 1
    assert caplog.text.count("scoring.score_enqueue_skipped") == 3  # two posts and one batch message
    assert Post.objects.filter(source=source, status="received").count() == 5
    redis_breaker.reset()  # the window is over
    with mock.patch("scoring.tasks.score_batch.delay") as delay, django_capture_on_commit_callbacks(execute=True):
        post_ingest(source=source, payload=payload("p-after"))
    delay.assert_called_once_with()


def test_posts_ingest_batch_mixes_new_existing_and_in_batch_duplicates():
    source = SourceFactory()
    post_ingest(source=source, payload=payload("old"))
    results = posts_ingest_batch(source=source, payloads=[payload("old"), payload("new"), payload("new")])
    assert [created for _, created in results] == [False, True, False]
    assert results[1][0].pk == results[2][0].pk
    assert Post.objects.filter(source=source).count() == 2


def test_author_upsert_updates_only_given_fields():
    source = SourceFactory()
    author, created = author_upsert(source=source, external_id="u-9", profile={"username": "a", "friends_count": 4})
    assert created
    author, created = author_upsert(source=source, external_id="u-9", profile={"verified": True})
    assert not created
    author.refresh_from_db()
    assert (author.username, author.friends_count, author.verified) == ("a", 4, True)
    with pytest.raises(ValueError):
        author_upsert(source=source, external_id="u-9", profile={"spam_count": 1})


def test_report_create_is_idempotent_and_bumps_counters(django_capture_on_commit_callbacks):
    source = SourceFactory()
    post, _ = post_ingest(source=source, payload=payload())
    with mock.patch("scoring.tasks.score_batch.delay") as delay, django_capture_on_commit_callbacks(execute=True):
        report, created = report_create(source=source, post_external_id="p-1", reporter_id="r1", reason="spam")
    assert created and report.post.report_count == 1
    delay.assert_called_once_with([post.pk], after_report=True)
    _, created_again = report_create(source=source, post_external_id="p-1", reporter_id="r1", reason="spam")
    assert not created_again
    # Another reason from the same reporter is recorded, but a reporter counts once per post.
    _, created_other_reason = report_create(source=source, post_external_id="p-1", reporter_id="r1", reason="abuse")
    assert created_other_reason
    post.refresh_from_db()
    assert post.report_count == 1
    assert Link.objects.get().report_count == 1 and Domain.objects.get().report_count == 1
    report_create(source=source, post_external_id="p-1", reporter_id="r2", reason="spam")
    post.refresh_from_db()
    assert post.report_count == 2 and Domain.objects.get().report_count == 2
    assert SourceDomainStats.objects.get(source=source).report_count == 2


def test_report_for_another_sources_post_is_not_found():
    post_ingest(source=SourceFactory(), payload=payload())
    from core.errors import NotFound

    with pytest.raises(NotFound):
        report_create(source=SourceFactory(), post_external_id="p-1", reporter_id="r", reason="spam")


def test_domain_block_and_unblock_are_audited():
    user = UserFactory()
    domain, changed = global_block(kind=BlockKind.DOMAIN, value="spam.example", reason="phishing", actor=user)
    assert changed and domain.status == ListStatus.BLOCK and domain.status_changed_at
    _, changed_again = global_block(kind=BlockKind.DOMAIN, value="spam.example", reason="phishing", actor=user)
    assert not changed_again
    global_unblock(kind=BlockKind.DOMAIN, value="spam.example", actor=user)
    entries = list(AuditLog.objects.order_by("id").values_list("action", "actor_id"))
    assert entries == [("domain.block", user.pk), ("domain.unblock", user.pk)]
    assert Domain.objects.get().status == ListStatus.UNKNOWN


def test_a_source_block_is_scoped_and_audited_with_the_source():
    source = SourceFactory()
    block, created = source_block_add(source=source, kind=BlockKind.IP, value="203.0.113.9", reason="bursts")
    assert created and (block.source, block.value) == (source, "203.0.113.9")
    assert not IpAddress.objects.filter(status=ListStatus.BLOCK).exists()
    entry = AuditLog.objects.get()
    assert entry.actor is None and entry.after["via"] == f"api:{source.slug}"
    assert (entry.action, entry.target_type, entry.target_id) == ("ip.source_block", "sourceblock", str(block.pk))
    source_block_remove(source=source, kind=BlockKind.IP, value="203.0.113.9")
    from core.errors import NotFound

    with pytest.raises(NotFound):
        source_block_remove(source=source, kind=BlockKind.IP, value="203.0.113.9")
    assert list(AuditLog.objects.order_by("id").values_list("action", flat=True)) == [
        "ip.source_block",
        "ip.source_unblock",
    ]


def test_moderators_cannot_block_a_public_suffix_globally_either():
    from moderation.services.blocklists import BlockRefused

    with pytest.raises(BlockRefused):
        global_block(kind=BlockKind.DOMAIN, value="co.uk", reason="everything", actor=UserFactory())
    with pytest.raises(BlockRefused):
        global_block(kind=BlockKind.IP, value="10.0.0.0/8", reason="everyone", actor=UserFactory())
    assert not AuditLog.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_concurrent_duplicates_store_one_post():
    """Real concurrency: eight threads send the same post at once; one row, one `created`."""
    import threading

    from django.db import connection

    source = SourceFactory()
    barrier = threading.Barrier(8)
    results: list[tuple[int, bool]] = []
    errors: list[BaseException] = []

    def send() -> None:
        try:
            barrier.wait(timeout=10)
            post, created = post_ingest(source=source, payload=payload("race"))
            results.append((post.pk, created))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=send) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert not errors
    assert len({pk for pk, _ in results}) == 1 and len(results) == 8
    assert sum(created for _, created in results) == 1
    assert Post.objects.filter(source=source, external_id="race").count() == 1
    assert Author.objects.get(source=source).post_count == 1
    assert Link.objects.get().post_count == 1


def test_report_on_a_scored_post_enqueues_rescore(django_capture_on_commit_callbacks):
    source = SourceFactory()
    post, _ = post_ingest(source=source, payload=payload())
    Post.objects.filter(pk=post.pk).update(status="queued")
    with (
        mock.patch("scoring.tasks.rescore_post.delay") as rescore,
        mock.patch("scoring.tasks.score_batch.delay") as score,
        django_capture_on_commit_callbacks(execute=True),
    ):
        report_create(source=source, post_external_id="p-1", reporter_id="r1", reason="spam")
    rescore.assert_called_once_with(post.pk)
    score.assert_not_called()


@pytest.mark.parametrize("status", ["auto_removed", "removed", "approved"])
def test_report_on_a_post_no_score_can_change_is_recorded_without_rescore(status, django_capture_on_commit_callbacks):
    source = SourceFactory()
    post, _ = post_ingest(source=source, payload=payload(url="https://x.example.com/1"))
    Post.objects.filter(pk=post.pk).update(status=status)
    with (
        mock.patch("scoring.tasks.rescore_post.delay") as rescore,
        mock.patch("scoring.tasks.score_batch.delay") as score,
        django_capture_on_commit_callbacks(execute=True) as callbacks,
    ):
        report, created = report_create(source=source, post_external_id="p-1", reporter_id="r1", reason="spam")
    assert created and report.post_id == post.pk
    rescore.assert_not_called()
    score.assert_not_called()
    assert callbacks == []
    post.refresh_from_db()
    assert post.status == status
    assert post.report_count == 1
    assert Link.objects.get().report_count == 1
    assert Domain.objects.get().report_count == 1


def test_batch_matches_sequential_ingest():
    """The set-based batch path leaves the same rows and counters as one-by-one ingest."""
    items = [
        payload("a", url="https://x.example.com/1"),
        payload("b", url="https://y.example.com/2", author={"external_id": "u-2", "username": "bob"}),
        payload("c", url="https://x.example.com/1", ip="2001:db8::1"),
        payload("a", url="https://x.example.com/1"),
        payload("d", url="", ip=None, author={"external_id": "u-1", "username": "ann2"}),
    ]
    seq_source, batch_source = SourceFactory(), SourceFactory()
    for item in items:
        post_ingest(source=seq_source, payload=item)
    results = posts_ingest_batch(source=batch_source, payloads=items)
    assert [created for _, created in results] == [True, True, True, False, True]

    def snapshot(source):
        authors = {a.external_id: (a.username, a.post_count) for a in Author.objects.filter(source=source)}
        posts = {
            p.external_id: (p.author.external_id, p.url, p.ip.address if p.ip else None, p.journey)
            for p in Post.objects.filter(source=source).select_related("author", "ip")
        }
        return authors, posts

    assert snapshot(seq_source) == snapshot(batch_source)
    # Shared rows were counted once per post from each source.
    assert Link.objects.get(url="https://x.example.com/1").post_count == 4
    assert Domain.objects.get(name="example.com").post_count == 6
    assert IpAddress.objects.get(address="203.0.113.9").post_count == 4


def test_batch_chunk_conflict_falls_back_to_single_ingest(monkeypatch):
    """A duplicate inserted by someone else between the pre-check and the insert."""
    from moderation.services import ingest

    source = SourceFactory()
    real = ingest._posts_create
    raced: list[bool] = []

    def sneak_in(**kwargs):
        if not raced:  # post_ingest goes through _posts_create too
            raced.append(True)
            post_ingest(source=source, payload=payload("b"))  # a concurrent request wins "b"
        return real(**kwargs)

    monkeypatch.setattr(ingest, "_posts_create", sneak_in)
    results = posts_ingest_batch(source=source, payloads=[payload("a"), payload("b")])
    assert [(p.external_id, created) for p, created in results] == [("a", True), ("b", False)]
    assert Post.objects.filter(source=source).count() == 2
    assert Author.objects.get(source=source).post_count == 2


@pytest.mark.django_db(transaction=True)
def test_concurrent_overlapping_batches():
    """Two batches with the same posts, authors and links in opposite orders, at once."""
    import threading

    from django.db import connection

    source = SourceFactory()
    items = [
        payload(f"p{i}", url=f"https://s{i % 7}.example.com/{i}", author={"external_id": f"u{i % 5}"})
        for i in range(60)
    ]
    barrier = threading.Barrier(2)
    outcomes: list[list[tuple[int, bool]]] = []
    errors: list[BaseException] = []

    def send(batch: list[dict]) -> None:
        try:
            barrier.wait(timeout=10)
            outcomes.append([(p.pk, c) for p, c in posts_ingest_batch(source=source, payloads=batch)])
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=send, args=(b,)) for b in (items, list(reversed(items)))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors, errors
    assert Post.objects.filter(source=source).count() == 60
    assert sum(c for outcome in outcomes for _, c in outcome) == 60  # each post created exactly once
    assert sum(a.post_count for a in Author.objects.filter(source=source)) == 60
    assert sum(link.post_count for link in Link.objects.all()) == 60


@pytest.mark.parametrize("count", [1, 2, 32, 33, 70, 150])
def test_batch_ingest_publishes_one_scoring_message_per_32_posts(count, settings, django_capture_on_commit_callbacks):
    settings.SCORING_BATCH_SIZE = 32
    source = SourceFactory()
    payloads = [payload(f"b-{i}") for i in range(count)]
    with (
        mock.patch("scoring.tasks.score_batch.delay") as many,
        django_capture_on_commit_callbacks(execute=True),
    ):
        results = posts_ingest_batch(source=source, payloads=[*payloads, payloads[0]])  # a repeat: no message
    created = [post.pk for post, new in results if new]
    assert len(created) == count
    sent = [call.args[0] for call in many.call_args_list]
    assert all(call.args for call in many.call_args_list)  # each a chunk's ids: no kick
    assert len(sent) == -(-count // 32)  # ceil(N / 32), across transactions of BATCH_CHUNK posts
    assert all(len(ids) <= 32 for ids in sent)
    assert sorted(i for ids in sent for i in ids) == sorted(created)  # every new post exactly once


def test_the_batch_lookup_of_stored_posts_uses_the_whole_key_whatever_the_statistics():
    """A source that was empty when the table was last analyzed, then received 300 posts: the
    lookup of a batch's external ids still probes (source, external_id) per id. The IN-list
    form read every post of such a source and filtered the ids (1.8 ms a batch at 8,000
    posts, growing with the source)."""
    from django.db import connection

    from moderation.services.ingest import _stored_posts, _stored_posts_sql

    source, other = SourceFactory(), SourceFactory()
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE moderation_post")
    posts = PostFactory.create_batch(300, source=source)
    PostFactory(source=other, external_id=posts[0].external_id)  # the same id, another source
    wanted = [posts[0].external_id, posts[7].external_id, posts[7].external_id, "never-sent"]
    found = _stored_posts(source=source, external_ids=wanted)
    assert sorted(p.pk for p in found) == sorted([posts[0].pk, posts[7].pk])
    with connection.cursor() as cursor:
        # A 300-row table fits in a page or two: without this a sequential scan hides the index.
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("EXPLAIN " + _stored_posts_sql(), [wanted, source.pk])
        plan = "\n".join(line for (line,) in cursor.fetchall())
    assert "post_source_external_uniq" in plan
    assert "Filter" not in plan
    assert f"(source_id = {source.pk}) AND ((external_id)::text = e.external_id)" in plan
