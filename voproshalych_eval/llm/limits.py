"""Requests in flight per provider, one limit per process.

Every :class:`~voproshalych_eval.llm.client.LLMClient` of a process that talks to the same endpoint shares one
:class:`ProviderLimit`: a generator and a judge built separately (Tier 2, Tier 3) together never send more than
the configured number of requests to a provider at once.

The limit is the one concurrency setting (``concurrency=`` of a client, ``--concurrency`` of a command, else
``VOPROSHALYCH_EVAL_LLM_CONCURRENCY`` / ``[llm] concurrency``, else 8). An explicit setting wins over a client
built later with the default: a judge run asked for 32 keeps 32 even if another part builds a client without
saying.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

DEFAULT_CONCURRENCY = 8


class ProviderLimit:
    """A resizable bound on requests in flight (a condition variable, not a fixed semaphore)."""

    def __init__(self, capacity: int = DEFAULT_CONCURRENCY) -> None:
        self._cond = threading.Condition()
        self.capacity = max(1, int(capacity))
        self.explicit = False
        self.in_flight = 0
        self.max_in_flight = 0

    def configure(self, capacity: int, *, explicit: bool) -> None:
        """Set the bound; a default (``explicit=False``) never overrides an explicit setting."""
        with self._cond:
            if explicit or not self.explicit:
                self.capacity = max(1, int(capacity))
                self.explicit = self.explicit or explicit
                self._cond.notify_all()

    @contextmanager
    def slot(self) -> Iterator[None]:
        with self._cond:
            while self.in_flight >= self.capacity:
                self._cond.wait()
            self.in_flight += 1
            if self.in_flight > self.max_in_flight:
                self.max_in_flight = self.in_flight
        try:
            yield
        finally:
            with self._cond:
                self.in_flight -= 1
                self._cond.notify()


_LIMITS: dict[str, ProviderLimit] = {}
_LOCK = threading.Lock()


def limit_for(endpoint: str) -> ProviderLimit:
    """The process-wide limit of an endpoint (scheme, host, port, path; no credentials)."""
    with _LOCK:
        lim = _LIMITS.get(endpoint)
        if lim is None:
            lim = _LIMITS[endpoint] = ProviderLimit()
        return lim


def reset() -> None:
    """Forget every limit (tests)."""
    with _LOCK:
        _LIMITS.clear()
