"""The memory tools: OpenAI function-calling definitions and their executors, run as a user.

`tool_definitions()` lists seed 003's `add_to_memory` and `update_memory` and seed 001's
`manage_user_memory`. They are system tools: the agent turn always offers all of them.
`tool_execute(...)` runs one call and answers a dict the agent can read; bad arguments
come back as `{"ok": False, "code": "invalid_arguments", "detail", "errors"}`, never as
an exception. Called from an agent turn (with the turn's words), a write is first put to
agent_memory.write_rule and held back (`not_confirmed`) when the user did not ask for it.
"""

from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db.models import Model

from agent_memory import selectors, services
from agent_memory.models import AgentMemory, ChangeOrigin
from agent_memory.serializers import MemoryDocumentSerializer
from agent_memory.write_rule import TurnWords, write_decision
from memory_site.core.ai.base import tool_arguments
from memory_site.core.errors import NotFound

ADD_TO_MEMORY = "add_to_memory"
UPDATE_MEMORY = "update_memory"
MANAGE_USER_MEMORY = "manage_user_memory"
SYSTEM_TOOL_NAMES = (ADD_TO_MEMORY, UPDATE_MEMORY, MANAGE_USER_MEMORY)

OPERATIONS = ("add_fact", "deactivate_fact", "add_poi", "get_memory")
OPERATION_REQUIRES = {
    "add_fact": ("content",),
    "deactivate_fact": ("fact_id",),
    "add_poi": ("place_id", "place_name"),
    "get_memory": (),
}
# Seed 001's add_fact has no category; its facts are filed as recurring context.
ADD_FACT_CATEGORY = AgentMemory.Category.CONTEXT

# Error codes and the HTTP status the tools API answers them with.
ERROR_STATUS = {
    "invalid_arguments": 400,
    "unknown_operation": 400,
    "unknown_tool": 404,
    "not_found": 404,
    "conflict": 409,
    # A write the model made in a turn whose user did not ask for it (agent_memory.write_rule):
    # in an agent turn, or through the tools API with by_model.
    "not_confirmed": 409,
}
NOT_CONFIRMED = "not_confirmed"

MANAGE_USER_MEMORY_DESCRIPTION = """\
Use this tool to store and retrieve persistent facts about the user that should be remembered across all conversations.

WHEN TO USE:
- User shares personal information (name, preferences, interests, location)
- User mentions places they care about (home, work, favorite spots)
- User explicitly asks you to remember something
- User corrects previous information (deactivate old fact, add new one)

WHAT TO STORE:
- Personal details: "User's name is Alex", "User prefers morning workouts"
- Preferences: "User likes Italian food", "User is vegetarian"
- Context: "User lives in Seattle", "User works in tech industry"
- Places: User's home address, workplace, frequently mentioned locations

DO NOT STORE:
- Sensitive data (passwords, SSN, financial info)
- Temporary information (today's weather, one-time events)
- Information user hasn't shared or confirmed"""


def _content_schema(description: str) -> dict:
    return {
        "type": "string",
        "description": description,
        "minLength": settings.MEMORY_CONTENT_MIN_CHARS,
        "maxLength": settings.MEMORY_CONTENT_MAX_CHARS,
    }


def _function(name: str, description: str, properties: dict, required: list[str]) -> dict:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": properties,
                "required": required,
                "additionalProperties": False,
            },
        },
    }


def tool_definitions() -> list[dict]:
    """The memory tools as OpenAI function-calling definitions (`tools=` of a chat call)."""
    return [
        _function(
            ADD_TO_MEMORY,
            "Store important information for future conversations. Use this when the user "
            "shares facts about people, expresses preferences, or provides context that would "
            "be useful to remember. Ask for confirmation before storing new information.",
            {
                "content": _content_schema("The fact or information to remember"),
                "category": {
                    "type": "string",
                    "enum": list(AgentMemory.Category.values),
                    "description": "Category of memory: person, preference, context, or project",
                },
                "subject": {
                    "type": "string",
                    "description": "Optional subject/entity this memory relates to "
                    "(e.g., person name, project name)",
                    "maxLength": settings.MEMORY_SUBJECT_MAX_CHARS,
                },
            },
            ["content", "category"],
        ),
        _function(
            UPDATE_MEMORY,
            "Update an existing memory when information has changed. Use this instead of "
            "creating a new memory when correcting outdated information.",
            {
                "memory_id": {
                    "type": "string",
                    "description": "8-character ID of the memory to update",
                },
                "content": _content_schema("The updated content for this memory"),
            },
            ["memory_id", "content"],
        ),
        _function(
            MANAGE_USER_MEMORY,
            MANAGE_USER_MEMORY_DESCRIPTION,
            {
                "operation": {
                    "type": "string",
                    "enum": list(OPERATIONS),
                    "description": "add_fact, deactivate_fact, add_poi or get_memory",
                },
                "content": {"type": "string", "description": "For add_fact: the fact to remember"},
                "fact_id": {
                    "type": "string",
                    "description": "For deactivate_fact: the id of the fact to deactivate",
                },
                "place_id": {
                    "type": "string",
                    "description": "For add_poi: unique identifier for place",
                },
                "place_name": {
                    "type": "string",
                    "description": "For add_poi: human-readable name",
                },
                "notes": {"type": "string", "description": "For add_poi: additional context"},
            },
            ["operation"],
        ),
    ]


