"""Provider selection: settings name the provider; instances are cached per configuration."""

from functools import cache

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from memory_site.core.ai.base import EmbeddingProvider, LLMProvider


@cache
def _llm(provider: str, base_url: str, api_key: str, model: str, timeout: float,
         max_retries: int, backoff: float) -> LLMProvider:
    if provider == "extractive":
        from memory_site.core.ai.offline.provider import ExtractiveLLM

        return ExtractiveLLM()
    if provider == "openai":
        from memory_site.core.ai.openai_llm import OpenAILLM

        return OpenAILLM(base_url=base_url, api_key=api_key, model=model, timeout=timeout,
                         max_retries=max_retries, backoff=backoff)
    raise ImproperlyConfigured(f"LLM_PROVIDER must be 'extractive' or 'openai', not {provider!r}")


@cache
def _embedder(provider: str, base_url: str, api_key: str, model: str, dimensions: int,
              timeout: float, max_retries: int, backoff: float) -> EmbeddingProvider:
    if provider == "hashing":
        from memory_site.core.ai.embeddings import HashingEmbedder

        return HashingEmbedder(dimensions)
    if provider == "openai":
        from memory_site.core.ai.embeddings import OpenAIEmbedder

        return OpenAIEmbedder(base_url=base_url, api_key=api_key, model=model,
                              dimensions=dimensions, timeout=timeout, max_retries=max_retries,
                              backoff=backoff)
    raise ImproperlyConfigured(
        f"EMBEDDING_PROVIDER must be 'hashing' or 'openai', not {provider!r}"
    )


def get_llm() -> LLMProvider:
    return _llm(settings.LLM_PROVIDER, settings.LLM_BASE_URL, settings.LLM_API_KEY,
                settings.LLM_MODEL, settings.LLM_TIMEOUT_SECONDS, settings.LLM_MAX_RETRIES,
                settings.LLM_RETRY_BACKOFF_SECONDS)


def get_embedder() -> EmbeddingProvider:
    return _embedder(settings.EMBEDDING_PROVIDER, settings.EMBEDDING_BASE_URL,
                     settings.EMBEDDING_API_KEY, settings.EMBEDDING_MODEL,
                     settings.EMBEDDING_DIMENSIONS, settings.EMBEDDING_TIMEOUT_SECONDS,
                     settings.EMBEDDING_MAX_RETRIES, settings.EMBEDDING_RETRY_BACKOFF_SECONDS)
