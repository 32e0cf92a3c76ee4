"""What an erase removes beside the apps' rows: every session of the user, on every device, the
one that asked too; and failed jobs, which django-q2 keeps forever, go after
Q_FAILURE_RETENTION_DAYS."""

from datetime import timedelta

import pytest
from django.utils import timezone
from django_q.models import Failure, Schedule, Success, Task

from memory_site.privacy.tasks import PRUNE_SCHEDULE_NAME, failed_jobs_prune
from tests.support.csrf import csrf_token, signed_in

pytestmark = pytest.mark.django_db


def test_an_erase_from_the_dashboard_ends_every_session_of_the_user_and_no_one_elses(family):
    browser = signed_in(family.owner)
    phone = signed_in(family.owner)
    fellow = signed_in(family.member)
    token = csrf_token(browser, "/chat")

    response = browser.delete("/api/me/data", HTTP_X_CSRFTOKEN=token)

    assert response.status_code == 200, response.content
    assert response.json()["erased"]["sessions"] == 2
    for client in (browser, phone):
        page = client.get("/chat")
        assert page.status_code == 302
        assert page["Location"].startswith("/accounts/login/")
    assert fellow.get("/chat").status_code == 200


def test_a_session_erase_without_the_csrf_token_is_refused_and_changes_nothing(family):
    browser = signed_in(family.owner)

    response = browser.delete("/api/me/data")

    assert response.status_code == 403
    assert response.json()["code"] == "permission_denied"
    assert browser.get("/chat").status_code == 200


def _task(*, success: bool, days_ago: float) -> Task:
    stopped = timezone.now() - timedelta(days=days_ago)
    return Task.objects.create(
        id=f"{'s' if success else 'f'}{days_ago}".replace(".", "_").ljust(32, "0"),
        name=f"job {days_ago}", func="conversations.tasks.summarize_conversation",
        args=("c0ffee00-0000-4000-8000-000000000001",), kwargs={},
        result="LLMError: what the provider said", started=stopped, stopped=stopped,
        success=success,
    )


def test_failed_jobs_older_than_the_retention_go_and_everything_else_stays(settings):
    settings.Q_FAILURE_RETENTION_DAYS = 30
    old = _task(success=False, days_ago=31)
    recent = _task(success=False, days_ago=29)
    old_success = _task(success=True, days_ago=90)

    assert failed_jobs_prune() == {"deleted": 1}

    assert set(Failure.objects.values_list("pk", flat=True)) == {recent.pk}
    assert set(Success.objects.values_list("pk", flat=True)) == {old_success.pk}
    assert not Task.objects.filter(pk=old.pk).exists()
    # Safe to run twice.
    assert failed_jobs_prune() == {"deleted": 0}


def test_the_prune_runs_daily_as_a_schedule():
    schedule = Schedule.objects.get(name=PRUNE_SCHEDULE_NAME)
    assert (schedule.func, schedule.schedule_type, schedule.repeats) == (
        "memory_site.privacy.tasks.failed_jobs_prune", Schedule.DAILY, -1)
