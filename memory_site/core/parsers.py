"""The API's request parser (REST_FRAMEWORK's DEFAULT_PARSER_CLASSES).

A module of its own: memory_site.core.api imports rest_framework.views, which reads this
setting while it loads."""

from rest_framework import parsers
from rest_framework.exceptions import ParseError


class JSONParser(parsers.JSONParser):
    """DRF's JSON parser, with a body nested deeper than Python's decoder can follow (thousands
    of `[`) answered as the malformed body it is (400 parse_error), not a RecursionError (500)."""

    def parse(self, stream, media_type=None, parser_context=None):
        try:
            return super().parse(stream, media_type, parser_context)
        except RecursionError as exc:
            raise ParseError("JSON parse error - the body is nested too deeply.") from exc
