"""Who spent which tokens: a per-model meter the LLM client feeds while a run's item is being worked on.

The executor opens :func:`metering` around each item's work (in the worker thread); every
:meth:`LLMClient.complete <voproshalych_eval.llm.client.LLMClient.complete>` inside it adds its tokens to
that meter and tags its ``eval.llm_calls`` row with the run id. Progress snapshots turn the meter into
tokens and money so far (:func:`voproshalych_eval.llm.prices.summarize_usage`); a finished run's totals
come from the call log (:func:`voproshalych_eval.llm.prices.run_usage`), so resumed runs count every
execution.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from contextvars import ContextVar


class UsageMeter:
    """Thread-safe per-model counts: calls, cached calls, prompt/completion tokens, calls without usage."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._models: dict[str, dict[str, int]] = {}
        self._retries: dict[str, int] = {}
        self._recovered: dict[str, int] = {}

    def seed(self, per_model: dict[str, dict[str, int]]) -> None:
        """Start from what earlier executions of the run spent (a resume reports totals over the whole run)."""
        with self._lock:
            for model, used in per_model.items():
                m = self._models.setdefault(
                    model, {"calls": 0, "cached": 0, "prompt_tokens": 0, "completion_tokens": 0, "no_usage": 0})
                for k in m:
                    m[k] += int(used.get(k) or 0)

    def retry(self, kind: str) -> None:
        """One retried request (after a ``kind`` error: ``timeout``, ``rate_limited``, ...)."""
        with self._lock:
            self._retries[kind] = self._retries.get(kind, 0) + 1

    def recovered(self, kind: str) -> None:
        """One call that succeeded after a retried ``kind`` error (a recovered timeout, ...)."""
        with self._lock:
            self._recovered[kind] = self._recovered.get(kind, 0) + 1

    def retries(self) -> dict[str, dict[str, int]]:
        """``{"retried": {kind: n}, "recovered": {kind: n}}`` of this execution."""
        with self._lock:
            return {"retried": dict(sorted(self._retries.items())), "recovered": dict(sorted(self._recovered.items()))}

    def add(self, model: str, prompt_tokens: int | None, completion_tokens: int | None, *, cached: bool) -> None:
        with self._lock:
            m = self._models.setdefault(
                model, {"calls": 0, "cached": 0, "prompt_tokens": 0, "completion_tokens": 0, "no_usage": 0})
            m["calls"] += 1
            if cached:
                m["cached"] += 1
                return
            if prompt_tokens is None and completion_tokens is None:
                m["no_usage"] += 1
            m["prompt_tokens"] += int(prompt_tokens or 0)
            m["completion_tokens"] += int(completion_tokens or 0)

    def snapshot(self) -> dict[str, dict[str, int]]:
        with self._lock:
            return {k: dict(v) for k, v in self._models.items()}

    @property
    def tokens(self) -> int:
        with self._lock:
            return sum(v["prompt_tokens"] + v["completion_tokens"] for v in self._models.values())


_current: ContextVar[tuple[UsageMeter | None, int | None] | None] = ContextVar("llm_usage_meter", default=None)


@contextlib.contextmanager
def metering(meter: UsageMeter | None, run_id: int | None = None) -> Iterator[UsageMeter | None]:
    """LLM calls made inside (this thread / task) count on ``meter`` and are logged under ``run_id``."""
    token = _current.set((meter, run_id))
    try:
        yield meter
    finally:
        _current.reset(token)


def current() -> tuple[UsageMeter | None, int | None]:
    """The meter and run id in force here, or ``(None, None)``."""
    return _current.get() or (None, None)

