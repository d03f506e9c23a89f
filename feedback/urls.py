"""Mounted at /dashboard/ml/ by config/urls.py."""

from django.urls import path

from feedback import views

app_name = "feedback"
urlpatterns = [
    path("", views.index, name="index"),
    path("datasets/", views.dataset_list, name="datasets"),
    path("datasets/create/", views.dataset_create, name="dataset_create"),
    path("datasets/import/", views.dataset_import, name="dataset_import"),
    path("datasets/<int:version>/", views.dataset_detail, name="dataset_detail"),
    path("datasets/<int:version>/download/<str:fmt>/", views.dataset_download, name="dataset_download"),
    path("datasets/<int:version>/suite/", views.suite_mark, name="suite_mark"),
    path("runs/", views.run_list, name="runs"),
    path("runs/start/", views.run_start, name="run_start"),
    path("runs/<int:pk>/", views.run_detail, name="run_detail"),
    path("runs/<int:pk>/progress/", views.run_progress, name="run_progress"),
    path("runs/<int:pk>/promote/", views.run_promote, name="run_promote"),
    path("registry/", views.registry, name="registry"),
    path("registry/<int:pk>/rollback/", views.rollback, name="rollback"),
    path("thresholds/", views.thresholds_page, name="thresholds"),
    path("thresholds/save/", views.thresholds_save, name="thresholds_save"),
]
