"""Campaign members joining: counters move by what joined, whatever the number of groups."""

from __future__ import annotations

from datetime import timedelta

import pytest

from moderation.models import Campaign, Post
from moderation.services.campaigns import campaigns_members_add
from tests.scoring.pipeline_support import make_author, make_post, make_source

pytestmark = pytest.mark.django_db


def test_counters_move_by_the_members_and_authors_that_join() -> None:
    source = make_source()
    alice, bob = make_author(source), make_author(source)
    first = [make_post(source=source, author=alice, text="one"), make_post(source=source, author=bob, text="two")]
    other = make_post(source=source, author=bob, text="three")
    now = first[0].received_at
    found = campaigns_members_add(
        source_id=source.pk, groups=[(None, [p.pk for p in first]), (None, [other.pk])], now=now
    )
    campaign, lone = found[first[0].pk], found[other.pk]
    assert (campaign.member_count, campaign.author_count, lone.member_count) == (2, 2, 1)
    later = make_post(source=source, author=alice, text="four")  # an author already in it
    newcomer = make_post(source=source, author=make_author(source), text="five")
    Post.objects.filter(pk=newcomer.pk).update(received_at=now + timedelta(hours=1))
    groups = [(campaign.pk, [later.pk, newcomer.pk]), (lone.pk, [first[0].pk])]  # first[0] is taken
    found = campaigns_members_add(source_id=source.pk, groups=groups, now=now)
    assert set(found) == {later.pk, newcomer.pk}
    campaign.refresh_from_db()
    lone.refresh_from_db()
    assert (campaign.member_count, campaign.author_count) == (4, 3)
    assert campaign.last_seen_at == now + timedelta(hours=1)
    assert (lone.member_count, Post.objects.get(pk=first[0].pk).campaign_id) == (1, campaign.pk)
    # Twice: nothing left to join, the counters stay.
    assert campaigns_members_add(source_id=source.pk, groups=groups, now=now) == {}
    assert Campaign.objects.get(pk=campaign.pk).member_count == 4
