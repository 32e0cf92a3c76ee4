"""Serializers of the agent-side API: search hits, the context packet, turns and checkpoints."""

from rest_framework import serializers


class SearchQuerySerializer(serializers.Serializer):
    """Documents `q` and `k` for the schema; validation is retrieval.validate_search_input."""

    q = serializers.CharField(help_text="What to look for in my earlier conversations.")
    k = serializers.IntegerField(
        required=False, help_text="How many hits (1 to SEARCH_MAX_K; default SEARCH_DEFAULT_K)."
    )


class SearchHitSerializer(serializers.Serializer):
    id = serializers.CharField()
    kind = serializers.ChoiceField(choices=["chunk", "message"])
    content = serializers.CharField()
    score = serializers.FloatField()
    conversation_id = serializers.UUIDField()
    message_range_start = serializers.IntegerField()
    message_range_end = serializers.IntegerField(help_text="Exclusive.")
    created_at = serializers.DateTimeField()


class SearchResponseSerializer(serializers.Serializer):
    results = SearchHitSerializer(many=True)
    total = serializers.IntegerField(help_text="Units in scope; len(results) == min(k, total).")
