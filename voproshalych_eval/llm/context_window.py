"""The model's context window per endpoint, and contexts cut to fit it.

The window (in tokens) of an endpoint + model is, in order:

1. what the server says: llama.cpp's ``GET /props`` (``default_generation_settings.n_ctx``, or ``n_ctx``) or
   ``GET /v1/models`` (``data[].meta.n_ctx`` / ``n_ctx_train``, ``context_length``, ``max_model_len`` as vLLM
   and OpenRouter report it);
2. else a setting: ``context_window`` of the provider in secrets.toml, else ``VOPROSHALYCH_EVAL_LLM_CONTEXT_WINDOW``;
3. else unknown (None): nothing is cut, and a server that refuses a long prompt yields a counted
   ``context_overflow`` failure.

Token counts are *estimated* from characters (no tokenizer ships with an endpoint): :data:`CHARS_PER_TOKEN` is
deliberately low (Cyrillic text takes more tokens per character than English) and the client lowers it further
per endpoint when a reply's ``usage`` shows more tokens than estimated (:meth:`TokenEstimate.observe`).

:func:`fit_contexts` keeps whole chunks in order while they fit the budget and cuts the first one that does not
(at a word boundary); the result records what was cut (``context_cut``), so items and reports can say so.
"""

from __future__ import annotations

import json
import logging
import math
import threading
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger(__name__)

#: characters per token assumed before any reply was seen (Qwen / Llama tokenizers on Russian: ~2.5–3.5)
CHARS_PER_TOKEN = 2.5
#: tokens kept free besides the reply: chat template, role markers, the schema instruction
TEMPLATE_MARGIN = 96
ENV_WINDOW = "VOPROSHALYCH_EVAL_LLM_CONTEXT_WINDOW"


class TokenEstimate:
    """Characters per token of one endpoint, lowered when a reply's ``usage`` shows more tokens (thread-safe)."""

    def __init__(self, chars_per_token: float = CHARS_PER_TOKEN) -> None:
        self.chars_per_token = chars_per_token
        self._lock = threading.Lock()

    def tokens(self, text_or_chars: str | int) -> int:
        n = text_or_chars if isinstance(text_or_chars, int) else len(text_or_chars)
        return math.ceil(n / self.chars_per_token)

    def observe(self, chars: int, prompt_tokens: int | None) -> None:
        """Lower the ratio when ``prompt_tokens`` of a sent prompt of ``chars`` characters exceeds the estimate."""
        if not prompt_tokens or chars < 200:
            return
        ratio = chars / prompt_tokens
        with self._lock:
            if ratio < self.chars_per_token:
                self.chars_per_token = max(1.0, ratio * 0.95)


def messages_chars(messages: Sequence[dict[str, Any]]) -> int:
    return sum(len(str(m.get("content") or "")) for m in messages)


def _get_json(url: str, timeout: float) -> Any:
    req = urllib.request.Request(url, headers={"Accept": "application/json"})  # noqa: S310 - configured endpoint
    with urllib.request.urlopen(req, timeout=timeout) as r:  # noqa: S310
        return json.load(r)


def _int(v: Any) -> int | None:
    try:
        n = int(v)
    except (TypeError, ValueError):
        return None
    return n if n > 0 else None


def window_from_props(data: Any) -> int | None:
    """``n_ctx`` of llama.cpp's ``/props`` reply."""
    if not isinstance(data, dict):
        return None
    dgs = data.get("default_generation_settings")
    if isinstance(dgs, dict) and _int(dgs.get("n_ctx")):
        return _int(dgs.get("n_ctx"))
    return _int(data.get("n_ctx"))


def window_from_models(data: Any, model: str) -> int | None:
    """The context length ``/v1/models`` reports for ``model`` (llama.cpp ``meta.n_ctx``, vLLM ``max_model_len``,
    OpenRouter ``context_length``)."""
    rows = data.get("data") if isinstance(data, dict) else None
    if not isinstance(rows, list):
        return None
    found = [r for r in rows if isinstance(r, dict) and r.get("id") == model] or (
        [r for r in rows if isinstance(r, dict)] if len(rows) == 1 else [])
    for r in found:
        raw_meta = r.get("meta")
        meta = raw_meta if isinstance(raw_meta, dict) else {}
        for v in (meta.get("n_ctx"), r.get("n_ctx"), r.get("max_model_len"), r.get("context_length"),
                  meta.get("n_ctx_train")):
            if _int(v):
                return _int(v)
    return None


def probe_window(base_url: str, model: str, *, timeout: float = 5.0, headers: dict[str, str] | None = None) -> int | None:
    """The window the server at ``base_url`` (an OpenAI ``.../v1`` URL) reports for ``model``, or None."""
    root = base_url.rstrip("/")
    server = root[: -len("/v1")] if root.endswith("/v1") else root
    for url, read in ((f"{server}/props", window_from_props), (f"{root}/models", None)):
        try:
            data = _get_json(url, timeout)
        except Exception:  # noqa: BLE001 - a server without the route says nothing
            continue
        n = read(data) if read is not None else window_from_models(data, model)
        if n:
            return n
    return None


@dataclass
class Fit:
    """Contexts cut to a budget: what was kept and what the cut removed."""

    contexts: list[str]
    cut: dict[str, Any] | None = None
    fits: bool = True
    budget_tokens: int | None = None
    estimated_tokens: int = 0
    dropped: list[int] = field(default_factory=list)


def fit_contexts(contexts: Sequence[str], budget_tokens: int | None, estimate: TokenEstimate | None = None) -> Fit:
    """``contexts`` within ``budget_tokens`` (None = no limit known: unchanged). Whole chunks in order while they
    fit, the next one cut at a word boundary, the rest dropped; ``cut`` records ``{"window_budget_tokens",
    "kept_chunks", "cut_chunks", "dropped_chunks", "chars_before", "chars_after"}``. A budget below one token
    leaves no room for any context: ``fits`` is False."""
    est = estimate or TokenEstimate()
    ctx = [str(c) for c in contexts]
    total = sum(est.tokens(c) for c in ctx)
    if budget_tokens is None:
        return Fit(ctx, None, True, None, total)
    if budget_tokens < 1:
        return Fit([], None, False, budget_tokens, total)
    if total <= budget_tokens:
        return Fit(ctx, None, True, budget_tokens, total)
    kept: list[str] = []
    used = 0
    n_cut = 0
    for i, c in enumerate(ctx):
        need = est.tokens(c)
        if used + need <= budget_tokens:
            kept.append(c)
            used += need
            continue
        room_chars = int((budget_tokens - used) * est.chars_per_token) - 2  # the " …" mark
        if room_chars >= 40:
            part = c[:room_chars]
            space = part.rfind(" ")
            part = (part[:space] if space > room_chars // 2 else part).rstrip() + " …"
            kept.append(part)
            used += est.tokens(part)
            n_cut = 1
            i += 1
        dropped = list(range(i, len(ctx)))
        cut = {"window_budget_tokens": budget_tokens, "kept_chunks": len(kept) - n_cut, "cut_chunks": n_cut,
               "dropped_chunks": len(dropped), "chars_before": sum(map(len, ctx)),
               "chars_after": sum(map(len, kept))}
        return Fit(kept, cut, bool(kept), budget_tokens, used, dropped)
    return Fit(kept, None, True, budget_tokens, used)  # pragma: no cover - the loop returns when over budget
