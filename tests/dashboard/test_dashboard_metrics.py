from __future__ import annotations

from datetime import timedelta
from types import SimpleNamespace

import pytest
from django.urls import reverse
from django.utils import timezone

from dashboard.selectors import metrics as m
from moderation.services.decisions import decision_record
from scoring.models import Action
from tests.dashboard.dashboard_factories import PostFactory, ScoreFactory, UserFactory
from tests.dashboard.dashboard_fixtures import *  # noqa: F403
from tests.dashboard.dashboard_fixtures import client_for

pytestmark = pytest.mark.django_db

TRITON_TEXT = """\
# HELP nv_inference_request_success Number of successful inference requests
# TYPE nv_inference_request_success counter
nv_inference_request_success{model="text_model",version="1"} 200
nv_inference_request_failure{model="text_model",version="1",reason="OTHER"} 2
nv_inference_count{model="text_model",version="1"} 400
nv_inference_exec_count{model="text_model",version="1"} 100
nv_inference_request_duration_us{model="text_model",version="1"} 2000000
nv_inference_queue_duration_us{model="text_model",version="1"} 400000
nv_inference_compute_input_duration_us{model="text_model",version="1"} 100000
nv_inference_compute_infer_duration_us{model="text_model",version="1"} 1200000
nv_inference_compute_output_duration_us{model="text_model",version="1"} 100000
nv_inference_request_success{model="fusion",version="2"} 0
nv_gpu_utilization{gpu_uuid="GPU-1"} 0.5
"""


def test_triton_parse_per_model_figures():
    stats = {s.model: s for s in m.triton_parse_metrics(TRITON_TEXT)}
    text = stats["text_model"]
    assert text.values["success"] == 200 and text.values["failure"] == 2
    assert text.avg_request_ms == pytest.approx(10.0)
    assert text.avg_queue_ms == pytest.approx(2.0)
    assert text.avg_compute_ms == pytest.approx(7.0)
    assert text.avg_batch == pytest.approx(4.0)
    assert stats["fusion"].avg_request_ms is None


def test_triton_panel_renders_figures(mod_client, monkeypatch):
    monkeypatch.setattr(m, "triton_metrics_text", lambda: TRITON_TEXT)
    html = mod_client.get(reverse("dashboard:metrics_triton")).content.decode()
    assert 'data-triton="ok"' in html and "text_model" in html and "10.0 ms" in html


def test_triton_unreachable_degrades_gracefully(mod_client, settings):
    settings.TRITON_URL = "127.0.0.1:8597"
    settings.TRITON_HTTP_PORT = 8598
    settings.TRITON_METRICS_PORT = 8599
    settings.TRITON_TIMEOUT_S = 1.0
    response = mod_client.get(reverse("dashboard:metrics_triton"))
    assert response.status_code == 200
    assert 'data-triton="unreachable"' in response.content.decode()


def _scored(action: str, score: float, latency: float = 10.0):
    post = PostFactory(final_score=score)
    ScoreFactory(post=post, action=action, final_score=score, latency_ms=latency)
    return post


def test_model_agreement_counts_decisions_on_auto_actioned_posts(moderator):
    # auto-remove band: 3 reviewed, 2 agreed (spam); auto-approve band: 2 reviewed, 1 agreed (ham)
    for label in ("spam", "spam", "ham"):
        decision_record(post=_scored(Action.REMOVE, 0.95), moderator=moderator, label=label)
    for label in ("ham", "spam"):
        decision_record(post=_scored(Action.APPROVE, 0.05), moderator=moderator, label=label)
    decision_record(post=_scored(Action.QUEUE, 0.6), moderator=moderator, label="spam")
    total, days = m.model_agreement(since=timezone.now() - timedelta(days=1))
    assert (total.remove.band_reviewed, total.remove.hits) == (3, 2)
    assert total.remove.precision == pytest.approx(2 / 3)
    # spam labels: 2 (remove band) + 1 (approve band) + 1 (queue band) = 4, caught by remove: 2
    assert total.remove.recall == pytest.approx(2 / 4)
    assert total.approve.precision == pytest.approx(1 / 2)
    assert total.approve.recall == pytest.approx(1 / 2)  # ham labels: 1 in remove band, 1 in approve band
    assert len(days) == 1


