"""Answer generation from a question and contexts: an LLM with the production bot prompt, or offline an
extractive generator (:class:`voproshalych_eval.llm.offline.ExtractiveGenerator`).

Contexts are passed in full; any truncation is explicit (``max_context_chars``) and reported in
``Generation.truncated``. An empty reply of the model is an empty answer (``text == ""``, no error), never a
failed generation.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from sqlalchemy import Engine

from voproshalych_eval.config import get_settings
from voproshalych_eval.llm.client import LLMCallError, LLMClient, default_client
from voproshalych_eval.llm.prompts import prompt_versions, render


@dataclass
class Generation:
    text: str
    model: str
    offline: bool
    latency_s: float
    tokens: dict[str, int | None] = field(default_factory=dict)
    error: str | None = None
    truncated: bool = False
    cached: bool = False

    @property
    def ok(self) -> bool:
        return self.error is None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class LLMGenerator:
    """Generation through :class:`LLMClient` with the production bot's system prompt (or a given one)."""

    offline = False

    def __init__(self, client: LLMClient, model: str | None = None, *, system_prompt: str | None = None,
                 lang: str = "ru", temperature: float = 0.0, max_tokens: int = 1000,
                 max_context_chars: int | None = None, use_cache: bool = True) -> None:
        self.client = client
        self.model = model or client.models[0]
        self.lang = lang
        self.system_prompt = system_prompt if system_prompt is not None else render("generation_system", lang=lang)
        self.custom_system_prompt = system_prompt is not None
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.max_context_chars = max_context_chars
        self.use_cache = use_cache
        self.name = self.model

    def prompts(self) -> dict[str, str]:
        out = prompt_versions(["generation_user"], self.lang)
        out["generation_system"] = "custom" if self.custom_system_prompt else prompt_versions(["generation_system"], self.lang)["generation_system"]
        return out

    def messages(self, question: str, contexts: list[str]) -> tuple[list[dict[str, str]], bool]:
        context = "\n\n".join(contexts)
        truncated = False
        if self.max_context_chars is not None and len(context) > self.max_context_chars:
            context, truncated = context[: self.max_context_chars], True
        msgs = [
            {"role": "system", "content": self.system_prompt},
            {"role": "user", "content": render("generation_user", lang=self.lang, question=question, context=context)},
        ]
        return msgs, truncated

    def generate(self, question: str, contexts: list[str], *, run_id: int | None = None,
                 use_cache: bool | None = None, cache_salt: str | None = None) -> Generation:
        msgs, truncated = self.messages(question, contexts)
        t0 = time.perf_counter()
        try:
            r = self.client.complete(
                msgs, model=self.model, temperature=self.temperature, max_tokens=self.max_tokens,
                use_cache=self.use_cache if use_cache is None else use_cache, purpose="generation", run_id=run_id,
                cache_salt=cache_salt,
            )
        except LLMCallError as exc:
            if exc.kind == "parse_error" and not (exc.raw_text or "").strip():
                # the model answered with an empty text: an answer (scored as the bad answer it is, counted as
                # ``empty_answer``), never a parse failure of the generation
                return Generation("", exc.model or self.model, False, time.perf_counter() - t0, {}, None, truncated)
            return Generation("", self.model, False, time.perf_counter() - t0, {}, f"{exc.kind}: {exc.message}",
                              truncated)
        return Generation(r.text.strip(), r.model, False, r.latency_s,
                          {"prompt": r.prompt_tokens, "completion": r.completion_tokens}, None, truncated, r.cached)

    async def agenerate(self, question: str, contexts: list[str], **kwargs: Any) -> Generation:
        return await asyncio.get_running_loop().run_in_executor(None, lambda: self.generate(question, contexts, **kwargs))


def get_generator(settings: Any = None, engine: Engine | None = None, *, model: str | None = None,
                  system_prompt: str | None = None, offline: bool | None = None, embedder: Any = None,
                  client: LLMClient | None = None, **kwargs: Any) -> Any:
    """An :class:`LLMGenerator` when a provider is configured (and ``offline`` is not True), else an
    :class:`~voproshalych_eval.llm.offline.ExtractiveGenerator` (``.offline == True``)."""
    if settings is None:
        settings = get_settings()
    lang = kwargs.pop("lang", None) or getattr(settings, "language", "ru") or "ru"
    if offline is not True:
        client = client or default_client(settings, engine)
        if client is not None:
            return LLMGenerator(client, model, system_prompt=system_prompt, lang=lang, **kwargs)
        if offline is False:
            raise RuntimeError("No LLM provider is configured (see docs/LLM.md); use the offline generator instead.")
    # heavy: defers numpy (via llm.offline)
    from voproshalych_eval.llm.offline import ExtractiveGenerator, default_embedder

    return ExtractiveGenerator(embedder or default_embedder(settings, engine))
