"""Tests of voproshalych_eval.metrics.similarity."""

from __future__ import annotations

import math

import numpy as np
import pytest

from voproshalych_eval.metrics.similarity import (
    cosine_similarity,
    dot_similarity,
    euclidean_distance,
    is_unit_norm,
    rowwise_cosine,
    semantic_similarity_score,
)


def test_cosine_hand_computed() -> None:
    assert cosine_similarity([1, 0], [0, 1]) == pytest.approx(0.0)
    assert cosine_similarity([1, 0], [2, 0]) == pytest.approx(1.0)
    assert cosine_similarity([1, 0], [-3, 0]) == pytest.approx(-1.0)
    assert cosine_similarity([1, 1], [1, 0]) == pytest.approx(1 / math.sqrt(2))
    assert cosine_similarity(np.array([3.0, 4.0]), np.array([4.0, 3.0])) == pytest.approx(24 / 25)


def test_cosine_range_on_random_vectors() -> None:
    rng = np.random.default_rng(0)
    for _ in range(50):
        a, b = rng.normal(size=16), rng.normal(size=16)
        assert -1.0 <= cosine_similarity(a, b) <= 1.0
    v = rng.normal(size=32)
    assert cosine_similarity(v, v) <= 1.0  # clipped despite rounding


def test_zero_vector_raises_clear_error() -> None:
    with pytest.raises(ValueError, match="zero vector"):
        cosine_similarity([0, 0], [1, 0])
    with pytest.raises(ValueError, match="zero vector"):
        semantic_similarity_score([1, 0], [0, 0])
    with pytest.raises(ValueError, match="row 1 of A is a zero vector"):
        rowwise_cosine([[1, 0], [0, 0]], [[1, 0], [1, 1]])


def test_bad_shapes_raise() -> None:
    with pytest.raises(ValueError):
        cosine_similarity([1, 0, 0], [1, 0])
    with pytest.raises(ValueError):
        cosine_similarity([[1, 0]], [[1, 0]])
    with pytest.raises(ValueError):
        cosine_similarity([], [])
    with pytest.raises(ValueError):
        cosine_similarity([float("nan"), 1.0], [1.0, 1.0])
    with pytest.raises(ValueError):
        rowwise_cosine([[1, 0]], [[1, 0], [0, 1]])
    with pytest.raises(ValueError):
        rowwise_cosine([1, 0], [1, 0])


def test_rowwise_cosine_matches_pairwise() -> None:
    rng = np.random.default_rng(1)
    A, B = rng.normal(size=(7, 5)), rng.normal(size=(7, 5))
    sims = rowwise_cosine(A, B)
    assert sims.shape == (7,)
    expected = [cosine_similarity(a, b) for a, b in zip(A, B, strict=True)]
    np.testing.assert_allclose(sims, expected, atol=1e-12)
    assert np.all((sims >= -1) & (sims <= 1))


def test_euclidean_distance() -> None:
    assert euclidean_distance([0, 0], [3, 4]) == pytest.approx(5.0)
    assert euclidean_distance([1, 2], [1, 2]) == 0.0
    # On unit vectors: d^2 = 2 - 2 cos.
    rng = np.random.default_rng(2)
    a, b = rng.normal(size=8), rng.normal(size=8)
    a, b = a / np.linalg.norm(a), b / np.linalg.norm(b)
    assert euclidean_distance(a, b) ** 2 == pytest.approx(2 - 2 * cosine_similarity(a, b))
    assert 0.0 <= euclidean_distance(a, b) <= 2.0


def test_dot_equals_cosine_on_unit_vectors_only() -> None:
    rng = np.random.default_rng(3)
    a, b = rng.normal(size=8), rng.normal(size=8)
    assert not is_unit_norm(a)
    assert dot_similarity(a, b) != pytest.approx(cosine_similarity(a, b))
    ua, ub = a / np.linalg.norm(a), b / np.linalg.norm(b)
    assert is_unit_norm(np.stack([ua, ub]))
    assert dot_similarity(ua, ub) == pytest.approx(cosine_similarity(ua, ub))


def test_semantic_similarity_score_threshold() -> None:
    a, b = [1.0, 1.0], [1.0, 0.0]
    raw = semantic_similarity_score(a, b)
    assert raw == pytest.approx(1 / math.sqrt(2))
    assert semantic_similarity_score(a, b, threshold=0.7) == 1.0
    assert semantic_similarity_score(a, b, threshold=0.71) == 0.0
    assert semantic_similarity_score(b, b, threshold=1.0) == 1.0
