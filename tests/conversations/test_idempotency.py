"""The Idempotency-Key of POST messages, POST turn and the chat form: at most 128 printable
ASCII characters, else a 400 (an error in the chat) and nothing written; a key reused for
another message is a 409 on the messages API, as on /turn; the same message again is still
the earlier one (200). A key names one request: a key used by another kind of request (a
message or turn, a batch) is a 409 with nothing written, and no key a client sends is one the
project stores for another request (a turn's reply, a batch's messages); requests saved before
keys carried a separator still replay."""

import pytest
from django.test import Client

from conversations.models import Conversation, Message
from conversations.selectors import idempotency_stored_key
from conversations.services import IdempotencyConflict, message_append
from tests.factories import ConversationFactory

pytestmark = pytest.mark.django_db

ERROR = "At most 128 printable ASCII characters."
ENDPOINTS = {
    "messages": ({"role": "user", "content": "Hello"}, 201),
    "turn": ({"content": "Hello"}, 201),
}


@pytest.fixture
def conversation(family):
    return ConversationFactory(user=family.owner, legacy=family.legacy)


@pytest.mark.parametrize("endpoint", list(ENDPOINTS))
@pytest.mark.parametrize("key", ["k" * 129, "k" * 300, "clé-1", "tab\there", "new\x7fline"])
def test_a_malformed_key_is_a_400_and_writes_nothing(owner_client, conversation, endpoint, key):
    payload, _ = ENDPOINTS[endpoint]

    response = owner_client.post(f"/api/ai/conversations/{conversation.pk}/{endpoint}", payload,
                                 format="json", HTTP_IDEMPOTENCY_KEY=key)

    assert response.status_code == 400
    assert response.json() == {
        "detail": f"Idempotency-Key: {ERROR}", "code": "invalid",
        "errors": {"Idempotency-Key": [ERROR]},
    }
    assert not Message.objects.filter(conversation=conversation).exists()
    conversation.refresh_from_db()
    assert conversation.message_count == 0


@pytest.mark.parametrize("endpoint", list(ENDPOINTS))
def test_a_key_of_128_printable_characters_is_accepted_and_deduplicates(owner_client, conversation,
                                                                        endpoint):
    payload, created = ENDPOINTS[endpoint]
    key = ("Key ~!" + "x" * 128)[:128]
    url = f"/api/ai/conversations/{conversation.pk}/{endpoint}"

    first = owner_client.post(url, payload, format="json", HTTP_IDEMPOTENCY_KEY=key)
    again = owner_client.post(url, payload, format="json", HTTP_IDEMPOTENCY_KEY=key)

    assert (first.status_code, again.status_code) == (created, 200)
    assert Message.objects.filter(conversation=conversation, role="user").get().idempotency_key \
        == idempotency_stored_key(key)


def test_a_malformed_key_from_the_chat_form_is_an_error_and_writes_nothing(family, conversation):
    browser = Client()
    browser.force_login(family.owner)

    response = browser.post(f"/chat/{conversation.pk}/send",
                            {"content": "Hello", "idempotency_key": "k" * 129})

    assert response.status_code == 302
    page = browser.get(response["Location"]).content.decode()
    assert ERROR in page
    assert not Message.objects.filter(conversation=conversation).exists()


CONFLICT = {"detail": "This Idempotency-Key was already used for another message.",
            "code": "conflict"}


def _url(conversation) -> str:
    return f"/api/ai/conversations/{conversation.pk}/messages"


def _state(conversation) -> tuple:
    conversation = Conversation.objects.get(pk=conversation.pk)
    return (list(Message.objects.values_list("sequence", "role", "content")),
            conversation.message_count, conversation.last_message_at, conversation.turn_count)


@pytest.mark.parametrize("second", [
    {"role": "user", "content": "Goodbye"},
    {"role": "assistant", "content": "Hello"},
])
def test_a_key_reused_for_another_message_is_a_409_and_writes_nothing(owner_client, conversation,
                                                                      second):
    headers = {"HTTP_IDEMPOTENCY_KEY": "msg-1"}
    first = owner_client.post(_url(conversation), {"role": "user", "content": "Hello"},
                              format="json", **headers)
    before = _state(conversation)
    again = owner_client.post(_url(conversation), second, format="json", **headers)

    assert first.status_code == 201
    assert again.status_code == 409
    assert again.json() == CONFLICT
    assert _state(conversation) == before


def test_the_same_message_with_the_same_key_is_still_the_earlier_one(owner_client, conversation):
    headers = {"HTTP_IDEMPOTENCY_KEY": "msg-1"}
    first = owner_client.post(_url(conversation), {"role": "user", "content": "Hello"},
                              format="json", **headers)
    again = owner_client.post(_url(conversation), {"role": "user", "content": "Hello"},
                              format="json", **headers)
    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json() == first.json()


