"""`manage.py import_conversations FILE.jsonl`: whole conversation histories, one per line, with a
progress bar and a summary line (format: docs/conversation-memory.md#importing-histories)."""

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, OutputWrapper
from django.utils import timezone
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from conversations import services
from conversations.serializers import ConversationImportLineSerializer
from facts.models import Legacy
from facts.selectors import legacy_for_member
from memory_site.core.errors import ApplicationError, NotFound

# Bad lines listed before the command gives up; the rest are only counted.
MAX_REPORTED_LINES = 20


@dataclass(frozen=True)
class Line:
    """A validated line of the file: one conversation to import."""

    number: int
    key: str
    user: AbstractBaseUser
    legacy: Legacy
    title: str
    persona: str
    messages: list[services.ImportMessage]


class _RichStream:
    """Django's OutputWrapper ends every write with a newline; rich writes pieces of lines."""

    def __init__(self, out: OutputWrapper):
        self._out = out

    def write(self, text: str) -> int:
        self._out.write(text, ending="")
        return len(text)

    def flush(self) -> None:
        self._out.flush()

    def isatty(self) -> bool:
        return self._out.isatty()


def line_key(text: str) -> str:
    """The import key of a line: the same line imports once, whichever file it is in."""
    return "import:" + hashlib.sha256(text.encode()).hexdigest()


def _flatten(errors: Any, path: str = "") -> list[str]:
    """`field.index.field: message` for each message of nested serializer or service errors."""
    if isinstance(errors, dict):
        return [item for name, value in errors.items()
                for item in _flatten(value, f"{path}.{name}" if path else str(name))]
    if isinstance(errors, list):
        return [item for value in errors for item in _flatten(value, path)]
    return [f"{path}: {errors}" if path else str(errors)]


class Command(BaseCommand):
    help = (
        "Import conversation histories from a JSON Lines file, one conversation per line: "
        '{"username", "legacy_id", "title"?, "persona"?, "messages": [{role, content, '
        "created_at?}, …]}. The whole file is checked first: with a bad line nothing is "
        "imported. Running it again writes nothing twice."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("file", type=Path, help="the .jsonl file")

    def handle(self, *args: Any, file: Path, **options: Any) -> None:
        try:
            text = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise CommandError(f"Cannot read {file}: {exc}") from exc
        lines, errors = self._checked(text)
        if errors:
            for error in errors[:MAX_REPORTED_LINES]:
                self.stderr.write(error)
            if len(errors) > MAX_REPORTED_LINES:
                self.stderr.write(f"… and {len(errors) - MAX_REPORTED_LINES} more.")
            # Each error is `line N: …`, and a line may have several.
            bad = len({error.split(":", 1)[0] for error in errors})
            raise CommandError(f"{bad} bad line(s) in {file}; nothing was imported.")
        self._import(lines)

    def _checked(self, text: str) -> tuple[list[Line], list[str]]:
        """Every line validated before anything is written: the lines, and the errors as
        `line N: field: message`."""
        lines, errors = [], []
        users = get_user_model().objects
        now = timezone.now()
        for number, raw in enumerate(text.splitlines(), start=1):
            raw = raw.strip()
            if not raw:
                continue
            try:
                data = json.loads(raw)
            except json.JSONDecodeError as exc:
                errors.append(f"line {number}: not JSON ({exc.msg}).")
                continue
            line = ConversationImportLineSerializer(data=data)
            if not line.is_valid():
                errors.extend(f"line {number}: {item}" for item in _flatten(line.errors))
                continue
            fields = line.validated_data
            problems: dict[str, Any] = {}
            user = users.filter(username=fields["username"]).first()
            legacy = None
            try:
                legacy = legacy_for_member(user=user, legacy_id=fields["legacy_id"]) if user \
                    else None
            except NotFound:
                problems["legacy_id"] = [f"{fields['username']} is not a member of this legacy."]
            if user is None:
                problems["username"] = ["No such user."]
            try:
                title, persona = services.validate_conversation_fields(
                    title=fields["title"], persona=fields["persona"]
                )
            except ValidationError as exc:
                problems |= exc.message_dict
            if message_errors := services.import_errors(fields["messages"], now=now):
                problems["messages"] = message_errors
            if problems:
                errors.extend(f"line {number}: {item}" for item in _flatten(problems))
                continue
            lines.append(Line(number=number, key=line_key(raw), user=user, legacy=legacy,
                              title=title, persona=persona, messages=fields["messages"]))
        return lines, errors

    def _import(self, lines: list[Line]) -> None:
        counts = {"conversations": 0, "messages": 0, "skipped conversations": 0,
                  "skipped messages": 0}
        console = Console(file=_RichStream(self.stdout))
        columns = (TextColumn("Importing"), BarColumn(), MofNCompleteColumn(),
                   TextColumn("messages"), TimeRemainingColumn())
        with Progress(*columns, console=console) as progress:
            task = progress.add_task("import", total=sum(len(line.messages) for line in lines))
            for line in lines:
                try:
                    done = services.conversation_import(
                        user=line.user, legacy=line.legacy, key=line.key, title=line.title,
                        persona=line.persona, messages=line.messages,
                        on_batch=lambda size: progress.advance(task, size),
                    )
                except (ApplicationError, ValidationError) as exc:
                    detail = exc.message if isinstance(exc, ApplicationError) else \
                        "; ".join(_flatten(exc.message_dict))
                    raise CommandError(
                        f"line {line.number}: {detail} Nothing of this batch was written; the "
                        "lines and batches before it are imported (run again to go on)."
                    ) from exc
                if done.imported:
                    counts["conversations"] += 1
                else:
                    counts["skipped conversations"] += 1
                counts["messages"] += done.imported
                counts["skipped messages"] += done.skipped
        self.stdout.write(
            f"Imported {counts['conversations']} conversations and {counts['messages']} "
            f"messages; skipped {counts['skipped conversations']} conversations and "
            f"{counts['skipped messages']} messages imported before."
        )
