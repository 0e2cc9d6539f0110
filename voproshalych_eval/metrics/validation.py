"""Input checks shared by every metric (in the spirit of ``sklearn.utils.validation``).

One function per kind of input, so every metric rejects bad input the same way and with the same
words: a ``ValueError`` naming the argument (and the row or item) — never a silent 0, a NaN or a
division by a fudge factor. A zero vector has no direction: every cosine-based metric refuses it
through :func:`unit_rows` / :func:`unit_vector` with :data:`ZERO_VECTOR`.
"""

from __future__ import annotations

from collections.abc import Sized
from typing import Any

import numpy as np

__all__ = [
    "ZERO_VECTOR",
    "check_consistent_length",
    "check_matrix",
    "check_positive_int",
    "check_same_shape",
    "check_vector",
    "nonzero_norms",
    "unit_rows",
    "unit_vector",
]

#: the one wording of the zero-vector error (an empty text or a failed embedding usually causes it)
ZERO_VECTOR = "is a zero vector: cosine is undefined for it (an empty text or a failed embedding?)"

# rows checked at a time for NaN/inf (bounded memory on large matrices)
_CHECK_ROWS = 65_536


def check_positive_int(value: Any, name: str = "k") -> int:
    """``value`` as an ``int`` >= 1 (booleans refused)."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def check_consistent_length(*named: tuple[str, Sized]) -> int:
    """The common length of ``(name, sequence)`` pairs; ``ValueError`` naming them when they differ."""
    lengths = {name: len(seq) for name, seq in named}
    if len(set(lengths.values())) > 1:
        shown = ", ".join(f"{n}={v}" for n, v in lengths.items())
        raise ValueError(f"inputs differ in length: {shown}")
    return next(iter(lengths.values()), 0)


def check_vector(x: Any, name: str = "x") -> np.ndarray:
    """``x`` as a non-empty, finite, 1-D float64 array."""
    arr = np.asarray(x, dtype=float)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-D vector, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name} is empty")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinity")
    return arr


def check_matrix(X: Any, name: str = "X", *, min_rows: int = 1) -> np.ndarray:
    """``X`` as a C-contiguous float64 ``(N, D)`` array with at least ``min_rows`` rows, one column and no
    NaN/inf (the message names the first bad row). No copy when it already is one."""
    arr = np.asarray(X)
    if arr.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array of shape (N, D), got shape {arr.shape}")
    if arr.shape[0] < min_rows or arr.shape[1] < 1:
        raise ValueError(f"{name} must have at least {min_rows} row(s) and one column, got shape {arr.shape}")
    if not (np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer) or arr.dtype == np.bool_):
        raise ValueError(f"{name} must be numeric, got dtype {arr.dtype}")
    if np.issubdtype(arr.dtype, np.floating):
        for s in range(0, arr.shape[0], _CHECK_ROWS):
            bad = ~np.isfinite(arr[s : s + _CHECK_ROWS]).all(axis=1)
            if bad.any():
                raise ValueError(f"row {s + int(np.argmax(bad))} of {name} contains NaN or inf")
    return np.ascontiguousarray(arr, dtype=np.float64)


def check_same_shape(a: np.ndarray, b: np.ndarray, names: tuple[str, str] = ("a", "b")) -> None:
    if a.shape != b.shape:
        if a.ndim == 1 and b.ndim == 1:
            raise ValueError(f"{names[0]} and {names[1]} differ in dimension: {a.shape[0]} != {b.shape[0]}")
        raise ValueError(f"{names[0]} and {names[1]} differ in shape: {a.shape} != {b.shape}")


def nonzero_norms(norms: np.ndarray, name: str = "X") -> np.ndarray:
    """``norms`` (row L2 norms) unchanged; ``ValueError`` naming the first zero row of ``name``."""
    zero = norms == 0.0
    if np.any(zero):
        raise ValueError(f"row {int(np.argmax(zero))} of {name} {ZERO_VECTOR}")
    return norms


def unit_rows(X: np.ndarray, name: str = "X", *, norms: np.ndarray | None = None) -> np.ndarray:
    """Rows of a checked matrix divided by their L2 norms; a zero row raises (see :data:`ZERO_VECTOR`)."""
    n = np.linalg.norm(X, axis=1) if norms is None else norms
    return X / nonzero_norms(n, name)[:, None]


def unit_vector(x: np.ndarray, name: str = "x") -> np.ndarray:
    """A checked vector divided by its L2 norm; a zero vector raises (see :data:`ZERO_VECTOR`)."""
    n = float(np.linalg.norm(x))
    if n == 0.0:
        raise ValueError(f"{name} {ZERO_VECTOR}")
    return x / n
