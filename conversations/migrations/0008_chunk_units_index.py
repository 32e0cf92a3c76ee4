"""ix_chunk_units: a user's chunks about a legacy by conversation and embedding model,
carrying their id and sign bits, so that a search reads its scope's chunk counts and the
Hamming distance of every chunk in scope from this index alone, without their rows, and the
newest conversations' chunks by it (issue 11: search cost flat in history). It replaces the
(user, legacy) index, its prefix; it is made before that one is dropped, so that no read is
left without one."""

from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('conversations', '0007_embedding_sign_bits'),
        ('facts', '0003_fact_lifecycle_and_conflicts'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddIndex(
            model_name='conversationchunk',
            index=models.Index(fields=['user', 'legacy', 'conversation', 'embedding_model'], include=('id', 'embedding_bits'), name='ix_chunk_units'),
        ),
        migrations.RemoveIndex(
            model_name='conversationchunk',
            name='ix_conv_chunks_user_legacy',
        ),
    ]