def test_latency_backlog_and_moderators(moderator):
    for ms in (5, 10, 15, 20, 100):
        _scored(Action.QUEUE, 0.5, latency=ms)
    overall, per_day = m.latency_percentiles(since=timezone.now() - timedelta(days=1))
    assert overall["p50"] == pytest.approx(15)
    assert overall["count"] == 5
    assert len(per_day) == 1
    old = PostFactory(final_score=0.5)
    type(old).objects.filter(pk=old.pk).update(received_at=timezone.now() - timedelta(days=2))
    b = m.backlog()
    assert b.queued == 6
    assert b.oldest_age_s is not None and b.oldest_age_s > 86400
    assert dict(b.age_buckets)["1–3 d"] == 1
    decision_record(post=old, moderator=moderator, label="spam")
    rows = m.decisions_per_moderator(since=timezone.now() - timedelta(days=1))
    assert rows == [{"moderator": "mod", "total": 1, "spam": 1, "ham": 0, "bulk": 0}]


def test_metrics_page_renders_charts(moderator):
    _scored(Action.REMOVE, 0.97)
    decision_record(post=_scored(Action.REMOVE, 0.96), moderator=moderator, label="spam")
    client = client_for(UserFactory(username="viewer", role="analyst"))
    html = client.get(reverse("dashboard:metrics"), {"days": "7"}).content.decode()
    assert html.count('<svg class="chart"') == 5
    assert 'data-metric="remove-precision">100.0%' in html
    assert 'data-moderator="mod"' in html


def test_percentiles_without_postgresql_match_postgresql():
    # SQLite (the laptop default) has no percentile_cont: the figures were "-" there.
    assert m.percentile_cont([], 0.5) is None
    assert m.percentile_cont([5.0, 10.0, 15.0, 20.0, 100.0], 0.5) == 15.0
    assert m.percentile_cont([5.0, 10.0, 15.0, 20.0, 100.0], 0.95) == pytest.approx(84.0)
    for ms in (5, 10, 15, 20, 100):
        _scored(Action.QUEUE, 0.5, latency=ms)
    since = timezone.now() - timedelta(days=1)
    pg_overall, pg_days = m.latency_percentiles(since=since)
    portable_overall, portable_days = m._latency_percentiles_portable(since=since, unit="day")
    assert portable_overall["count"] == pg_overall["count"] == 5
    for key in ("p50", "p95", "p99"):
        assert portable_overall[key] == pytest.approx(pg_overall[key])
    assert list(portable_days) == list(pg_days)
    _, pg_hours = m.latency_percentiles(since=since, unit="hour")
    _, portable_hours = m._latency_percentiles_portable(since=since, unit="hour")
    assert list(pg_hours) == list(portable_hours) and len(pg_hours) == 1


def test_hourly_buckets_for_the_last_48_hours(mod_client):
    now = timezone.now()
    old = PostFactory()
    type(old).objects.filter(pk=old.pk).update(received_at=now - timedelta(hours=5))
    PostFactory()
    since = now - timedelta(hours=47)
    volume = m.volume_per_bucket(since=since, unit="hour")
    assert sorted(volume.values()) == [1, 1]
    hours = m.window_hours(since, 47)
    assert len(hours) == 48 and set(volume) <= set(hours)
    html = mod_client.get(reverse("dashboard:metrics"), {"window": "48h"}).content.decode()
    assert "Posts ingested per hour" in html and 'aria-current="true">48 hours' in html


def test_auto_versus_manual_counts_posts_not_score_rows(moderator):
    rescored = _scored(Action.REMOVE, 0.97)
    ScoreFactory(post=rescored, action=Action.REMOVE, final_score=0.98, revision=1)
    type(rescored).objects.filter(pk=rescored.pk).update(status="auto_removed")
    twice = _scored(Action.QUEUE, 0.5)
    decision_record(post=twice, moderator=moderator, label="spam")
    decision_record(post=twice, moderator=moderator, label="ham", override=True)
    PostFactory()  # still pending
    outcomes = m.outcomes_per_bucket(since=timezone.now() - timedelta(days=1))
    (day,) = outcomes.values()
    assert day == {"auto_remove": 1, "auto_approve": 0, "manual": 1, "pending": 1}


