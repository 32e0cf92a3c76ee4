"""A small partial index of the chunks that have a vector, by conversation and embedding model,
from which a search counts its scope's embedded chunks without reading their rows (issue 11:
search cost flat in history)."""

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
            index=models.Index(condition=models.Q(('embedding__isnull', False)), fields=['conversation', 'embedding_model'], name='ix_chunk_embedded'),
        ),
    ]
