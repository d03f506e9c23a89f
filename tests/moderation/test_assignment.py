"""Assignment of queue items: the top-category rule (table-driven, no database), claiming,
assigning, giving back, the release on a decision, automatic routing to specialist queues from
the scoring path, and the audit trail."""

from __future__ import annotations

import pytest

from core.errors import ApplicationError, Conflict, Forbidden
from moderation.models import AuditLog, Post, PostStatus, Report, SpecialistQueue
from moderation.services.assignment import (
    AssignTarget,
    post_claim,
    post_unclaim,
    posts_assign,
    posts_route_to_specialists,
    top_category,
)
from moderation.services.bulk import bulk_decide
from moderation.services.decisions import decision_record
from tests.dashboard.dashboard_factories import PostFactory, UserFactory


@pytest.mark.parametrize(
    ("abuse_score", "reports", "expected"),
    [
        (None, {}, "spam"),
        (0.2, {}, "spam"),
        (0.5, {}, "abuse"),  # at the threshold
        (0.9, {"hate": 1}, "hate"),  # people named the harm
        (None, {"spam": 1, "hate": 2}, "hate"),
        (None, {"violence": 1, "hate": 1}, "hate"),  # a tie: the policy list's order
        (None, {"self_harm": 2, "sexual": 2}, "sexual"),
    ],
)
def test_top_category(abuse_score, reports, expected):
    assert top_category(abuse_score=abuse_score, abuse_threshold=0.5, report_categories=reports) == expected


@pytest.fixture
def mods(db):
    return UserFactory(username="alice", role="moderator"), UserFactory(username="bob", role="moderator")


@pytest.fixture
def hate_queue(db, mods):
    queue = SpecialistQueue.objects.create(category="hate", name="Hate speech")
    queue.members.add(mods[1])
    return queue


def _audit(post, action):
    return AuditLog.objects.filter(target_type="post", target_id=str(post.pk), action=action)


def test_claim_then_a_colleague_is_refused_until_given_back(mods):
    alice, bob = mods
    post = PostFactory()
    post_claim(post=post, user=alice)
    post.refresh_from_db()
    assert post.assigned_to == alice and post.assigned_at is not None
    assert _audit(post, "post.claim").get().after == {"assigned_to": "alice", "assigned_queue": None}
    with pytest.raises(Conflict):
        post_claim(post=post, user=bob)
    with pytest.raises(Forbidden):
        post_unclaim(post=post, user=bob)
    post_unclaim(post=post, user=alice)
    post_claim(post=post, user=bob)
    post.refresh_from_db()
    assert post.assigned_to == bob


def test_a_specialist_queue_item_is_claimed_by_its_members(mods, hate_queue):
    alice, bob = mods
    post = PostFactory()
    posts_assign(post_ids=[post.pk], actor=alice, target=AssignTarget(queue=hate_queue))
    with pytest.raises(Conflict, match="Hate speech"):
        post_claim(post=post, user=alice)  # not a member
    post_claim(post=post, user=bob)
    post.refresh_from_db()
    # The specialist holds it and it stays in the queue; giving it back returns it there.
    assert (post.assigned_to, post.assigned_queue) == (bob, hate_queue)
    post_unclaim(post=post, user=bob)
    post.refresh_from_db()
    assert (post.assigned_to, post.assigned_queue) == (None, hate_queue)


def test_explicit_assignment_takes_any_post_and_unassign_clears_both(mods, hate_queue):
    alice, bob = mods
    posts = [PostFactory(), PostFactory()]
    ids = [p.pk for p in posts]
    posts_assign(post_ids=ids, actor=alice, target=AssignTarget(queue=hate_queue))
    assert posts_assign(post_ids=ids, actor=alice, target=AssignTarget(user=bob)) == 2
    assert set(Post.objects.filter(pk__in=ids).values_list("assigned_to", "assigned_queue")) == {
        (bob.pk, hate_queue.pk)
    }
    assert posts_assign(post_ids=ids, actor=alice, target=AssignTarget()) == 2
    assert set(Post.objects.filter(pk__in=ids).values_list("assigned_to", "assigned_queue", "assigned_at")) == {
        (None, None, None)
    }
    # One audit entry per post and change.
    assert [e.action for e in AuditLog.objects.filter(target_id=str(ids[0])).order_by("pk")] == [
        "post.assign",
        "post.assign",
        "post.unassign",
    ]


def test_assignment_is_refused_to_a_non_moderator_and_on_decided_posts(mods):
    alice, _ = mods
    with pytest.raises(ApplicationError):
        posts_assign(post_ids=[PostFactory().pk], actor=alice, target=AssignTarget(user=UserFactory(role="analyst")))
    decided = PostFactory(status=PostStatus.REMOVED)
    with pytest.raises(Conflict):
        posts_assign(post_ids=[decided.pk], actor=alice, target=AssignTarget(user=alice))
    assert Post.objects.get(pk=decided.pk).assigned_to is None


