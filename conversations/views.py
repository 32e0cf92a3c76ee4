"""Dashboard pages of conversations: a transcript with its summaries."""

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from conversations import selectors


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
