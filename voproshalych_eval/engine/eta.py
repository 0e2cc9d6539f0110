"""Time left in a run, from the rate items are measured to finish — corrected as the run goes.

The executor's first estimate divided the items left by the items finished per second since the execution
started. Setup (a snapshot, a model load, an index build) and a change of pace (cached embeddings first, LLM
calls later; a CPU-heavy step after quick ones) made it 5–20× off. :class:`ItemRateEta` instead

- starts the clock at the first finished item (setup is not a rate: it is already behind us);
- measures the rate over the most recent items (a window of ``max(min_window, √finished)`` items: wide enough
  to smooth the bursts of concurrent work, narrow enough that a slow-down or a speed-up is followed within a
  few items);
- counts the time since the last finished item as part of the window, so a stall makes the estimate grow
  instead of counting down to zero while nothing finishes;
- gives no estimate (``None``) before two items have finished in this execution: one point is not a rate.
"""

from __future__ import annotations

from bisect import bisect_left
from math import isqrt


class ItemRateEta:
    """Feed it ``observe(t, finished)`` as items finish (``t`` in seconds on any monotonic clock, ``finished``
    the items this execution finished so far); ask ``eta(now, remaining)``.

    ETA = remaining × (now − t_w) / (n_last − n_w), where ``(t_w, n_w)`` is the observation ``window`` items
    before the last one (or the first finished item when fewer are known)."""

    def __init__(self, *, min_window: int = 5) -> None:
        self.min_window = max(1, int(min_window))
        self.times: list[float] = []
        self.counts: list[int] = []

    def observe(self, t: float, finished: int) -> None:
        """Record that ``finished`` items were done by time ``t`` (repeats and non-increasing counts are ignored)."""
        if finished <= 0 or (self.counts and finished <= self.counts[-1]):
            return
        self.times.append(float(t))
        self.counts.append(int(finished))

    def rate(self, now: float) -> float | None:
        """Items per second over the recent window, the time since the last finished item included."""
        if len(self.counts) < 2:
            return None
        last = self.counts[-1]
        window = max(self.min_window, isqrt(last - self.counts[0]))
        i = max(0, bisect_left(self.counts, last - window))
        if i >= len(self.counts) - 1:
            i = len(self.counts) - 2
        items = last - self.counts[i]
        span = max(now, self.times[-1]) - self.times[i]
        return items / span if span > 0 and items > 0 else None

    def eta(self, now: float, remaining: int) -> float | None:
        """Seconds left for ``remaining`` items (0 when none is left; None before the rate is known)."""
        if remaining <= 0:
            return 0.0
        r = self.rate(now)
        return remaining / r if r else None
