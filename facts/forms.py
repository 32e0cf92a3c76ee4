"""Forms of the facts dashboard."""

from django import forms

from facts.models import LegacyMembership


class LeaveLegacyForm(forms.Form):
    """The confirmation of leaving a legacy: the member ticks that they understand what
    happens (the page says it) before the button does it."""

    confirm = forms.BooleanField(
        required=True,
        label="I understand what happens when I leave.",
        error_messages={"required": "Tick the box to confirm that you want to leave."},
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