def _error(code: str, detail: str, errors: dict | None = None, **extra: Any) -> dict:
    body: dict[str, Any] = {"ok": False, "code": code, "detail": detail}
    if errors:
        body["errors"] = errors
    body.update(extra)
    return body


def _invalid(errors: dict[str, list[str]]) -> dict:
    field, messages = next(iter(errors.items()))
    return _error("invalid_arguments", f"{field}: {messages[0]}", errors)


def _ok(name: str, result: dict) -> dict:
    return {"ok": True, "tool": name, "result": result}


def _schema_errors(parameters: dict, arguments: dict, required: tuple | list) -> dict:
    """Required, unknown, type and enum checks against a definition's JSON schema; the
    services check lengths and the rest."""
    errors: dict[str, list[str]] = {}
    properties = parameters["properties"]
    for name, value in arguments.items():
        spec = properties.get(name)
        if spec is None:
            errors[name] = [f"Unknown argument; expected: {', '.join(properties)}."]
        elif value is not None and spec.get("type") == "string" and not isinstance(value, str):
            errors[name] = ["Must be a string."]
        elif "enum" in spec and value not in spec["enum"]:
            errors[name] = [f"Must be one of: {', '.join(spec['enum'])}."]
    for name in required:
        if arguments.get(name) is None or arguments.get(name) == "":
            errors.setdefault(name, ["This argument is required."])
    return errors


def _memory_result(memory: AgentMemory, content: str, version: int) -> dict:
    return {
        "memory_id": memory.pk,
        "category": memory.category,
        "subject": memory.subject,
        "content": content,
        "version": version,
    }


def _add_to_memory(*, user, arguments, conversation, message, origin) -> dict:
    content = arguments.get("content")
    held = (selectors.active_memory_with_content(user=user, content=content)
            if isinstance(content, str) else None)
    if held is not None:
        # The same text said again (a family repeats itself): one memory, not two.
        return _ok(ADD_TO_MEMORY, {
            **_memory_result(held, held.content, held.version),
            "message": f"Already remembered [id:{held.pk}]; nothing was added.",
        })
    try:
        memory = services.memory_create(
            user=user,
            content=arguments.get("content"),
            category=arguments.get("category"),
            subject=arguments.get("subject"),
            source_conversation=conversation,
            source_message=message,
            origin=origin,
        )
    except services.SubjectConflict as conflict:
        existing = selectors.memory_for_user(user=user, memory_id=conflict.memory.pk)
        return _error(
            "conflict",
            f"A memory about {existing.subject!r} already exists: [id:{existing.pk}] "
            f"{existing.content}. Use update_memory with memory_id={existing.pk} to change it "
            "instead of adding a new one.",
            existing_memory={
                "memory_id": existing.pk,
                "category": existing.category,
                "subject": existing.subject,
                "content": existing.content,
            },
            suggestion=f"update_memory(memory_id={existing.pk!r}, content=...)",
        )
    return _ok(ADD_TO_MEMORY, {
        **_memory_result(memory, " ".join(arguments["content"].split()), 1),
        "message": f"Stored memory [id:{memory.pk}].",
    })


def _update_memory(*, user, arguments, conversation, message, origin) -> dict:
    memory_id = arguments["memory_id"].strip()
    try:
        memory = selectors.active_memory_for_user(user=user, memory_id=memory_id)
        update = services.memory_update(
            user=user,
            memory=memory,
            content=arguments.get("content"),
            source_conversation=conversation,
            source_message=message,
            origin=origin,
        )
    except NotFound:
        return _error("not_found", f"No active memory with id {memory_id!r}.")
    return _ok(UPDATE_MEMORY, {
        **_memory_result(memory, update.new_content, update.version),
        "old_content": update.old_content,
        "new_content": update.new_content,
        "message": f"Updated memory [id:{memory.pk}] to version {update.version}.",
    })


