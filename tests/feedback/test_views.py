from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from feedback.models import DatasetVersion, TrainingRun
from feedback.services.datasets import dataset_import
from moderation.models import AuditLog
from scoring.models import DecisionPolicy
from tests.feedback.conftest import decide, make_post, make_user

pytestmark = pytest.mark.django_db

READ_PAGES = ["feedback:index", "feedback:datasets", "feedback:runs", "feedback:registry", "feedback:thresholds"]


@pytest.fixture
def users(db):
    return {
        "admin": make_user("ada", "admin"),
        "moderator": make_user("mo", "moderator"),
        "analyst": make_user("ann", "analyst"),
        "nobody": make_user("nob"),
    }


@pytest.fixture
def seeded(users, source):
    for i in range(30):
        spammy = i % 3 == 0
        decide(make_post(source, author=f"a{i}", spammy=spammy), users["moderator"], "spam" if spammy else "ham")
    content = b"text,label\nfree money,spam\nhi mum,ham\n"
    return dataset_import(content=content, fmt="csv", created_by=users["admin"])


@pytest.mark.parametrize("name", READ_PAGES)
def test_read_pages_permission_matrix(client, users, seeded, name, settings, tmp_path):
    settings.TRITON_MODEL_REPOSITORY = tmp_path / "repo"
    url = reverse(name)
    response = client.get(url)
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]
    for role, expected in (("admin", 200), ("moderator", 200), ("analyst", 200), ("nobody", 403)):
        client.force_login(users[role])
        assert client.get(url).status_code == expected, role


ADMIN_POSTS = [
    ("feedback:dataset_create", {}),
    ("feedback:run_start", {"dataset": "1", "scope": "tabular"}),
    ("feedback:thresholds_save", {"remove_threshold": "0.8", "approve_threshold": "0.1"}),
]


@pytest.mark.parametrize(("name", "data"), ADMIN_POSTS)
def test_only_admins_change_things(client, users, seeded, name, data):
    url = reverse(name)
    for role in ("moderator", "analyst", "nobody"):
        client.force_login(users[role])
        assert client.post(url, data).status_code == 403, role
    assert TrainingRun.objects.count() == 0
    assert DatasetVersion.objects.count() == 1
    assert DecisionPolicy.objects.filter(is_active=True).get().version == 1


def test_admin_snapshot_download_and_detail(client, users, seeded):
    client.force_login(users["admin"])
    response = client.post(reverse("feedback:dataset_create"), {"name": "weekly"})
    ds = DatasetVersion.objects.get(name="weekly")
    assert response.status_code == 302 and response["Location"] == reverse("feedback:dataset_detail", args=[ds.version])
    page = client.get(response["Location"])
    assert ds.content_sha256 in page.content.decode()
    for fmt in ("jsonl", "parquet", "csv", "manifest"):
        download = client.get(reverse("feedback:dataset_download", args=[ds.version, fmt]))
        assert download.status_code == 200
        assert b"".join(download.streaming_content)
    assert client.get(reverse("feedback:dataset_download", args=[ds.version, "exe"])).status_code == 404


def test_import_upload_and_validation_messages(client, users, db):
    client.force_login(users["admin"])
    good = SimpleUploadedFile("seed.csv", b"text,label\nwin cash,spam\nsee you,ham\n")
    response = client.post(reverse("feedback:dataset_import"), {"file": good, "source": "seed"})
    assert response.status_code == 302
    assert DatasetVersion.objects.get().origin == "import"
    bad = SimpleUploadedFile("bad.csv", b"text,label\nwin cash,perhaps\n")
    response = client.post(reverse("feedback:dataset_import"), {"file": bad, "source": "seed"}, follow=True)
    assert "label must be spam or ham" in response.content.decode()
    assert DatasetVersion.objects.count() == 1


