"""Dashboard pages of legacies and their facts."""

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from facts.selectors import legacies_with_member_counts


@login_required
@require_GET
def legacy_list(request: HttpRequest) -> HttpResponse:
    legacies = legacies_with_member_counts(request.user)
    return render(request, "facts/legacy_list.html", {"legacies": legacies})
