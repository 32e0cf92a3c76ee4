"""The API's request parser (REST_FRAMEWORK's DEFAULT_PARSER_CLASSES).

A module of its own: memory_site.core.api imports rest_framework.views, which reads this
setting while it loads."""

from rest_framework import parsers
from rest_framework.exceptions import ParseError

from memory_site.core.text import LONE_SURROGATE_MESSAGE, has_lone_surrogate


class JSONParser(parsers.JSONParser):
    """DRF's JSON parser, answering as the malformed body it is (400 parse_error), not with a
    500: a body nested deeper than Python's decoder can follow (thousands of `[`), and a string
    holding half of a surrogate pair ("\\ud800"), which no text column can store and no error
    message can echo."""

    def parse(self, stream, media_type=None, parser_context=None):
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError as exc:
            raise ParseError("JSON parse error - the body is nested too deeply.") from exc
        if has_lone_surrogate(data):
            raise ParseError(LONE_SURROGATE_MESSAGE)
        return data
