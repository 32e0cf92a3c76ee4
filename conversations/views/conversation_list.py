"""Dashboard pages of my conversations about a legacy: the list with its search, and deleting a
conversation with confirmation."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.text import Truncator
from django.views.decorators.http import require_GET, require_http_methods
from django.views.decorators.vary import vary_on_headers
from django_htmx.http import HttpResponseClientRedirect

from conversations import selectors, services
from conversations.forms import ConversationDeleteForm, ConversationSearchForm
from facts.selectors import legacy_for_member


def _list_url(legacy_id: object) -> str:
    return reverse("conversations:conversation_list", args=[legacy_id])


@login_required
@require_GET
@vary_on_headers("HX-Request")
def conversation_list(request: HttpRequest, legacy_id: str) -> HttpResponse:
    """My conversations about the legacy, newest first; `?q=` narrows them to those whose
    title or text matches (selectors.conversations_matching). An htmx request (the search
    box) gets only the results."""
    legacy = legacy_for_member(user=request.user, legacy_id=legacy_id)
    form = ConversationSearchForm(request.GET)
    valid = form.is_valid()
    # An invalid search is shown as an inline error above every conversation.
    query = form.cleaned_data["q"] if valid else ""
    if query:
        matches = selectors.conversations_matching(user=request.user, legacy=legacy, query=query)
    else:
        matches = [
            selectors.ConversationMatch(conversation=c, title_match=False, hits=[])
            for c in selectors.conversations_for_legacy(user=request.user, legacy=legacy)
        ]
    status = 200 if valid else 400
    context = {"legacy": legacy, "form": form, "query": query, "matches": matches}
    # A history restore (Back, with htmx's cache empty) needs the whole page.
    if request.htmx and not request.htmx.history_restore_request:
        # htmx swaps only 2xx answers: the inline error goes back as 200.
        return render(request, "conversations/_conversation_results.html", context)
    return render(request, "conversations/conversation_list.html", context, status=status)


@login_required
@require_http_methods(["GET", "POST"])
def conversation_delete(request: HttpRequest, conversation_id: str) -> HttpResponse:
    """GET: what deleting the conversation takes with it, and the choice to keep its facts
    (in place of its row with htmx, a page of its own without). POST: delete it, then back to
    the list with what was deleted."""
    conversation = selectors.conversation_for_user(
        user=request.user, conversation_id=conversation_id
    )
    form = ConversationDeleteForm(request.POST if request.method == "POST" else None)
    if request.method == "POST" and form.is_valid():
        counts = services.conversation_delete(
            conversation=conversation, keep_facts=form.cleaned_data["keep_facts"]
        )
        messages.success(request, _deleted_message(str(conversation), counts))
        target = _list_url(conversation.legacy_id)
        return HttpResponseClientRedirect(target) if request.htmx else redirect(target)
    template = (
        "conversations/_conversation_delete.html" if request.htmx
        else "conversations/conversation_delete.html"
    )
    return render(request, template, {
        "conversation": conversation, "form": form,
        "preview": selectors.conversation_deletion_preview(conversation=conversation),
    })


def _counted(number: int, one: str, many: str) -> str:
    return f"{number} {one if number == 1 else many}"


def _deleted_message(title: str, counts: dict[str, int]) -> str:
    parts = [
        _counted(counts["messages"], "message", "messages"),
        _counted(counts["summaries"], "summary", "summaries"),
        _counted(counts["chunks"], "archived summary", "archived summaries"),
        _counted(counts["facts"], "fact", "facts"),
    ]
    if counts["place_mentions"]:
        parts.append(_counted(counts["place_mentions"], "place mention", "place mentions"))
    text = f"Deleted “{Truncator(title).chars(60)}” with {', '.join(parts[:-1])} and {parts[-1]}."
    if counts["facts_kept"]:
        text += f" {_counted(counts['facts_kept'], 'fact', 'facts')} taken from it kept."
    return text
