r"""Self-consistency of repeated runs (same input, R repeats): answers, embeddings, judge scores.

Every function here compares repeats of the *same* item *with each other*. None of them compares
an answer with the reference answer: that is agreement with the reference, measured by
:func:`exact_match_with_reference` (below), ROUGE/BLEU (``text_overlap``) or semantic similarity
(``similarity``). The earlier benchmark reported a repeat-vs-repeat rate as if it were a match with
the reference; the two are kept apart by name here.

Input shape: one inner sequence per item, holding that item's R repeats.
Failed repeats (``None``/``NaN``) are dropped per item where a function says so.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import combinations

import numpy as np

from voproshalych_eval.metrics.validation import check_matrix, unit_rows

__all__ = [
    "exact_agreement_rate",
    "exact_match_rate",
    "exact_match_with_reference",
    "flip_rate",
    "mean_pairwise_cosine",
    "normalize_whitespace",
    "score_std_per_item",
]


def normalize_whitespace(text: str) -> str:
    """Collapse runs of whitespace to one space and strip the ends (case and punctuation kept)."""
    return " ".join(text.split())


def _valid(values: Sequence[float | bool | None]) -> list[float]:
    out: list[float] = []
    for v in values:
        if v is None:
            continue
        f = float(v)
        if math.isnan(f):
            continue
        out.append(f)
    return out


def exact_match_rate(repeats: Sequence[Sequence[str]]) -> float:
    r"""SELF-consistency of generated text (``response_exact_match_rate``): do repeats coincide?

    For item i with repeats :math:`r_1..r_R` (R >= 2), the share of the :math:`\binom{R}{2}` pairs
    that are identical after whitespace normalisation; then the mean over items:

    .. math:: \text{EM} = \frac{1}{N}\sum_i \binom{R_i}{2}^{-1} \sum_{s<t} \mathbb{1}[\text{norm}(r_s) = \text{norm}(r_t)]

    This is NOT agreement with the reference answer (see :func:`exact_match_with_reference`).
    In [0, 1]; 1.0 means every repeat of every item is word-for-word identical.
    """
    if not repeats:
        raise ValueError("exact_match_rate needs at least one item")
    rates: list[float] = []
    for i, item in enumerate(repeats):
        if len(item) < 2:
            raise ValueError(f"item {i} has {len(item)} repeat(s); self-consistency needs at least 2")
        norm = [normalize_whitespace(t) for t in item]
        pairs = list(combinations(norm, 2))
        rates.append(sum(1 for x, y in pairs if x == y) / len(pairs))
    return math.fsum(rates) / len(rates)


def exact_match_with_reference(predictions: Sequence[str], references: Sequence[str]) -> float:
    """Agreement WITH THE REFERENCE: share of predictions equal to their reference after whitespace
    normalisation. In [0, 1]. (Not a self-consistency metric.)"""
    if len(predictions) != len(references):
        raise ValueError(f"predictions and references differ in length: {len(predictions)} != {len(references)}")
    if not predictions:
        raise ValueError("exact_match_with_reference needs at least one item")
    hits = sum(
        1
        for p, r in zip(predictions, references, strict=True)
        if normalize_whitespace(p) == normalize_whitespace(r)
    )
    return hits / len(predictions)


def mean_pairwise_cosine(vectors_per_item: Sequence[np.ndarray]) -> float:
    r"""Semantic self-consistency (``response_semantic_consistency``).

    ``vectors_per_item[i]`` is an ``(R_i, d)`` array with the embeddings of item i's repeats
    (R_i >= 2). Per item the mean cosine over all pairs of repeats, then the mean over items:

    .. math:: \frac{1}{N}\sum_i \binom{R_i}{2}^{-1}\sum_{s<t}\cos(e_{is}, e_{it})

    In [-1, 1]; 1.0 when all repeats have the same direction. A zero embedding raises ``ValueError``.
    """
    if len(vectors_per_item) == 0:
        raise ValueError("mean_pairwise_cosine needs at least one item")
    item_means: list[float] = []
    for i, vectors in enumerate(vectors_per_item):
        arr = check_matrix(vectors, f"item {i}")
        r = arr.shape[0]
        if r < 2:
            raise ValueError(f"item {i} has {r} repeat(s); self-consistency needs at least 2")
        unit = unit_rows(arr, f"item {i}")
        gram = unit @ unit.T
        upper = gram[np.triu_indices(r, k=1)]
        item_means.append(float(np.clip(upper.mean(), -1.0, 1.0)))
    return math.fsum(item_means) / len(item_means)


def score_std_per_item(
    scores: Sequence[Sequence[float | None]], *, ddof: int = 0
) -> list[float | None]:
    r"""Standard deviation of each item's repeated scores (judge repeatability).

    Failed repeats (``None``/``NaN``) are dropped. With the valid scores :math:`s_1..s_m`:
    :math:`\sigma = \sqrt{\frac{1}{m - \text{ddof}}\sum_j (s_j - \bar s)^2}` (population std by
    default, 0.0 when all repeats agree). ``None`` for an item with fewer than ``max(2, ddof + 1)``
    valid scores. Values are >= 0.
    """
    out: list[float | None] = []
    for item in scores:
        valid = _valid(item)
        if len(valid) < max(2, ddof + 1):
            out.append(None)
        else:
            out.append(float(np.std(np.asarray(valid), ddof=ddof)))
    return out


def flip_rate(verdicts: Sequence[Sequence[bool | None]]) -> float:
    """Share of items whose pass/fail verdict is not constant across repeats (judge instability).

    Failed repeats (``None``) are dropped; items with fewer than 2 valid verdicts are excluded.
    In [0, 1]; 0.0 means every item got the same verdict every time. ``ValueError`` if no item has
    2 valid verdicts.
    """
    flips = 0
    n = 0
    for item in verdicts:
        valid = [bool(v) for v in item if v is not None]
        if len(valid) < 2:
            continue
        n += 1
        if len(set(valid)) > 1:
            flips += 1
    if n == 0:
        raise ValueError("flip_rate: no item has at least 2 valid verdicts")
    return flips / n


def exact_agreement_rate(scores: Sequence[Sequence[float | None]], *, atol: float = 0.0) -> float:
    """Share of items whose repeated scores are all equal (within ``atol``; exact by default).

    Failed repeats (``None``/``NaN``) are dropped; items with fewer than 2 valid scores are excluded.
    In [0, 1]. ``ValueError`` if no item has 2 valid scores.
    """
    agree = 0
    n = 0
    for item in scores:
        valid = _valid(item)
        if len(valid) < 2:
            continue
        n += 1
        if max(valid) - min(valid) <= atol:
            agree += 1
    if n == 0:
        raise ValueError("exact_agreement_rate: no item has at least 2 valid scores")
    return agree / n
