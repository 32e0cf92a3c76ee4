"""POST /api/ai/conversations/{id}/messages/batch: up to IMPORT_MAX_BATCH messages in one
transaction, all or nothing with the bad messages named by index, idempotent by key, original
created_at under its rules, gap-free sequences, and one summarisation job after commit."""

from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from conversations.models import ConversationChunk, Message
from conversations.services import message_append
from tests.factories import ConversationFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def conversation(family):
    return ConversationFactory(user=family.owner, legacy=family.legacy)


def url(conversation):
    return f"/api/ai/conversations/{conversation.pk}/messages/batch"


def message_body(message):
    return {
        "id": str(message.id), "conversation_id": str(message.conversation_id),
        "sequence": message.sequence, "role": message.role, "content": message.content,
        "token_count": message.token_count,
        "created_at": message.created_at.isoformat().replace("+00:00", "Z"),
    }


def written(conversation):
    return list(Message.objects.filter(conversation=conversation).order_by("sequence"))


def assert_nothing_written(conversation):
    assert not Message.objects.filter(conversation=conversation).exists()
    conversation.refresh_from_db()
    assert conversation.message_count == 0


HISTORY = [
    {"role": "user", "content": "Mom grew roses in Dayton.", "created_at": "2019-05-01T10:00:00Z"},
    {"role": "assistant", "content": "Tell me about them.", "created_at": "2019-05-01T10:00:05Z"},
    {"role": "user", "content": "Red ones, by the porch.", "created_at": "2019-05-01T10:00:05Z"},
]


def test_a_batch_is_written_in_order_with_its_original_times(owner_client, conversation):
    response = owner_client.post(url(conversation), {"messages": HISTORY}, format="json")

    assert response.status_code == 201
    messages = written(conversation)
    assert [(m.sequence, m.role, m.content) for m in messages] == [
        (0, "user", "Mom grew roses in Dayton."), (1, "assistant", "Tell me about them."),
        (2, "user", "Red ones, by the porch."),
    ]
    assert [m.created_at for m in messages] == [
        datetime(2019, 5, 1, 10, 0, 0, tzinfo=UTC), datetime(2019, 5, 1, 10, 0, 5, tzinfo=UTC),
        datetime(2019, 5, 1, 10, 0, 5, tzinfo=UTC),
    ]
    assert all(m.token_count > 0 for m in messages)
    assert response.json() == {"messages": [message_body(m) for m in messages], "total": 3}
    assert response.json()["messages"][0]["created_at"] == "2019-05-01T10:00:00Z"
    conversation.refresh_from_db()
    assert conversation.message_count == 3


def test_sequences_continue_after_the_conversation_and_times_default_to_now(owner_client,
                                                                          conversation):
    message_append(conversation=conversation, role="user", content="Hello")
    message_append(conversation=conversation, role="assistant", content="Hi")
    before = timezone.now()

    response = owner_client.post(url(conversation), {"messages": [
        {"role": "user", "content": "Third"}, {"role": "tool", "content": "Fourth"},
    ]}, format="json")

    assert response.status_code == 201
    assert [m["sequence"] for m in response.json()["messages"]] == [2, 3]
    assert [m.sequence for m in written(conversation)] == [0, 1, 2, 3]
    imported = written(conversation)[2:]
    assert imported[0].created_at == imported[1].created_at >= before
    conversation.refresh_from_db()
    assert conversation.message_count == 4 and conversation.last_message_at >= before


