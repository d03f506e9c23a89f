"""The teach order as a pure function: uncertain before confident, unfamiliar boosted, one
campaign or one author does not fill the page."""

from __future__ import annotations

import pytest

from dashboard.teach import Call, TeachItem, leans_violation, teach_order, uncertainty

APPROVE, REMOVE = 0.2, 0.9


def _item(post_id: int, score: float | None, **kwargs: object) -> TeachItem:
    return TeachItem(post_id=post_id, calls=(Call(score, APPROVE, REMOVE),), **kwargs)  # type: ignore[arg-type]


def _ids(items: list[TeachItem], limit: int | None = None) -> list[int]:
    return [pick.item.post_id for pick in teach_order(items, limit=limit)]


@pytest.mark.parametrize(
    ("near", "far"),
    [(0.5, 0.85), (0.5, 0.25), (0.45, 0.05), (0.6, 0.97), (0.35, 0.88)],
)
def test_a_score_near_the_boundary_comes_before_a_confident_one(near: float, far: float) -> None:
    assert _ids([_item(1, far), _item(2, near)]) == [2, 1]


def test_uncertainty_peaks_midway_in_log_odds_and_is_1_over_e_at_the_thresholds() -> None:
    middle = 1 / (1 + (0.8 / 0.2 * 0.1 / 0.9) ** 0.5)  # sigmoid of the mean of the two logits
    assert uncertainty(middle, APPROVE, REMOVE) == pytest.approx(1.0)
    assert uncertainty(APPROVE, APPROVE, REMOVE) == pytest.approx(uncertainty(REMOVE, APPROVE, REMOVE))
    assert uncertainty(REMOVE, APPROVE, REMOVE) == pytest.approx(0.3679, abs=1e-3)
    assert (
        uncertainty(0.99, APPROVE, REMOVE) < uncertainty(0.95, APPROVE, REMOVE) < uncertainty(REMOVE, APPROVE, REMOVE)
    )


def test_the_closest_of_an_items_calls_counts() -> None:
    confident_spam = TeachItem(post_id=1, calls=(Call(0.97, APPROVE, REMOVE),))
    torn_on_abuse = TeachItem(post_id=2, calls=(Call(0.97, APPROVE, REMOVE), Call(0.7, 0.5, 0.9)))
    assert _ids([confident_spam, torn_on_abuse]) == [2, 1]


def test_an_unfamiliar_post_is_boosted_past_a_familiar_one_at_the_same_score() -> None:
    items = [_item(1, 0.5, unfamiliarity=0.3), _item(2, 0.5, unfamiliarity=1.4), _item(3, 0.5)]
    assert _ids(items) == [2, 1, 3]


def test_an_unfamiliar_post_with_a_confident_score_beats_a_familiar_one_on_the_line() -> None:
    # The familiarity measure at 2x the limit is worth the whole uncertainty scale.
    assert _ids([_item(1, 0.46), _item(2, 0.97, unfamiliarity=2.5)]) == [2, 1]


def test_reasons_say_why_each_item_is_there() -> None:
    picks = {
        p.item.post_id: p.reasons
        for p in teach_order([_item(1, 0.45), _item(2, 0.97, unfamiliarity=1.2), _item(3, 0.05, unfamiliarity=3.0)])
    }
    assert picks == {1: ("uncertain",), 2: ("unfamiliar",), 3: ("new kind",)}


def test_one_campaign_does_not_fill_the_page() -> None:
    # Twenty copies of one campaign sit right on the boundary (0.6, midway in log-odds between
    # 0.2 and 0.9); ten lone posts are less torn.
    campaign = [_item(i, 0.6, author_id=f"a{i}", groups=(("campaign", 7),)) for i in range(20)]
    lone = [_item(100 + i, 0.3 + 0.04 * i, author_id=f"b{i}") for i in range(10)]
    page = _ids(campaign + lone, limit=10)
    assert len(page) == 10
    assert sum(1 for post_id in page if post_id < 100) == 1
    assert page[0] < 100  # the campaign's best copy still leads: it is the closest call


