from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Sequence

import pytest

from moderation.models import (
    Author,
    Domain,
    IpAddress,
    ListStatus,
    Post,
    PostStatus,
    Report,
    SourceDomainStats,
    SourceIpStats,
)
from moderation.services.source_stats import source_stats_count_posts
from scoring.models import Action, Score
from scoring.services.inference import TritonError, TritonUnavailable
from scoring.services.scoring import rescore_post, score_posts
from scoring.services.shortcircuit import SHORT_CIRCUIT_MODEL_SET
from scoring.triton_types import ScoringInput, ScoringOutput
from tests.scoring.pipeline_support import (
    MODEL_SET,
    FakeClient,
    down_client,
    make_author,
    make_ip,
    make_link,
    make_post,
    make_source,
)

pytestmark = pytest.mark.django_db


def _status(post: Post) -> str:
    post.refresh_from_db()
    return post.status


def test_thresholds_move_posts_through_the_state_machine():
    spam, maybe, ham = make_post(text="spam!"), make_post(text="maybe"), make_post(text="hi")
    client = FakeClient()
    results = score_posts(post_ids=[spam.id, maybe.id, ham.id], client=client)
    assert len(client.calls) == 1 and len(client.calls[0]) == 3  # one batched call
    assert {r.post_id: r.action for r in results} == {
        spam.id: Action.REMOVE,
        maybe.id: Action.QUEUE,
        ham.id: Action.APPROVE,
    }
    assert _status(spam) == PostStatus.AUTO_REMOVED
    assert _status(maybe) == PostStatus.QUEUED
    assert _status(ham) == PostStatus.AUTO_APPROVED
    score = Score.objects.get(post=spam)
    assert score.model_set == MODEL_SET and score.revision == 0
    assert score.final_score == 0.95 and score.text_score == 0.95
    assert score.model_versions["text_classifier"] == "1"
    assert score.contributions["fusion_model"]["text_prob"] == pytest.approx(0.45)
    assert score.policy is not None and score.policy.version == 1
    assert set(score.features) >= {"link", "behaviour"}
    assert score.latency_ms > 0
    spam.refresh_from_db()
    assert spam.final_score == 0.95 and spam.model_version == MODEL_SET and spam.scored_at is not None


def test_a_reported_post_is_queued_not_auto_approved():
    post = make_post(text="hi")
    Report.objects.create(post=post, reporter_id="r", reason="spam")
    (result,) = score_posts(post_ids=[post.id], client=FakeClient())
    assert result.action == Action.QUEUE
    assert _status(post) == PostStatus.QUEUED


def test_running_twice_leaves_one_score_per_post():
    posts = [make_post(text="spam"), make_post(text="hi")]
    ids = [p.id for p in posts]
    score_posts(post_ids=ids, client=FakeClient())
    client = FakeClient()
    again = score_posts(post_ids=ids, client=client)
    assert Score.objects.filter(post_id__in=ids).count() == 2
    assert client.calls == []  # nothing pending: no model call
    assert {r.skipped for r in again} == {"not_pending"}


def test_spam_counters_follow_auto_removals():
    source = make_source()
    author = make_author(source)
    link = make_link()
    ip = make_ip()
    posts = [make_post(author=author, link=link, ip=ip, text="spam") for _ in range(3)]
    posts.append(make_post(author=author, link=link, ip=ip, text="hi"))
    # What ingest counts with the posts (the factory writes the rows directly).
    source_stats_count_posts(
        source_id=source.pk,
        link_posts=Counter({link.pk: 4}),
        domain_posts=Counter({link.domain_id: 4}),
        ip_posts=Counter({ip.pk: 4}),
    )
    score_posts(post_ids=[p.id for p in posts], client=FakeClient())
    assert Author.objects.get(pk=author.pk).spam_count == 3
    assert Domain.objects.get(pk=link.domain_id).spam_count == 3
    assert IpAddress.objects.get(pk=ip.pk).spam_count == 3
    # The features read the source's own counters: they follow too.
    assert SourceDomainStats.objects.get(source=source, domain_id=link.domain_id).spam_count == 3
    assert SourceIpStats.objects.get(source=source, ip=ip).spam_count == 3