@pytest.mark.parametrize(("messages", "errors"), [
    (  # the serializer's checks
        [HISTORY[0], {"role": "robot", "content": "Beep"}, {"content": "No role"}],
        {"1": {"role": ['"robot" is not a valid choice.']}, "2": {"role": ["This field is required."]}},
    ),
    (  # the service's checks
        [{"role": "user", "content": "Hello"}, {"role": "user", "content": "   "},
         {"role": "assistant", "content": "Hi"}, {"role": "user", "content": ""}],
        {"1": {"content": ["A message needs some content."]},
         "3": {"content": ["A message needs some content."]}},
    ),
    (  # both at once (found by an integrator: the empty content came back only once the
       # role was fixed)
        [{"role": "user", "content": "ok"}, {"role": "robot", "content": "x"},
         {"role": "user", "content": ""}, {"role": "robot", "content": " "}],
        {"1": {"role": ['"robot" is not a valid choice.']},
         "2": {"content": ["A message needs some content."]},
         "3": {"role": ['"robot" is not a valid choice.'],
               "content": ["A message needs some content."]}},
    ),
])
def test_a_bad_message_is_named_by_its_index_and_nothing_is_written(owner_client, conversation,
                                                                   messages, errors):
    response = owner_client.post(url(conversation), {"messages": messages}, format="json")

    assert response.status_code == 400
    first_index = min(errors, key=int)
    field, texts = next(iter(errors[first_index].items()))
    assert response.json() == {
        "detail": f"messages: {first_index}: {field}: {texts[0]}", "code": "invalid",
        "errors": {"messages": errors},
    }
    assert_nothing_written(conversation)


@pytest.mark.parametrize(("body", "error"), [
    ({"messages": []}, "This list may not be empty."),
    ({}, "This field is required."),
    ({"messages": {"role": "user"}}, 'Expected a list of items but got type "dict".'),
])
def test_a_batch_without_messages_is_a_400(owner_client, conversation, body, error):
    response = owner_client.post(url(conversation), body, format="json")

    assert response.status_code == 400
    assert response.json() == {"detail": f"messages: {error}", "code": "invalid",
                               "errors": {"messages": [error]}}
    assert_nothing_written(conversation)


def test_a_batch_over_the_limit_is_a_400(owner_client, conversation, settings):
    settings.IMPORT_MAX_BATCH = 3
    messages = [{"role": "user", "content": f"Line {i}"} for i in range(4)]

    response = owner_client.post(url(conversation), {"messages": messages}, format="json")
    at_the_limit = owner_client.post(url(conversation), {"messages": messages[:3]}, format="json")

    assert response.status_code == 400
    assert response.json() == {
        "detail": "messages: At most 3 messages in a batch.", "code": "invalid",
        "errors": {"messages": ["At most 3 messages in a batch."]},
    }
    assert at_the_limit.status_code == 201
    assert len(written(conversation)) == 3


def test_the_same_batch_again_with_its_key_writes_nothing_and_answers_the_same(owner_client,
                                                                               conversation):
    first = owner_client.post(url(conversation), {"messages": HISTORY}, format="json",
                              HTTP_IDEMPOTENCY_KEY="batch-1")
    again = owner_client.post(url(conversation), {"messages": HISTORY}, format="json",
                              HTTP_IDEMPOTENCY_KEY="batch-1")

    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json() == first.json()
    assert [m.idempotency_key for m in written(conversation)] == [
        "batch-1␟0", "batch-1␟1", "batch-1␟2"]


@pytest.mark.parametrize("other", [
    [*HISTORY[:2], {**HISTORY[2], "content": "Changed"}],
    HISTORY[:2],
    [*HISTORY, {"role": "user", "content": "One more"}],
    [{**HISTORY[0], "created_at": "2019-05-01T09:00:00Z"}, *HISTORY[1:]],
])
def test_another_batch_with_a_used_key_is_a_409_and_writes_nothing(owner_client, conversation,
                                                                   other):
    owner_client.post(url(conversation), {"messages": HISTORY}, format="json",
                      HTTP_IDEMPOTENCY_KEY="batch-1")

    response = owner_client.post(url(conversation), {"messages": other}, format="json",
                                 HTTP_IDEMPOTENCY_KEY="batch-1")

    assert response.status_code == 409
    assert response.json() == {"detail": "This Idempotency-Key was already used for another batch.",
                               "code": "conflict"}
    assert len(written(conversation)) == 3


def test_a_malformed_key_is_a_400(owner_client, conversation):
    response = owner_client.post(url(conversation), {"messages": HISTORY}, format="json",
                                 HTTP_IDEMPOTENCY_KEY="k" * 129)

    assert response.status_code == 400
    assert response.json()["errors"] == {"Idempotency-Key": ["At most 128 printable ASCII characters."]}
    assert_nothing_written(conversation)


