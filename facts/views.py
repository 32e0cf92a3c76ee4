"""Dashboard pages of legacies, their family and their facts: creating a legacy, review, share,
edit and delete (htmx in place), inviting, answering invitations, and leaving a legacy."""

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.db.models import Q
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.template.defaultfilters import pluralize
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django.views.decorators.vary import vary_on_headers

from facts import selectors, services
from facts.forms import InvitationAnswerForm, InviteForm, LeaveLegacyForm, LegacyCreateForm
from facts.models import FactConflict, Legacy, LegacyFact
from facts.selectors import legacies_with_member_counts
from memory_site.core.text import NUL_MESSAGE, has_nul


def _first_errors(exc: ValidationError) -> dict[str, str]:
    if not hasattr(exc, "error_dict"):
        return {"non_field_errors": " ".join(exc.messages)}
    return {field: " ".join(msgs) for field, msgs in exc.message_dict.items()}


def _facts_url(legacy_id: object, fact: LegacyFact | None = None) -> str:
    url = reverse("facts:legacy_facts", args=[legacy_id])
    return f"{url}#fact-{fact.pk}" if fact is not None else url


def _group_by_category(facts: list[LegacyFact]) -> list[tuple[str, list[LegacyFact]]]:
    groups: dict[str, list[LegacyFact]] = {c: [] for c in LegacyFact.Category.values}
    for fact in facts:
        groups[fact.category].append(fact)
    return [(category, items) for category, items in groups.items() if items]


# How many conflicts the facts page lists, and how many each fact's row names.
CONFLICTS_LISTED = 20
CONFLICTS_PER_ROW = 3


def _facts_page_context(request: HttpRequest, legacy: Legacy) -> dict:
    """The facts page's lists, narrowed by its `category` and `q` query parameters."""
    category = request.GET.get("category", "")
    text = request.GET.get("q", "").strip()
    filter_error = ""
    if category and category not in LegacyFact.Category.values:
        filter_error = f"There is no category “{category}”; showing every category."
        category = ""
    if has_nul(text):
        filter_error = " ".join(
            [filter_error, f"Search text: {NUL_MESSAGE} Showing every fact."]
        ).strip()
        text = ""
    shown = list(
        selectors.facts_filtered(user=request.user, legacy=legacy, category=category, text=text)
        .select_related("source_conversation")
    )
    all_conflicts = selectors.conflicts_visible_to(request.user, legacy)
    # The rows' conflicts: those of the facts shown only (a filter showing one fact read every
    # conflict of the legacy: found by a live check); the list: the first CONFLICTS_LISTED.
    ids = [fact.pk for fact in shown]
    visible = _with_lifecycle(request.user, shown, conflicts=list(
        all_conflicts.filter(Q(fact_a__in=ids) | Q(fact_b__in=ids))))
    listed = [_mine_first(conflict, request.user) for conflict in all_conflicts[:CONFLICTS_LISTED]]
    mine = [f for f in visible if f.user_id == request.user.pk]
    return {
        "legacy": legacy,
        "my_groups": _group_by_category(mine),
        "my_count": len(mine),
        "shared_by_others": [f for f in visible if f.user_id != request.user.pk],
        "has_any_facts": selectors.facts_visible_to(request.user, legacy).exists(),
        "category": category,
        "q": text,
        "filtered": bool(category or text),
        "filter_error": filter_error,
        "categories": LegacyFact.Category.values,
        "visibilities": LegacyFact.Visibility.choices,
        "members": selectors.legacy_members(legacy=legacy),
        # The page lists the first CONFLICTS_LISTED (the conflicts API pages through all).
        "conflicts": listed,
        "conflicts_total": all_conflicts.count() if len(listed) == CONFLICTS_LISTED else len(listed),
        "fact_max_chars": settings.FACT_MAX_CHARS,
    }


def _mine_first(conflict: FactConflict, user: object) -> FactConflict:
    """The conflict with `pair`: the viewer's own fact first, when one of the two is theirs
    (they were shown in the order of the facts' ids: a live check read "ben: … / You: …" and
    "You: … / ben: …" in one list)."""
    theirs_first = conflict.fact_b.user_id == user.pk and conflict.fact_a.user_id != user.pk
    conflict.pair = ((conflict.fact_b, conflict.fact_a) if theirs_first
                     else (conflict.fact_a, conflict.fact_b))
    return conflict


