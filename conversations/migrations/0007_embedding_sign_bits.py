"""The embedding's sign bits as a stored generated column on messages and chunks (pgvector's
binary_quantize), with an HNSW index on them (Hamming distance); the unit index of messages
carries the bits so that an exact Hamming scan of a scope reads that index alone; a small
partial index of the messages that are not units; the HNSW index of the messages' full vectors
dropped, the search no longer reading it (issue 11: search cost flat in history).
conversations.retrieval finds vector candidates by the bits and re-ranks the best of them by
exact cosine distance on the full vector."""

import django.db.models.functions.comparison
import pgvector.django.bit
import pgvector.django.indexes
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('conversations', '0006_embedding_sweep_schedule'),
        ('facts', '0003_fact_lifecycle_and_conflicts'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.RemoveIndex(
            model_name='message',
            name='ix_message_embedding',
        ),
        migrations.RemoveIndex(
            model_name='message',
            name='ix_message_units',
        ),
        migrations.AddField(
            model_name='conversationchunk',
            name='embedding_bits',
            field=models.GeneratedField(db_persist=True, expression=django.db.models.functions.comparison.Cast(models.Func(models.F('embedding'), function='binary_quantize', output_field=pgvector.django.bit.BitField()), output_field=pgvector.django.bit.BitField(length=1024)), output_field=pgvector.django.bit.BitField(length=1024, null=True)),
        ),
        migrations.AddField(
            model_name='message',
            name='embedding_bits',
            field=models.GeneratedField(db_persist=True, expression=django.db.models.functions.comparison.Cast(models.Func(models.F('embedding'), function='binary_quantize', output_field=pgvector.django.bit.BitField()), output_field=pgvector.django.bit.BitField(length=1024)), output_field=pgvector.django.bit.BitField(length=1024, null=True)),
        ),
        migrations.AddIndex(
            model_name='conversationchunk',
            index=pgvector.django.indexes.HnswIndex(ef_construction=64, fields=['embedding_bits'], m=16, name='ix_chunk_embedding_bits', opclasses=['bit_hamming_ops']),
        ),
        migrations.AddIndex(
            model_name='message',
            index=models.Index(condition=models.Q(('role__in', ('user', 'assistant'))), fields=['conversation', 'embedding_model', 'sequence'], include=('id', 'embedding_bits'), name='ix_message_units'),
        ),
        migrations.AddIndex(
            model_name='message',
            index=models.Index(condition=models.Q(('role__in', ('user', 'assistant')), _negated=True), fields=['conversation'], name='ix_message_non_units'),
        ),
        migrations.AddIndex(
            model_name='message',
            index=pgvector.django.indexes.HnswIndex(ef_construction=32, fields=['embedding_bits'], m=8, name='ix_message_embedding_bits', opclasses=['bit_hamming_ops']),
        ),
    ]
