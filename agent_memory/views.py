"""Dashboard pages of agent memories: the list by category, version history, delete (htmx)."""

from difflib import SequenceMatcher

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.html import escape, format_html
from django.utils.safestring import SafeString, mark_safe
from django.views.decorators.http import require_GET, require_http_methods

from agent_memory import selectors, services
from agent_memory.models import AgentMemory


def word_diff(old: str, new: str) -> SafeString:
    """`new` with the words removed since `old` in <del> and the added ones in <ins>, escaped."""
    before, after = old.split(), new.split()
    parts: list[str] = []
    matcher = SequenceMatcher(a=before, b=after, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            parts.append(escape(" ".join(before[i1:i2])))
            continue
        if op in ("delete", "replace"):
            parts.append(format_html("<del>{}</del>", " ".join(before[i1:i2])))
        if op in ("insert", "replace"):
            parts.append(format_html("<ins>{}</ins>", " ".join(after[j1:j2])))
    # Safe: every part above went through escape() or format_html().
    return mark_safe(" ".join(parts))


def timeline(memory: AgentMemory) -> list[dict]:
    """The memory's versions, oldest first, each with what changed from the one before."""
    entries = []
    previous = None
    versions = list(memory.versions.all())
    for version in versions:
        entries.append({
            "version": version,
            "is_current": version is versions[-1],
            "diff": word_diff(previous.content, version.content) if previous else None,
        })
        previous = version
    return entries


def _sections_context(request: HttpRequest, **extra: object) -> dict:
    deleted = [
        {"memory": memory, "timeline": timeline(memory)}
        for memory in selectors.deleted_memories_for_user(request.user)
    ]
    groups = selectors.active_memories_by_category(request.user)
    return {"groups": groups, "deleted": deleted, **extra}


def _list_url(memory_id: str | None = None) -> str:
    url = reverse("agent_memory:memory_list")
    return f"{url}#memory-{memory_id}" if memory_id else url


@login_required
@require_GET
def memory_list(request: HttpRequest) -> HttpResponse:
    """My memories by category, and the deleted ones folded away; htmx gets the sections."""
    template = "agent_memory/_memory_sections.html" if request.htmx else "agent_memory/memory_list.html"
    return render(request, template, _sections_context(request))


@login_required
@require_GET
def memory_history(request: HttpRequest, memory_id: str) -> HttpResponse:
    """One memory's version history as a timeline (deleted memories too)."""
    memory = selectors.memory_for_user(user=request.user, memory_id=memory_id)
    template = (
        "agent_memory/_memory_timeline.html" if request.htmx else "agent_memory/memory_history.html"
    )
    return render(request, template, {"memory": memory, "timeline": timeline(memory)})


@login_required
@require_GET
def memory_card(request: HttpRequest, memory_id: str) -> HttpResponse:
    """One memory's card (what "Cancel" goes back to); without htmx, the list at that card."""
    memory = selectors.active_memory_for_user(user=request.user, memory_id=memory_id)
    if request.htmx:
        return render(request, "agent_memory/_memory_card.html", {"memory": memory})
    return redirect(_list_url(memory.pk))


@login_required
@require_http_methods(["GET", "POST"])
def memory_delete(request: HttpRequest, memory_id: str) -> HttpResponse:
    """Asks for confirmation (GET), then soft-deletes (POST)."""
    memory = selectors.active_memory_for_user(user=request.user, memory_id=memory_id)
    if request.method == "GET":
        template = (
            "agent_memory/_memory_delete.html" if request.htmx
            else "agent_memory/memory_delete_page.html"
        )
        return render(request, template, {"memory": memory})
    content = services.memory_delete(user=request.user, memory=memory)
    confirmation = f"Deleted: '{content}'. Its history is kept under “Deleted memories”."
    if request.htmx:
        return render(
            request, "agent_memory/_memory_sections.html",
            _sections_context(request, confirmation=confirmation),
        )
    messages.success(request, confirmation)
    return redirect(_list_url())