def _with_lifecycle(
    user: object, facts: list[LegacyFact], conflicts: list[FactConflict] | None = None
) -> list[LegacyFact]:
    """Each fact with what its rows show of its lifecycle: `corrected_values`, the earlier
    values it corrected that the user may see, and `conflicting`, the other members' facts it
    conflicts with (only where the user may see both: selectors.conflicts_visible_to). The
    caller that already read the conflicts of the facts' legacy passes them as `conflicts`."""
    corrections = selectors.fact_corrections_visible(user=user, facts=facts)
    if conflicts is None:
        legacies = {fact.legacy_id: fact for fact in facts}
        conflicts = [
            conflict for fact in legacies.values()
            for conflict in selectors.conflicts_visible_to(user, fact.legacy)
        ]
    conflicting: dict[object, list[LegacyFact]] = {}
    for conflict in conflicts:
        conflicting.setdefault(conflict.fact_a_id, []).append(conflict.fact_b)
        conflicting.setdefault(conflict.fact_b_id, []).append(conflict.fact_a)
    for fact in facts:
        fact.corrected_values = corrections.get(fact.pk, [])
        others = conflicting.get(fact.pk, [])
        # A few on its row: a fact another member contradicted hundreds of times made a row of
        # hundreds, and a page of 170 MB (found by a hostile relative).
        fact.conflicting, fact.conflicting_more = (others[:CONFLICTS_PER_ROW],
                                                   max(len(others) - CONFLICTS_PER_ROW, 0))
    return facts


def _render_facts_page(
    request: HttpRequest, legacy: Legacy, status: int = 200, **extra: object
) -> HttpResponse:
    context = {**_facts_page_context(request, legacy), **extra}
    return render(request, "facts/facts_page.html", context, status=status)


def _row(request: HttpRequest, fact: LegacyFact, **extra: object) -> HttpResponse:
    _with_lifecycle(request.user, [fact])
    return render(request, "facts/_fact_row.html", {"fact": fact, "user": request.user, **extra})


def _render_legacy_list(
    request: HttpRequest, create_form: LegacyCreateForm | None = None, status: int = 200
) -> HttpResponse:
    context = {
        "legacies": legacies_with_member_counts(request.user),
        "create_form": create_form or LegacyCreateForm(),
    }
    return render(request, "facts/legacy_list.html", context, status=status)


@login_required
@require_GET
def legacy_list(request: HttpRequest) -> HttpResponse:
    """My legacies, and the form that creates one."""
    return _render_legacy_list(request)


@login_required
@require_POST
def legacy_create(request: HttpRequest) -> HttpResponse:
    """Create a legacy (My legacies' form) through the API's service: its creator becomes its
    owner and lands on its page, where they invite the family. A refused name goes back to the
    list with the error on the field and the name as typed."""
    form = LegacyCreateForm(request.POST)
    if form.is_valid():
        try:
            legacy = services.legacy_create(user=request.user, **form.cleaned_data)
        except ValidationError as exc:
            for field, errors in _first_errors(exc).items():
                form.add_error(None if field == "non_field_errors" else field, errors)
        else:
            messages.success(
                request,
                f"You have created the legacy of {legacy.name} and are its owner. "
                "Invite the family below by their usernames.",
            )
            return redirect("facts:legacy_detail", legacy_id=legacy.pk)
    return _render_legacy_list(request, form, status=400)


def _render_legacy_detail(
    request: HttpRequest, legacy: Legacy, invite_form: InviteForm | None = None, status: int = 200
) -> HttpResponse:
    is_owner = selectors.is_legacy_owner(legacy=legacy, user=request.user)
    context = {
        "legacy": legacy,
        "members": selectors.legacy_members(legacy=legacy),
        "is_owner": is_owner,
        "invitations": selectors.legacy_pending_invitations(legacy=legacy) if is_owner else [],
        "invite_form": invite_form or InviteForm(),
    }
    return render(request, "facts/legacy_detail.html", context, status=status)


@login_required
@require_GET
def legacy_detail(request: HttpRequest, legacy_id: str) -> HttpResponse:
    """The legacy's page: its family (who, owner or member, since when), for members only;
    for owners also the pending invitations and the invite form."""
    legacy = selectors.legacy_for_member(user=request.user, legacy_id=legacy_id)
    return _render_legacy_detail(request, legacy)


@login_required
@require_POST
def legacy_invite(request: HttpRequest, legacy_id: str) -> HttpResponse:
    """An owner invites someone (the legacy page's form); back to the legacy page with the
    same message whether or not the username has an account."""
    legacy = selectors.legacy_for_member(user=request.user, legacy_id=legacy_id)
    form = InviteForm(request.POST)
    if not form.is_valid():
        return _render_legacy_detail(request, legacy, form, status=400)
    try:
        invitation = services.invitation_create(
            legacy=legacy, invited_by=request.user, **form.cleaned_data
        )
    except ValidationError as exc:
        for field, errors in _first_errors(exc).items():
            form.add_error(None if field == "non_field_errors" else field, errors)
        return _render_legacy_detail(request, legacy, form, status=400)
    except (services.AlreadyMember, services.AlreadyInvited) as exc:
        # The owner sees the family and its invitations anyway: say which, by the field.
        form.add_error("username", exc.message)
        return _render_legacy_detail(request, legacy, form, status=409)
    messages.success(request, services.invitation_sent_message(invitation))
    return redirect("facts:legacy_detail", legacy_id=legacy.pk)


