"""Forms of the facts dashboard."""

from django import forms


class LeaveLegacyForm(forms.Form):
    """The confirmation of leaving a legacy: the member ticks that they understand what
    happens (the page says it) before the button does it."""

    confirm = forms.BooleanField(
        required=True,
        label="I understand what happens when I leave.",
        error_messages={"required": "Tick the box to confirm that you want to leave."},
    )
