"""Dashboard routes of the agent_memory app: memories and places of interest."""

from django.urls import path

from agent_memory import views

app_name = "agent_memory"

urlpatterns = [
    path("memories", views.memory_list, name="memory_list"),
    # Before memories/<id>: "add" is no short id (those are 8 characters).
    path("memories/add", views.memory_add, name="memory_add"),
    path("memories/<str:memory_id>", views.memory_history, name="memory_history"),
    path("memories/<str:memory_id>/card", views.memory_card, name="memory_card"),
    path("memories/<str:memory_id>/edit", views.memory_edit, name="memory_edit"),
    path("memories/<str:memory_id>/delete", views.memory_delete, name="memory_delete"),
    path("memories/<str:memory_id>/restore", views.memory_restore, name="memory_restore"),
    path("memories/<str:memory_id>/revert", views.memory_revert, name="memory_revert"),
    path("places", views.place_list, name="place_list"),
    path("places/<uuid:place_pk>/card", views.place_card, name="place_card"),
    path("places/<uuid:place_pk>/edit", views.place_edit, name="place_edit"),
    path("places/<uuid:place_pk>/delete", views.place_delete, name="place_delete"),
]
