"""factory-boy factories of the project's models."""

import factory
from django.contrib.auth import get_user_model

from conversations.models import Conversation, Message
from facts.models import Legacy, LegacyFact, LegacyMembership


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


class ConversationFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Conversation

    legacy = factory.SubFactory(LegacyFactory)
    user = factory.LazyAttribute(lambda o: o.legacy.created_by)
    title = factory.Sequence(lambda n: f"Conversation {n}")


class MessageFactory(factory.django.DjangoModelFactory):
    """Prefer conversations.services.message_append in tests of behaviour; this is for fixtures."""

    class Meta:
        model = Message

    conversation = factory.SubFactory(ConversationFactory)
    sequence = factory.Sequence(lambda n: n)
    role = "user"
    content = "I remember the summers at the lake."


class LegacyFactFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = LegacyFact

    legacy = factory.SubFactory(LegacyFactory)
    user = factory.LazyAttribute(lambda o: o.legacy.created_by)
    category = "hobby"
    content = factory.Sequence(lambda n: f"She loved gardening, fact {n}.")
    visibility = "private"
