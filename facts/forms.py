"""Forms of the facts dashboard."""

from django import forms

from facts.models import LegacyMembership
from facts.services import LEGACY_NAME_MAX_CHARS


class LeaveLegacyForm(forms.Form):
    """The confirmation of leaving a legacy: the member ticks that they understand what
    happens (the page says it) before the button does it."""

    confirm = forms.BooleanField(
        required=True,
        label="I understand what happens when I leave.",
        error_messages={"required": "Tick the box to confirm that you want to leave."},
    )


class LegacyCreateForm(forms.Form):
    """A new legacy on My legacies. The form takes the name as typed; the rules and their words
    (a name, at most LEGACY_NAME_MAX_CHARS characters, no NUL) are those of
    facts.services.legacy_create, which POST /api/legacies calls too. The browser is told the
    first two, to say them before sending."""

    name = forms.CharField(
        label="Name of the person you remember",
        required=False,
        strip=False,
        widget=forms.TextInput(
            attrs={"required": True, "maxlength": LEGACY_NAME_MAX_CHARS, "autocomplete": "off"}
        ),
    )


class InviteForm(forms.Form):
    """An owner's invitation on the legacy page; facts.services.invitation_create has the
    rules (not oneself, not a member, not twice)."""

    username = forms.CharField(max_length=150, label="Username")
    role = forms.ChoiceField(
        choices=LegacyMembership.Role.choices, initial=LegacyMembership.Role.MEMBER, label="Role"
    )


class InvitationAnswerForm(forms.Form):
    """The invitee's answer on the invitations page."""

    answer = forms.ChoiceField(choices=[("accept", "Accept"), ("decline", "Decline")])
