"""Dashboard pages of conversations: a transcript with its summaries, where a fact came from."""

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from conversations import selectors
from facts import selectors as fact_selectors
from facts.models import LegacyFact


def _sequence_param(value: str | None) -> int | None:
    try:
        number = int(value or "")
    except ValueError:
        return None
    return number if number >= 0 else None


@login_required
@require_GET
def transcript(request: HttpRequest, conversation_id: str) -> HttpResponse:
    """The conversation's messages, each anchored `m-<sequence>`; `?from=&to=` (end exclusive,
    as chunk ranges are) highlights the range a fact or a summary came from."""
    conversation = selectors.conversation_for_user(
        user=request.user, conversation_id=conversation_id
    )
    start = _sequence_param(request.GET.get("from"))
    end = _sequence_param(request.GET.get("to"))
    highlight = None
    if start is not None:
        highlight = (start, end if end is not None and end > start else start + 1)
    return render(
        request,
        "conversations/transcript.html",
        {
            "conversation": conversation,
            "messages_list": selectors.messages_for_conversation(conversation=conversation),
            "rolling_summaries": selectors.rolling_summaries_for_conversation(
                conversation=conversation
            ),
            "chunks": selectors.archived_chunks_for_conversation(conversation=conversation),
            "highlight": highlight,
        },
    )


@login_required
@require_GET
def fact_source(request: HttpRequest, fact_id: str) -> HttpResponse:
    """Where a fact came from, for anyone who may see the fact: the fact, its author, and of
    the source range what this user may see (conversations.selectors.fact_source_for_viewer); the rest
    of the conversation stays its author's."""
    fact = fact_selectors.fact_for_user(user=request.user, fact_id=fact_id)
    is_mine = fact.user_id == request.user.pk
    # The author is told which of their messages the family sees while the fact is shared.
    shown_to_family = (
        {m.pk for m in selectors.fact_source_matching_messages(fact=fact)}
        if is_mine and fact.visibility == LegacyFact.Visibility.SHARED
        else set()
    )
    return render(
        request,
        "facts/fact_source.html",
        {
            "fact": fact,
            "messages_list": selectors.fact_source_for_viewer(fact=fact, user=request.user),
            "is_mine": is_mine,
            "shown_to_family": shown_to_family,
        },
    )
