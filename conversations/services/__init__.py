"""Writes of the conversations app: messages and closing, the memory pipelines, the agent turn,
deleting a conversation."""

from conversations.services.deletion import conversation_delete
from conversations.services.messages import (
    IDEMPOTENCY_KEY_MAX_CHARS,
    IdempotencyConflict,
    conversation_close,
    conversation_create,
    message_append,
    user_data_erase,
    validate_idempotency_key,
    validate_message_content,
)
from conversations.services.summarization import (
    chunk_archive_range,
    conversation_catch_up,
    conversations_close_idle,
    rolling_summaries_recover_stuck,
    rolling_summary_begin,
    rolling_summary_generate,
    rolling_summary_retry,
    rolling_summary_update,
)
from conversations.services.turn import (
    ChatAnswer,
    TurnConflict,
    TurnInProgress,
    TurnProviderError,
    TurnResult,
    chat_message_answer,
    turn_run,
)

__all__ = [
    "ChatAnswer",
    "IDEMPOTENCY_KEY_MAX_CHARS",
    "IdempotencyConflict",
    "TurnConflict",
    "TurnInProgress",
    "TurnProviderError",
    "TurnResult",
    "chat_message_answer",
    "chunk_archive_range",
    "conversation_catch_up",
    "conversation_close",
    "conversation_create",
    "conversation_delete",
    "conversations_close_idle",
    "rolling_summaries_recover_stuck",
    "rolling_summary_begin",
    "rolling_summary_generate",
    "rolling_summary_retry",
    "rolling_summary_update",
    "message_append",
    "turn_run",
    "user_data_erase",
    "validate_idempotency_key",
    "validate_message_content",
]