@login_required
@require_POST
def legacy_invitation_withdraw(
    request: HttpRequest, legacy_id: str, invitation_id: str
) -> HttpResponse:
    legacy = selectors.legacy_for_member(user=request.user, legacy_id=legacy_id)
    services.invitation_withdraw(
        legacy=legacy, withdrawn_by=request.user, invitation_id=invitation_id
    )
    messages.success(request, "Invitation withdrawn.")
    return redirect("facts:legacy_detail", legacy_id=legacy.pk)


@login_required
@require_GET
def invitations(request: HttpRequest) -> HttpResponse:
    """My pending invitations, each with Accept and Decline."""
    pending = selectors.invitations_pending_for(request.user)
    return render(request, "facts/invitations.html", {"invitations": pending})


@login_required
@require_POST
def invitation_answer(request: HttpRequest, invitation_id: str) -> HttpResponse:
    """Accept or decline one of my invitations: in place with htmx (the row says what
    happened, the nav count follows); without, to the legacy page or back to the list."""
    invitation = selectors.invitation_for_invitee(user=request.user, invitation_id=invitation_id)
    form = InvitationAnswerForm(request.POST)
    if not form.is_valid():
        return HttpResponse("Answer accept or decline.", status=400, content_type="text/plain")
    accepted = form.cleaned_data["answer"] == "accept"
    if accepted:
        services.invitation_accept(invitation=invitation, user=request.user)
        note = f"You have joined the family of {invitation.legacy.name}."
    else:
        services.invitation_decline(invitation=invitation, user=request.user)
        note = f"You have declined the invitation to {invitation.legacy.name}'s family."
    if request.htmx:
        return render(
            request,
            "facts/_invitation_row.html",
            {"invitation": invitation, "answered": note, "accepted": accepted, "oob_nav": True},
        )
    messages.success(request, note)
    if accepted:
        return redirect("facts:legacy_detail", legacy_id=invitation.legacy_id)
    return redirect("facts:invitations")


@login_required
@require_http_methods(["GET", "POST"])
def legacy_leave(request: HttpRequest, legacy_id: str) -> HttpResponse:
    """What leaving does and its confirmation (GET), then leaving (POST): to the legacy list."""
    legacy = selectors.legacy_for_member(user=request.user, legacy_id=legacy_id)
    form = LeaveLegacyForm(request.POST if request.method == "POST" else None)
    status = 400 if form.is_bound else 200
    if form.is_valid():
        try:
            left = services.membership_leave(legacy=legacy, user=request.user)
        except services.LastMemberCannotLeave:
            # Everyone else left since the page was shown: the page now says why not.
            status = 409
        else:
            messages.success(request, _left_message(legacy, left))
            return redirect("facts:legacy_list")
    preview = selectors.membership_leave_preview(legacy=legacy, user=request.user)
    return render(
        request,
        "facts/legacy_leave.html",
        {"legacy": legacy, "preview": preview, "form": form},
        status=status,
    )


def _left_message(legacy: Legacy, left: services.MembershipLeft) -> str:
    parts = [f"You have left the family of {legacy.name}."]
    if left.facts_made_private:
        n = left.facts_made_private
        parts.append(f"Your {n} shared fact{pluralize(n)} {pluralize(n, 'is,are')} now private.")
    if left.new_owner is not None:
        parts.append(f"{left.new_owner.get_username()} is its owner now.")
    return " ".join(parts)


@login_required
@require_GET
@vary_on_headers("HX-Request")
def legacy_facts(request: HttpRequest, legacy_id: str) -> HttpResponse:
    """The facts page; an htmx request (the filters) gets only the list."""
    legacy = selectors.legacy_for_member(user=request.user, legacy_id=legacy_id)
    # A history restore (Back, with htmx's cache empty) needs the whole page.
    if request.htmx and not request.htmx.history_restore_request:
        return render(request, "facts/_fact_list.html", _facts_page_context(request, legacy))
    return _render_facts_page(request, legacy)