@pytest.mark.parametrize("size", [3, 30])
def test_a_scored_batch_costs_ten_statements_whatever_its_size(size, django_assert_num_queries):
    """Every post of the batch is removed, queued or approved, with its own author, link and IP:
    a statement per post anywhere in the path fails this for the larger batch."""
    source = make_source()
    texts = ["spam", "maybe", "hello"]
    authors = [make_author(source) for _ in range(size)]
    links = [make_link() for _ in range(size)]
    ips = [make_ip() for _ in range(size)]
    posts = [make_post(author=authors[i], link=links[i], ip=ips[i], text=texts[i % 3]) for i in range(size)]
    source_stats_count_posts(
        source_id=source.pk,
        link_posts=Counter(link.pk for link in links),
        domain_posts=Counter(link.domain_id for link in links),
        ip_posts=Counter(ip.pk for ip in ips),
    )
    # The posts with their features (1); the transaction (savepoint here, BEGIN in a worker),
    # the policy, the row locks, the Score rows, the posts' fields, the queued posts' priority,
    # the spam counters of five tables (one statement), the specialist queues that route queued
    # posts (one read, whether or not any is configured), the commit.
    with django_assert_num_queries(10):
        results = score_posts(post_ids=[p.id for p in posts], client=FakeClient())
    assert sorted(str(r.action) for r in results) == sorted(
        [Action.REMOVE, Action.QUEUE, Action.APPROVE][i % 3] for i in range(size)
    )
    removed = range(0, size, 3)
    spam_authors = Author.objects.filter(source=source, spam_count=1).values_list("pk", flat=True)
    assert sorted(spam_authors) == sorted(authors[i].pk for i in removed)
    spam_domains = Domain.objects.filter(pk__in=[link.domain_id for link in links], spam_count=1)
    assert sorted(spam_domains.values_list("pk", flat=True)) == sorted(links[i].domain_id for i in removed)
    spam_ips = IpAddress.objects.filter(pk__in=[ip.pk for ip in ips], spam_count=1)
    assert sorted(spam_ips.values_list("pk", flat=True)) == sorted(ips[i].pk for i in removed)
    source_domains = SourceDomainStats.objects.filter(source=source, spam_count=1).values_list("domain_id", flat=True)
    assert sorted(source_domains) == sorted(links[i].domain_id for i in removed)
    source_ips = SourceIpStats.objects.filter(source=source, spam_count=1).values_list("ip_id", flat=True)
    assert sorted(source_ips) == sorted(ips[i].pk for i in removed)
    assert not SourceIpStats.objects.filter(source=source, spam_count__gt=1).exists()


def test_blocked_domain_short_circuits_without_a_model_call():
    link = make_link(domain="bad.example", status=ListStatus.BLOCK, status_reason="phishing kit")
    post = make_post(link=link, text="hi")
    client = FakeClient()
    (result,) = score_posts(post_ids=[post.id], client=client)
    assert client.calls == []
    assert result.action == Action.REMOVE
    assert _status(post) == PostStatus.AUTO_REMOVED
    score = Score.objects.get(post=post)
    assert score.model_set == SHORT_CIRCUIT_MODEL_SET
    assert score.short_circuit_reason == "blocked_domain: The post links to a domain on a block list."
    assert score.text_score is None and score.final_score == 1.0


def test_blocked_ip_short_circuits_and_others_still_go_to_the_model():
    blocked = make_post(ip=make_ip("203.0.113.9", status=ListStatus.BLOCK), text="hi")
    normal = make_post(text="hi")
    client = FakeClient()
    score_posts(post_ids=[blocked.id, normal.id], client=client)
    assert [len(c) for c in client.calls] == [1]
    assert Score.objects.get(post=blocked).short_circuit_reason.startswith("blocked_ip: ")
    assert _status(normal) == PostStatus.AUTO_APPROVED


def test_a_source_block_decides_its_own_posts_only():
    """Source A's blocks of a domain and an IP remove A's posts at once; B's posts with the same
    link and IP go to the model as usual (the scoring decision on real rows)."""
    from moderation.models import BlockKind
    from moderation.services.blocklists import source_block_add

    mine, theirs = make_source(), make_source()
    link, ip = make_link(domain="shared.example"), make_ip("198.51.100.20")
    source_block_add(source=mine, kind=BlockKind.DOMAIN, value="shared.example", reason="kit")
    a_link = make_post(source=mine, link=link, text="hi")
    b_link = make_post(source=theirs, link=link, text="hi")
    other_ip = make_ip("198.51.100.21")
    source_block_add(source=mine, kind=BlockKind.IP, value="198.51.100.21", reason="")
    a_ip = make_post(source=mine, ip=other_ip, text="hi")
    b_ip = make_post(source=theirs, ip=other_ip, text="hi")
    b_plain = make_post(source=theirs, ip=ip, text="hi")
    client = FakeClient()
    score_posts(post_ids=[a_link.id, b_link.id, a_ip.id, b_ip.id, b_plain.id], client=client)

    assert [len(c) for c in client.calls] == [3]  # only B's posts reached the model
    assert _status(a_link) == _status(a_ip) == PostStatus.AUTO_REMOVED
    assert _status(b_link) == _status(b_ip) == _status(b_plain) == PostStatus.AUTO_APPROVED
    # The same public reason as a global block: the code does not say which list matched.
    assert Score.objects.get(post=a_link).short_circuit_reason.startswith("blocked_domain: ")
    assert Score.objects.get(post=a_ip).short_circuit_reason.startswith("blocked_ip: ")
    assert Score.objects.get(post=b_link).model_set != SHORT_CIRCUIT_MODEL_SET


