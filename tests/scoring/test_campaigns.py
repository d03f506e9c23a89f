"""Campaigns at scoring time against the test database: near-copies across authors join one
campaign within their source, a decided campaign decides its new members."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest

from contracts.feature_schema import BEHAVIOUR_FEATURES
from moderation.models import AuditLog, Campaign, Label, Post, PostStatus
from moderation.services.bulk import Cluster, bulk_decide, bulk_undo
from scoring.models import Action, CampaignBucket, Score
from scoring.services.campaigns import CAMPAIGN_SPAM_REASON
from scoring.services.scoring import score_posts
from scoring.services.webhooks import webhooks_enqueue_for_posts
from tests.factories import ReasonCodeFactory, UserFactory
from tests.scoring.pipeline_support import FakeClient, make_author, make_post, make_source

pytestmark = pytest.mark.django_db

COPIES = [
    "Congratulations! You have won a 1000 pound voucher. Call 09061743811 now to claim at www.win-big.com",
    "Congratulations!! You have won a 2000 pound voucher. Call 09061743999 now to claim at http://prize.biz/x",
    "congratulations you have won a 500 pound voucher, call 0800 now to claim at www.claim-now.net",
    "Congratulations! You won have a 1000 pound voucher. Call 09061743811 today to claim at www.win-big.com",
    "CONGRATULATIONS! You have won a 1000 pound gift voucher. Call 09061743811 now to claim!",
]
OTHER = "Are we still meeting for lunch tomorrow at the station? Let me know by tonight please"


def _copies_from_new_authors(source, texts=COPIES) -> list[Post]:
    return [make_post(source=source, author=make_author(source), text=t) for t in texts]


def _campaign_ids(posts: list[Post]) -> list[int | None]:
    return [Post.objects.get(pk=p.pk).campaign_id for p in posts]


def test_five_copies_from_five_authors_share_one_campaign_across_batches() -> None:
    source = make_source()
    posts = _copies_from_new_authors(source)
    score_posts(post_ids=[posts[0].pk], client=FakeClient())
    assert _campaign_ids(posts[:1]) == [None]  # one post is no campaign
    score_posts(post_ids=[p.pk for p in posts[1:3]], client=FakeClient())
    score_posts(post_ids=[p.pk for p in posts[3:]], client=FakeClient())
    ids = _campaign_ids(posts)
    assert ids[0] is not None and set(ids) == {ids[0]}
    campaign = Campaign.objects.get(pk=ids[0])
    assert (campaign.source_id, campaign.member_count, campaign.author_count) == (source.pk, 5, 5)
    assert campaign.first_seen_at <= campaign.last_seen_at
    assert Score.objects.get(post=posts[4]).features["campaign_id"] == campaign.pk


def _model_saw(client: FakeClient, name: str) -> list[float]:
    """`name` of the behaviour vectors the model was sent, in call order."""
    return [_by_name(item.behaviour)[name] for call in client.calls for item in call]


def _by_name(behaviour: Sequence[float] | Mapping[str, float]) -> Mapping[str, float]:
    if isinstance(behaviour, Mapping):
        return behaviour
    return dict(zip(BEHAVIOUR_FEATURES, behaviour, strict=True))


def test_a_post_joining_a_campaign_of_five_authors_is_scored_with_its_size() -> None:
    source = make_source()
    posts = _copies_from_new_authors(source)
    score_posts(post_ids=[p.pk for p in posts[:4]], client=FakeClient())
    client = FakeClient()
    score_posts(post_ids=[posts[4].pk], client=client)
    features = Score.objects.get(post=posts[4]).features["behaviour"]
    assert (features["campaign_size"], features["campaign_authors"]) == (5.0, 5.0)
    # Detection ran before the model: the model read the campaign the post had just joined.
    assert (_model_saw(client, "campaign_size"), _model_saw(client, "campaign_authors")) == ([5.0], [5.0])
    first = Score.objects.get(post=posts[0]).features["behaviour"]
    assert (first["campaign_size"], first["campaign_authors"]) == (4.0, 4.0)  # as its batch found it


def test_a_post_in_no_campaign_has_campaign_features_of_zero() -> None:
    (post,) = _copies_from_new_authors(make_source(), [OTHER])
    score_posts(post_ids=[post.pk], client=FakeClient())
    features = Score.objects.get(post=post).features["behaviour"]
    assert (features["campaign_size"], features["campaign_authors"]) == (0.0, 0.0)


def test_detection_switched_off_groups_nothing_and_stores_no_buckets(settings) -> None:
    settings.CAMPAIGN_DETECTION = False
    posts = _copies_from_new_authors(make_source())
    score_posts(post_ids=[p.pk for p in posts], client=FakeClient())
    assert _campaign_ids(posts) == [None] * len(posts)
    assert not CampaignBucket.objects.exists()
    assert Score.objects.filter(post__in=posts).count() == len(posts)  # scored as usual


def test_a_distinct_text_stays_out() -> None:
    source = make_source()
    posts = _copies_from_new_authors(source, [*COPIES[:3], OTHER])
    score_posts(post_ids=[p.pk for p in posts], client=FakeClient())
    ids = _campaign_ids(posts)
    assert ids[0] is not None and ids[:3] == [ids[0]] * 3 and ids[3] is None


def test_copies_by_one_author_are_no_campaign() -> None:
    source = make_source()
    author = make_author(source)
    posts = [make_post(source=source, author=author, text=t) for t in COPIES[:3]]
    score_posts(post_ids=[p.pk for p in posts], client=FakeClient())
    assert _campaign_ids(posts) == [None, None, None]


def test_short_texts_are_not_compared() -> None:
    source = make_source()
    posts = _copies_from_new_authors(source, ["ok see you there", "ok see you there!"])
    score_posts(post_ids=[p.pk for p in posts], client=FakeClient())
    assert _campaign_ids(posts) == [None, None]
    assert not CampaignBucket.objects.filter(post__in=posts).exists()


def test_campaigns_never_span_sources() -> None:
    first, second = make_source(), make_source()
    mine = _copies_from_new_authors(first, COPIES[:3])
    score_posts(post_ids=[p.pk for p in mine], client=FakeClient())
    theirs = _copies_from_new_authors(second, [COPIES[3], COPIES[0]])
    score_posts(post_ids=[p.pk for p in theirs], client=FakeClient())
    mine_ids, their_ids = set(_campaign_ids(mine)), set(_campaign_ids(theirs))
    assert len(mine_ids) == len(their_ids) == 1 and None not in mine_ids | their_ids
    assert mine_ids != their_ids
    assert Campaign.objects.get(posts=theirs[0]).source_id == second.pk
    # A lone copy in a third source finds nothing, though both campaigns hold its near-copies.
    lone = _copies_from_new_authors(make_source(), COPIES[:1])
    score_posts(post_ids=[lone[0].pk], client=FakeClient())
    assert _campaign_ids(lone) == [None]


def test_scoring_twice_leaves_the_same_campaign() -> None:
    source = make_source()
    posts = _copies_from_new_authors(source, COPIES[:3])
    ids = [p.pk for p in posts]
    score_posts(post_ids=ids, client=FakeClient())
    Post.objects.filter(pk__in=ids).update(status=PostStatus.RECEIVED)  # a retried task
    Score.objects.filter(post_id__in=ids).delete()
    score_posts(post_ids=ids, client=FakeClient())
    assert Campaign.objects.filter(source=source).count() == 1
    assert Campaign.objects.get(source=source).member_count == 3


def _decide_campaign_as_spam(campaign_id: int):
    ReasonCodeFactory(code="commercial-spam", applies_to=Label.SPAM)
    moderator = UserFactory()
    return moderator, bulk_decide(
        moderator=moderator, label=Label.SPAM, reason_code="commercial-spam", cluster=Cluster("campaign", campaign_id)
    )


@pytest.mark.parametrize(
    ("member_action", "status", "why"),
    [
        ("queue", PostStatus.QUEUED, CAMPAIGN_SPAM_REASON),
        ("remove", PostStatus.AUTO_REMOVED, f"{CAMPAIGN_SPAM_REASON}: removed"),
    ],
)
def test_a_campaign_decided_as_spam_decides_its_new_members(member_action: str, status: str, why: str) -> None:
    source = make_source(campaign_member_action=member_action)
    posts = _copies_from_new_authors(source, COPIES[:2])
    Post.objects.filter(pk__in=[p.pk for p in posts]).update(status=PostStatus.QUEUED)
    score_posts(post_ids=[p.pk for p in posts], client=FakeClient())  # not pending: no campaign yet
    posts = _copies_from_new_authors(source, COPIES[:2])
    score_posts(post_ids=[p.pk for p in posts], client=FakeClient())
    campaign = Campaign.objects.get(source=source)
    assert [Post.objects.get(pk=p.pk).status for p in posts] == [PostStatus.AUTO_APPROVED] * 2  # ham score
    # A moderator decides the whole campaign; its next member follows.
    Post.objects.filter(pk__in=[p.pk for p in posts]).update(status=PostStatus.QUEUED)
    _decide_campaign_as_spam(campaign.pk)
    campaign.refresh_from_db()
    assert campaign.decided_label == Label.SPAM
    (newcomer,) = _copies_from_new_authors(source, COPIES[2:3])
    score_posts(post_ids=[newcomer.pk], client=FakeClient())
    newcomer.refresh_from_db()
    assert (newcomer.campaign_id, newcomer.status) == (campaign.pk, status)
    score = Score.objects.get(post=newcomer)
    assert score.features["campaign"] == why
    audit = AuditLog.objects.get(action="campaign.member_decided", target_id=str(newcomer.pk))
    assert audit.after["campaign_id"] == campaign.pk and audit.before == {"action": Action.APPROVE}


def test_undoing_the_campaign_decision_lets_new_members_be_scored_as_usual() -> None:
    source = make_source()
    posts = _copies_from_new_authors(source, COPIES[:2])
    score_posts(post_ids=[p.pk for p in posts], client=FakeClient())
    campaign = Campaign.objects.get(source=source)
    Post.objects.filter(campaign=campaign).update(status=PostStatus.QUEUED)
    moderator, bulk = _decide_campaign_as_spam(campaign.pk)
    assert set(Post.objects.filter(campaign=campaign).values_list("status", flat=True)) == {PostStatus.REMOVED}
    bulk_undo(bulk=bulk, moderator=moderator)
    campaign.refresh_from_db()
    assert (campaign.decided_label, campaign.decided_bulk_id) == ("", None)
    (newcomer,) = _copies_from_new_authors(source, COPIES[2:3])
    score_posts(post_ids=[newcomer.pk], client=FakeClient())
    newcomer.refresh_from_db()
    assert (newcomer.campaign_id, newcomer.status) == (campaign.pk, PostStatus.AUTO_APPROVED)


def test_the_webhook_payload_carries_the_campaign() -> None:
    source = make_source(callback_url="https://hooks.example.com/mod", webhook_secret="s3cret")
    posts = _copies_from_new_authors(source, COPIES[:2])
    score_posts(post_ids=[p.pk for p in posts], client=FakeClient())
    post = Post.objects.select_related("source").get(pk=posts[1].pk)
    assert post.campaign_id is not None
    post.webhook_deliveries.all().delete()
    (delivery,) = webhooks_enqueue_for_posts([post])
    assert delivery.payload["data"]["post"]["campaign_id"] == post.campaign_id


def test_the_api_shows_each_source_its_own_campaign(django_assert_max_num_queries) -> None:
    from rest_framework.test import APIClient

    from tests.factories import create_api_key

    source = make_source()
    posts = _copies_from_new_authors(source, COPIES[:3])
    score_posts(post_ids=[p.pk for p in posts], client=FakeClient())
    api = APIClient(HTTP_X_API_KEY=create_api_key(source))
    with django_assert_max_num_queries(6):
        body = api.get(f"/api/v1/posts/{posts[2].external_id}").json()
    campaign = Campaign.objects.get(source=source)
    assert body["campaign"] == {
        "id": campaign.pk,
        "member_count": 3,
        "author_count": 3,
        "first_seen_at": body["campaign"]["first_seen_at"],
        "last_seen_at": body["campaign"]["last_seen_at"],
        "decided_label": "",
    }
    (alone,) = _copies_from_new_authors(source, [OTHER])
    assert api.get(f"/api/v1/posts/{alone.external_id}").json()["campaign"] is None


def test_erasure_takes_the_authors_buckets() -> None:
    from moderation.services.erasure import author_erase

    source = make_source()
    posts = _copies_from_new_authors(source, COPIES[:2])
    score_posts(post_ids=[p.pk for p in posts], client=FakeClient())
    assert CampaignBucket.objects.filter(post=posts[0]).exists()
    author_erase(author=posts[0].author, actor=None, via=f"api:{source.slug}")
    assert not CampaignBucket.objects.filter(post=posts[0]).exists()
    assert CampaignBucket.objects.filter(post=posts[1]).exists()


@pytest.mark.usefixtures("clean_cache")
def test_the_pre_publish_check_holds_a_member_of_a_campaign_decided_as_spam() -> None:
    from scoring.services.inline import score_inline

    source = make_source()
    posts = _copies_from_new_authors(source, COPIES[:2])
    score_posts(post_ids=[p.pk for p in posts], client=FakeClient())
    campaign = Campaign.objects.get(source=source)
    Post.objects.filter(campaign=campaign).update(status=PostStatus.QUEUED)
    _decide_campaign_as_spam(campaign.pk)
    (newcomer,) = _copies_from_new_authors(source, COPIES[2:3])
    client = FakeClient()
    score = score_inline(post=newcomer, budget_ms=2000, client=client)
    assert score is not None and score.routing_reason == CAMPAIGN_SPAM_REASON
    # The inline check, too, detects before the model call, which sees the post as a member.
    assert (_model_saw(client, "campaign_size"), _model_saw(client, "campaign_authors")) == ([3.0], [3.0])
    assert score.features["behaviour"]["campaign_size"] == 3.0
    assert (newcomer.status, Post.objects.get(pk=newcomer.pk).campaign_id) == (PostStatus.QUEUED, campaign.pk)


def test_detection_costs_the_same_queries_for_two_or_twelve_copies() -> None:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from scoring.services.campaigns import campaigns_detect

    def queries_for(size: int) -> int:
        source = make_source()
        posts = _copies_from_new_authors(source, [COPIES[n % len(COPIES)] for n in range(size)])
        with CaptureQueriesContext(connection) as ctx:
            found = campaigns_detect(posts=posts)
        assert len(set(found.values())) == 1 and len(found) == size
        return len(ctx)

    assert queries_for(2) == queries_for(12)


@pytest.mark.django_db(transaction=True)
def test_two_batches_of_copies_detected_at_once_open_one_campaign(monkeypatch) -> None:
    """Two workers, each with copies of one text from new authors, store their buckets before
    either reads: each sees the other's posts, both try to open a campaign, and the row locks
    make the second join the first's."""
    import threading

    from django.db import connection

    from scoring.services import campaigns

    source = make_source()
    earlier = _copies_from_new_authors(source, COPIES[:1])
    campaigns.campaigns_detect(posts=earlier)  # stored, alone: in no campaign yet
    batches = [_copies_from_new_authors(source, COPIES[1:3]), _copies_from_new_authors(source, COPIES[3:5])]
    both_stored = threading.Barrier(2, timeout=30)
    store = campaigns._buckets_store

    def store_then_wait(*args, **kwargs) -> None:
        store(*args, **kwargs)
        both_stored.wait()

    monkeypatch.setattr(campaigns, "_buckets_store", store_then_wait)
    errors: list[BaseException] = []

    def detect(posts: list[Post]) -> None:
        try:
            campaigns.campaigns_detect(posts=posts)
        except BaseException as exc:  # reported by the test thread
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=detect, args=(batch,)) for batch in batches]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors
    members = [*earlier, *batches[0], *batches[1]]
    (campaign,) = Campaign.objects.filter(source=source)
    assert _campaign_ids(members) == [campaign.pk] * 5
    assert (campaign.member_count, campaign.author_count) == (5, 5)
