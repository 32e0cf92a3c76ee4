"""Withdraw the pending invitations that no longer stand: those sent by someone who is no
longer an owner of the legacy (left or removed before invitations went with them, facts.
services._membership_end), and those to the username "me", which the API's member paths read as
the caller (facts.services.ME_REFUSED)."""

from django.db import migrations
from django.db.models import Exists, OuterRef, Q


def withdraw(apps, schema_editor):
    invitation = apps.get_model("facts", "LegacyInvitation")
    membership = apps.get_model("facts", "LegacyMembership")
    inviter_is_owner = membership.objects.filter(
        legacy_id=OuterRef("legacy_id"), user_id=OuterRef("invited_by_id"), role="owner"
    )
    invitation.objects.filter(status="pending").filter(
        ~Exists(inviter_is_owner) | Q(username__iexact="me")
    ).delete()


class Migration(migrations.Migration):

    dependencies = [
        ("facts", "0003_fact_lifecycle_and_conflicts"),
    ]

    operations = [
        migrations.RunPython(withdraw, migrations.RunPython.noop),
    ]