def test_a_moderator_decision_is_never_overridden():
    post = make_post(text="spam")
    Post.objects.filter(pk=post.pk).update(status=PostStatus.APPROVED)
    (result,) = score_posts(post_ids=[post.id], client=FakeClient())
    assert result.skipped == "not_pending"
    assert _status(post) == PostStatus.APPROVED
    assert not Score.objects.filter(post=post).exists()
    # ... nor by a re-score after a report
    Report.objects.create(post=post, reporter_id="r", reason="spam")
    assert rescore_post(post_id=post.id, client=FakeClient()).skipped == "not_rescorable"


def test_triton_down_writes_nothing_and_raises_for_retry():
    post = make_post(text="spam")
    with pytest.raises(TritonUnavailable):
        score_posts(post_ids=[post.id], client=down_client())
    assert _status(post) == PostStatus.RECEIVED
    assert not Score.objects.exists()


def test_a_rejected_batch_is_rescored_one_by_one_and_the_bad_post_queued():
    good, bad = make_post(text="hi"), make_post(text="poison")

    def reject(inputs):
        return TritonError("bad input") if any(i.text == "poison" for i in inputs) else None

    client = FakeClient(reject=reject)
    results = {r.post_id: r for r in score_posts(post_ids=[good.id, bad.id], client=client)}
    assert [len(c) for c in client.calls] == [2, 1, 1]
    assert _status(good) == PostStatus.AUTO_APPROVED
    assert _status(bad) == PostStatus.QUEUED
    assert results[bad.id].skipped == "model_error"
    assert not Score.objects.filter(post=bad).exists()


def test_rescore_on_a_new_report_adds_revision_one():
    post = make_post(text="hi")
    score_posts(post_ids=[post.id], client=FakeClient())
    assert _status(post) == PostStatus.AUTO_APPROVED
    # no new report: nothing to do
    assert rescore_post(post_id=post.id, client=FakeClient()).skipped == "no_new_reports"
    Report.objects.create(post=post, reporter_id="r", reason="spam")
    result = rescore_post(post_id=post.id, client=FakeClient())
    assert result.action == Action.QUEUE
    assert _status(post) == PostStatus.QUEUED
    assert list(Score.objects.filter(post=post).order_by("revision").values_list("revision", flat=True)) == [0, 1]
    assert Score.objects.get(post=post, revision=1).features["behaviour"]["report_count"] == 1.0
    # the duplicate task is a no-op
    assert rescore_post(post_id=post.id, client=FakeClient()).skipped == "no_new_reports"
    assert Score.objects.filter(post=post).count() == 2


def test_rescore_leaves_an_auto_removed_post_and_its_score_alone():
    post = make_post(text="spam")
    score_posts(post_ids=[post.id], client=FakeClient())
    removed_score = Post.objects.get(pk=post.pk).final_score
    Report.objects.create(post=post, reporter_id="r", reason="spam")
    client = FakeClient(lambda _: 0.5)
    assert rescore_post(post_id=post.id, client=client).skipped == "not_rescorable"
    assert _status(post) == PostStatus.AUTO_REMOVED
    assert Post.objects.get(pk=post.pk).final_score == removed_score
    assert Score.objects.filter(post=post).count() == 1
    assert client.calls == []


def test_unknown_posts_are_reported_gone():
    (result,) = score_posts(post_ids=[987654], client=FakeClient())
    assert result.skipped == "gone"


class _CascadeClient(FakeClient):
    """Answers as spam_pipeline with the text cascade on: the confident texts ("spam", plain
    ham) come without the transformer, the uncertain ones ("maybe") with it."""

    def score(self, inputs: Sequence[ScoringInput]) -> list[ScoringOutput]:
        return [
            dataclasses.replace(out, text_model_skipped="maybe" not in item.text)
            for item, out in zip(inputs, super().score(inputs), strict=True)
        ]


def test_a_post_that_skipped_the_transformer_is_recorded_and_counted():
    from core.metrics import POSTS_SCORED, POSTS_TEXT_MODEL_SKIPPED

    posts = [make_post(text="spam!"), make_post(text="maybe"), make_post(text="hi")]
    scored, skipped = POSTS_SCORED._value.get(), POSTS_TEXT_MODEL_SKIPPED._value.get()
    score_posts(post_ids=[p.id for p in posts], client=_CascadeClient())
    features = {s.post_id: s.features for s in Score.objects.filter(post__in=posts)}
    assert [features[p.id].get("text_model_skipped", False) for p in posts] == [True, False, True]
    assert POSTS_SCORED._value.get() - scored == 3
    assert POSTS_TEXT_MODEL_SKIPPED._value.get() - skipped == 2
