from django.urls import path

from dashboard.views import actions, appeals, audit, authors, campaigns, detail, lockouts, metrics, queue, timezone

app_name = "dashboard"
urlpatterns = [
    path("", queue.home, name="queue"),
    path("focus/", queue.focus, name="focus"),
    path("posts/<int:post_id>/", detail.detail, name="post_detail"),
    path("posts/<int:post_id>/decide/", detail.decide, name="decide"),
    path("posts/<int:post_id>/claim/", detail.claim, name="claim"),
    path("posts/<int:post_id>/release/", detail.release, name="release"),
    path("decisions/<int:decision_id>/undo/", detail.undo_decision, name="decision_undo"),
    path("authors/<int:author_id>/", authors.author, name="author"),
    path("authors/<int:author_id>/erase/", authors.author_erase_view, name="author_erase"),
    path("campaigns/<int:campaign_id>/", campaigns.campaign, name="campaign"),
    path("appeals/", appeals.appeals, name="appeals"),
    path("appeals/<int:appeal_id>/", appeals.appeal, name="appeal"),
    path("bulk/", actions.bulk, name="bulk"),
    path("bulk/<int:pk>/undo/", actions.undo, name="bulk_undo"),
    path("cluster/<str:kind>/<int:pk>/", actions.cluster, name="cluster"),
    path("enforce/<str:kind>/<int:pk>/<str:action>/", actions.enforce, name="enforce"),
    path("audit/", audit.audit_log, name="audit"),
    path("audit.csv", audit.audit_csv, name="audit_csv"),
    path("lockouts/", lockouts.lockouts, name="lockouts"),
    path("lockouts/unlock/", lockouts.unlock, name="lockout_unlock"),
    path("metrics/", metrics.metrics, name="metrics"),
    path("metrics/triton/", metrics.triton_panel, name="metrics_triton"),
    path("timezone/", timezone.timezone_choose, name="timezone"),
    path("timezone/browser/", timezone.timezone_browser, name="timezone_browser"),
]