def test_agreement_hidden_until_there_are_reviews(moderator):
    _scored(Action.REMOVE, 0.97)
    # A spam label on a queued post: the remove band has a recall denominator but no review.
    decision_record(post=_scored(Action.QUEUE, 0.6), moderator=moderator, label="spam")
    client = client_for(UserFactory(username="viewer2", role="analyst"))
    html = client.get(reverse("dashboard:metrics"), {"window": "7"}).content.decode()
    assert 'data-metric="agreement-none"' in html
    assert "0.0%" not in html


def test_sla_figures(moderator, settings):
    settings.DASHBOARD_SLA_SECONDS = 3600
    now = timezone.now()
    late = PostFactory()
    type(late).objects.filter(pk=late.pk).update(received_at=now - timedelta(hours=2))
    PostFactory()
    quick = PostFactory()
    decision_record(post=quick, moderator=moderator, label="spam")
    slow = PostFactory()
    type(slow).objects.filter(pk=slow.pk).update(received_at=now - timedelta(hours=3))
    decision_record(post=slow, moderator=moderator, label="spam")
    sla = m.sla_figures(since=now - timedelta(days=1), sla_seconds=3600)
    assert sla.breached_now == 1
    assert (sla.decided, sla.decided_within) == (2, 1) and sla.within_rate == 0.5
    html = client_for(moderator).get(reverse("dashboard:metrics")).content.decode()
    assert 'data-metric="sla-breached">1<' in html and "50%" in html


def test_metrics_page_fills_ages_and_latency_without_percentile_cont(moderator, monkeypatch):
    """The laptop default is SQLite, which has no percentile_cont: the page showed "-" there.
    Only the selectors are told SQLite: Django would compile JSON key lookups for it."""
    for ms in (5, 10, 15):
        _scored(Action.QUEUE, 0.5, latency=ms)
    monkeypatch.setattr(m, "connection", SimpleNamespace(vendor="sqlite"))
    backlog = m.backlog()
    assert backlog.p50_age_s is not None and backlog.p95_age_s is not None
    overall, _ = m.latency_percentiles(since=timezone.now() - timedelta(days=1))
    assert overall["p50"] == pytest.approx(10.0)
    html = client_for(moderator).get(reverse("dashboard:metrics")).content.decode()
    assert 'data-metric="scoring-latency">10.0 ms / ' in html
    assert 'data-metric="queue-age">—' not in html


def test_share_of_posts_that_skipped_the_transformer(moderator):
    since = timezone.now() - timedelta(days=1)
    assert m.text_model_skips(since=since).share is None
    for skipped in (True, True, False, False, False):
        post = PostFactory(final_score=0.05)
        features = {"link": {}, "behaviour": {}, **({"text_model_skipped": True} if skipped else {})}
        ScoreFactory(post=post, action=Action.APPROVE, features=features)
    ScoreFactory(post=PostFactory(final_score=1.0), action=Action.REMOVE, short_circuit_reason="blocked domain")
    skips = m.text_model_skips(since=since)
    assert (skips.scored, skips.skipped) == (5, 2)
    client = client_for(UserFactory(username="viewer", role="analyst"))
    html = client.get(reverse("dashboard:metrics"), {"days": "7"}).content.decode()
    assert 'data-metric="text-model-skipped">40%' in html


def test_the_skip_share_is_one_aggregate_query(django_assert_num_queries):
    """Counted in the database, not by reading every Score row of the window: a flag set to
    false, no flag, an older score and a block-list short-circuit are not skips."""
    since = timezone.now() - timedelta(days=1)
    for features in ({"text_model_skipped": True}, {"text_model_skipped": False}, {}):
        ScoreFactory(post=PostFactory(), action=Action.APPROVE, features=features)
    ScoreFactory(
        post=PostFactory(),
        action=Action.REMOVE,
        short_circuit_reason="blocked domain",
        features={"text_model_skipped": True},
    )
    old = ScoreFactory(post=PostFactory(), action=Action.APPROVE, features={"text_model_skipped": True})
    old.created_at = since - timedelta(hours=1)
    old.save(update_fields=["created_at"])
    with django_assert_num_queries(1) as ctx:
        skips = m.text_model_skips(since=since)
    assert (skips.scored, skips.skipped) == (3, 1)
    (query,) = ctx.captured_queries
    assert "COUNT(" in query["sql"].upper() and "text_model_skipped" in query["sql"]
