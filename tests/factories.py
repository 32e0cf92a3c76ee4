"""factory-boy factories of every model of the project's apps, and a bulk import of messages.

These make plain setup rows; a test of how a row comes to be goes through the app's services.
"""

from collections.abc import Iterable

import factory
from django.contrib.auth import get_user_model
from django.db.models import F
from django.db.models.functions import Greatest
from django.utils import timezone

from agent_memory.models import AgentMemory, AgentMemoryVersion, Place, PlaceMention
from conversations.embedding import model_key
from conversations.models import (
    Conversation,
    ConversationChunk,
    ConversationMemory,
    Message,
)
from facts.models import Legacy, LegacyFact, LegacyInvitation, LegacyMembership
from memory_site.core.ai import get_embedder


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"user{n}")

    @factory.post_generation
    def password(self, create: bool, extracted: str | None, **kwargs: object) -> None:
        self.set_password(extracted or "pw-for-tests")
        if create:
            self.save(update_fields=["password"])


class LegacyFactory(factory.django.DjangoModelFactory):
    """A legacy whose creator is its owner."""

    class Meta:
        model = Legacy
        skip_postgeneration_save = True

    name = factory.Sequence(lambda n: f"Legacy Person {n}")
    created_by = factory.SubFactory(UserFactory)

    @factory.post_generation
    def owner_membership(self, create: bool, extracted: object, **kwargs: object) -> None:
        if create:
            LegacyMembership.objects.get_or_create(
                legacy=self, user=self.created_by, defaults={"role": "owner"}
            )


class MembershipFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = LegacyMembership

    legacy = factory.SubFactory(LegacyFactory)
    user = factory.SubFactory(UserFactory)
    role = "member"


class InvitationFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = LegacyInvitation

    legacy = factory.SubFactory(LegacyFactory)
    invited_user = factory.SubFactory(UserFactory)
    username = factory.LazyAttribute(lambda invitation: invitation.invited_user.username)
    invited_by = factory.LazyAttribute(lambda invitation: invitation.legacy.created_by)
    role = "member"


class ConversationFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Conversation

    legacy = factory.SubFactory(LegacyFactory)
    user = factory.LazyAttribute(lambda o: o.legacy.created_by)
    title = factory.Sequence(lambda n: f"Conversation {n}")


class MessageFactory(factory.django.DjangoModelFactory):
    """A message at the end of its conversation: without an explicit `sequence` it takes the
    next one, so sequences stay gap-free, and the conversation's message_count follows.
    Prefer conversations.services.message_append in tests of behaviour; this is for fixtures."""

    class Meta:
        model = Message

    conversation = factory.SubFactory(ConversationFactory)
    sequence = factory.LazyAttribute(
        lambda o: Message.objects.filter(conversation=o.conversation).count()
    )
    role = "user"
    content = "I remember the summers at the lake."

    @classmethod
    def _create(cls, model_class, *args, **kwargs):
        message = super()._create(model_class, *args, **kwargs)
        Conversation.objects.filter(pk=message.conversation_id).update(
            message_count=Greatest(F("message_count"), message.sequence + 1)
        )
        message.conversation.refresh_from_db(fields=["message_count"])
        return message


def import_messages(conversation: Conversation, said: Iterable[tuple[str, str]],
                    **conversation_fields: object) -> list[Message]:
    """(role, content) pairs written at once after the conversation's last message, as an import
    would: one bulk insert, no per-message trigger; message_count (and any other field given)
    updated, the instance refreshed."""
    start = conversation.message_count
    messages = Message.objects.bulk_create(
        Message(conversation=conversation, sequence=start + i, role=role, content=content)
        for i, (role, content) in enumerate(said)
    )
    Conversation.objects.filter(pk=conversation.pk).update(
        message_count=start + len(messages), **conversation_fields
    )
    conversation.refresh_from_db()
    return messages


class LegacyFactFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = LegacyFact

    legacy = factory.SubFactory(LegacyFactory)
    user = factory.LazyAttribute(lambda o: o.legacy.created_by)
    category = "hobby"
    content = factory.Sequence(lambda n: f"She loved gardening, fact {n}.")
    visibility = "private"


class ConversationMemoryFactory(factory.django.DjangoModelFactory):
    """A completed rolling summary of the conversation's first messages; a summary of another
    status has no text unless given one, as the job leaves it."""

    class Meta:
        model = ConversationMemory

    conversation = factory.SubFactory(ConversationFactory)
    start_sequence = 0
    end_sequence = 5
    status = ConversationMemory.Status.COMPLETED
    memory_text = factory.LazyAttributeSequence(
        lambda o, n: f"They talked about the lake, summary {n}."
        if o.status == ConversationMemory.Status.COMPLETED else ""
    )


class ConversationChunkFactory(factory.django.DjangoModelFactory):
    """An archived range of a conversation, embedded like the archive job embeds it."""

    class Meta:
        model = ConversationChunk

    conversation = factory.SubFactory(ConversationFactory)
    user = factory.LazyAttribute(lambda o: o.conversation.user)
    legacy = factory.LazyAttribute(lambda o: o.conversation.legacy)
    content = factory.Sequence(lambda n: f"They talked about Rose's garden, part {n}.")
    embedding = factory.LazyAttribute(lambda o: get_embedder().embed([o.content])[0])
    embedding_model = factory.LazyFunction(model_key)
    message_range_start = 0
    message_range_end = 20


class AgentMemoryFactory(factory.django.DjangoModelFactory):
    """A memory with no version yet; AgentMemoryVersionFactory(memory=...) gives it content.
    Prefer agent_memory.services.memory_create in tests of behaviour."""

    class Meta:
        model = AgentMemory

    user = factory.SubFactory(UserFactory)
    category = AgentMemory.Category.choices[0][0]
    subject = factory.Sequence(lambda n: f"Subject {n}")


class AgentMemoryVersionFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = AgentMemoryVersion

    memory = factory.SubFactory(AgentMemoryFactory)
    version_number = factory.LazyAttribute(lambda o: o.memory.versions.count() + 1)
    content = factory.Sequence(lambda n: f"Grandma baked rye bread, version {n}.")


class PlaceFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Place

    user = factory.SubFactory(UserFactory)
    place_id = factory.Sequence(lambda n: f"place-{n}")
    name = factory.Sequence(lambda n: f"The lake cabin {n}")


class PlaceMentionFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = PlaceMention

    place = factory.SubFactory(PlaceFactory)
    # A conversation of the place's user, in a legacy they created.
    conversation = factory.SubFactory(
        ConversationFactory, legacy__created_by=factory.SelfAttribute("...place.user")
    )
    mentioned_at = factory.LazyFunction(timezone.now)
