"""The LLM response cache (``eval.llm_cache``) and the call log (``eval.llm_calls``).

The cache key is the sha256 of the canonical JSON of (provider, model, messages, parameters); only
successful, parsed replies are cached. Without an engine an in-process dict stands in. The call log
records latency, tokens, status, attempts and whether the reply came from the cache — never a key,
a URL with credentials or a prompt.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from typing import Any

from sqlalchemy import Engine, text

log = logging.getLogger(__name__)


def cache_key(model: str, messages: list[dict[str, Any]], params: dict[str, Any]) -> str:
    """sha256 hex of the canonical JSON of the request."""
    blob = json.dumps({"model": model, "messages": messages, "params": params}, ensure_ascii=False, sort_keys=True)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class LLMCache:
    """Get/put of cached replies; database-backed when an engine is given, else in memory."""

    def __init__(self, engine: Engine | None = None) -> None:
        self.engine = engine
        self._mem: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()

    def get(self, key: str) -> dict[str, Any] | None:
        if self.engine is None:
            with self._lock:
                return self._mem.get(key)
        try:
            with self.engine.connect() as conn:
                row = conn.execute(text("SELECT response FROM eval.llm_cache WHERE key = :k"), {"k": key}).first()
        except Exception:  # noqa: BLE001 - the cache is an optimisation, never a failure
            log.warning("LLM cache lookup failed", exc_info=True)
            return None
        return dict(row[0]) if row else None

    def put(self, key: str, model: str, request: dict[str, Any], response: dict[str, Any]) -> None:
        if self.engine is None:
            with self._lock:
                self._mem[key] = response
            return
        try:
            with self.engine.begin() as conn:
                conn.execute(
                    text(
                        "INSERT INTO eval.llm_cache(key, model, request, response) VALUES "
                        "(:k, :m, CAST(:req AS jsonb), CAST(:resp AS jsonb)) "
                        "ON CONFLICT (key) DO UPDATE SET response = EXCLUDED.response, created_at = now()"
                    ),
                    {
                        "k": key,
                        "m": model,
                        "req": json.dumps(request, ensure_ascii=False),
                        "resp": json.dumps(response, ensure_ascii=False),
                    },
                )
        except Exception:  # noqa: BLE001
            log.warning("LLM cache write failed", exc_info=True)

    def clear(self) -> int:
        """Delete every cached reply; returns how many were removed."""
        if self.engine is None:
            with self._lock:
                n = len(self._mem)
                self._mem.clear()
                return n
        with self.engine.begin() as conn:
            return int(conn.execute(text("DELETE FROM eval.llm_cache")).rowcount or 0)


class CallLog:
    """Appends one row per call to ``eval.llm_calls`` (no-op without an engine)."""

    def __init__(self, engine: Engine | None = None) -> None:
        self.engine = engine

    def record(self, **row: Any) -> None:
        if self.engine is None:
            return
        row.setdefault("run_id", None)
        row.setdefault("error", None)
        try:
            with self.engine.begin() as conn:
                conn.execute(
                    text(
                        "INSERT INTO eval.llm_calls(run_id, provider, model, purpose, status, attempts, latency_ms, "
                        "prompt_tokens, completion_tokens, cached, error) VALUES (:run_id, :provider, :model, "
                        ":purpose, :status, :attempts, :latency_ms, :prompt_tokens, :completion_tokens, :cached, :error)"
                    ),
                    row,
                )
        except Exception:  # noqa: BLE001
            log.warning("LLM call log write failed", exc_info=True)


def run_call_rows(engine: Engine, run_id: int) -> list[Any]:
    """Per model, the counts and token sums of one run's logged calls (for :func:`voproshalych_eval.llm.prices.run_usage`):
    ``model, calls, cached, prompt_tokens, completion_tokens, no_usage, retries, recovered, failed`` (uncached calls
    only for tokens, retries and recovered)."""
    with engine.connect() as conn:
        return list(conn.execute(
            text(
                "SELECT model, count(*), count(*) FILTER (WHERE cached), "
                "coalesce(sum(prompt_tokens) FILTER (WHERE NOT cached), 0), "
                "coalesce(sum(completion_tokens) FILTER (WHERE NOT cached), 0), "
                "count(*) FILTER (WHERE NOT cached AND status = 'ok' AND prompt_tokens IS NULL "
                "AND completion_tokens IS NULL), "
                "coalesce(sum(greatest(attempts - 1, 0)) FILTER (WHERE NOT cached), 0), "
                "count(*) FILTER (WHERE NOT cached AND status = 'ok' AND attempts > 1), "
                "count(*) FILTER (WHERE status <> 'ok') "
                "FROM eval.llm_calls WHERE run_id = :r GROUP BY model ORDER BY model"
            ),
            {"r": run_id},
        ).all())