def test_a_decision_releases_the_assignment(mods, hate_queue):
    alice, bob = mods
    one, two = PostFactory(), PostFactory()
    post_claim(post=one, user=alice)
    posts_assign(post_ids=[two.pk], actor=alice, target=AssignTarget(queue=hate_queue))
    decision_record(post=one, moderator=alice, label="spam")
    bulk_decide(moderator=bob, label="ham", post_ids=[two.pk])
    assert set(Post.objects.filter(pk__in=[one.pk, two.pk]).values_list("assigned_to", "assigned_queue")) == {
        (None, None)
    }


def test_routing_sends_unowned_queued_posts_to_their_categorys_queue(mods, hate_queue, settings):
    settings.ABUSE_QUEUE_THRESHOLD = 0.5
    alice, _ = mods
    abuse_queue = SpecialistQueue.objects.create(category="abuse", name="Harassment")
    hateful = PostFactory(abuse_score=0.9)
    Report.objects.create(post=hateful, reporter_id="r1", reason="hate_speech", category="hate")
    Post.objects.filter(pk=hateful.pk).update(report_count=1)
    abusive = PostFactory(abuse_score=0.8)
    spammy = PostFactory(abuse_score=0.1)
    taken = PostFactory(abuse_score=0.9)
    post_claim(post=taken, user=alice)
    decided = PostFactory(abuse_score=0.9, status=PostStatus.REMOVED)
    ids = [hateful.pk, abusive.pk, spammy.pk, taken.pk, decided.pk]

    assert posts_route_to_specialists(post_ids=ids) == 2
    routed = dict(Post.objects.filter(pk__in=ids).values_list("pk", "assigned_queue"))
    assert routed == {
        hateful.pk: hate_queue.pk,
        abusive.pk: abuse_queue.pk,
        spammy.pk: None,
        taken.pk: None,
        decided.pk: None,
    }
    assert _audit(abusive, "post.route").get().after["assigned_queue"] == "Harassment"
    # Routing again changes nothing; a queue that stops routing takes no more posts.
    assert posts_route_to_specialists(post_ids=ids) == 0
    SpecialistQueue.objects.update(auto_route=False)
    fresh = PostFactory(abuse_score=0.95)
    assert posts_route_to_specialists(post_ids=[fresh.pk]) == 0


def test_routing_costs_one_query_when_no_queue_routes(db, django_assert_num_queries):
    post = PostFactory(abuse_score=0.9)
    with django_assert_num_queries(1):
        assert posts_route_to_specialists(post_ids=[post.pk]) == 0


def test_the_scoring_path_routes_what_it_queues(db, settings):
    from scoring.services.scoring import score_posts
    from tests.scoring.pipeline_support import FakeClient, make_post

    queue = SpecialistQueue.objects.create(category="spam", name="Spam desk")
    post = make_post(text="maybe a deal")
    kept = make_post(text="nothing to see")
    results = {r.post_id: r.status for r in score_posts(post_ids=[post.pk, kept.pk], client=FakeClient())}
    assert results == {post.pk: PostStatus.QUEUED, kept.pk: PostStatus.AUTO_APPROVED}
    post.refresh_from_db()
    kept.refresh_from_db()
    assert (post.assigned_queue, kept.assigned_queue) == (queue, None)


def test_an_admin_sets_up_a_specialist_queue_in_the_admin_audited(client, mods):
    from django.urls import reverse

    _, bob = mods
    admin = UserFactory(username="ada", role="admin", is_staff=True)
    client.force_login(admin)
    response = client.post(
        reverse("admin:moderation_specialistqueue_add"),
        {"name": "Hate speech", "category": "hate", "auto_route": "on", "members": [bob.pk]},
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    queue = SpecialistQueue.objects.get()
    assert (queue.category, list(queue.members.all())) == ("hate", [bob])
    entry = AuditLog.objects.get(action="specialist_queue.create")
    assert entry.actor == admin and entry.after["members"] == ["bob"]
    # Deleting it leaves its posts unassigned (not lost) and is audited too.
    post = PostFactory()
    posts_assign(post_ids=[post.pk], actor=admin, target=AssignTarget(queue=queue))
    client.post(reverse("admin:moderation_specialistqueue_delete", args=[queue.pk]), {"post": "yes"})
    assert not SpecialistQueue.objects.exists()
    assert Post.objects.get(pk=post.pk).assigned_queue is None
    assert AuditLog.objects.filter(action="specialist_queue.delete").count() == 1
    # A moderator has no access to the admin's queues.
    client.force_login(UserFactory(role="moderator", is_staff=True))
    assert client.get(reverse("admin:moderation_specialistqueue_add")).status_code == 403