def test_the_service_raises_and_writes_nothing(conversation):
    message_append(conversation=conversation, role="user", content="Hello",
                   idempotency_key="msg-1")
    before = _state(conversation)
    with pytest.raises(IdempotencyConflict,
                       match="This Idempotency-Key was already used for another message."):
        message_append(conversation=conversation, role="user", content="Hello!",
                       idempotency_key="msg-1")
    assert _state(conversation) == before


BATCH_CONFLICT = {"detail": "This Idempotency-Key was already used for another batch.",
                  "code": "conflict"}
TURN = {"content": "Hello"}
BATCH = [{"role": "user", "content": "Hello"}, {"role": "assistant", "content": "Hi there."}]
# Each kind of request: its path, a body and the status of its first answer.
KINDS = {
    "message": ("messages", {"role": "user", "content": "Hello"}, 201),
    "turn": ("turn", TURN, 201),
    "batch": ("messages/batch", {"messages": BATCH}, 201),
}


def _post(client, conversation, kind, key, body=None):
    path, payload, _ = KINDS[kind]
    return client.post(f"/api/ai/conversations/{conversation.pk}/{path}",
                       payload if body is None else body, format="json",
                       HTTP_IDEMPOTENCY_KEY=key)


def test_a_message_keyed_like_a_turns_reply_leaves_the_turn_alone(owner_client, conversation):
    """A key a client sends is never one the turn stores for its reply."""
    message = _post(owner_client, conversation, "message", "t-1:reply",
                    {"role": "assistant", "content": "Not the reply."})

    turn = _post(owner_client, conversation, "turn", "t-1")
    again = _post(owner_client, conversation, "turn", "t-1")

    assert (message.status_code, turn.status_code, again.status_code) == (201, 201, 200)
    assert again.json()["assistant_message"] == turn.json()["assistant_message"]
    assert list(Message.objects.values_list("sequence", "role", "content")) == [
        (0, "assistant", "Not the reply."), (1, "user", "Hello"),
        (2, "assistant", turn.json()["reply"]),
    ]


@pytest.mark.parametrize(("first", "second"), [
    ("message", "batch"), ("turn", "batch"), ("batch", "message"), ("batch", "turn"),
])
def test_a_key_used_by_another_kind_of_request_is_a_409_and_writes_nothing(
        owner_client, conversation, first, second):
    """A batch under a message's key, or a message or a turn under a batch's: nothing is
    written, not even a turn's user message."""
    assert _post(owner_client, conversation, first, "k-1").status_code == 201
    before = _state(conversation)

    response = _post(owner_client, conversation, second, "k-1")

    assert response.status_code == 409
    assert response.json() == (BATCH_CONFLICT if second == "batch" else CONFLICT)
    assert _state(conversation) == before


@pytest.mark.parametrize("content", ["Hello", "Something else"])
def test_a_message_keyed_like_a_batchs_message_is_a_new_message(owner_client, conversation,
                                                                content):
    """The key `b-1:0` is not message 0 of batch `b-1`: it is saved, neither replayed nor a
    conflict."""
    _post(owner_client, conversation, "batch", "b-1")

    response = _post(owner_client, conversation, "message", "b-1:0",
                     {"role": "user", "content": content})

    assert response.status_code == 201
    assert response.json()["sequence"] == 2
    assert Message.objects.filter(conversation=conversation).count() == 3


def test_the_memory_command_is_a_409_under_a_batchs_key(owner_client, conversation):
    _post(owner_client, conversation, "batch", "b-1")
    before = _state(conversation)

    response = _post(owner_client, conversation, "turn", "b-1", {"content": "/memory"})

    assert (response.status_code, response.json()) == (409, CONFLICT)
    assert _state(conversation) == before


def _store_as_before(conversation, keys: dict[int, str]) -> None:
    """Give messages the keys requests stored before keys carried a separator."""
    for sequence, key in keys.items():
        Message.objects.filter(conversation=conversation, sequence=sequence).update(
            idempotency_key=key)


@pytest.mark.parametrize(("kind", "keys"), [
    ("message", {0: "k-1"}),
    ("turn", {0: "k-1", 1: "k-1:reply"}),
    ("batch", {0: "k-1:0", 1: "k-1:1"}),
])
def test_a_request_saved_before_keys_had_a_separator_still_replays(owner_client, conversation,
                                                                  kind, keys):
    first = _post(owner_client, conversation, kind, "k-1")
    _store_as_before(conversation, keys)
    before = _state(conversation)

    again = _post(owner_client, conversation, kind, "k-1")

    assert again.status_code == 200
    assert again.json() == ({**first.json(), "replayed": True} if kind == "turn"
                            else first.json())
    assert _state(conversation) == before


