"""Every message is a retrieval unit: an embedding with its model key and a stored tsvector with
a GIN index on messages and chunks, an HNSW index on message embeddings (issue 11).

The chunks stored so far were embedded by the embedder configured now, so they get its key;
messages get theirs from the embedding sweep (conversations.tasks.sweep)."""

import django.contrib.postgres.indexes
import django.contrib.postgres.search
import pgvector.django.indexes
import pgvector.django.vector
from django.db import migrations, models


def label_existing_chunks(apps, schema_editor):
    from conversations.embedding import model_key

    ConversationChunk = apps.get_model("conversations", "ConversationChunk")
    ConversationChunk.objects.filter(embedding__isnull=False).update(embedding_model=model_key())


class Migration(migrations.Migration):

    dependencies = [
        ('conversations', '0004_conversation_archive_failures'),
    ]

    operations = [
        migrations.AddField(
            model_name='conversationchunk',
            name='embedding_model',
            field=models.CharField(blank=True, default='', max_length=200),
        ),
        migrations.AddField(
            model_name='conversationchunk',
            name='search_vector',
            field=models.GeneratedField(db_persist=True, expression=django.contrib.postgres.search.SearchVector('content', config='english'), output_field=django.contrib.postgres.search.SearchVectorField()),
        ),
        migrations.AddField(
            model_name='message',
            name='embedding',
            field=pgvector.django.vector.VectorField(blank=True, dimensions=1024, null=True),
        ),
        migrations.AddField(
            model_name='message',
            name='embedding_model',
            field=models.CharField(blank=True, default='', max_length=200),
        ),
        migrations.AddField(
            model_name='message',
            name='search_vector',
            field=models.GeneratedField(db_persist=True, expression=django.contrib.postgres.search.SearchVector('content', config='english'), output_field=django.contrib.postgres.search.SearchVectorField()),
        ),
        migrations.AlterField(
            model_name='conversationchunk',
            name='embedding',
            field=pgvector.django.vector.VectorField(blank=True, dimensions=1024, null=True),
        ),
        migrations.AddIndex(
            model_name='conversationchunk',
            index=django.contrib.postgres.indexes.GinIndex(fields=['search_vector'], name='ix_chunk_search_vector'),
        ),
        migrations.AddIndex(
            model_name='message',
            index=models.Index(condition=models.Q(('role__in', ('user', 'assistant'))), fields=['conversation', 'embedding_model', 'sequence'], name='ix_message_units'),
        ),
        migrations.AddIndex(
            model_name='message',
            index=models.Index(condition=models.Q(('embedding_model', ''), ('role__in', ('user', 'assistant'))), fields=['conversation'], name='ix_message_unembedded'),
        ),
        migrations.AddIndex(
            model_name='message',
            index=django.contrib.postgres.indexes.GinIndex(fields=['search_vector'], name='ix_message_search_vector'),
        ),
        migrations.AddIndex(
            model_name='message',
            index=pgvector.django.indexes.HnswIndex(ef_construction=64, fields=['embedding'], m=16, name='ix_message_embedding', opclasses=['vector_cosine_ops']),
        ),
        migrations.RunPython(label_existing_chunks, migrations.RunPython.noop),
    ]
