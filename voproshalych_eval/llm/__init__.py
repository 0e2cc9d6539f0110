"""The LLM layer: OpenAI-compatible providers, one client (retries, concurrency, cache, structured output),
prompt templates, generation, and offline stand-ins (heuristic judge, extractive generator).

See ``docs/LLM.md`` for configuration.
"""

from voproshalych_eval.llm.client import (
    Cancelled,
    LLMCallError,
    LLMClient,
    LLMResponse,
    RetryPolicy,
    default_client,
    map_concurrent,
)
from voproshalych_eval.llm.providers import Provider, configured_providers

__all__ = [
    "Cancelled",
    "LLMCallError",
    "LLMClient",
    "LLMResponse",
    "Provider",
    "RetryPolicy",
    "configured_providers",
    "default_client",
    "map_concurrent",
]
