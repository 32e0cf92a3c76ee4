"""Dashboard pages of agent memories (the list by category, add, edit, delete, history, restore)
and of places of interest (list, notes, delete), server-rendered with htmx in place."""

from difflib import SequenceMatcher

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.html import escape, format_html
from django.utils.safestring import SafeString, mark_safe
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from agent_memory import selectors, services
from agent_memory.forms import (
    MemoryEditForm,
    MemoryForm,
    PlaceNotesForm,
    RestoreForm,
    add_service_errors,
)
from agent_memory.models import AgentMemory, ChangeOrigin, Place


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


def _history_context(memory: AgentMemory, **extra: object) -> dict:
    """The history page of a memory: its timeline and, when deleted, the turn that did it."""
    return {
        "memory": memory,
        "timeline": timeline(memory),
        "deleted_turn": selectors.turn_number(memory.deleted_source_message),
        **extra,
    }


@login_required
@require_GET
def memory_history(request: HttpRequest, memory_id: str) -> HttpResponse:
    """One memory's version history as a timeline (deleted memories too): who made each version
    (the agent in which conversation and turn, or you), with undo and restore."""
    memory = selectors.memory_for_user(user=request.user, memory_id=memory_id)
    template = (
        "agent_memory/_memory_timeline.html" if request.htmx else "agent_memory/memory_history.html"
    )
    return render(request, template, _history_context(memory))


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
    content = services.memory_delete(user=request.user, memory=memory,
                                     origin=ChangeOrigin.DASHBOARD)
    confirmation = f"Deleted: '{content}'. Its history is kept under “Deleted memories”."
    if request.htmx:
        return render(
            request, "agent_memory/_memory_sections.html",
            _sections_context(request, confirmation=confirmation),
        )
    messages.success(request, confirmation)
    return redirect(_list_url())


def _form_status(request: HttpRequest, status: int) -> int:
    # htmx swaps only 2xx answers: an inline error goes back as 200 to htmx.
    return 200 if request.htmx else status


@login_required
@require_http_methods(["GET", "POST"])
def memory_add(request: HttpRequest) -> HttpResponse:
    """Add a memory by hand, with the API's rules: a subject already held by an active memory
    is a 409 with a link to update that one instead."""
    form = MemoryForm(request.POST or None)
    conflict = None
    status = 200
    if request.method == "POST":
        status = 400
        if form.is_valid():
            try:
                memory = services.memory_create(user=request.user, **form.cleaned_data,
                                                origin=ChangeOrigin.DASHBOARD)
            except ValidationError as exc:
                add_service_errors(form, exc)
            except services.SubjectConflict as exc:
                conflict = exc.memory
                form.add_error("subject", "You already have a memory about this subject.")
                status = 409
            else:
                confirmation = f"Remembered: '{form.cleaned_data['content']}'."
                if request.htmx:
                    # The button comes back in the form's place, the sections out of band.
                    return render(request, "agent_memory/_memory_added.html",
                                  _sections_context(request, confirmation=confirmation))
                messages.success(request, confirmation)
                return redirect(_list_url(memory.pk))
    template = "agent_memory/_memory_form.html" if request.htmx else "agent_memory/memory_add.html"
    return render(request, template, {"form": form, "conflict": conflict},
                  status=_form_status(request, status))


@login_required
@require_http_methods(["GET", "POST"])
def memory_edit(request: HttpRequest, memory_id: str) -> HttpResponse:
    """Correct a memory in place: the new text is version n+1, the old one stays in its
    history. htmx swaps the card for the form and back."""
    memory = selectors.active_memory_for_user(user=request.user, memory_id=memory_id)
    form = MemoryEditForm(request.POST or None, initial={"content": memory.content})
    status = 200
    if request.method == "POST":
        status = 400
        if form.is_valid():
            try:
                services.memory_update(user=request.user, memory=memory,
                                       content=form.cleaned_data["content"],
                                       origin=ChangeOrigin.DASHBOARD)
            except ValidationError as exc:
                add_service_errors(form, exc)
            else:
                if request.htmx:
                    memory = selectors.active_memory_for_user(user=request.user,
                                                              memory_id=memory.pk)
                    return render(request, "agent_memory/_memory_card.html",
                                  {"memory": memory, "updated": True})
                messages.success(request, "Updated: the earlier text stays in its history.")
                return redirect(_list_url(memory.pk))
    template = (
        "agent_memory/_memory_edit.html" if request.htmx else "agent_memory/memory_edit_page.html"
    )
    return render(request, template, {"memory": memory, "form": form},
                  status=_form_status(request, status))


def _history_answer(request: HttpRequest, memory_id: str, confirmation: str) -> HttpResponse:
    """After a restore or an undo: htmx gets the history in place, without JavaScript the
    history page after a redirect, with the confirmation either way."""
    if request.htmx:
        memory = selectors.memory_for_user(user=request.user, memory_id=memory_id)
        return render(request, "agent_memory/_memory_history.html",
                      _history_context(memory, confirmation=confirmation))
    messages.success(request, confirmation)
    return redirect("agent_memory:memory_history", memory_id=memory_id)


