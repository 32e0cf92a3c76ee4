"""Input serializers as strict as the OpenAPI schema they produce.

DRF coerces: a CharField takes the number 0 as "0", an IntegerField the string "5" or 5.5 as 5, a
BooleanField 1 or "yes" as true, a UUIDField a bare integer. The schema says `string`,
`integer`, `boolean`, `format: uuid`, and a client that reads it must get a 400 for anything
else (tests/security/test_contract.py runs schemathesis against it). StrictInputSerializer
checks each field's JSON type (in a body) or its text (in a query string) before DRF's own
validation, all the way down nested serializers and lists."""

import re
from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.http import QueryDict
from drf_spectacular.extensions import OpenApiSerializerFieldExtension
from rest_framework import serializers

UUID_TEXT = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
INTEGER_TEXT = re.compile(r"-?[0-9]+")
BOOLEAN_TEXTS = ("true", "false")

_STRING_FIELDS = (
    serializers.CharField, serializers.ChoiceField, serializers.UUIDField,
    serializers.DateTimeField, serializers.DateField, serializers.TimeField,
)


# Python's whitespace (str.split, str.strip), spelled out: `\s` differs between regex engines
# (ECMA's, the Rust one of schema validators), Python's own set does not.
_SPACES = (
    r"\t\n\u000b\u000c\r\u001c-\u001f \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029"
    r"\u202f\u205f\u3000"
)
SPACE = rf"[{_SPACES}]"
NON_SPACE = rf"[^{_SPACES}]"
# A character that is neither whitespace nor NUL (which the services refuse).
_CHAR = rf"[^{_SPACES}\u0000]"


def _at_least(weight: int) -> str:
    """A regex for a run of non-space characters and inner whitespace runs worth at least
    `weight`: a non-space character is worth one, a whitespace run and the character after
    it two (the run folds to one space)."""
    if weight <= 0:
        return ""
    if weight == 1:
        return rf"(?:{_CHAR}|{SPACE}+{_CHAR})"
    return rf"(?:{_CHAR}{_at_least(weight - 1)}|{SPACE}+{_CHAR}{_at_least(weight - 2)})"


def folded_length_pattern(minimum: int) -> str:
    """A pattern (Python's `re`, as schemathesis and jsonschema read it) for text without NUL
    whose whitespace-folded form (`" ".join(text.split())`, what the services keep) has at least
    `minimum` characters. No lookahead: generators build strings from it instead of filtering
    (its size grows like Fibonacci(minimum), fine for the settings' single digits)."""
    return rf"^{SPACE}*{_CHAR}{_at_least(minimum - 1)}[^\u0000]*$"


class TextField(serializers.CharField):
    """Free text whose length rules are settings the services apply to the folded text (at
    least `min_setting` characters, default 1: not blank). The API also refuses more than
    `max_setting` characters as sent, so the schema can say both exactly: `maxLength` and a
    pattern for the folded minimum (TextFieldSchema)."""

    def __init__(self, *, min_setting: str | None = None, max_setting: str,
                 too_long: str = "At most {maximum} characters.", **kwargs: Any):
        self.min_setting, self.max_setting, self.too_long = min_setting, max_setting, too_long
        kwargs.setdefault("trim_whitespace", False)
        super().__init__(**kwargs)

    @property
    def minimum(self) -> int:
        return getattr(settings, self.min_setting) if self.min_setting else 1

    @property
    def maximum(self) -> int:
        return getattr(settings, self.max_setting)

    def run_validation(self, data: Any = serializers.empty) -> Any:
        if data == "":
            return ""  # invalid in the schema; refused by the services, in their words
        return super().run_validation(data)

    def to_internal_value(self, data: Any) -> str:
        value = super().to_internal_value(data)
        if len(value) > self.maximum:
            raise serializers.ValidationError(self.too_long.format(
                minimum=self.minimum, maximum=self.maximum, length=len(value)
            ))
        return value


class TextFieldSchema(OpenApiSerializerFieldExtension):
    """The schema of a TextField, with the settings' values when the schema is served."""

    target_class = TextField
    match_subclasses = True

    def map_serializer_field(self, auto_schema: Any, direction: str) -> dict:
        field = self.target
        schema: dict[str, Any] = {"type": "string", "maxLength": field.maximum}
        if direction == "request":
            schema["pattern"] = folded_length_pattern(field.minimum)
        if field.help_text:
            schema["description"] = str(field.help_text)
        return schema


class BoundedIntegerField(serializers.IntegerField):
    """An integer from `minimum` to the setting `max_setting`, read when used, as the schema
    says (BoundedIntegerFieldSchema)."""

    def __init__(self, *, minimum: int, max_setting: str, **kwargs: Any):
        self.minimum, self.max_setting = minimum, max_setting
        super().__init__(**kwargs)

    @property
    def maximum(self) -> int:
        return getattr(settings, self.max_setting)

    def to_internal_value(self, data: Any) -> int:
        value = super().to_internal_value(data)
        if not self.minimum <= value <= self.maximum:
            raise serializers.ValidationError(f"Must be between {self.minimum} and {self.maximum}.")
        return value


