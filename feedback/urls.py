app_name = "feedback"
urlpatterns: list = []
