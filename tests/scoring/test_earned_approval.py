"""Earned approval: the gate at a level (scoring.services.earned_approval) as a table, and the
level a source's reviewed posts earn (scoring.services.approval_levels) on rows in PostgreSQL.
How decide applies the gate is in tests/scoring/test_decide.py; through a real worker and
Triton in tests/integration/test_earned_approval_e2e.py."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO
from typing import Any

import pytest
from django.contrib import admin as django_admin
from django.core.management import call_command
from django.utils import timezone

from moderation.admin import SourceAdmin
from moderation.models import AuditLog, Author, Post, PostStatus, Source
from moderation.services.approval_levels import approval_level_lower, approval_level_raise, approval_level_set
from scoring import tasks
from scoring.models import Action, DecisionPolicy, Score
from scoring.services.approval_levels import (
    LevelEvidence,
    earned_level,
    level_evidence,
    spot_check_evidence,
    update_approval_levels,
)
from scoring.services.earned_approval import HELD_REASON, ApprovalGate, approval_gate, earned_approval_decide

POLICY = DecisionPolicy(version=1, remove_threshold=0.9, approve_threshold=0.2, escalate_threshold=0.9)


@pytest.fixture(autouse=True)
def _earned(settings: Any) -> None:
    settings.EARNED_APPROVAL = True
    settings.EARNED_APPROVAL_START_FINAL = 0.05
    settings.EARNED_APPROVAL_START_ABUSE = 0.15
    settings.EARNED_APPROVAL_MAX_SHARE = 0.05
    settings.EARNED_APPROVAL_MIN_LABELS = 50
    settings.EARNED_APPROVAL_WINDOW_DAYS = 90


@pytest.mark.parametrize(
    ("level", "approve", "abuse_queue", "want"),
    [
        (0.0, 0.2, 0.5, ApprovalGate(0.05, 0.15)),
        (0.5, 0.2, 0.5, ApprovalGate(0.125, 0.325)),
        (1.0, 0.2, 0.5, ApprovalGate(0.2, 0.5)),
        (1.7, 0.2, 0.5, ApprovalGate(0.2, 0.5)),  # clipped
        (-1.0, 0.2, 0.5, ApprovalGate(0.05, 0.15)),
        # A start above the policy's own bound never widens it.
        (0.0, 0.03, 0.1, ApprovalGate(0.03, 0.1)),
    ],
)
def test_the_gate_moves_linearly_from_the_start_to_the_policy(
    level: float, approve: float, abuse_queue: float, want: ApprovalGate
) -> None:
    gate = approval_gate(level, approve_threshold=approve, abuse_queue_threshold=abuse_queue)
    assert gate.final_below == pytest.approx(want.final_below)
    assert gate.abuse_below == pytest.approx(want.abuse_below)


@pytest.mark.parametrize(
    ("action", "final", "abuse", "want"),
    [
        (Action.APPROVE, 0.04, 0.1, Action.APPROVE),
        (Action.APPROVE, 0.05, 0.1, Action.QUEUE),  # at the bound: not below it
        (Action.APPROVE, 0.04, 0.15, Action.QUEUE),
        (Action.APPROVE, 0.04, None, Action.APPROVE),  # no abuse model served
        (Action.QUEUE, 0.5, 0.9, Action.QUEUE),
        (Action.REMOVE, 0.95, 0.0, Action.REMOVE),
    ],
)
def test_only_an_approval_beyond_the_gate_is_queued(
    action: Action, final: float, abuse: float | None, want: Action
) -> None:
    got, why = earned_approval_decide(action, final, abuse, ApprovalGate(0.05, 0.15))
    assert got == want
    assert bool(why) is (got != action)


def test_every_step_up_to_the_level_must_be_earned() -> None:
    def step(level: float, labelled: int, removed: int = 0) -> LevelEvidence:
        return LevelEvidence(level=level, labelled=labelled, removed=removed)

    assert earned_level(0.0, [step(0.25, 80), step(0.5, 80), step(0.75, 0), step(1.0, 200)]) == 0.5
    assert earned_level(0.0, [step(0.25, 70), step(0.5, 200)]) == 0.0  # 0 of 70: upper bound 5.2 %
    assert earned_level(0.0, [step(0.25, 200, 12), step(0.5, 200)]) == 0.0  # 6 % removed
    assert earned_level(0.0, [step(0.25, 400, 8)]) == 0.25  # 2 %: upper bound 3.9 %
    assert earned_level(0.75, [step(0.25, 0)]) == 0.75  # never lowered
    # A step at or below the level is open already: not asked again.
    assert earned_level(0.25, [step(0.25, 10), step(0.5, 200), step(0.75, 0)]) == 0.5
    assert earned_level(0.5, [step(0.25, 0), step(0.5, 0), step(0.75, 500), step(1.0, 500)]) == 1.0


def _posts(
    source: Source, n: int, *, final: float, abuse: float | None = None, held: bool = True, **fields: Any
) -> list[Post]:
    """n posts of `source` with these scores, approved by a moderator unless `fields` say
    otherwise; `held`: their score says the gate held them (the evidence), else another routing."""
    author, _ = Author.objects.get_or_create(source=source, external_id="a")
    start = Post.objects.filter(source=source).count()
    now = timezone.now()
    posts = Post.objects.bulk_create(
        Post(
            source=source,
            external_id=f"p-{start + i}",
            author=author,
            created_at=now,
            final_score=final,
            abuse_score=abuse,
            **{"status": PostStatus.APPROVED, **fields},
        )
        for i in range(n)
    )
    reason = f"{HELD_REASON}: score {final:.3f} >= 0.050" if held else "unfamiliar text (1.4 x the limit)"
    Score.objects.bulk_create(
        Score(
            post=post, model_set="m", final_score=final, abuse_score=abuse, action=Action.QUEUE, routing_reason=reason
        )
        for post in posts
    )
    return posts


@pytest.mark.django_db
def test_a_clean_slice_earns_its_step_and_the_next_empty_one_stops_it() -> None:
    source = Source.objects.create(name="s", slug="s")
    assert source.approval_level == 0.0  # a new source starts narrow
    _posts(source, 80, final=0.06)  # the first step's slice: 0.05 <= final < 0.0875
    _posts(source, 500, final=0.01)  # below the start: approved anyway, no evidence
    _posts(source, 40, final=0.5, status=PostStatus.REMOVED)  # above the policy's band
    moved = update_approval_levels(policy=POLICY, now=timezone.now())
    source.refresh_from_db()
    assert moved == {source.id: 0.25}
    assert source.approval_level == 0.25
    audit = AuditLog.objects.get(action="source.approval_level_earned", target_id=str(source.id))
    assert audit.before == {"approval_level": 0.0}
    assert audit.after["approval_level"] == 0.25
    assert [e["labelled"] for e in audit.after["evidence"]] == [80, 0, 0, 0]


@pytest.mark.django_db
def test_the_abuse_bound_has_slices_too_and_each_step_answers_for_itself() -> None:
    source = Source.objects.create(name="s", slug="s")
    _posts(source, 80, final=0.01, abuse=0.2)  # step 1 by its abuse score (0.15 <= abuse < 0.2375)
    _posts(source, 80, final=0.1, abuse=0.0)  # step 2 (0.0875 <= final < 0.125)
    _posts(source, 60, final=0.14)  # step 3, clean but too few for the bound
    update_approval_levels(policy=POLICY, now=timezone.now())
    source.refresh_from_db()
    assert source.approval_level == 0.5
    _posts(source, 20, final=0.14)
    update_approval_levels(policy=POLICY, now=timezone.now())
    source.refresh_from_db()
    assert source.approval_level == 0.75


@pytest.mark.django_db
def test_removals_in_a_slice_hold_the_level() -> None:
    source = Source.objects.create(name="s", slug="s")
    _posts(source, 80, final=0.06)
    _posts(source, 8, final=0.06, status=PostStatus.REMOVED)  # 9 %
    assert update_approval_levels(policy=POLICY, now=timezone.now()) == {}
    source.refresh_from_db()
    assert source.approval_level == 0.0


@pytest.mark.django_db
def test_only_the_sources_own_posts_the_gate_held_or_a_spot_check_drew_count() -> None:
    source = Source.objects.create(name="s", slug="s")
    other = Source.objects.create(name="o", slug="o", approval_level=0.0)
    now = timezone.now()
    _posts(other, 200, final=0.06)  # another tenant's labels
    _posts(source, 200, final=0.06, held=False)  # queued for another reason: opening the slice would not approve them
    _posts(source, 200, final=0.06, status=PostStatus.QUEUED)  # not labelled yet
    _posts(source, 200, final=0.06, status=PostStatus.AUTO_APPROVED)
    _posts(source, 200, final=0.06, received_at=now - timedelta(days=91))  # outside the window
    evidence = level_evidence(source, POLICY, now=now)
    assert [e.labelled for e in evidence] == [0, 0, 0, 0]
    moved = update_approval_levels(policy=POLICY, now=now)
    assert source.id not in moved
    assert moved == {other.id: 0.25}
    # A post the gate held stays evidence, in the slice it was held in, whatever came after: a
    # report (its re-score moved the post's own copy of the score) and a removal by that re-score.
    reported = _posts(source, 3, final=0.06, report_count=1)
    Post.objects.filter(pk__in=[p.pk for p in reported]).update(final_score=0.95)
    _posts(source, 2, final=0.1, status=PostStatus.AUTO_REMOVED)
    _posts(source, 2, final=0.1, held=False, spot_check_action=Action.APPROVE)  # drawn approvals: not held
    assert [(e.labelled, e.removed) for e in level_evidence(source, POLICY, now=now)] == [
        (3, 0),
        (2, 2),
        (0, 0),
        (0, 0),
    ]


@pytest.mark.django_db
def test_a_step_already_open_is_not_asked_again_when_its_labels_age_out() -> None:
    source = Source.objects.create(name="s", slug="s", approval_level=0.25)
    _posts(source, 10, final=0.06)  # the open step's slice: too few now, its labels aged out
    _posts(source, 80, final=0.1)  # the next step's slice, clean
    assert update_approval_levels(policy=POLICY, now=timezone.now()) == {source.id: 0.5}


@pytest.mark.django_db
def test_labels_never_raise_a_source_at_the_full_band_or_an_inactive_one_nor_lower_a_level() -> None:
    full = Source.objects.create(name="f", slug="f", approval_level=1.0)
    idle = Source.objects.create(name="i", slug="i", is_active=False)
    ahead = Source.objects.create(name="a", slug="a", approval_level=0.75)
    for source in (full, idle, ahead):
        _posts(source, 80, final=0.06)
    assert update_approval_levels(policy=POLICY, now=timezone.now()) == {}
    ahead.refresh_from_db()
    assert ahead.approval_level == 0.75


@pytest.mark.django_db
def test_the_command_raises_and_prints_each_sources_evidence() -> None:
    source = Source.objects.create(name="s", slug="s")
    _posts(source, 80, final=0.06)
    _posts(source, 3, final=0.1, status=PostStatus.REMOVED)
    out = StringIO()
    call_command("update_approval_levels", stdout=out)
    assert "s: level 0.25 (raised); bands 0.25: 0/80 removed" in out.getvalue()
    assert "0.50: 3/3 removed" in out.getvalue()


@pytest.mark.django_db
def test_the_command_says_so_when_switched_off(settings: Any) -> None:
    source = Source.objects.create(name="s", slug="s")
    _posts(source, 80, final=0.06)
    settings.EARNED_APPROVAL = False
    out = StringIO()
    call_command("update_approval_levels", stdout=out)
    assert "EARNED_APPROVAL is off" in out.getvalue()
    source.refresh_from_db()
    assert source.approval_level == 0.0


@pytest.mark.django_db
def test_the_beat_task_does_nothing_when_switched_off(settings: Any) -> None:
    source = Source.objects.create(name="s", slug="s")
    _posts(source, 80, final=0.06)
    settings.EARNED_APPROVAL = False
    assert tasks.update_approval_levels() == {}
    settings.EARNED_APPROVAL = True
    assert tasks.update_approval_levels() == {source.id: 0.25}


@pytest.mark.django_db
def test_a_level_an_admin_sets_is_audited_and_counts_only_later_posts(admin_user: Any, rf: Any) -> None:
    source = Source.objects.create(name="s", slug="s", approval_level=0.5)
    _posts(source, 80, final=0.06, received_at=timezone.now() - timedelta(days=1))  # earned before
    request = rf.post("/")
    request.user = admin_user
    model_admin = SourceAdmin(Source, django_admin.site)
    model_admin.message_user = lambda *args, **kwargs: None  # type: ignore[method-assign]  # no message store here
    model_admin.approval_start_over(request, Source.objects.filter(pk=source.pk))
    source.refresh_from_db()
    assert source.approval_level == 0.0 and source.approval_level_set_at is not None
    audit = AuditLog.objects.get(action="source.approval_level_set", target_id=str(source.id))
    assert audit.actor == admin_user
    assert (audit.before, audit.after) == ({"approval_level": 0.5}, {"approval_level": 0.0})
    # The labels from before the change no longer raise it; new ones do.
    assert update_approval_levels(policy=POLICY, now=timezone.now()) == {}
    _posts(source, 80, final=0.06)
    assert update_approval_levels(policy=POLICY, now=timezone.now()) == {source.id: 0.25}
    model_admin.approval_full_band(request, Source.objects.filter(pk=source.pk))
    source.refresh_from_db()
    assert source.approval_level == 1.0
    assert "approval_level" in model_admin.get_readonly_fields(request, source)  # never typed in a form


@pytest.mark.django_db
def test_a_raise_from_a_stale_read_writes_nothing() -> None:
    source = Source.objects.create(name="s", slug="s")
    stale = Source.objects.get(pk=source.pk)
    approval_level_set(source=source, level=0.0, actor=None)  # an admin's action meanwhile
    assert not approval_level_raise(source=stale, level=0.25, evidence=[])
    assert not AuditLog.objects.filter(action="source.approval_level_earned").exists()


def _drawn(
    source: Source, n: int, *, final: float, status: str, abuse: float | None = None, **fields: Any
) -> list[Post]:
    """n approvals of `source` drawn for a spot check, by a score of these values that approved
    them; `status`: AUTO_APPROVED while the check waits, APPROVED confirmed, REMOVED overturned."""
    drawn = {"status": status, "spot_check_action": Action.APPROVE, **fields}
    posts = _posts(source, n, final=final, abuse=abuse, held=False, **drawn)
    Score.objects.filter(post__in=posts).update(action=Action.APPROVE, routing_reason="")
    return posts


@pytest.mark.django_db
def test_spot_checks_that_disprove_an_open_step_lower_the_level_and_restart_its_evidence(settings: Any) -> None:
    settings.EARNED_APPROVAL_MIN_CHECKS = 10
    source = Source.objects.create(name="s", slug="s", approval_level=1.0)
    earlier = timezone.now() - timedelta(days=1)
    _posts(source, 80, final=0.18, received_at=earlier)  # the labels that once opened the top step
    _drawn(source, 8, final=0.06, status=PostStatus.APPROVED)  # the first step's slice, confirmed
    _drawn(source, 7, final=0.18, status=PostStatus.APPROVED)  # the top step's slice: 0.1625 <= final < 0.2
    _drawn(source, 2, final=0.18, status=PostStatus.REMOVED)  # overturned by a moderator
    _drawn(source, 1, final=0.18, status=PostStatus.AUTO_REMOVED)  # removed by a report's re-score
    assert [(e.labelled, e.removed) for e in spot_check_evidence(source, POLICY, now=timezone.now())] == [
        (8, 0),
        (0, 0),
        (0, 0),
        (10, 3),  # 3 of 10: 95 % lower bound 0.108 > 0.05
    ]
    assert update_approval_levels(policy=POLICY, now=timezone.now()) == {source.id: 0.75}
    source.refresh_from_db()
    assert source.approval_level == 0.75 and source.approval_level_set_at is not None
    audit = AuditLog.objects.get(action="source.approval_level_lowered", target_id=str(source.id))
    assert audit.actor is None and (audit.before, audit.after["approval_level"]) == ({"approval_level": 1.0}, 0.75)
    assert audit.after["spot_checks"][3] == {"level": 1.0, "labelled": 10, "removed": 3, "lower_bound": 0.1078}
    # Its evidence starts over: neither the old labels nor the earlier checks count any more.
    assert [(e.labelled, e.removed) for e in spot_check_evidence(source, POLICY, now=timezone.now())] == [
        (0, 0),
        (0, 0),
        (0, 0),
    ]
    assert update_approval_levels(policy=POLICY, now=timezone.now()) == {}


@pytest.mark.django_db
def test_too_few_checks_do_not_lower_a_level_and_the_lowest_disproved_step_decides(settings: Any) -> None:
    settings.EARNED_APPROVAL_MIN_CHECKS = 30
    source = Source.objects.create(name="s", slug="s", approval_level=1.0)
    _drawn(source, 3, final=0.1, status=PostStatus.REMOVED)  # the second step's slice: 3 of 3, too few
    _drawn(source, 10, final=0.18, status=PostStatus.REMOVED)  # the top one's: 10 of 10, too few
    assert update_approval_levels(policy=POLICY, now=timezone.now()) == {}
    _drawn(source, 27, final=0.1, status=PostStatus.APPROVED)  # 3 of 30 now: lower bound 0.035
    assert update_approval_levels(policy=POLICY, now=timezone.now()) == {}
    _drawn(source, 2, final=0.1, status=PostStatus.REMOVED)
    _drawn(source, 20, final=0.18, status=PostStatus.APPROVED)
    assert update_approval_levels(policy=POLICY, now=timezone.now()) == {source.id: 0.25}


@pytest.mark.django_db
def test_a_draw_is_placed_by_the_score_that_approved_it(settings: Any) -> None:
    settings.EARNED_APPROVAL_MIN_CHECKS = 5
    source = Source.objects.create(name="s", slug="s", approval_level=0.25)
    posts = _drawn(source, 5, final=0.06, status=PostStatus.REMOVED)  # approved in the first step's slice
    # A report's re-score moved the post's copy and wrote a later score: neither moves the draw.
    Post.objects.filter(pk__in=[p.pk for p in posts]).update(final_score=0.5)
    Score.objects.bulk_create(
        Score(post=p, model_set="m", revision=1, final_score=0.5, action=Action.QUEUE, routing_reason="reported")
        for p in posts
    )
    assert [(e.labelled, e.removed) for e in spot_check_evidence(source, POLICY, now=timezone.now())] == [(5, 5)]
    assert update_approval_levels(policy=POLICY, now=timezone.now()) == {source.id: 0.0}


@pytest.mark.django_db
def test_checks_waiting_beyond_the_level_allowlisted_or_elsewhere_do_not_count(settings: Any) -> None:
    settings.EARNED_APPROVAL_MIN_CHECKS = 1
    now = timezone.now()
    source = Source.objects.create(name="s", slug="s", approval_level=0.5, approval_level_set_at=now)
    _drawn(source, 9, final=0.06, status=PostStatus.APPROVED)
    _drawn(source, 20, final=0.06, status=PostStatus.AUTO_APPROVED)  # waiting for a moderator
    _drawn(source, 20, final=0.06, status=PostStatus.QUEUED)  # a report's re-score queued it: undecided
    _drawn(source, 10, final=0.01, status=PostStatus.REMOVED)  # below the start: no step to close
    _drawn(source, 10, final=0.14, status=PostStatus.REMOVED)  # a closed step's slice
    _drawn(source, 10, final=0.1, status=PostStatus.REMOVED, received_at=now - timedelta(hours=1))  # before the set
    vouched = _drawn(source, 10, final=0.06, status=PostStatus.REMOVED)
    Author.objects.filter(pk=vouched[0].author_id).update(allowlisted_at=now)  # their author (every post's here)
    assert [(e.labelled, e.removed) for e in spot_check_evidence(source, POLICY, now=now)] == [(0, 0), (0, 0)]
    Author.objects.filter(pk=vouched[0].author_id).update(allowlisted_until=now - timedelta(minutes=1))  # expired
    assert [(e.labelled, e.removed) for e in spot_check_evidence(source, POLICY, now=now)] == [(19, 10), (0, 0)]
    other = Source.objects.create(name="o", slug="o", approval_level=0.5)
    _drawn(other, 10, final=0.0001, status=PostStatus.REMOVED)
    _drawn(other, 5, final=0.06, status=PostStatus.REMOVED, abuse=0.4)  # over the open abuse bound (0.325)
    assert [(e.labelled, e.removed) for e in spot_check_evidence(other, POLICY, now=now)] == [(0, 0), (0, 0)]


@pytest.mark.django_db
def test_a_lowering_from_a_stale_read_writes_nothing_and_the_command_shows_the_checks_that_moved_it(
    settings: Any,
) -> None:
    settings.EARNED_APPROVAL_MIN_CHECKS = 5
    source = Source.objects.create(name="s", slug="s", approval_level=0.5)
    stale = Source.objects.get(pk=source.pk)
    approval_level_set(source=source, level=1.0, actor=None)
    assert not approval_level_lower(source=stale, level=0.25, evidence=[])
    assert not AuditLog.objects.filter(action="source.approval_level_lowered").exists()
    _drawn(source, 5, final=0.18, status=PostStatus.REMOVED)
    out = StringIO()
    call_command("update_approval_levels", stdout=out)
    assert "s: level 0.75 (lowered: spot checks)" in out.getvalue()
    assert "spot checks of open steps 0.25: 0/0 removed" in out.getvalue() and "1.00: 5/5 removed" in out.getvalue()


@pytest.mark.django_db
def test_a_dry_run_says_what_would_move_and_changes_nothing(settings: Any) -> None:
    settings.EARNED_APPROVAL_MIN_CHECKS = 5
    falling = Source.objects.create(name="f", slug="f", approval_level=1.0)
    _drawn(falling, 5, final=0.18, status=PostStatus.REMOVED)
    rising = Source.objects.create(name="r", slug="r")
    _posts(rising, 80, final=0.06)
    out = StringIO()
    call_command("update_approval_levels", "--dry-run", stdout=out)
    assert "f: level 1.00 (would be lowered: spot checks, to 0.75)" in out.getvalue()
    assert "r: level 0.00 (would be raised, to 0.25)" in out.getvalue()
    assert not AuditLog.objects.filter(action__startswith="source.approval_level").exists()
    assert [s.approval_level for s in Source.objects.order_by("id")] == [1.0, 0.0]
    assert update_approval_levels(policy=POLICY, now=timezone.now()) == {falling.id: 0.75, rising.id: 0.25}
