"""Dashboard routes of the agent_memory app."""

from django.urls import path

from agent_memory import views

app_name = "agent_memory"

urlpatterns = [
    path("memories", views.memory_list, name="memory_list"),
    path("memories/<str:memory_id>", views.memory_history, name="memory_history"),
    path("memories/<str:memory_id>/card", views.memory_card, name="memory_card"),
    path("memories/<str:memory_id>/delete", views.memory_delete, name="memory_delete"),
]
