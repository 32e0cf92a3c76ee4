"""Dashboard routes of the conversations app."""

from django.urls import path  # noqa: F401

app_name = "conversations"

urlpatterns: list = []
