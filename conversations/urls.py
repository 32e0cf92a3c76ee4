"""Dashboard routes of the conversations app: my conversations about a legacy (search, delete),
transcripts, where a fact came from, the chat page."""

from django.urls import path

from conversations.views import chat, conversation_list, transcript

app_name = "conversations"

urlpatterns = [
    path("legacies/<uuid:legacy_id>/conversations", conversation_list.conversation_list,
         name="conversation_list"),
    path("conversations/<uuid:conversation_id>/delete", conversation_list.conversation_delete,
         name="conversation_delete"),
    path("conversations/<uuid:conversation_id>", transcript.transcript, name="transcript"),
    path("facts/<uuid:fact_id>/source", transcript.fact_source, name="fact_source"),
    path("chat", chat.chat_home, name="chat"),
    path("chat/start", chat.chat_start, name="chat_start"),
    path("chat/<uuid:conversation_id>", chat.chat_conversation, name="chat_conversation"),
    path("chat/<uuid:conversation_id>/send", chat.chat_send, name="chat_send"),
    path("chat/<uuid:conversation_id>/end", chat.chat_end, name="chat_end"),
]
