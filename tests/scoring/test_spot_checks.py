"""The spot-check draw (scoring.services.spot_checks) and where decide and persist apply it:
only the models' own first approvals and removals are drawn, at the source's rate."""

from __future__ import annotations

import dataclasses

import pytest
from django.test import override_settings

from moderation.models import Label, Post, PostStatus, Report, Source
from scoring.models import Action, Score
from scoring.services.decide import decide
from scoring.services.scoring import rescore_post, score_posts
from scoring.services.spot_checks import spot_check_draw, spot_check_rate, spot_check_selected
from tests.scoring.pipeline_support import FakeClient, make_post, make_source
from tests.scoring.test_decide import EARLIER, NOW, RECEIVED, RESCORE, Case, item_of


def test_the_draw_is_uniform_deterministic_and_keyed():
    draws = [spot_check_draw(i) for i in range(1, 20_001)]
    assert all(0.0 <= d < 1.0 for d in draws)
    assert draws == [spot_check_draw(i) for i in range(1, 20_001)]  # a retried batch draws the same
    share = sum(d < 0.02 for d in draws) / len(draws)
    # 2 % of 20,000 is 400, one standard deviation 19.8: four either side holds for any key.
    assert 0.016 < share < 0.024
    assert 0.45 < sum(draws) / len(draws) < 0.55
    with override_settings(SECRET_KEY="another deployment's key"):
        other = [spot_check_draw(i) for i in range(1, 1001)]
    assert other != draws[:1000]  # which posts are checked cannot be worked out without the key


def test_the_rate_is_the_sources_own_else_the_setting():
    with override_settings(SPOT_CHECK_RATE=0.05):
        assert spot_check_rate(Source(slug="a")) == 0.05
        assert spot_check_rate(Source(slug="b", spot_check_rate=0.5)) == 0.5
        assert spot_check_rate(Source(slug="c", spot_check_rate=0.0)) == 0.0
    assert not any(spot_check_selected(i, Source(slug="d", spot_check_rate=0.0)) for i in range(1, 500))
    assert all(spot_check_selected(i, Source(slug="e", spot_check_rate=1.0)) for i in range(1, 500))


def _spot_checked(case: Case, *, rate: float = 1.0) -> tuple[str, bool]:
    item = item_of(case)
    item.post.source.spot_check_rate = rate
    rows = {7: {"status": case.current, "report_count": case.reports}}
    (decision,) = decide([item], case.policy, NOW, rows=rows, allowed_from=case.allowed)
    return decision.status, decision.spot_check


@pytest.mark.parametrize(
    ("name", "case", "want"),
    [
        ("the models approve on their own", Case(final=0.1), (PostStatus.AUTO_APPROVED, True)),
        ("the models remove on their own", Case(final=0.95), (PostStatus.AUTO_REMOVED, True)),
        ("the abuse model removes", Case(final=0.1, abuse=0.95), (PostStatus.AUTO_REMOVED, True)),
        ("queued: a moderator sees it anyway", Case(final=0.5), (PostStatus.QUEUED, False)),
        ("a block list removed it", Case(final=None), (PostStatus.AUTO_REMOVED, False)),
        (
            "a moderator's suspension removed it",
            Case(final=0.1, author={"suspended_at": EARLIER}, suspended_posts="remove"),
            (PostStatus.AUTO_REMOVED, False),
        ),
        (
            "a decided campaign's removal is a moderator's rule",
            Case(final=0.1, campaign=Label.SPAM, campaign_action="remove"),
            (PostStatus.AUTO_REMOVED, False),
        ),
        (
            "a re-score after a report is not the first call",
            Case(final=0.95, current=PostStatus.AUTO_APPROVED, allowed=RESCORE),
            (PostStatus.AUTO_REMOVED, False),
        ),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_only_the_models_own_first_calls_are_drawn(name: str, case: Case, want: tuple[str, bool]) -> None:
    assert _spot_checked(case) == want


def test_nothing_is_drawn_at_rate_zero():
    assert _spot_checked(Case(final=0.1), rate=0.0) == (PostStatus.AUTO_APPROVED, False)
    assert _spot_checked(dataclasses.replace(Case(final=0.95), allowed=RECEIVED), rate=0.0)[1] is False


@pytest.mark.django_db
def test_a_scored_batch_marks_its_drawn_posts():
    source = make_source(spot_check_rate=1.0)
    spam, maybe, ham = (make_post(text=t, source=source) for t in ("spam!", "maybe", "hi"))
    score_posts(post_ids=[spam.id, maybe.id, ham.id], client=FakeClient())
    drawn = dict(Post.objects.values_list("id", "spot_check_action"))
    assert drawn == {spam.id: Action.REMOVE, maybe.id: "", ham.id: Action.APPROVE}
    assert Post.objects.get(pk=ham.id).status == PostStatus.AUTO_APPROVED


@pytest.mark.django_db
def test_exactly_the_posts_the_keyed_draw_picks_are_drawn():
    source = make_source(spot_check_rate=0.1)
    posts = [make_post(text="hi", source=source) for _ in range(400)]
    score_posts(post_ids=[p.id for p in posts], client=FakeClient())
    drawn = set(Post.objects.exclude(spot_check_action="").values_list("id", flat=True))
    expected = {p.id for p in posts if spot_check_draw(p.id) < 0.1}
    assert expected  # 40 expected; none drawn would have a chance of about 1e-18
    assert drawn == expected
    assert Score.objects.count() == 400


@pytest.mark.django_db
def test_a_rescore_draws_nothing_and_keeps_the_first_draw():
    source = make_source(spot_check_rate=0.0)
    post = make_post(text="hi", source=source)
    score_posts(post_ids=[post.id], client=FakeClient())
    Source.objects.filter(pk=source.pk).update(spot_check_rate=1.0)
    Report.objects.create(post=post, reporter_id="r-1", reason="spam")
    rescore_post(post_id=post.id, client=FakeClient(lambda item: 0.95))  # the re-score removes it
    post.refresh_from_db()
    assert post.status == PostStatus.AUTO_REMOVED
    assert Score.objects.filter(post=post).count() == 2
    assert post.spot_check_action == ""

    drawn = make_post(text="hi", source=source)
    score_posts(post_ids=[drawn.id], client=FakeClient())
    Report.objects.create(post=drawn, reporter_id="r-1", reason="spam")
    rescore_post(post_id=drawn.id, client=FakeClient(lambda item: 0.95))
    drawn.refresh_from_db()
    assert (drawn.status, drawn.spot_check_action) == (PostStatus.AUTO_REMOVED, Action.APPROVE)
