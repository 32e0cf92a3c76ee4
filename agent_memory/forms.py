"""Forms of the memory and places pages: shapes only; the services hold the rules (lengths,
categories, a subject already held), and their errors are put back on the form."""

from django import forms
from django.core.exceptions import ValidationError

from agent_memory.models import AgentMemory


class MemoryForm(forms.Form):
    category = forms.ChoiceField(choices=AgentMemory.Category.choices)
    subject = forms.CharField(
        required=False, strip=True,
        help_text="Optional: who or what it is about (one memory per subject).",
    )
    content = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), strip=True)


class MemoryEditForm(forms.Form):
    content = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), strip=True)


class RestoreForm(forms.Form):
    version = forms.IntegerField(required=False, min_value=1)


class PlaceNotesForm(forms.Form):
    notes = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}), strip=True)


def add_service_errors(form: forms.Form, exc: ValidationError) -> None:
    """A service's ValidationError on the form: field errors on their fields (the services
    name `place_name` for a place's name), the rest above it."""
    errors = exc.message_dict if hasattr(exc, "error_dict") else {None: exc.messages}
    for field, messages in errors.items():
        target = field if field in form.fields else None
        for message in messages:
            form.add_error(target, message)
