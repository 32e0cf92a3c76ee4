"""django-q2 jobs of the privacy edge: failed jobs are not kept forever."""

from memory_site.privacy.services import failed_jobs_prune as prune

PRUNE_SCHEDULE_NAME = "failed jobs prune"


def failed_jobs_prune() -> dict:
    """Daily (a schedule of memory_site's migration 0002): delete the failed jobs older than
    Q_FAILURE_RETENTION_DAYS. Safe to run twice."""
    return {"deleted": prune()}
