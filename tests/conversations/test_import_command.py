"""`manage.py import_conversations FILE.jsonl`: one conversation per line for a member of the
legacy, in batches of IMPORT_MAX_BATCH with a progress bar and a summary line; the whole file
is checked first (a bad line: nothing imported), and running it again writes nothing twice."""

import io
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from conversations.management.commands.import_conversations import line_key
from conversations.models import Conversation, Message

pytestmark = pytest.mark.django_db

EXAMPLE = Path(__file__).resolve().parents[1] / "data" / "import_conversations.jsonl"
PLACEHOLDER = "00000000-0000-0000-0000-000000000000"


@pytest.fixture
def history(family, tmp_path):
    """The documented example file, for the family's legacy."""
    path = tmp_path / "history.jsonl"
    path.write_text(EXAMPLE.read_text().replace(PLACEHOLDER, str(family.legacy.pk)))
    return path


def run(path):
    out, err = io.StringIO(), io.StringIO()
    call_command("import_conversations", str(path), stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_it_imports_each_line_as_a_conversation_with_a_progress_bar_and_a_summary(family,
                                                                                 history):
    out, _ = run(history)

    owner, member = (Conversation.objects.get(user=user) for user in (family.owner,
                                                                      family.member))
    assert (owner.title, owner.legacy, owner.message_count) == ("Summer 2019", family.legacy, 3)
    assert (member.title, member.persona, member.message_count) == (
        "Her recipes", "A gentle listener.", 2)
    messages = list(Message.objects.filter(conversation=owner).order_by("sequence"))
    assert [(m.sequence, m.role) for m in messages] == [(0, "user"), (1, "assistant"), (2, "user")]
    assert messages[0].created_at == datetime(2019, 6, 1, 18, 0, tzinfo=UTC)
    # Not a terminal: rich prints the finished bar once.
    assert "Importing" in out and "5/5 messages" in out
    assert out.splitlines()[-1] == (
        "Imported 2 conversations and 5 messages; skipped 0 conversations and 0 messages "
        "imported before."
    )


def test_running_it_again_writes_nothing_twice(history):
    run(history)
    before = list(Message.objects.values_list("id", flat=True).order_by("id"))

    out, _ = run(history)

    assert Conversation.objects.count() == 2
    assert list(Message.objects.values_list("id", flat=True).order_by("id")) == before
    assert out.splitlines()[-1] == (
        "Imported 0 conversations and 0 messages; skipped 2 conversations and 5 messages "
        "imported before."
    )


def test_a_long_history_goes_in_batches_and_resumes_where_it_stopped(family, tmp_path, settings):
    settings.IMPORT_MAX_BATCH = 4
    line = {"username": "owner", "legacy_id": str(family.legacy.pk), "messages": [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"Line {i}"} for i in range(10)
    ]}
    path = tmp_path / "long.jsonl"
    path.write_text(json.dumps(line) + "\n")

    out, _ = run(path)

    conversation = Conversation.objects.get()
    assert list(conversation.messages.values_list("sequence", flat=True)) == list(range(10))
    key = line_key(json.dumps(line))
    assert list(conversation.messages.values_list("idempotency_key", flat=True)) == [
        f"{key}:{batch}␟{index}" for batch, size in enumerate((4, 4, 2)) for index in range(size)
    ]
    assert "10/10 messages" in out
    # A run that stopped after the first batch goes on from the second.
    conversation.messages.filter(sequence__gte=4).delete()
    Conversation.objects.filter(pk=conversation.pk).update(message_count=4)

    out, _ = run(path)

    assert list(conversation.messages.values_list("content", flat=True)) == [
        f"Line {i}" for i in range(10)]
    assert out.splitlines()[-1] == (
        "Imported 1 conversations and 6 messages; skipped 0 conversations and 4 messages "
        "imported before."
    )


def test_an_import_saved_before_keys_had_a_separator_is_not_imported_twice(family, tmp_path,
                                                                           settings):
    settings.IMPORT_MAX_BATCH = 4
    line = {"username": "owner", "legacy_id": str(family.legacy.pk), "messages": [
        {"role": "user", "content": f"Line {i}"} for i in range(6)
    ]}
    path = tmp_path / "long.jsonl"
    path.write_text(json.dumps(line) + "\n")
    run(path)
    conversation = Conversation.objects.get()
    # As stored before: `<key>:<batch>:<index>`, and a run that stopped after the first batch.
    conversation.messages.filter(sequence__gte=4).delete()
    Conversation.objects.filter(pk=conversation.pk).update(message_count=4)
    key = line_key(json.dumps(line))
    for message in conversation.messages.all():
        Message.objects.filter(pk=message.pk).update(
            idempotency_key=f"{key}:0:{message.sequence}")

    out, _ = run(path)

    assert Conversation.objects.get() == conversation
    assert list(conversation.messages.values_list("content", flat=True)) == [
        f"Line {i}" for i in range(6)]
    assert out.splitlines()[-1] == (
        "Imported 1 conversations and 2 messages; skipped 0 conversations and 4 messages "
        "imported before."
    )


def test_a_bad_line_is_reported_by_number_and_nothing_is_imported(family, history):
    lines = history.read_text().splitlines()
    bad = [
        "not json",
        json.dumps({"username": "nobody", "legacy_id": str(family.legacy.pk),
                    "messages": [{"role": "user", "content": "Hi"}]}),
        json.dumps({"username": "stranger", "legacy_id": str(family.legacy.pk),
                    "messages": [{"role": "user", "content": "Hi"}]}),
        json.dumps({"username": "owner", "legacy_id": str(family.legacy.pk),
                    "messages": [{"role": "user", "content": "Hi"}, {"role": "robot",
                                                                     "content": " "}]}),
    ]
    history.write_text("\n".join([lines[0], *bad, lines[1]]) + "\n")
    err = io.StringIO()

    with pytest.raises(CommandError, match=r"^4 bad line\(s\) in .*; nothing was imported\.$"):
        call_command("import_conversations", str(history), stdout=io.StringIO(), stderr=err)

    assert err.getvalue().splitlines() == [
        "line 2: not JSON (Expecting value).",
        "line 3: username: No such user.",
        "line 4: legacy_id: stranger is not a member of this legacy.",
        'line 5: messages.1.role: "robot" is not a valid choice.',
        # Both of the message's errors at once (an integrator found the content's only came
        # back once the role was fixed).
        "line 5: messages.1.content: A message needs some content.",
    ]
    assert not Conversation.objects.exists()


def test_a_missing_file_is_an_error(tmp_path):
    with pytest.raises(CommandError, match="Cannot read"):
        run(tmp_path / "missing.jsonl")


def test_a_line_with_several_errors_is_one_bad_line(family, history):
    """A new user's file: 2 lines and 3 errors were reported as "3 bad line(s)"."""
    history.write_text(json.dumps({"username": "nobody", "legacy_id": str(family.legacy.pk),
                                   "title": "t" * 201,
                                   "messages": [{"role": "user", "content": "Hi"}]}) + "\n")
    err = io.StringIO()

    with pytest.raises(CommandError, match=r"^1 bad line\(s\) in .*; nothing was imported\.$"):
        call_command("import_conversations", str(history), stdout=io.StringIO(), stderr=err)

    assert len(err.getvalue().splitlines()) >= 2
