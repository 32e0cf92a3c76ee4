"""Dashboard routes of the chat page (namespace `chat`)."""

from django.urls import path

from conversations import chat_views

app_name = "chat"

urlpatterns = [
    path("chat", chat_views.chat_home, name="home"),
    path("chat/start", chat_views.chat_start, name="start"),
    path("chat/<uuid:conversation_id>", chat_views.chat_conversation, name="conversation"),
    path("chat/<uuid:conversation_id>/send", chat_views.chat_send, name="send"),
]