def _history_refusal(request: HttpRequest, memory: AgentMemory, status: int,
                     **extra: object) -> HttpResponse:
    template = (
        "agent_memory/_memory_history.html" if request.htmx else "agent_memory/memory_history.html"
    )
    return render(request, template, _history_context(memory, **extra),
                  status=_form_status(request, status))


@login_required
@require_POST
def memory_restore(request: HttpRequest, memory_id: str) -> HttpResponse:
    """Bring back an earlier text as a new version: a deleted memory (its last text, or the
    version asked for), or an earlier version of an active one."""
    return _version_write(request, memory_id, services.memory_restore, lambda update: (
        f"Restored as version {update.version}: '{update.new_content}'."))


@login_required
@require_POST
def memory_revert(request: HttpRequest, memory_id: str) -> HttpResponse:
    """Undo the latest change of a memory in one click (the agent's, typically): a new version
    with the text before it, the memory deleted when the change was its creation, or a deleted
    memory restored. History is added to, never rewritten."""
    return _version_write(request, memory_id, services.memory_revert, _revert_confirmation)


def _revert_confirmation(revert) -> str:
    if revert.action == "deleted":
        return (f"Undone: '{revert.content}' is deleted again; its history stays, and you can "
                "restore it.")
    return f"Undone: version {revert.version} has the text '{revert.content}'."


def _version_write(request: HttpRequest, memory_id: str, write, confirm) -> HttpResponse:
    """A dashboard write to a memory's history (restore or revert, the version in the form):
    the history page answers the confirmation, or the refusal with its status."""
    memory = selectors.memory_for_user(user=request.user, memory_id=memory_id)
    form = RestoreForm(request.POST)
    if not form.is_valid():
        return _history_refusal(request, memory, 400, form=form)
    try:
        result = write(user=request.user, memory=memory,
                       version_number=form.cleaned_data["version"],
                       origin=ChangeOrigin.DASHBOARD)
    except services.SubjectConflict as exc:
        return _history_refusal(request, memory, 409, conflict=exc.memory)
    except ValidationError as exc:
        return _history_refusal(request, memory, 400, refusal=" ".join(exc.messages))
    return _history_answer(request, memory.pk, confirm(result))


# --- Places of interest (seed 001) -------------------------------------------------------------


def _places_url(place: Place | None = None) -> str:
    url = reverse("agent_memory:place_list")
    return f"{url}#place-{place.pk}" if place else url


@login_required
@require_GET
def place_list(request: HttpRequest) -> HttpResponse:
    """My places of interest with their notes and the conversations that mention each."""
    return render(request, "agent_memory/place_list.html",
                  {"places": selectors.places_with_mentions_for_user(request.user)})


@login_required
@require_GET
def place_card(request: HttpRequest, place_pk: str) -> HttpResponse:
    """One place's card (what "Cancel" goes back to); without htmx, the list at that card."""
    place = selectors.place_by_pk_for_user(user=request.user, pk=place_pk)
    if request.htmx:
        return render(request, "agent_memory/_place_card.html", {"place": place})
    return redirect(_places_url(place))


@login_required
@require_http_methods(["GET", "POST"])
def place_edit(request: HttpRequest, place_pk: str) -> HttpResponse:
    """Edit a place's notes; htmx swaps the card for the form and back."""
    place = selectors.place_by_pk_for_user(user=request.user, pk=place_pk)
    form = PlaceNotesForm(request.POST or None, initial={"notes": place.notes})
    status = 200
    if request.method == "POST":
        status = 400
        if form.is_valid():
            try:
                services.place_update_notes(user=request.user, place=place,
                                            notes=form.cleaned_data["notes"])
            except ValidationError as exc:
                add_service_errors(form, exc)
            else:
                if request.htmx:
                    place = selectors.place_by_pk_for_user(user=request.user, pk=place.pk)
                    return render(request, "agent_memory/_place_card.html",
                                  {"place": place, "updated": True})
                messages.success(request, f"Notes on {place.name} saved.")
                return redirect(_places_url(place))
    template = (
        "agent_memory/_place_edit.html" if request.htmx else "agent_memory/place_edit_page.html"
    )
    return render(request, template, {"place": place, "form": form},
                  status=_form_status(request, status))


@login_required
@require_http_methods(["GET", "POST"])
def place_delete(request: HttpRequest, place_pk: str) -> HttpResponse:
    """Asks for confirmation (GET), then deletes the place and its mentions (POST)."""
    place = selectors.place_by_pk_for_user(user=request.user, pk=place_pk)
    if request.method == "GET":
        template = (
            "agent_memory/_place_delete.html" if request.htmx
            else "agent_memory/place_delete_page.html"
        )
        return render(request, template, {"place": place})
    name = services.place_delete(user=request.user, place=place)
    confirmation = f"Deleted the place “{name}”: the assistant no longer sees it."
    if request.htmx:
        return render(request, "agent_memory/_place_deleted.html", {"confirmation": confirmation})
    messages.success(request, confirmation)
    return redirect(_places_url())
