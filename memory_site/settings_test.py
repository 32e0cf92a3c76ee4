"""Test settings: the base settings, jobs run in-process, a fast password hasher.

The test database's name comes from MEMORY_TEST_DB so that parallel runs on one
embedded server do not collide.
"""

import os

from memory_site.settings import *  # noqa: F403
from memory_site.settings import DATABASES, Q_CLUSTER

DATABASES["default"]["TEST"] = {"NAME": os.environ.get("MEMORY_TEST_DB", "test_legacy_memory")}
# The live server answers from short-lived threads: close each request's connection instead
# of keeping it for reuse, so none outlives its thread and blocks dropping the test database.
DATABASES["default"]["CONN_MAX_AGE"] = 0
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
Q_CLUSTER = {**Q_CLUSTER, "sync": True}
# In-process tests count rate limits in memory, so that a request's query count is the view's
# own; the tests of limits shared across processes run real servers on the database cache or
# Redis (tests/memory_site/test_rate_limits.py).
CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
LOG_LEVEL = "WARNING"
