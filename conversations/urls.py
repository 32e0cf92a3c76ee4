"""Dashboard routes of the conversations app."""

from django.urls import path

from conversations import views

app_name = "conversations"

urlpatterns = [
    path("conversations/<uuid:conversation_id>", views.transcript, name="transcript"),
]
