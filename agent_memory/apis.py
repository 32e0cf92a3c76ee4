"""REST endpoints of agent memories, the memory document, the memory tools and /memory."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from agent_memory import commands, selectors, services, tools
from agent_memory.serializers import (
    CommandInputSerializer,
    CommandReplySerializer,
    MemoryConflictSerializer,
    MemoryCreateInputSerializer,
    MemoryDetailSerializer,
    MemorySerializer,
    MemoryUpdatedSerializer,
    MemoryUpdateInputSerializer,
    ToolCallInputSerializer,
    ToolListSerializer,
    ToolResultSerializer,
)
from conversations.models import Conversation, Message
from conversations.selectors import conversation_for_user
from memory_site.api import paginate, paginated
from memory_site.drf import service_errors


def _sources(request: Request, data: dict) -> tuple[Conversation | None, Message | None]:
    """The caller's conversation and message named in the body; another user's is a 404."""
    conversation = message = None
    if data.get("conversation_id"):
        conversation = conversation_for_user(
            user=request.user, conversation_id=data["conversation_id"]
        )
    if data.get("message_id"):
        message = selectors.message_for_user(user=request.user, message_id=data["message_id"])
    return conversation, message


class MemoryListCreateApi(APIView):
    pagination_class = paginated("memories")

    @extend_schema(responses=MemorySerializer(many=True))
    def get(self, request: Request) -> Response:
        memories = selectors.active_memories_for_user(request.user)
        return paginate(request, memories, MemorySerializer, "memories", view=self)

    @extend_schema(
        request=MemoryCreateInputSerializer,
        responses={201: MemorySerializer, 409: MemoryConflictSerializer},
    )
    def post(self, request: Request) -> Response:
        data = MemoryCreateInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        conversation, message = _sources(request, data.validated_data)
        try:
            with service_errors():
                memory = services.memory_create(
                    user=request.user,
                    content=data.validated_data["content"],
                    category=data.validated_data["category"],
                    subject=data.validated_data.get("subject"),
                    source_conversation=conversation,
                    source_message=message,
                )
        except services.SubjectConflict as conflict:
            existing = selectors.memory_for_user(user=request.user, memory_id=conflict.memory.pk)
            return Response(
                {
                    "detail": f"You already have a memory about {existing.subject!r} "
                    f"({existing.pk}).",
                    "code": "conflict",
                    "suggestion": f"Update it instead: PUT /api/memory/{existing.pk} or the "
                    f"update_memory tool with memory_id={existing.pk}.",
                    "existing_memory": MemorySerializer(existing).data,
                },
                status=status.HTTP_409_CONFLICT,
            )
        memory = selectors.memory_for_user(user=request.user, memory_id=memory.pk)
        return Response(MemorySerializer(memory).data, status=status.HTTP_201_CREATED)


class MemoryDetailApi(APIView):
    @extend_schema(responses=MemoryDetailSerializer)
    def get(self, request: Request, memory_id: str) -> Response:
        memory = selectors.memory_for_user(user=request.user, memory_id=memory_id)
        return Response(MemoryDetailSerializer(memory).data)

    @extend_schema(request=MemoryUpdateInputSerializer, responses=MemoryUpdatedSerializer)
    def put(self, request: Request, memory_id: str) -> Response:
        memory = selectors.active_memory_for_user(user=request.user, memory_id=memory_id)
        data = MemoryUpdateInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        conversation, message = _sources(request, data.validated_data)
        with service_errors():
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
    @extend_schema(responses={200: MemoryDetailSerializer})
    def delete(self, request: Request, memory_id: str) -> Response:
        memory = selectors.active_memory_for_user(user=request.user, memory_id=memory_id)
        services.memory_delete(user=request.user, memory=memory)
        memory = selectors.memory_for_user(user=request.user, memory_id=memory.pk)
        return Response(MemoryDetailSerializer(memory).data)


class MemoryDocumentApi(APIView):
    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request: Request) -> Response:
        return Response(selectors.memory_document(request.user))


class ToolListApi(APIView):
    @extend_schema(responses=ToolListSerializer)
    def get(self, request: Request) -> Response:
        definitions = tools.tool_definitions()
        return Response({"tools": definitions, "total": len(definitions)})


class ToolExecuteApi(APIView):
    @extend_schema(
        request=ToolCallInputSerializer,
        responses={200: ToolResultSerializer, 400: ToolResultSerializer,
                   404: ToolResultSerializer, 409: ToolResultSerializer},
    )
    def post(self, request: Request, name: str) -> Response:
        if name not in tools.SYSTEM_TOOL_NAMES:
            result = tools.tool_execute(user=request.user, name=name, arguments={})
            return Response(result, status=tools.ERROR_STATUS[result["code"]])
        data = ToolCallInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        conversation, message = _sources(request, data.validated_data)
        with services.memory_write_scope():
            result = tools.tool_execute(
                user=request.user,
                name=name,
                arguments=data.validated_data.get("arguments"),
                conversation=conversation,
                message=message,
            )
        return Response(
            result, status=status.HTTP_200_OK if result["ok"] else tools.ERROR_STATUS[result["code"]]
        )


class CommandApi(APIView):
    @extend_schema(
        request=CommandInputSerializer,
        responses={200: CommandReplySerializer, 400: CommandReplySerializer,
                   404: CommandReplySerializer},
    )
    def post(self, request: Request) -> Response:
        data = CommandInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        answer = commands.command_run(user=request.user, text=data.validated_data["text"])
        body = {"reply": answer.reply}
        if answer.status >= 400:
            body |= {"detail": answer.reply, "code": answer.code}
        return Response(body, status=answer.status)
