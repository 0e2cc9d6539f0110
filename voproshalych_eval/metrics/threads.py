"""How many OpenMP/BLAS threads a numeric step may use (``threadpoolctl``, one controller per process)."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

__all__ = ["limit_threads"]


@lru_cache(maxsize=1)
def _controller() -> Any:
    """One ``threadpoolctl.ThreadpoolController`` per process (building one scans the loaded libraries, ~10 ms)."""
    from threadpoolctl import ThreadpoolController  # heavy: defers threadpoolctl (CLI start)

    return ThreadpoolController()


def limit_threads(limit: int | None) -> Any:
    """A context manager capping every OpenMP/BLAS pool at ``limit`` threads (``None``: no change).

    Small products and eigenproblems run faster on one thread: their parallel chunks do not pay for the
    threads, and on a shared machine the spinning threads cost several times the work itself."""
    return _controller().limit(limits=limit)
