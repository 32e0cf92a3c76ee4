"""The dashboard's chat page: pick a legacy, talk to the agent, see the context each reply used."""

import uuid

from django.conf import settings
from django.contrib import messages as flash
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.html import format_html
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import HttpResponseClientRedirect

from conversations import selectors, services
from conversations.agent_serializers import context_response
from conversations.context import ContextPacket, build_context
from conversations.models import Message
from conversations.services import ChatAnswer, TurnConflict, TurnInProgress, TurnProviderError
from facts.selectors import legacies_for_user, legacy_for_member

# The bar chart's parts, in prompt order, with the labels the page shows.
BAR_PARTS = [
    ("persona", "Persona"), ("memory", "Memories"), ("places", "Places"),
    ("datetime", "Date-time"), ("facts", "Facts"), ("retrieved", "Earlier conversations"),
    ("rolling_summary", "Summary"), ("session_state", "Session state"),
    ("messages", "Messages"),
]


def _context_view(packet: ContextPacket) -> dict:
    payload = dict(context_response(packet))
    counts = payload["token_counts"]
    # Bars show each part's share of what was used; the line above them, of the budget.
    total = max(counts["total"], 1)
    payload["bars"] = [
        {"name": name, "label": label, "tokens": counts.get(name, 0),
         "percent": round(100 * counts.get(name, 0) / total, 1)}
        for name, label in BAR_PARTS
    ]
    payload["used_percent"] = round(100 * counts["total"] / max(counts["budget"], 1), 1)
    return payload


def _conversation_page(request: HttpRequest, conversation, *, error: str = "",
                       status: int = 200, used: ContextPacket | None = None,
                       command: dict | None = None) -> HttpResponse:
    """The transcript beside a context: the one the last reply used when there is one (after
    an htmx send), otherwise the one the next reply would get. `command` is a /memory
    exchange to show after the transcript, which is not part of it."""
    transcript = selectors.messages_for_conversation(conversation=conversation).filter(
        role__in=[Message.Role.USER, Message.Role.ASSISTANT]
    )
    context = {
        "conversation": conversation,
        "idle_close_minutes": settings.CONVERSATION_IDLE_CLOSE_MINUTES,
        "transcript": transcript,
        "packet": _context_view(used or build_context(conversation=conversation)),
        "context_used": used is not None,
        "error": error,
        "command": command,
        # A fresh key per form: a double submit of the same form runs the turn once.
        "idempotency_key": uuid.uuid4(),
    }
    template = "chat/_exchange.html" if request.htmx else "chat/conversation.html"
    return render(request, template, context, status=status)


@login_required
@require_GET
def chat_home(request: HttpRequest) -> HttpResponse:
    """Legacies to talk about and, for the chosen one, my conversations about it. A member of
    one legacy only has nothing to choose: it is chosen."""
    legacies = legacies_for_user(request.user).order_by("name")
    chosen = None
    conversations = []
    if legacy_id := request.GET.get("legacy"):
        chosen = legacy_for_member(user=request.user, legacy_id=legacy_id)
    elif len(legacies) == 1:
        chosen = legacies[0]
    if chosen is not None:
        conversations = selectors.conversations_for_legacy(user=request.user, legacy=chosen)
    return render(request, "chat/home.html", {
        "legacies": legacies, "chosen": chosen, "conversations": conversations,
    })


@login_required
@require_POST
def chat_start(request: HttpRequest) -> HttpResponse:
    legacy = legacy_for_member(user=request.user, legacy_id=request.POST.get("legacy_id"))
    try:
        conversation = services.conversation_create(
            user=request.user, legacy=legacy, title=request.POST.get("title", "")
        )
    except ValidationError as exc:
        flash.error(request, "; ".join(exc.messages))
        return redirect(f"{reverse('conversations:chat')}?legacy={legacy.pk}")
    target = reverse("conversations:chat_conversation", kwargs={"conversation_id": conversation.pk})
    return HttpResponseClientRedirect(target) if request.htmx else redirect(target)


@login_required
@require_GET
def chat_conversation(request: HttpRequest, conversation_id: str) -> HttpResponse:
    conversation = selectors.conversation_for_user(
        user=request.user, conversation_id=conversation_id
    )
    return _conversation_page(
        request, conversation, command=request.session.pop(_command_key(conversation), None)
    )


@login_required
@require_POST
def chat_end(request: HttpRequest, conversation_id: str) -> HttpResponse:
    """End the conversation (seed 004's clean shutdown): the worker archives what is left and
    files its facts; back to the legacy's chat home."""
    conversation = selectors.conversation_for_user(
        user=request.user, conversation_id=conversation_id
    )
    services.conversation_close(conversation=conversation)
    flash.success(request, format_html(
        "Conversation ended: what was said is being filed as facts and summaries. In a few "
        "seconds its facts appear on <a href=\"{}\">{}'s facts page</a>.",
        reverse("facts:legacy_facts", args=[conversation.legacy_id]), conversation.legacy.name,
    ))
    target = f"{reverse('conversations:chat')}?legacy={conversation.legacy_id}"
    return HttpResponseClientRedirect(target) if request.htmx else redirect(target)


def _command_key(conversation) -> str:
    return f"chat-command:{conversation.pk}"


def _memory_command(request: HttpRequest, conversation, content: str,
                    answer: ChatAnswer) -> HttpResponse:
    """Seed 003's /memory, run straight: no message is saved, the agent is not called and
    nothing is summarised; the page shows the command and its reply once."""
    exchange = {"text": content.strip(), "reply": answer.reply}
    if request.htmx:
        return _conversation_page(request, conversation, command=exchange)
    # Without JavaScript the reply survives the redirect in the session, for one page view.
    request.session[_command_key(conversation)] = exchange
    return redirect("conversations:chat_conversation", conversation_id=conversation.pk)


@login_required
@require_POST
def chat_send(request: HttpRequest, conversation_id: str) -> HttpResponse:
    """Run one turn, or a /memory command; htmx swaps in the transcript and the context, a
    plain form redirects."""
    conversation = selectors.conversation_for_user(
        user=request.user, conversation_id=conversation_id
    )
    content = request.POST.get("content", "")
    error = ""
    used = None
    # The page shows a failed turn beside the transcript instead of an error page.
    try:
        answer = services.chat_message_answer(
            conversation=conversation, content=content,
            idempotency_key=request.POST.get("idempotency_key") or None,
        )
    except ValidationError as exc:
        error = "; ".join(exc.messages)
    except TurnProviderError as exc:
        # The provider's words are in the log under the error id, never on the page.
        error = f"The assistant could not answer (error {exc.error_id}). Your message was kept."
    except TurnConflict as exc:
        error = f"The assistant could not answer: {exc}. Your message was kept."
    except TurnInProgress as exc:
        error = f"{exc} Wait for its reply, then reload the page."
    else:
        if answer.command:
            return _memory_command(request, conversation, content, answer)
        used = answer.packet
    if request.htmx:
        # 200 even for an error: htmx does not swap a 4xx answer, so the error would never show.
        return _conversation_page(request, conversation, error=error, used=used)
    if error:
        flash.error(request, error)
    return redirect("conversations:chat_conversation", conversation_id=conversation.pk)