@pytest.mark.parametrize(("kind", "body"), [
    ("message", {"role": "user", "content": "Goodbye"}),
    ("turn", {"content": "Goodbye"}),
    ("batch", {"messages": BATCH[:1]}),
])
def test_another_request_under_a_key_saved_before_is_still_a_409(owner_client, conversation,
                                                                 kind, body):
    _post(owner_client, conversation, kind, "k-1")
    _store_as_before(conversation, {0: "k-1:0", 1: "k-1:1"} if kind == "batch"
                     else {0: "k-1", 1: "k-1:reply"})
    before = _state(conversation)

    response = _post(owner_client, conversation, kind, "k-1", body)

    assert response.status_code == 409
    assert _state(conversation) == before


def test_the_export_shows_each_message_s_key_as_the_client_sent_it(owner_client, conversation):
    """Stored as `<key>␟<part>`; the user's export (GET /api/me/data) shows `<key>`."""
    url = f"/api/ai/conversations/{conversation.pk}"
    owner_client.post(f"{url}/messages", {"role": "user", "content": "Hello"}, format="json",
                      HTTP_IDEMPOTENCY_KEY="m-1")
    owner_client.post(f"{url}/turn", {"content": "And Rose?"}, format="json",
                      HTTP_IDEMPOTENCY_KEY="t-1")
    owner_client.post(f"{url}/messages/batch", {"messages": [
        {"role": "user", "content": "One"}, {"role": "assistant", "content": "Two"}]},
        format="json", HTTP_IDEMPOTENCY_KEY="b-1")

    [exported] = owner_client.get("/api/me/data").json()["conversations"]

    keys = [m["idempotency_key"] for m in exported["messages"]]
    assert keys == ["m-1", "t-1", "t-1", "b-1", "b-1"]


# --- Starting a conversation (POST /api/ai/conversations) -------------------------------------


def _start(client, family, key, **fields):
    headers = {"HTTP_IDEMPOTENCY_KEY": key} if key is not None else {}
    return client.post("/api/ai/conversations",
                       {"legacy_id": str(family.legacy.pk), **fields}, format="json", **headers)


def test_a_retried_start_with_its_key_is_the_first_conversation(owner_client, family):
    """A platform whose request timed out retries it: before, each retry started another
    conversation."""
    first = _start(owner_client, family, "start-1", title="Summers")
    assert first.status_code == 201
    again = _start(owner_client, family, "start-1", title="Summers")
    assert again.status_code == 200
    assert again.json() == first.json()
    assert Conversation.objects.filter(user=family.owner).count() == 1
    # Without a key, or with another, a new one each time.
    assert _start(owner_client, family, None, title="Summers").status_code == 201
    assert _start(owner_client, family, "start-2", title="Summers").status_code == 201
    assert Conversation.objects.filter(user=family.owner).count() == 3


def test_the_key_with_another_title_or_legacy_is_a_409_and_starts_nothing(
        owner_client, member_client, family):
    assert _start(owner_client, family, "start-1", title="Summers").status_code == 201
    conflict = _start(owner_client, family, "start-1", title="Winters")
    assert conflict.status_code == 409
    assert conflict.json()["code"] == "conflict"
    assert "another legacy, title or persona" in conflict.json()["detail"]
    assert Conversation.objects.filter(user=family.owner).count() == 1
    # A key is the user's own: another member's same key starts their own conversation.
    assert _start(member_client, family, "start-1", title="Summers").status_code == 201


def test_a_malformed_start_key_is_a_400_and_starts_nothing(owner_client, family):
    response = _start(owner_client, family, "x" * 129, title="Summers")
    assert response.status_code == 400
    assert response.json()["errors"] == {"Idempotency-Key": [ERROR]}
    assert not Conversation.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_starts_racing_with_one_key_make_one_conversation(family):
    import threading

    from django.db import connection

    from conversations.services import conversation_start

    barrier, results = threading.Barrier(6), []

    def start() -> None:
        try:
            barrier.wait(timeout=10)
            results.append(conversation_start(user=family.owner, legacy=family.legacy,
                                              title="Summers", idempotency_key="race-1"))
        finally:
            connection.close()

    threads = [threading.Thread(target=start) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=20)
    assert len(results) == 6
    assert len({conversation.pk for conversation, _ in results}) == 1
    assert sum(created for _, created in results) == 1
    assert Conversation.objects.filter(user=family.owner).count() == 1
