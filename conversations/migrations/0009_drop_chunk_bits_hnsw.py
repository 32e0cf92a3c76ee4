"""Drop the chunks' HNSW index of their sign bits: no search reads it (chunks are always
compared by the bits of ix_chunk_units; conversations.retrieval._vector_scan), and every
archived chunk was inserted into it."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('conversations', '0008_chunk_units_index'),
    ]

    operations = [
        migrations.RemoveIndex(
            model_name='conversationchunk',
            name='ix_chunk_embedding_bits',
        ),
    ]
