"""`manage.py reembed`: every message and chunk embedded with the current EMBEDDING_PROVIDER,
EMBEDDING_MODEL and EMBEDDING_DIMENSIONS, with a progress bar; resumable
(docs/conversation-memory.md#switching-the-embedding-model-managepy-reembed)."""

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import connection, transaction
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from conversations.embedding import model_key
from conversations.management.commands.import_conversations import _RichStream
from conversations.models import ConversationChunk, Message
from conversations.services import embedding
from memory_site.core.ai import EmbeddingError


def _sign_bits_drop() -> list[tuple[str, str]]:
    """Drop the generated `embedding_bits` columns (a column a generated column reads cannot
    change its type) and with them the indexes that hold the bits; their definitions, to build
    them again."""
    tables = [Message._meta.db_table, ConversationChunk._meta.db_table]
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = ANY(%s) "
                       "AND indexdef LIKE '%%embedding_bits%%' ORDER BY indexname", [tables])
        indexes = cursor.fetchall()
        for table in tables:
            cursor.execute(f"ALTER TABLE {connection.ops.quote_name(table)} "
                           "DROP COLUMN IF EXISTS embedding_bits")
    return indexes


def _sign_bits_add(*, dimensions: int, indexes: list[tuple[str, str]]) -> list[str]:
    """The `embedding_bits` columns again, bit(`dimensions`), and the indexes that held them."""
    done = []
    with connection.cursor() as cursor:
        for table in (Message._meta.db_table, ConversationChunk._meta.db_table):
            cursor.execute(
                f"ALTER TABLE {connection.ops.quote_name(table)} ADD COLUMN embedding_bits "
                f"bit({int(dimensions)}) GENERATED ALWAYS AS "
                f"(binary_quantize(embedding)::bit({int(dimensions)})) STORED"
            )
        for name, definition in indexes:
            cursor.execute(definition)
            done.append(f"index {name} rebuilt")
    return [f"columns embedding_bits are now bit({dimensions})", *done]


class Command(BaseCommand):
    help = (
        "Embed every message and chunk that has no vector of the current embedding model "
        "(EMBEDDING_PROVIDER, EMBEDDING_MODEL, EMBEDDING_DIMENSIONS). When the dimensions "
        "changed, the vector columns, their sign bits and their indexes are changed first. Until a row is "
        "re-embedded, search ranks it by its words only; stopped, it resumes where it was."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument(
            "--batch-size", type=int, default=None,
            help="rows per embedding request and commit (default EMBEDDING_BATCH_SIZE)",
        )

    def handle(self, *args: Any, batch_size: int | None = None, **options: Any) -> None:
        batch_size = batch_size or settings.EMBEDDING_BATCH_SIZE
        if batch_size < 1:
            raise CommandError("--batch-size must be at least 1.")
        dimensions = settings.EMBEDDING_DIMENSIONS
        self.stdout.write(f"Embedding model: {model_key()}")
        columns = embedding.embedding_column_dimensions()
        if any(found != dimensions for found in columns.values()):
            self.stdout.write(
                f"The vector columns hold {columns['messages']} (messages) and "
                f"{columns['chunks']} (chunks) dimensions; EMBEDDING_DIMENSIONS is {dimensions}. "
                "Changing the columns: every stored vector is cleared."
            )
            with transaction.atomic():
                # No table is altered with trigger events pending on it: checks the rows an
                # enclosing transaction wrote (a test's) now, instead of at its commit.
                connection.check_constraints()
                bits_indexes = _sign_bits_drop()
                for step in embedding.embedding_columns_resize(dimensions=dimensions):
                    self.stdout.write(f"  {step}")
                for step in _sign_bits_add(dimensions=dimensions, indexes=bits_indexes):
                    self.stdout.write(f"  {step}")
        pending = embedding.pending_counts()
        if not any(pending.values()):
            self.stdout.write(self.style.SUCCESS(
                "Every message and chunk is embedded with this model; nothing to do."
            ))
            return
        console = Console(file=_RichStream(self.stdout))
        columns_ = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TimeRemainingColumn())
        done = {"messages": 0, "chunks": 0}
        with Progress(*columns_, console=console) as progress:
            for kind in ("messages", "chunks"):
                task = progress.add_task(f"Embedding {kind}", total=pending[kind])
                after = None
                while True:
                    try:
                        with transaction.atomic():
                            count, after = embedding.units_reembed_batch(
                                kind=kind, batch_size=batch_size, after=after)
                    except EmbeddingError as exc:
                        raise CommandError(
                            f"The embedding provider failed after {done['messages']} messages "
                            f"and {done['chunks']} chunks: {exc}. What was embedded is kept; "
                            "run the command again to go on."
                        ) from exc
                    if not count:
                        break
                    done[kind] += count
                    progress.update(task, advance=count)
                # The job worker's embedding jobs may have embedded some meanwhile: the bar
                # ends full either way, and the line below says how many were theirs.
                progress.update(task, completed=pending[kind])
        others = {kind: max(pending[kind] - done[kind], 0) for kind in done}
        self.stdout.write(self.style.SUCCESS(
            f"Embedded {done['messages']} messages and {done['chunks']} chunks with {model_key()}."
            + (f" The job worker embedded the other {others['messages']} messages and "
               f"{others['chunks']} chunks meanwhile." if any(others.values()) else "")
        ))