@pytest.mark.parametrize("who", ["member", "stranger", "other_member"])
def test_another_users_conversation_is_a_404_and_nothing_is_written(family, conversation, who):
    from tests.conftest import api_client_for

    response = api_client_for(getattr(family, who)).post(
        url(conversation), {"messages": HISTORY}, format="json")

    assert response.status_code == 404
    assert response.json() == {"detail": "Not found.", "code": "not_found"}
    assert_nothing_written(conversation)


def test_without_credentials_it_is_a_401(anon_client, conversation):
    response = anon_client.post(url(conversation), {"messages": HISTORY}, format="json")

    assert response.status_code == 401
    assert_nothing_written(conversation)


@pytest.mark.parametrize(("times", "index", "error"), [
    (["2019-05-01T10:00:00Z", "FUTURE"], "1", "Must not be in the future."),
    (["2019-05-01T10:00:00Z", "2019-05-01T09:59:59Z"], "1",
     "Must not be before the message before it."),
    # A message without created_at is stamped now: one after it cannot be older.
    (["2019-05-01T10:00:00Z", None, "2019-05-01T10:00:01Z"], "2",
     "Must not be before the message before it."),
])
def test_created_at_rules(owner_client, conversation, times, index, error):
    future = (timezone.now() + timedelta(minutes=5)).isoformat()
    messages = [
        {"role": "user", "content": f"Line {i}"}
        | ({"created_at": future if at == "FUTURE" else at} if at else {})
        for i, at in enumerate(times)
    ]

    response = owner_client.post(url(conversation), {"messages": messages}, format="json")

    # Well formed, but the times conflict with the clock or the timeline: a 409.
    assert response.status_code == 409
    assert response.json()["code"] == "timeline_conflict"
    assert response.json()["errors"] == {"messages": {index: {"created_at": [error]}}}
    assert_nothing_written(conversation)


def test_created_at_may_not_be_before_the_conversations_last_message(owner_client, conversation):
    message_append(conversation=conversation, role="user", content="Said just now")

    response = owner_client.post(url(conversation), {"messages": HISTORY}, format="json")

    assert response.status_code == 409
    assert response.json()["code"] == "timeline_conflict"
    error = {"created_at": ["Must not be before the conversation's last message."]}
    assert response.json()["errors"] == {"messages": {"0": error, "1": error, "2": error}}
    assert len(written(conversation)) == 1


def test_created_at_with_an_offset_is_stored_in_utc(owner_client, conversation):
    response = owner_client.post(url(conversation), {"messages": [
        {"role": "user", "content": "Hello", "created_at": "2019-05-01T12:00:00+02:00"},
    ]}, format="json")

    assert response.status_code == 201
    assert written(conversation)[0].created_at == datetime(2019, 5, 1, 10, 0, tzinfo=UTC)


def test_the_summarisation_job_is_enqueued_once_after_commit(owner_client, conversation,
                                                             django_capture_on_commit_callbacks):
    messages = [
        {"role": "user", "content": f"Mom planted {i} tulips in Dayton in 1950."} if i % 2 == 0
        else {"role": "assistant", "content": "Lovely."}
        for i in range(40)
    ]

    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        response = owner_client.post(url(conversation), {"messages": messages}, format="json",
                                     HTTP_IDEMPOTENCY_KEY="history")

    assert response.status_code == 201
    # One summarisation job; the job's own writes publish webhook events after it.
    assert [c.__qualname__.split(".")[0] for c in callbacks].count("messages_import") == 1
    # The job ran (django-q2 in sync mode in the tests): the archive caught up on the oldest batch.
    assert ConversationChunk.objects.filter(conversation=conversation).exists()

    with django_capture_on_commit_callbacks(execute=True) as again:
        replay = owner_client.post(url(conversation), {"messages": messages}, format="json",
                                   HTTP_IDEMPOTENCY_KEY="history")

    assert replay.status_code == 200
    assert again == []
