"""System checks that the job queue's limits fit the summarisation pipeline's worst case."""

from django.conf import settings
from django.core.checks import Error, Warning, register


def worst_case_batch_seconds() -> float:
    """How long one archive batch can take when every provider call times out and retries."""
    seconds = 5.0  # the offline providers and the database work of a batch
    if settings.LLM_PROVIDER != "extractive":
        attempts = settings.LLM_MAX_RETRIES + 1
        backoff = sum(settings.LLM_RETRY_BACKOFF_SECONDS * 2**n for n in range(attempts - 1))
        seconds += settings.LLM_TIMEOUT_SECONDS * attempts + backoff
    if settings.EMBEDDING_PROVIDER != "hashing":
        seconds += settings.EMBEDDING_TIMEOUT_SECONDS * (settings.EMBEDDING_MAX_RETRIES + 1)
    return seconds


@register()
def check_job_limits(app_configs, **kwargs) -> list:
    timeout = settings.Q_CLUSTER.get("timeout")
    retry = settings.Q_CLUSTER.get("retry")
    problems = []
    if timeout is None or retry is None or retry <= timeout:
        problems.append(Error(
            "Q_RETRY must be greater than Q_TIMEOUT, or a running job is handed to a second "
            "worker.", id="conversations.E001",
        ))
        return problems
    longest_job = settings.SUMMARIZATION_JOB_TIME_BUDGET_SECONDS + worst_case_batch_seconds()
    if longest_job >= timeout:
        problems.append(Warning(
            f"A summarisation job may run {longest_job:.0f}s (time budget plus one batch with "
            f"every provider timeout and retry) but Q_TIMEOUT is {timeout}s.",
            hint="Raise Q_TIMEOUT (and Q_RETRY) or lower SUMMARIZATION_JOB_TIME_BUDGET_SECONDS "
            "or the provider timeouts.",
            id="conversations.W001",
        ))
    if timeout >= settings.MEMORY_PROCESSING_TIMEOUT_SECONDS:
        problems.append(Warning(
            "MEMORY_PROCESSING_TIMEOUT_SECONDS is not above Q_TIMEOUT: the sweep could mark a "
            "summary failed while its job is still running.",
            id="conversations.W002",
        ))
    return problems
