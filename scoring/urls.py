app_name = "scoring"
urlpatterns: list = []  # health and metrics endpoints
