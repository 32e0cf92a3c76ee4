"""REST endpoints of agent memories, the memory document, the memory tools and /memory."""

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from agent_memory import memory_command, selectors, services, tools
from agent_memory.serializers import (
    CommandInputSerializer,
    CommandRefusalSerializer,
    CommandReplySerializer,
    MemoryConflictSerializer,
    MemoryCreateInputSerializer,
    MemoryDetailSerializer,
    MemoryDocumentSerializer,
    MemorySerializer,
    MemoryUpdatedSerializer,
    MemoryUpdateInputSerializer,
    ToolCallInputSerializer,
    ToolListSerializer,
    ToolResultSerializer,
)
from conversations.models import Conversation, Message
from conversations.selectors import conversation_for_user, message_for_user
from conversations.services.turn import turn_words
from memory_site.core.api import error_responses, paginate, paginated


def _sources(request: Request, data: dict) -> tuple[Conversation | None, Message | None]:
    """The caller's conversation and message named in the body; another user's is a 404."""
    conversation = message = None
    if data.get("conversation_id"):
        conversation = conversation_for_user(
            user=request.user, conversation_id=data["conversation_id"]
        )
    if data.get("message_id"):
        message = message_for_user(user=request.user, message_id=data["message_id"])
    return conversation, message


class MemoryListCreateApi(APIView):
    pagination_class = paginated("memories")

    @extend_schema(
        summary="List my agent memories",
        description="What the assistant remembers about me across conversations (seed 003): "
        "my active memories, by category then age. A page: `?limit=` and `?offset=`.",
        responses={200: MemorySerializer(many=True), **error_responses(401)},
    )
    def get(self, request: Request) -> Response:
        memories = selectors.active_memories_for_user(request.user)
        return paginate(request, memories, MemorySerializer, "memories", view=self)

    @extend_schema(
        summary="Add an agent memory",
        description="`{content, category, subject?, conversation_id?, message_id?}` (the "
        "last two: one of my conversations or messages, stored as the source; anyone else's is "
        "a 404). 400 for invalid fields, 409 with the existing memory when an active memory "
        "of mine has the same subject. Memories over MEMORY_TOKEN_LIMIT are evicted.",
        request=MemoryCreateInputSerializer,
        responses={
            201: MemorySerializer,
            **error_responses(400, 401, 404),
            409: OpenApiResponse(
                MemoryConflictSerializer,
                description="An active memory of mine has this subject: update it instead.",
            ),
        },
    )
    def post(self, request: Request) -> Response:
        data = MemoryCreateInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        conversation, message = _sources(request, data.validated_data)
        memory = services.memory_create(
            user=request.user,
            content=data.validated_data["content"],
            category=data.validated_data["category"],
            subject=data.validated_data.get("subject"),
            source_conversation=conversation,
            source_message=message,
        )
        memory = selectors.memory_for_user(user=request.user, memory_id=memory.pk)
        return Response(MemorySerializer(memory).data, status=status.HTTP_201_CREATED)


class MemoryDetailApi(APIView):
    @extend_schema(
        summary="Get one of my agent memories",
        description="With every version and whether it is active. A deleted or evicted "
        "memory of mine answers 200 too, with `is_active: false` and its `deleted_at` or "
        "`evicted_at` (its history stays readable); GET /api/memory lists only active ones. "
        "Anyone else's is a 404.",
        responses={200: MemoryDetailSerializer, **error_responses(401, 404)},
    )
    def get(self, request: Request, memory_id: str) -> Response:
        memory = selectors.memory_for_user(user=request.user, memory_id=memory_id)
        return Response(MemoryDetailSerializer(memory).data)

    @extend_schema(
        summary="Update one of my agent memories",
        description="`{content, conversation_id?, message_id?}` adds version n+1 and answers "
        "`old_content` and `new_content`. 404 for a deleted memory or anyone else's; 400 for "
        "invalid content.",
        request=MemoryUpdateInputSerializer,
        responses={200: MemoryUpdatedSerializer, **error_responses(400, 401, 404)},
    )
    def put(self, request: Request, memory_id: str) -> Response:
        memory = selectors.active_memory_for_user(user=request.user, memory_id=memory_id)
        data = MemoryUpdateInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        conversation, message = _sources(request, data.validated_data)
        update = services.memory_update(
            user=request.user,
            memory=memory,
            content=data.validated_data["content"],
            source_conversation=conversation,
            source_message=message,
        )
        memory = selectors.memory_for_user(user=request.user, memory_id=memory.pk)
        memory.old_content, memory.new_content = update.old_content, update.new_content
        return Response(MemoryUpdatedSerializer(memory).data)

    # A DELETE answers 204 unless told otherwise; this one answers the deleted memory.
    @extend_schema(
        summary="Delete one of my agent memories",
        description="A soft delete: the memory leaves lists, the prompt and the tools; its "
        "history stays. 200 with the memory (`is_active: false`). 404 for a memory already "
        "deleted or anyone else's.",
        responses={200: MemoryDetailSerializer, **error_responses(401, 404)},
    )
    def delete(self, request: Request, memory_id: str) -> Response:
        memory = selectors.active_memory_for_user(user=request.user, memory_id=memory_id)
        services.memory_delete(user=request.user, memory=memory)
        memory = selectors.memory_for_user(user=request.user, memory_id=memory.pk)
        return Response(MemoryDetailSerializer(memory).data)


