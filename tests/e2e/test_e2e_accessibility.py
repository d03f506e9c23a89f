"""axe-core over every dashboard page, at desktop width and at 390 px: no violations, and no
page scrolls sideways."""

from __future__ import annotations

import pytest
from django.urls import reverse

from moderation.models import Post, PostStatus
from moderation.services.appeals import appeal_submit
from moderation.services.assignment import post_claim
from moderation.services.decisions import decision_record
from moderation.services.notes import note_create
from scoring.models import Action
from scoring.services.policy import policy_active
from tests.dashboard.dashboard_factories import PostFactory, ScoreFactory, UserFactory
from tests.e2e.axe import axe_violations
from tests.e2e.seed import seed_world
from tests.e2e.test_e2e_dashboard import login
from tests.e2e.test_e2e_moderator_truth import WIDEST

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def _pages(world, appeal, note) -> dict[str, str]:
    post = world["posts"][3]
    return {
        "queue": reverse("dashboard:queue"),
        "reported": reverse("dashboard:queue") + "?view=reported",
        "teach": reverse("dashboard:teach"),
        "spot checks": reverse("dashboard:spot_checks"),
        "post": reverse("dashboard:post_detail", args=[post.pk]),
        "decided post": reverse("dashboard:post_detail", args=[world["posts"][1].pk]),
        "author": reverse("dashboard:author", args=[world["spammer"].pk]),
        "appeals": reverse("dashboard:appeals"),
        "appeal": reverse("dashboard:appeal", args=[appeal.pk]),
        "audit": reverse("dashboard:audit"),
        "metrics": reverse("dashboard:metrics"),
        "enforce": reverse("dashboard:enforce", args=["author", world["spammer"].pk, "suspend"]),
        "cluster": reverse("dashboard:cluster", args=["author", world["spammer"].pk]),
        "time zone": reverse("dashboard:timezone"),
        "note": reverse("dashboard:note_edit", args=[note.pk]),
        "ml": reverse("feedback:index"),
        "ml datasets": reverse("feedback:datasets"),
        "ml runs": reverse("feedback:runs"),
        "ml registry": reverse("feedback:registry"),
        "ml thresholds": reverse("feedback:thresholds"),
    }


def spot_checked(count: int) -> list[Post]:
    return [
        PostFactory(status=PostStatus.AUTO_APPROVED, final_score=0.05, spot_check_action=Action.APPROVE)
        for _ in range(count)
    ]


@pytest.mark.parametrize("width", [1440, 390])
def test_no_axe_violations_and_no_sideways_scroll(browser, live_server, width, settings):
    settings.EARNED_APPROVAL = True  # the metrics page's earned-approval card, one row per source
    world = seed_world()
    policy_active()
    mia = UserFactory(username="mia", role="moderator")
    ada = UserFactory(username="ada", role="admin")
    # A note on the post page, on the author page and its edit form; the post claimed, so its
    # row and page show the assignee.
    note = note_create(text="Seen before, same wording", writer=ada, post=world["posts"][3])
    post_claim(post=world["posts"][3], user=mia)
    decided = world["posts"][1]
    decision_record(post=decided, moderator=mia, label="spam", reason_code="scam")
    appeal, _ = appeal_submit(source=decided.source, post_external_id=decided.external_id, statement="Mine")
    # Two automatic approvals drawn for a spot check, one of them since found a violation: a row
    # in the Spot checks tab and a figure on the metrics page.
    drawn = spot_checked(2)
    for post in drawn:
        ScoreFactory(post=post, action=Action.APPROVE)
    decision_record(post=drawn[0], moderator=mia, label="spam")
    context = browser.new_context(viewport={"width": width, "height": 900}, bypass_csp=True)
    page = context.new_page()
    page.set_default_timeout(10_000)
    found: dict[str, list] = {}
    missing: list[str] = []  # any 404 a page asks for (a favicon, a stylesheet)
    page.on("response", lambda response: missing.append(response.url) if response.status == 404 else None)
    try:
        login(page, live_server, "ada")
        for name, path in _pages(world, appeal, note).items():
            page.goto(f"{live_server.url}{path}")
            page.wait_for_load_state("networkidle")
            violations = axe_violations(page)
            if violations:
                found[name] = violations
            scroll = page.evaluate("document.documentElement.scrollWidth")
            if scroll > width:
                found.setdefault(name, []).append(
                    {"id": "sideways-scroll", "width": scroll, "at": page.evaluate(WIDEST)}
                )
    finally:
        context.close()
    assert missing == []
    assert found == {}, "\n".join(f"{name}: {v}" for name, vs in found.items() for v in vs)
