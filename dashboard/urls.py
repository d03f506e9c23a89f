from django.urls import path

from dashboard.views import actions, appeals, audit, authors, detail, metrics, queue, transparency

app_name = "dashboard"
urlpatterns = [
    path("", queue.home, name="queue"),
    path("focus/", queue.focus, name="focus"),
    path("posts/<int:post_id>/", detail.detail, name="post_detail"),
    path("posts/<int:post_id>/decide/", detail.decide, name="decide"),
    path("posts/<int:post_id>/release/", detail.release, name="release"),
    path("decisions/<int:decision_id>/undo/", detail.undo_decision, name="decision_undo"),
    path("authors/<int:author_id>/", authors.author, name="author"),
    path("authors/<int:author_id>/erase/", authors.author_erase_view, name="author_erase"),
    path("appeals/", appeals.appeals, name="appeals"),
    path("appeals/<int:appeal_id>/", appeals.appeal, name="appeal"),
    path("bulk/", actions.bulk, name="bulk"),
    path("bulk/<int:pk>/undo/", actions.undo, name="bulk_undo"),
    path("cluster/<str:kind>/<int:pk>/", actions.cluster, name="cluster"),
    path("enforce/<str:kind>/<int:pk>/<str:action>/", actions.enforce, name="enforce"),
    path("audit/", audit.audit_log, name="audit"),
    path("audit.csv", audit.audit_csv, name="audit_csv"),
    path("metrics/", metrics.metrics, name="metrics"),
    path("transparency/", transparency.transparency, name="transparency"),
    path("transparency/statements.jsonl", transparency.statements_download, name="statements_download"),
    path("metrics/triton/", metrics.triton_panel, name="metrics_triton"),
]