def test_start_run_enqueues_on_training_queue(client, users, seeded, monkeypatch, django_capture_on_commit_callbacks):
    sent = []
    monkeypatch.setattr("feedback.tasks.training_run_task.apply_async", lambda *a, **kw: sent.append((a, kw)))

    def delay(run_id):
        sent.append(run_id)
        return type("R", (), {"id": "task-1"})()

    monkeypatch.setattr("feedback.tasks.training_run_task.delay", delay)
    client.force_login(users["admin"])
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("feedback:run_start"), {"dataset": seeded.pk, "scope": "tabular"})
    run = TrainingRun.objects.get()
    assert response["Location"] == reverse("feedback:run_detail", args=[run.pk])
    assert sent == [run.pk] and run.task_id == "task-1"
    page = client.get(reverse("feedback:run_detail", args=[run.pk])).content.decode()
    assert 'hx-trigger="every 2s"' in page
    progress = client.get(reverse("feedback:run_progress", args=[run.pk]))
    assert progress.status_code == 200 and "HX-Refresh" not in progress


def test_training_task_routes_to_training_queue(settings):
    from config.celery_app import app
    from feedback.tasks import training_run_task

    route = app.amqp.router.route({}, training_run_task.name)
    assert route["queue"].name == "training"


def test_thresholds_page_whatif_and_save(client, users, seeded):
    client.force_login(users["admin"])
    page = client.get(
        reverse("feedback:thresholds"), {"remove_threshold": "0.5", "approve_threshold": "0.3", "days": "7"}
    )
    body = page.content.decode()
    assert page.status_code == 200 and 'id="calibration"' in body and 'id="whatif"' in body
    whatif = page.context["whatif"]["proposed"]
    assert whatif["total"] == 30 and whatif["remove"] + whatif["queue"] + whatif["approve"] == 30
    assert len(page.context["table"]) == 101
    proposal = {"remove_threshold": "0.5", "approve_threshold": "0.3"}
    # Saving needs the confirmation and a note; without either nothing changes.
    client.post(reverse("feedback:thresholds_save"), {**proposal, "note": "tighter"})
    client.post(reverse("feedback:thresholds_save"), {**proposal, "confirm": "1", "note": " "})
    assert DecisionPolicy.objects.get(is_active=True).version == 1
    response = client.post(reverse("feedback:thresholds_save"), {**proposal, "confirm": "1", "note": "tighter"})
    assert response.status_code == 302
    active = DecisionPolicy.objects.get(is_active=True)
    assert (active.version, active.remove_threshold, active.approve_threshold) == (2, 0.5, 0.3)
    entry = AuditLog.objects.filter(action="scoring.policy_version_created").latest("created_at")
    assert entry.actor == users["admin"] and entry.after["remove_threshold"] == 0.5
    # Invalid thresholds are refused and nothing changes.
    client.post(reverse("feedback:thresholds_save"), {"remove_threshold": "0.2", "approve_threshold": "0.6"})
    assert DecisionPolicy.objects.get(is_active=True).version == 2


def test_list_pages_query_count(client, users, seeded, django_assert_max_num_queries, settings, tmp_path):
    settings.TRITON_MODEL_REPOSITORY = tmp_path / "repo"
    client.force_login(users["analyst"])
    for name in ("feedback:datasets", "feedback:runs", "feedback:registry"):
        with django_assert_max_num_queries(12):
            assert client.get(reverse(name)).status_code == 200


def test_django_admin_action_starts_run(client, users, seeded, monkeypatch):
    monkeypatch.setattr("feedback.services.training._enqueue", lambda run_id: None)
    url = reverse("admin:feedback_datasetversion_changelist")
    data = {"action": "retrain_tabular", "_selected_action": [seeded.pk]}
    superuser = make_user("root", superuser=True)
    superuser.is_staff = True
    superuser.save(update_fields=["is_staff"])
    client.force_login(superuser)
    client.post(url, data)
    assert TrainingRun.objects.get().started_by == superuser


def test_progress_partial_reloads_page_once_the_run_finishes(client, users, seeded):
    run = TrainingRun.objects.create(dataset=seeded, scope="tabular", status="running", progress=0.4)
    client.force_login(users["analyst"])
    url = reverse("feedback:run_progress", args=[run.pk])
    running = client.get(url, {"was": "running"})
    assert "HX-Refresh" not in running and 'hx-trigger="every 2s"' in running.content.decode()
    TrainingRun.objects.filter(pk=run.pk).update(status="failed", error="The held-out test split has 3 rows")
    done = client.get(url, {"was": "running"})
    assert done["HX-Refresh"] == "true"
    assert "production is unchanged" in done.content.decode() and "hx-trigger" not in done.content.decode()
