"""A requests-per-second limit shared by the worker threads of one run."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


class RateLimiter:
    """At most ``rps`` requests per second: each caller takes the next free slot, slots ``1 / rps`` apart.

    A token bucket of capacity one: the first call goes at once, every later call waits until
    ``previous slot + 1 / rps`` (or goes at once when that moment has passed). Slots are reserved under a
    lock and slept outside it, so N threads end up spaced ``1 / rps`` apart in the order they asked.
    ``clock`` and ``sleep`` are injectable (tests drive a fake clock; no wall-clock assertions).
    """

    def __init__(
        self,
        rps: float,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not rps > 0:
            raise ValueError(f"rps must be positive, got {rps!r}")
        self.rps = float(rps)
        self.interval = 1.0 / self.rps
        self._clock, self._sleep = clock, sleep
        self._next: float | None = None
        self._lock = threading.Lock()

    def reserve(self) -> float:
        """Reserve the next slot; returns how long the caller must wait for it (seconds, >= 0)."""
        with self._lock:
            now = self._clock()
            slot = now if self._next is None or self._next <= now else self._next
            self._next = slot + self.interval
            return slot - now

    def acquire(self) -> float:
        """Wait for the next slot; returns the seconds waited."""
        wait = self.reserve()
        if wait > 0:
            self._sleep(wait)
        return wait