def _manage_user_memory(*, user, arguments, conversation, message, origin) -> dict:
    operation = arguments["operation"]
    if operation == "add_fact":
        memory = services.memory_create(
            user=user,
            content=arguments.get("content"),
            category=ADD_FACT_CATEGORY,
            source_conversation=conversation,
            source_message=message,
            origin=origin,
        )
        return _ok(MANAGE_USER_MEMORY, {"operation": operation, "fact_id": memory.pk})
    if operation == "deactivate_fact":
        fact_id = arguments["fact_id"].strip()
        try:
            memory = selectors.active_memory_for_user(user=user, memory_id=fact_id)
            services.memory_delete(user=user, memory=memory, origin=origin,
                                   source_message=message)
        except NotFound:
            return _error("not_found", f"No active fact with id {fact_id!r}.")
        return _ok(MANAGE_USER_MEMORY, {
            "operation": operation, "fact_id": fact_id, "deactivated": True,
        })
    if operation == "add_poi":
        place, created = services.place_add(
            user=user,
            place_id=arguments.get("place_id"),
            name=arguments.get("place_name"),
            notes=arguments.get("notes"),
            conversation=conversation,
            message=message,
        )
        counted = selectors.places_for_user(user).get(pk=place.pk)
        return _ok(MANAGE_USER_MEMORY, {
            "operation": operation,
            "place_id": place.place_id,
            "created": created,
            "mentioned_in_conversations": counted.conversation_count,
        })
    return _ok(MANAGE_USER_MEMORY, {
        "operation": operation,
        "memory": MemoryDocumentSerializer(selectors.memory_document(user)).data,
    })


_EXECUTORS = {
    ADD_TO_MEMORY: _add_to_memory,
    UPDATE_MEMORY: _update_memory,
    MANAGE_USER_MEMORY: _manage_user_memory,
}


def tool_execute(
    *,
    user: AbstractBaseUser,
    name: str,
    arguments: dict | str | None,
    conversation: Model | None = None,
    message: Model | None = None,
    turn: TurnWords | None = None,
) -> dict:
    """Run one memory tool call as `user` and answer what the agent reads back.

    `arguments` is the dict, or the JSON text OpenAI sends. `conversation` / `message`
    (the user's own) are recorded as the source of what the call writes. Success is
    `{"ok": True, "tool", "result": {...}}`; a failure is `{"ok": False, "code",
    "detail", "errors"?}` with code unknown_tool, invalid_arguments, unknown_operation,
    not_found or conflict (see ERROR_STATUS). Nothing is written on a failure.

    `turn` marks a call the model made in an agent turn: what it writes is attributed to the
    agent, and a write the user's words do not allow (agent_memory.write_rule) answers
    `{"ok": False, "code": "not_confirmed", "detail", "kind"}` and writes nothing. Without
    it the call is the user's own (the tools API).
    """
    definition = next((d for d in tool_definitions() if d["function"]["name"] == name), None)
    if definition is None:
        return _error(
            "unknown_tool", f"Unknown tool {name!r}; available: {', '.join(SYSTEM_TOOL_NAMES)}."
        )
    parsed = tool_arguments(arguments if arguments is not None else {})
    if parsed is None:
        return _invalid({"arguments": ["Must be a JSON object."]})
    parameters = definition["function"]["parameters"]
    if name == MANAGE_USER_MEMORY:
        operation = parsed.get("operation")
        if operation is not None and operation not in OPERATIONS:
            return _error(
                "unknown_operation",
                f"Unknown operation {operation!r}; use one of: {', '.join(OPERATIONS)}.",
                {"operation": [f"Must be one of: {', '.join(OPERATIONS)}."]},
            )
        required = ["operation", *OPERATION_REQUIRES.get(operation, ())]
    else:
        required = parameters["required"]
    errors = _schema_errors(parameters, parsed, required)
    if errors:
        return _invalid(errors)
    origin = ChangeOrigin.API
    if turn is not None:
        origin = ChangeOrigin.AGENT
        decision = write_decision(user=user, name=name, arguments=parsed, words=turn)
        if not decision.allowed:
            return _error(NOT_CONFIRMED, decision.reason, kind=decision.kind)
    try:
        return _EXECUTORS[name](
            user=user, arguments=parsed, conversation=conversation, message=message,
            origin=origin,
        )
    except ValidationError as exc:
        return _invalid(exc.message_dict if hasattr(exc, "error_dict") else {
            "arguments": exc.messages
        })