def test_exact_copies_count_as_one_group_without_a_campaign() -> None:
    copies = [_item(i, 0.6, author_id=f"a{i}", groups=(("content", "same-hash"),)) for i in range(5)]
    page = _ids([*copies, _item(9, 0.75, author_id="z")], limit=2)
    assert page[0] < 5 and page[1] == 9


def test_one_author_is_spread_over_the_page() -> None:
    prolific = [_item(i, 0.45, author_id="spammer") for i in range(6)]
    others = [_item(10 + i, 0.4, author_id=f"u{i}") for i in range(4)]
    page = _ids(prolific + others, limit=5)
    assert sum(1 for post_id in page if post_id < 10) <= 2
    assert set(page) >= {10, 11, 12}


def test_the_full_order_keeps_every_item_once_and_repeats_go_last() -> None:
    campaign = [_item(i, 0.45, groups=(("campaign", 1),)) for i in range(3)]
    rest = [_item(10 + i, 0.8, author_id=f"u{i}") for i in range(3)]
    order = _ids(campaign + rest)
    assert sorted(order) == sorted(p.post_id for p in campaign + rest)
    assert order[:4] == [0, 10, 11, 12]


def test_the_order_does_not_depend_on_the_input_order_beyond_ties() -> None:
    items = [_item(i, s, unfamiliarity=f) for i, (s, f) in enumerate([(0.3, None), (0.5, 0.5), (0.8, 1.5), (0.1, 0)])]
    assert _ids(items) == _ids(list(reversed(items)))


def test_the_page_balances_what_the_models_lean_to() -> None:
    # Eight torn posts the models lean to call violations (0.62-0.76, above even odds) and
    # four they lean to call legitimate, far below it but unfamiliar: uncertainty alone would ask
    # for all eight first, a label set of one class.
    torn = [_item(i, 0.62 + 0.02 * i, author_id=f"a{i}") for i in range(8)]
    quiet = [_item(100 + i, 0.05, author_id=f"b{i}", unfamiliarity=0.4) for i in range(4)]
    picks = teach_order(torn + quiet, limit=8)
    sides = [pick.leans_violation for pick in picks]
    assert picks[0].item.post_id == 0  # the best item still leads
    # Each side's excess halves its value: the torn posts lead by two at most, never by eight.
    assert all(0 <= sides[:k].count(True) - sides[:k].count(False) <= 2 for k in range(1, 9))
    assert sides.count(False) >= 3


def test_without_the_other_side_the_order_is_by_value() -> None:
    torn = [_item(i, 0.9 - 0.02 * i, author_id=f"a{i}") for i in range(5)]
    assert _ids(torn) == [4, 3, 2, 1, 0]  # closest to the 0.6 boundary first


def test_a_post_leans_to_violation_when_any_score_gives_even_odds_or_more() -> None:
    assert leans_violation(_item(1, 0.5)) is True
    assert leans_violation(_item(1, 0.49)) is False
    # An abuse score of 0.8 in a 0.5-0.99 band: below the band's midpoint, still more likely
    # a violation than not.
    assert leans_violation(TeachItem(post_id=1, calls=(Call(0.1, APPROVE, REMOVE), Call(0.8, 0.5, 0.99)))) is True
    assert leans_violation(_item(1, None)) is None


def test_unscored_items_are_not_balanced_against_either_side() -> None:
    # No score counts as uncertain (1) and leans to neither side. Were it counted as a
    # violation, the torn post (0.62, value about 0.95) would be halved below the
    # legitimate-leaning one (0.375, value about 0.6) and come after it.
    items = [_item(1, None, author_id="x"), _item(2, 0.62, author_id="y"), _item(3, 0.375, author_id="z")]
    picks = teach_order(items)
    assert [p.item.post_id for p in picks] == [1, 2, 3]
    assert [p.leans_violation for p in picks] == [None, True, False]
    assert picks[1].value == pytest.approx(uncertainty(0.62, APPROVE, REMOVE))
