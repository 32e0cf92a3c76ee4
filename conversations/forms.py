"""Forms of the conversations pages: the search over my conversations and the confirmation of
deleting one."""

from django import forms
from django.conf import settings
from django.core.validators import MaxLengthValidator


class ConversationSearchForm(forms.Form):
    """`?q=` of the conversations page; empty lists every conversation. NUL characters are
    refused by Django's CharField itself."""

    q = forms.CharField(
        required=False, strip=True, label="Search titles and what was said",
        widget=forms.TextInput(attrs={"type": "search", "autocomplete": "off",
                                      "placeholder": "e.g. the lake house"}),
    )

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)
        # The agent's search has this limit (retrieval.validate_search_input); read at call time.
        limit = settings.SEARCH_QUERY_MAX_CHARS
        self.fields["q"].validators.append(MaxLengthValidator(limit))
        self.fields["q"].widget.attrs["maxlength"] = str(limit)


class ConversationDeleteForm(forms.Form):
    keep_facts = forms.BooleanField(
        required=False, initial=False, label="Keep the facts taken from it",
        help_text="They stay yours on the facts page, with no link to this conversation.",
    )
