"""Errors disclose nothing (issue 14): a provider's words and an exception's text never reach
the user, who gets a stable message and an error id; the log has the details under the same id.
/healthz answers only its status to the public; the details go to staff and the monitoring
token."""

import json
import logging
import re

import pytest
from django.db import connection
from django.test import Client

from conversations.models import Conversation, Message
from facts.models import Legacy
from tests.conftest import api_client_for
from tests.factories import ConversationFactory, UserFactory
from tests.support.csrf import signed_in

pytestmark = pytest.mark.django_db

# What a provider may say: the prompt echoed back, another member's text, a key.
PROVIDER_WORDS = "Incorrect API key sk-live-SECRET; prompt was: OTHERMEMBERCANARY"
ERROR_ID = re.compile(r"^[0-9a-f]{12}$")


@pytest.fixture
def conversation(family) -> Conversation:
    return ConversationFactory(user=family.owner, legacy=family.legacy)


def _logged(caplog, error_id: str) -> list[logging.LogRecord]:
    return [r for r in caplog.records if error_id in r.getMessage()]


def test_a_provider_failure_answers_a_stable_502_with_an_error_id_and_logs_the_words(
    family, conversation, openai_llm, caplog
):
    openai_llm.error(401, PROVIDER_WORDS)

    response = api_client_for(family.owner).post(
        f"/api/ai/conversations/{conversation.pk}/turn", {"content": "Hello"}, format="json")

    assert response.status_code == 502
    body = response.json()
    assert ERROR_ID.match(body["error_id"])
    assert body == {
        "detail": "The language model failed. Your message was saved as #0; send the same "
        "request with the same Idempotency-Key to retry without saving it twice.",
        "code": "provider_error",
        "error_id": body["error_id"],
    }
    assert "sk-live" not in response.content.decode()
    assert "OTHERMEMBERCANARY" not in response.content.decode()
    (record,) = _logged(caplog, body["error_id"])
    assert "sk-live-SECRET" in record.getMessage()
    # What was saved before the call stays saved.
    assert list(Message.objects.filter(conversation=conversation).values_list("role", flat=True)) \
        == ["user"]


@pytest.mark.parametrize("htmx", [True, False])
def test_the_chat_page_shows_the_error_id_and_never_the_providers_words(
    family, conversation, openai_llm, caplog, htmx
):
    openai_llm.error(500, PROVIDER_WORDS)
    web = signed_in(family.owner)
    web.get(f"/chat/{conversation.pk}")
    headers = {"HTTP_HX_REQUEST": "true"} if htmx else {}

    response = web.post(f"/chat/{conversation.pk}/send", {"content": "Hello"},
                        HTTP_X_CSRFTOKEN=web.cookies["csrftoken"].value, follow=not htmx,
                        **headers)

    page = response.content.decode()
    shown = re.search(r"The assistant could not answer \(error ([0-9a-f]{12})\)\. "
                      r"Your message was kept\.", page)
    assert response.status_code == 200 and shown, page
    assert "sk-live" not in page and "OTHERMEMBERCANARY" not in page
    (record,) = _logged(caplog, shown.group(1))
    assert "OTHERMEMBERCANARY" in record.getMessage()


def test_an_unexpected_api_error_is_a_500_in_the_error_format_with_an_error_id(
    family, monkeypatch, caplog
):
    def broken(user):
        raise RuntimeError("connection to 10.0.0.7 failed: password authentication")

    monkeypatch.setattr("memory_site.privacy.apis.user_data_export", broken)

    response = api_client_for(family.owner).get("/api/me/data")

    assert response.status_code == 500
    body = response.json()
    assert ERROR_ID.match(body["error_id"])
    assert body == {"detail": "Internal server error.", "code": "error",
                    "error_id": body["error_id"]}
    assert "10.0.0.7" not in response.content.decode()
    (record,) = _logged(caplog, body["error_id"])
    assert record.exc_info and "10.0.0.7" in str(record.exc_info[1])


def test_an_unexpected_page_error_is_a_500_page_with_an_error_id(family, monkeypatch, caplog):
    def broken(user):
        raise RuntimeError("secret internals of the database")

    monkeypatch.setattr("conversations.views.chat.legacies_for_user", broken)
    web = signed_in(family.owner)
    web.raise_request_exception = False

    response = web.get("/chat")

    assert response.status_code == 500
    page = response.content.decode()
    error_id = re.search(r"<code>([0-9a-f]{12})</code>", page).group(1)
    assert "secret internals" not in page
    (record,) = _logged(caplog, error_id)
    assert "secret internals" in str(record.exc_info[1])


# --- /healthz ---------------------------------------------------------------------------------


def test_the_public_gets_only_the_status(client):
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}
    assert "no-cache" in response["Cache-Control"]


def test_a_degraded_service_tells_the_public_nothing_more(client):
    with connection.cursor() as cursor:
        cursor.execute("DROP EXTENSION vector CASCADE")  # rolled back with the test
    response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json() == {"status": "degraded"}