@login_required
@require_POST
def fact_add(request: HttpRequest, legacy_id: str) -> HttpResponse:
    legacy = selectors.legacy_for_member(user=request.user, legacy_id=legacy_id)
    try:
        fact, created = services.fact_create(
            legacy=legacy,
            user=request.user,
            category=request.POST.get("category", ""),
            content=request.POST.get("content", ""),
            visibility=request.POST.get("visibility", LegacyFact.Visibility.PRIVATE),
            as_member=True,
        )
    except ValidationError as exc:
        return _render_facts_page(
            request, legacy, status=400, add_errors=_first_errors(exc), add_values=request.POST
        )
    if created:
        messages.success(request, "Fact added. Only you can see it until you share it.")
    else:
        messages.info(request, services.DUPLICATE_MESSAGE)
    return redirect(_facts_url(legacy.pk, fact))


@login_required
@require_GET
def fact_row(request: HttpRequest, fact_id: str) -> HttpResponse:
    """One fact's row (what "Cancel" goes back to); without htmx, the facts page at that row."""
    fact = selectors.fact_for_user(user=request.user, fact_id=fact_id)
    if request.htmx:
        return _row(request, fact)
    return redirect(_facts_url(fact.legacy_id, fact))


@login_required
@require_POST
def fact_visibility(request: HttpRequest, fact_id: str) -> HttpResponse:
    fact = selectors.fact_for_author(user=request.user, fact_id=fact_id)
    try:
        fact = services.fact_set_visibility(
            fact=fact, user=request.user, visibility=request.POST.get("visibility", "")
        )
    except ValidationError as exc:
        error = " ".join(exc.messages)
        if request.htmx:
            return _row(request, fact, row_error=error)
        return _render_facts_page(
            request, fact.legacy, status=400, error_fact_id=fact.pk, row_error=error
        )
    confirmation = (
        "Shared with the family."
        if fact.visibility == LegacyFact.Visibility.SHARED
        else "Now private: only you can see it."
    )
    if request.htmx:
        return _row(request, fact, confirmation=confirmation)
    messages.success(request, confirmation)
    return redirect(_facts_url(fact.legacy_id, fact))


@login_required
@require_http_methods(["GET", "POST"])
def fact_edit(request: HttpRequest, fact_id: str) -> HttpResponse:
    """The edit form (in place with htmx, its own page without) and its submission."""
    fact = selectors.fact_for_author(user=request.user, fact_id=fact_id)
    template = "facts/_fact_edit.html" if request.htmx else "facts/fact_edit_page.html"
    context = {
        "fact": fact,
        "categories": LegacyFact.Category.values,
        "fact_max_chars": settings.FACT_MAX_CHARS,
    }
    if request.method == "GET":
        return render(request, template, context)
    try:
        fact = services.fact_update(
            fact=fact,
            user=request.user,
            content=request.POST.get("content", ""),
            category=request.POST.get("category", ""),
        )
    except ValidationError as exc:
        context.update(errors=_first_errors(exc), values=request.POST)
        return render(request, template, context, status=200 if request.htmx else 400)
    if request.htmx:
        return _row(request, fact, confirmation="Saved.")
    messages.success(request, "Fact saved.")
    return redirect(_facts_url(fact.legacy_id, fact))


@login_required
@require_http_methods(["GET", "POST"])
def fact_delete(request: HttpRequest, fact_id: str) -> HttpResponse:
    """Asks for confirmation (GET), then deletes (POST)."""
    fact = selectors.fact_for_author(user=request.user, fact_id=fact_id)
    if request.method == "GET":
        template = "facts/_fact_delete.html" if request.htmx else "facts/fact_delete_page.html"
        return render(request, template, {"fact": fact})
    legacy_id = fact.legacy_id
    services.fact_delete(fact=fact, user=request.user)
    if request.htmx:
        return render(request, "facts/_fact_deleted.html")
    messages.success(request, "Fact deleted.")
    return redirect(_facts_url(legacy_id))


@login_required
@require_POST
def fact_undo_correction(request: HttpRequest, fact_id: str) -> HttpResponse:
    """The author undoes a correction: the correction goes, the fact(s) it corrected are
    current again. With htmx the row is replaced by theirs; without, back to the facts page."""
    fact = selectors.fact_for_author(user=request.user, fact_id=fact_id)
    undone = services.fact_correction_undo(fact=fact, user=request.user)
    restored = undone.restored
    note = "Correction undone: the earlier value is current again." + (
        "" if undone.removed else " The correcting fact stays: you had said it before."
    )
    if request.htmx:
        # The correction's row is replaced: by the restored rows, and by its own if it stays.
        rows = restored if undone.removed else [
            *restored, selectors.fact_for_author(user=request.user, fact_id=fact.pk)]
        _with_lifecycle(request.user, rows)
        return render(request, "facts/_fact_rows_restored.html",
                      {"facts": rows, "user": request.user, "confirmation": note})
    messages.success(request, note)
    return redirect(_facts_url(fact.legacy_id, restored[0] if restored else None))
