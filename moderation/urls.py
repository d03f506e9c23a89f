app_name = "moderation"
urlpatterns: list = []
