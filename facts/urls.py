"""Dashboard routes of the facts app."""

from django.urls import path

from facts import views

app_name = "facts"

urlpatterns = [
    path("", views.legacy_list, name="legacy_list"),
]
