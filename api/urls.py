from django.urls import path

from api import notes, sanctions, spot_checks, statements, views

urlpatterns = [
    path("posts", views.PostCreateView.as_view(), name="api-posts"),
    path("posts/batch", views.PostBatchView.as_view(), name="api-posts-batch"),
    path("posts/<path:external_id>", views.PostDetailView.as_view(), name="api-post-detail"),
    path("reports", views.ReportCreateView.as_view(), name="api-reports"),
    path("sanctions", sanctions.SanctionsView.as_view(), name="api-sanctions"),
    path("spot-checks", spot_checks.SpotChecksView.as_view(), name="api-spot-checks"),
    path("statements/<int:statement_id>", statements.StatementDetailView.as_view(), name="api-statement"),
    path(
        "decisions/<int:decision_id>/statement",
        statements.DecisionStatementView.as_view(),
        name="api-decision-statement",
    ),
    path("appeals", views.AppealCreateView.as_view(), name="api-appeals"),
    path("notes", notes.NotesView.as_view(), name="api-notes"),
    path("erasures", views.AuthorEraseView.as_view(), name="api-erasures"),
    path("authors/<path:external_id>", views.AuthorUpsertView.as_view(), name="api-author"),
    path("blocklist/domains", views.DomainBlocklistView.as_view(), name="api-blocklist-domains"),
    path("blocklist/domains/<str:name>", views.DomainBlocklistDetailView.as_view(), name="api-blocklist-domain"),
    path("blocklist/ips", views.IpBlocklistView.as_view(), name="api-blocklist-ips"),
    path("blocklist/ips/<str:address>", views.IpBlocklistDetailView.as_view(), name="api-blocklist-ip"),
]