class MemoryDocumentApi(APIView):
    @extend_schema(
        summary="My memory document",
        description="Seed 001's memory document, derived from my memories (`facts`, deleted "
        "ones included) and places, with its token count.",
        responses={200: MemoryDocumentSerializer, **error_responses(401)},
    )
    def get(self, request: Request) -> Response:
        return Response(MemoryDocumentSerializer(selectors.memory_document(request.user)).data)


class ToolListApi(APIView):
    @extend_schema(
        summary="List the memory tools",
        description="The OpenAI function definitions of `add_to_memory`, `update_memory` and "
        "`manage_user_memory`, which the agent turn offers the model.",
        responses={200: ToolListSerializer, **error_responses(401)},
    )
    def get(self, request: Request) -> Response:
        definitions = tools.tool_definitions()
        return Response({"tools": definitions, "total": len(definitions)})


def _tool_error(what: str) -> OpenApiResponse:
    # Either body, as the schema says (an outside audit found the shared one undeclared); any
    # of them, not one of them: the tool's answer carries the shared body's keys too.
    return OpenApiResponse(
        {"anyOf": [{"$ref": "#/components/schemas/ToolResult"},
                   {"$ref": "#/components/schemas/Error"}]},
        description=f"{what}: the tool's answer, with `ok: false`. A malformed or foreign "
        "conversation_id or message_id answers the shared error body instead.",
    )


class ToolExecuteApi(APIView):
    @extend_schema(
        summary="Call a memory tool",
        description="Runs the named tool as me with `arguments` (an object or OpenAI's JSON "
        "text) and answers its result; `conversation_id` and `message_id` (mine) are stored as "
        "the source. With `by_model`, the call is my platform's model's in the turn of "
        "`message_id` (my message): the write rule of an agent turn applies (`not_confirmed`, "
        "409, when my words do not ask for the change) and the change is the agent's. A failed "
        "call answers `ok: false` with 400, 404 or 409.",
        request=ToolCallInputSerializer,
        responses={
            200: ToolResultSerializer,
            400: _tool_error("Invalid arguments, or an unknown operation"),
            404: _tool_error("An unknown tool, or no such memory of mine"),
            409: _tool_error("A memory of mine already has this subject, or (by_model) my "
                             "words do not ask for the change: not_confirmed, nothing written"),
            **error_responses(401),
        },
    )
    def post(self, request: Request, name: str) -> Response:
        if name not in tools.SYSTEM_TOOL_NAMES:
            result = tools.tool_execute(user=request.user, name=name, arguments={})
            return Response(result, status=tools.ERROR_STATUS[result["code"]])
        data = ToolCallInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        conversation, message = _sources(request, data.validated_data)
        turn = None
        if data.validated_data["by_model"]:
            if message.role != Message.Role.USER:
                raise ValidationError({"message_id": [
                    "With by_model, the user's message of the turn (role user)."]})
            if conversation is not None and conversation.pk != message.conversation_id:
                raise ValidationError({"message_id": ["Not a message of that conversation."]})
            if Message.objects.filter(conversation_id=message.conversation_id,
                                      role=Message.Role.USER,
                                      sequence__gt=message.sequence).exists():
                # An older message's words would approve a change now (found by a hostile
                # relative: an old "forget …" could approve a delete much later).
                raise ValidationError({"message_id": [
                    "With by_model, the user's latest message: the turn under way."]})
            conversation, turn = message.conversation, turn_words(message)
        with services.memory_write_scope():
            result = tools.tool_execute(
                user=request.user,
                name=name,
                arguments=data.validated_data.get("arguments"),
                conversation=conversation,
                message=message,
                turn=turn,
            )
        return Response(
            result, status=status.HTTP_200_OK if result["ok"] else tools.ERROR_STATUS[result["code"]]
        )


class CommandApi(APIView):
    @extend_schema(
        summary="Run a /memory command",
        description="Seed 003's chat command without the agent: `/memory` lists my memories, "
        "`/memory delete <id>` deletes one. The `reply` is always there for a chat client to "
        "show; 400 with the usage text for anything else, 404 for an id that is not one of my "
        "active memories.",
        request=CommandInputSerializer,
        responses={
            200: CommandReplySerializer,
            400: OpenApiResponse(CommandRefusalSerializer, description="An unknown or "
                                 "incomplete command: `reply` is the usage text. A body "
                                 "without a `text` string answers the shared error body."),
            404: OpenApiResponse(CommandReplySerializer, description="No active memory of "
                                 "mine has that id."),
            **error_responses(401),
        },
    )
    def post(self, request: Request) -> Response:
        data = CommandInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        answer = memory_command.command_run(user=request.user, text=data.validated_data["text"])
        return Response(CommandReplySerializer(answer).data, status=answer.status)