class BoundedIntegerFieldSchema(OpenApiSerializerFieldExtension):
    target_class = BoundedIntegerField
    match_subclasses = True

    def map_serializer_field(self, auto_schema: Any, direction: str) -> dict:
        field = self.target
        schema = {"type": "integer", "minimum": field.minimum, "maximum": field.maximum}
        if field.help_text:
            schema["description"] = str(field.help_text)
        return schema


def _message(field: serializers.Field, key: str, **kwargs: Any) -> str:
    """DRF's own words for the field's error `key`, so a wrong type reads as DRF's others do."""
    return str(field.error_messages[key]).format(**kwargs)


def _body_problem(field: serializers.Field, value: Any) -> Any:
    """What is wrong with the JSON value of a body field, or None. Nested serializers and
    lists answer their problems keyed as DRF keys its own errors."""
    if value is None:
        return None  # allow_null is DRF's to check
    if isinstance(field, serializers.JSONField):
        return None
    if isinstance(field, serializers.BooleanField):
        return None if isinstance(value, bool) else _message(field, "invalid")
    if isinstance(field, serializers.IntegerField):
        return None if isinstance(value, int) and not isinstance(value, bool) else (
            _message(field, "invalid")
        )
    if isinstance(field, serializers.FloatField | serializers.DecimalField):
        return None if isinstance(value, int | float) and not isinstance(value, bool) else (
            _message(field, "invalid")
        )
    if isinstance(field, serializers.UUIDField):
        if not isinstance(value, str) or not UUID_TEXT.fullmatch(value):
            return _message(field, "invalid", value=value)
        return None
    if isinstance(field, serializers.MultipleChoiceField | serializers.ListField):
        if not isinstance(value, list):
            key = "not_a_list" if "not_a_list" in field.error_messages else "invalid"
            return _message(field, key, input_type=type(value).__name__)
        child = getattr(field, "child", None)
        if child is None:
            return None
        problems = {i: [p] if isinstance(p, str) else p
                    for i, item in enumerate(value) if (p := _body_problem(child, item))}
        return problems or None
    if isinstance(field, serializers.ListSerializer):
        if not isinstance(value, list):
            return _message(field, "not_a_list", input_type=type(value).__name__)
        problems = [_object_problems(field.child, item) for item in value]
        return problems if any(problems) else None
    if isinstance(field, _STRING_FIELDS):
        if not isinstance(value, str):
            return _message(field, "invalid") if isinstance(field, serializers.CharField) else (
                "Not a valid string."
            )
        if getattr(field, "max_length", None) and len(value) > field.max_length:
            # DRF counts after trimming; the schema's maxLength counts what is sent.
            return f"At most {field.max_length} characters."
        return None
    if isinstance(field, serializers.DictField):
        return None if isinstance(value, dict) else (
            _message(field, "not_a_dict", input_type=type(value).__name__)
        )
    if isinstance(field, serializers.Serializer):
        if not isinstance(value, Mapping):
            return _message(field, "invalid", datatype=type(value).__name__)
        return _object_problems(field, value) or None
    return None


def _query_problem(field: serializers.Field, value: str) -> str | None:
    """What is wrong with the text of a query parameter, or None."""
    if isinstance(field, serializers.BooleanField):
        return None if value in BOOLEAN_TEXTS else _message(field, "invalid")
    if isinstance(field, serializers.IntegerField):
        return None if INTEGER_TEXT.fullmatch(value) else _message(field, "invalid")
    if isinstance(field, serializers.UUIDField):
        return None if UUID_TEXT.fullmatch(value) else _message(field, "invalid", value=value)
    if isinstance(field, serializers.ChoiceField) and value not in field.choices:
        return f'"{value}" is not a valid choice.'
    return None


def _object_problems(serializer: serializers.Serializer, data: Any) -> dict:
    if not isinstance(data, Mapping):
        return {}
    problems: dict[str, Any] = {}
    for field in serializer.fields.values():
        if field.read_only or field.field_name not in data:
            continue
        if isinstance(data, QueryDict):
            problem = _query_problem(field, data[field.field_name])
        else:
            problem = _body_problem(field, data[field.field_name])
        if problem:
            problems[field.field_name] = [problem] if isinstance(problem, str) else problem
    return problems


# A request body or query string: each field's JSON type, or its text in a query string, is the
# one the schema documents, or the answer is a 400 with the field's error. (No docstring: the
# schema would show it as the description of every input that has none of its own.)
class StrictInputSerializer(serializers.Serializer):

    def to_internal_value(self, data: Any) -> Any:
        if problems := _object_problems(self, data):
            raise serializers.ValidationError(problems)
        return super().to_internal_value(data)
