"""System checks that the job queue's limits fit the summarisation pipeline's worst case:
one deadline per job step, computed from the provider timeouts, attempts and backoff; and that
the search's text configuration is the one of the stored search vectors."""

from django.conf import settings
from django.core.checks import Error, Warning, register

# The providers' cap on one backoff wait (memory_site.core.ai.openai_llm, embeddings).
MAX_BACKOFF_SECONDS = 30.0


def _backoff_seconds(base: float, attempts: int) -> float:
    """The waits between `attempts` tries: base, 2×base, 4×base…, each at most 30 s."""
    return sum(min(base * 2**n, MAX_BACKOFF_SECONDS) for n in range(attempts - 1))


def worst_case_llm_call_seconds() -> float:
    """One model call when every attempt times out: attempts × timeout plus the backoff (the
    provider retries transient errors and malformed output within the same attempts)."""
    if settings.LLM_PROVIDER == "extractive":
        return 0.0
    attempts = settings.LLM_MAX_RETRIES + 1
    return (settings.LLM_TIMEOUT_SECONDS * attempts
            + _backoff_seconds(settings.LLM_RETRY_BACKOFF_SECONDS, attempts))


def worst_case_embedding_call_seconds() -> float:
    if settings.EMBEDDING_PROVIDER == "hashing":
        return 0.0
    attempts = settings.EMBEDDING_MAX_RETRIES + 1
    return (settings.EMBEDDING_TIMEOUT_SECONDS * attempts
            + _backoff_seconds(settings.EMBEDDING_RETRY_BACKOFF_SECONDS, attempts))


def worst_case_batch_seconds() -> float:
    """How long one archive batch can take when every provider call times out and retries:
    one model call and one embedding call, plus the offline and database work."""
    return 5.0 + worst_case_llm_call_seconds() + worst_case_embedding_call_seconds()


def worst_case_job_seconds() -> float:
    """A summarisation job: the rolling summary (one model call) counts towards the job's time
    budget, no batch starts after it, and the last batch may then take its worst case."""
    return max(
        settings.SUMMARIZATION_JOB_TIME_BUDGET_SECONDS + worst_case_batch_seconds(),
        5.0 + worst_case_llm_call_seconds(),
    )


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
    longest_job = worst_case_job_seconds()
    if longest_job >= timeout:
        problems.append(Error(
            f"A summarisation job may run {longest_job:.0f}s (its time budget plus one batch "
            f"with every provider call timing out on every attempt: "
            f"{worst_case_llm_call_seconds():.0f}s per model call, "
            f"{worst_case_embedding_call_seconds():.0f}s per embedding call) but Q_TIMEOUT is "
            f"{timeout}s: the worker would be killed mid-step.",
            hint="Raise Q_TIMEOUT (and Q_RETRY, and MEMORY_PROCESSING_TIMEOUT_SECONDS above it) "
            "or lower SUMMARIZATION_JOB_TIME_BUDGET_SECONDS, the provider timeouts or retries.",
            id="conversations.E002",
        ))
    if timeout >= settings.MEMORY_PROCESSING_TIMEOUT_SECONDS:
        problems.append(Warning(
            "MEMORY_PROCESSING_TIMEOUT_SECONDS is not above Q_TIMEOUT: the sweep could mark a "
            "summary failed while its job is still running.",
            id="conversations.W002",
        ))
    return problems


@register()
def check_search_text_config(app_configs, **kwargs) -> list:
    """The stored tsvector columns are computed with one text search configuration; a query
    stemmed with another would miss their words."""
    from conversations.models import STORED_TEXT_CONFIG

    if settings.SEARCH_TEXT_CONFIG != STORED_TEXT_CONFIG:
        return [Error(
            f"SEARCH_TEXT_CONFIG is {settings.SEARCH_TEXT_CONFIG!r}, but the stored search "
            f"vectors of messages and chunks use {STORED_TEXT_CONFIG!r}.",
            hint="Unset SEARCH_TEXT_CONFIG, or change conversations.models.STORED_TEXT_CONFIG "
            "and make a migration of the generated columns.",
            id="conversations.E003",
        )]
    return []


HNSW_ITERATIVE_SCANS = ("off", "relaxed_order", "strict_order")


@register()
def check_hnsw_settings(app_configs, **kwargs) -> list:
    """The search's HNSW settings are set for each new connection's session (conversations.
    retrieval.hnsw_session_settings): a value pgvector refuses would be dropped there with a
    warning, or fail every connection, rather than fail one search."""
    problems = []
    if settings.SEARCH_HNSW_ITERATIVE_SCAN not in HNSW_ITERATIVE_SCANS:
        problems.append(Error(
            f"SEARCH_HNSW_ITERATIVE_SCAN is {settings.SEARCH_HNSW_ITERATIVE_SCAN!r}.",
            hint="One of " + ", ".join(HNSW_ITERATIVE_SCANS) + " (pgvector's "
            "hnsw.iterative_scan); strict_order is the default.",
            id="conversations.E004",
        ))
    if settings.SEARCH_HNSW_MAX_SCAN_TUPLES < 1:
        problems.append(Error(
            f"SEARCH_HNSW_MAX_SCAN_TUPLES is {settings.SEARCH_HNSW_MAX_SCAN_TUPLES}.",
            hint="A positive number of tuples (pgvector's hnsw.max_scan_tuples); 20000 is the "
            "default.",
            id="conversations.E005",
        ))
    return problems
