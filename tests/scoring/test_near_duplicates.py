"""Shingles, MinHash buckets, the campaign plan and the campaign rule: pure, no database."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from moderation.models import Author, Campaign, Post, Source
from scoring.features.near_duplicates import buckets, jaccard, normalized, shingles, signature
from scoring.models import Action
from scoring.services.campaigns import CAMPAIGN_SPAM_REASON, Group, campaign_action, campaign_plan

OFFER = "Congratulations! You have won a 1000 pound voucher. Call 09061743811 now to claim at www.win-big.com"


def test_normalized_hides_numbers_urls_case_and_punctuation() -> None:
    assert normalized(OFFER) == ("congratulations you have won a nnum pound voucher call nnum now to claim at uurl")
    edited = "CONGRATULATIONS!!! you have won a 2000 pound voucher, call 08001234 now to claim at http://x.biz/a?b=1"
    assert normalized(edited) == normalized(OFFER)


@pytest.mark.parametrize(
    ("other", "near"),
    [
        ("Congratulations! You have won a 5000 pound voucher. Call 0800 now to claim at http://other.net", True),
        ("Congratulations! You won have a 1000 pound voucher. Call 09061743811 now to claim!", True),
        ("Are we still meeting for lunch tomorrow at the station? Let me know by tonight please", False),
    ],
)
def test_jaccard_of_shingles_separates_copies_from_other_texts(other: str, near: bool) -> None:
    assert (jaccard(shingles(OFFER), shingles(other)) >= 0.5) is near


def test_near_copies_share_a_bucket_and_distinct_texts_do_not() -> None:
    texts = [
        OFFER,
        "Congratulations! You have won a 750 pound voucher. Call 0906 now to claim at www.prize.biz",
        "Are we still meeting for lunch tomorrow at the station? Let me know by tonight please",
    ]
    keys = buckets([signature(shingles(t), num_perm=128) for t in texts], threshold=0.5, num_perm=128)
    assert len(keys[0]) == len(set(keys[0])) > 1  # one key per band, bands never collide
    assert set(keys[0]) & set(keys[1])
    assert not set(keys[0]) & set(keys[2])


def test_buckets_are_the_same_in_every_call() -> None:
    sig = signature(shingles(OFFER), num_perm=128)
    assert buckets([sig], threshold=0.5, num_perm=128) == buckets([sig], threshold=0.5, num_perm=128)


def test_plan_opens_a_campaign_for_copies_from_two_authors() -> None:
    plan = campaign_plan(
        new_post_ids=[3],
        matches={3: [1, 2]},
        campaign_of={1: None, 2: None, 3: None},
        author_of={1: 10, 2: 10, 3: 11},
        min_authors=2,
    )
    assert plan == [Group(campaign_id=None, post_ids=[3, 1, 2])]


def test_plan_leaves_one_authors_copies_alone() -> None:
    plan = campaign_plan(
        new_post_ids=[2],
        matches={2: [1]},
        campaign_of={1: None, 2: None},
        author_of={1: 10, 2: 10},
        min_authors=2,
    )
    assert plan == []


def test_plan_joins_the_oldest_existing_campaign() -> None:
    plan = campaign_plan(
        new_post_ids=[5],
        matches={5: [1, 2, 4]},
        campaign_of={1: 9, 2: 7, 4: None, 5: None},
        author_of={1: 10, 2: 11, 4: 12, 5: 10},
        min_authors=2,
    )
    assert plan == [Group(campaign_id=7, post_ids=[5, 4])]


def test_plan_chains_batch_mates_into_one_new_campaign() -> None:
    # 1 and 2 open it; 3 matches only 2, a batch-mate already in the new group.
    plan = campaign_plan(
        new_post_ids=[1, 2, 3],
        matches={1: [2], 2: [1, 3], 3: [2]},
        campaign_of={1: None, 2: None, 3: None},
        author_of={1: 10, 2: 11, 3: 12},
        min_authors=2,
    )
    assert plan == [Group(campaign_id=None, post_ids=[1, 2, 3])]


@pytest.mark.parametrize(
    ("decided", "member_action", "trusted", "action", "expected"),
    [
        ("", "remove", False, Action.APPROVE, (Action.APPROVE, "")),
        ("ham", "remove", False, Action.APPROVE, (Action.APPROVE, "")),
        ("spam", "queue", False, Action.APPROVE, (Action.QUEUE, CAMPAIGN_SPAM_REASON)),
        ("spam", "queue", False, Action.QUEUE, (Action.QUEUE, "")),
        ("spam", "remove", False, Action.APPROVE, (Action.REMOVE, f"{CAMPAIGN_SPAM_REASON}: removed")),
        ("spam", "remove", False, Action.REMOVE, (Action.REMOVE, "")),
        ("spam", "remove", True, Action.APPROVE, (Action.QUEUE, CAMPAIGN_SPAM_REASON)),
    ],
)
def test_campaign_action_table(decided: str, member_action: str, trusted: bool, action: Action, expected) -> None:
    now = timezone.now()
    post = Post(
        source=Source(campaign_member_action=member_action),
        author=Author(allowlisted_at=now - timedelta(days=1) if trusted else None),
        campaign=Campaign(pk=1, decided_label=decided),
    )
    assert campaign_action(post=post, action=action, now=now) == expected


def test_a_post_in_no_campaign_keeps_its_action() -> None:
    post = Post(source=Source(campaign_member_action="remove"), author=Author())
    assert campaign_action(post=post, action=Action.APPROVE, now=timezone.now()) == (Action.APPROVE, "")


def test_a_signature_equals_datasketchs_own_for_the_seed() -> None:
    from datasketch import MinHash

    from scoring.features.near_duplicates import MINHASH_SEED

    items = shingles("Claim your free prize now at www.example.com, call 0800 123")
    reference = MinHash(num_perm=64, seed=MINHASH_SEED)
    reference.update_batch(list(items))
    assert list(signature(items, num_perm=64).hashvalues) == list(reference.hashvalues)
    assert list(signature(shingles("another text entirely"), num_perm=64).hashvalues) != list(reference.hashvalues)
