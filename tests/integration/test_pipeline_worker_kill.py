"""A worker SIGKILLed in the middle of a batch loses nothing (own module: no other worker may
consume the queue meanwhile)."""

from __future__ import annotations

import time

import pytest
import redis
from django.conf import settings

from scoring.models import Score
from tests.integration.conftest import wait_until
from tests.integration.test_pipeline_e2e import SCORED_TIMEOUT, all_scored, assert_scored_exactly_once, ingest

pytestmark = pytest.mark.integration


def test_worker_killed_mid_batch_loses_nothing(api, start_worker):
    visibility = 4
    env = {"SCORING_BATCH_SIZE": "4", "CELERY_VISIBILITY_TIMEOUT": str(visibility), "SCORING_CLAIM_TTL_S": "5"}
    ids = ingest(api, 60)  # no worker yet: the messages wait in Redis
    first = start_worker(concurrency=1, **env)
    wait_until(
        lambda: Score.objects.filter(post_id__in=ids).exists(),
        timeout=SCORED_TIMEOUT,
        interval=0.02,
        message=f"first scores\n{first.log_tail()}",
    )
    first.kill()
    scored_at_kill = Score.objects.filter(post_id__in=ids).count()
    assert scored_at_kill < len(ids), "the worker finished before it could be killed"

    # The killed worker's unacked messages become visible again after the visibility timeout;
    # a starting worker restores them.
    broker = redis.Redis.from_url(settings.CELERY_BROKER_URL)

    def unacked_expired() -> bool:
        oldest = broker.zrange("unacked_index", 0, 0, withscores=True)
        return not oldest or time.time() - float(oldest[0][1]) > visibility + 0.5

    wait_until(unacked_expired, timeout=30, message="unacked messages past the visibility timeout")
    second = start_worker(concurrency=2, **env)
    wait_until(lambda: all_scored(ids), timeout=90, message=f"scored after restart\n{second.log_tail()}")
    assert_scored_exactly_once(ids)