@pytest.mark.parametrize("who", ["staff", "token"])
def test_staff_and_the_monitoring_token_get_the_details(client, settings, who):
    settings.HEALTHZ_TOKEN = "t0ken-for-monitoring"
    if who == "staff":
        client.force_login(UserFactory(username="support", is_staff=True))
        response = client.get("/healthz")
    else:
        response = client.get("/healthz", HTTP_AUTHORIZATION="Bearer t0ken-for-monitoring")
    body = response.json()
    assert response.status_code == 200
    assert set(body) == {"status", "database", "pgvector", "queue"}
    assert body["queue"]["broker"] == "orm"


@pytest.mark.parametrize(("token", "sent"), [
    ("t0ken-for-monitoring", "Bearer wrong"),
    ("t0ken-for-monitoring", "t0ken-for-monitoring"),
    ("", "Bearer "),
])
def test_a_wrong_or_unset_token_and_a_signed_in_member_get_only_the_status(
    family, settings, token, sent
):
    settings.HEALTHZ_TOKEN = token
    assert Client().get("/healthz", HTTP_AUTHORIZATION=sent).json() == {"status": "ok"}
    assert signed_in(family.owner).get("/healthz").json() == {"status": "ok"}


@pytest.mark.parametrize("path", ["/api/legacies", "conversation-messages"])
def test_a_body_nested_too_deeply_is_a_400_and_writes_nothing(family, conversation, path):
    """A hostile-member probe: 2,000 nested `[` made the JSON decoder recurse out (500)."""
    client = api_client_for(family.owner)
    if path == "conversation-messages":
        path = f"/api/ai/conversations/{conversation.pk}/messages"
    before = (Legacy.objects.count(), Conversation.objects.count(), Message.objects.count())

    response = client.generic("POST", path, "[" * 2000 + "]" * 2000,
                              content_type="application/json")

    assert response.status_code == 400
    assert response.json() == {"detail": "JSON parse error - the body is nested too deeply.",
                               "code": "parse_error"}
    assert (Legacy.objects.count(), Conversation.objects.count(),
            Message.objects.count()) == before


@pytest.mark.parametrize("body", [
    {"role": "\ud800"},  # a choice field's error message would echo it
    {"role": "user", "content": "abc \udc00 def"},  # PostgreSQL would refuse it
    {"role": "user", "content": "hi", "\ud83d": 1},  # an unknown key
])
def test_half_a_surrogate_pair_is_a_400_and_writes_nothing(family, conversation, body):
    """A hostile-member probe: "\\ud800" alone decodes to a character no UTF-8 text holds;
    the error message echoing it, or the insert storing it, failed with a 500."""
    client = api_client_for(family.owner)
    before = Message.objects.count()

    response = client.generic("POST", f"/api/ai/conversations/{conversation.pk}/messages",
                              json.dumps(body), content_type="application/json")

    assert response.status_code == 400
    assert response.json()["code"] == "parse_error"
    assert "surrogate" in response.json()["detail"]
    assert Message.objects.count() == before


def test_a_body_over_the_upload_limit_is_a_413_and_writes_nothing(family, conversation, settings):
    """A hostile-member probe: a batch within the documented limits (500 messages of 20,000
    characters) was over Django's default body limit (2.5 MB), and the RequestDataTooBig it
    raised was a 500. The default limit now holds such a batch; a larger body is a 413."""
    assert settings.DATA_UPLOAD_MAX_MEMORY_SIZE >= (
        settings.IMPORT_MAX_BATCH * settings.MESSAGE_MAX_CHARS * 4)
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 10_000
    client = api_client_for(family.owner)
    body = {"messages": [{"role": "user", "content": "x" * 5_000} for _ in range(3)]}
    before = Message.objects.count()

    response = client.post(f"/api/ai/conversations/{conversation.pk}/messages/batch", body,
                           format="json")

    assert response.status_code == 413
    assert response.json() == {
        "detail": "The request body is larger than 10000 bytes (DATA_UPLOAD_MAX_MEMORY_SIZE): "
                  "nothing was read; send it in smaller requests (a batch of fewer messages).",
        "code": "too_large"}
    assert Message.objects.count() == before


@pytest.mark.parametrize("debug", [False, True])
def test_an_api_path_no_route_matches_is_a_json_404_with_or_without_debug(family, settings, debug):
    """`make run` serves with DEBUG on, where Django answered its technical 404 page (HTML
    listing every URL pattern) for an id that is not a UUID."""
    settings.DEBUG = debug
    client = api_client_for(family.owner)
    for path in ("/api/ai/facts/not-a-uuid", "/api/no-such-thing"):
        response = client.delete(path)
        assert response.status_code == 404
        assert response["Content-Type"] == "application/json"
        assert response.json() == {"detail": "Not found.", "code": "not_found"}
    # Pages keep Django's own 404, and a view's 404 its own words, in HTML too (the browsable
    # API answers a browser).
    assert "text/html" in Client().get("/no-such-page")["Content-Type"]
    html = client.delete(f"/api/legacies/{family.legacy.pk}/members/nobody",
                         HTTP_ACCEPT="text/html")
    assert html.status_code == 404
    assert "Nobody of that username is a member of this legacy." in html.content.decode()
