"""Shared input validation: every cosine-based metric refuses a zero vector the same way; seed-001 formula."""

from __future__ import annotations

import numpy as np
import pytest

from voproshalych_eval.metrics import validation
from voproshalych_eval.metrics.consistency import mean_pairwise_cosine
from voproshalych_eval.metrics.geometry import embedding_space_metrics
from voproshalych_eval.metrics.similarity import (
    cosine_similarity,
    cosine_to_rows,
    response_relevancy_score,
    rowwise_cosine,
)


@pytest.mark.parametrize("call", [
    lambda: cosine_similarity([0.0, 0.0], [1.0, 0.0]),
    lambda: rowwise_cosine([[1.0, 0.0], [0.0, 0.0]], [[1.0, 0.0], [1.0, 1.0]]),
    lambda: mean_pairwise_cosine([np.array([[1.0, 0.0], [0.0, 0.0]])]),
    lambda: embedding_space_metrics(np.array([[1.0, 0.0], [0.0, 0.0], [0.0, 1.0]]), k=1, metric="cosine"),
    lambda: response_relevancy_score([1.0, 0.0], [[0.0, 0.0]]),
    lambda: response_relevancy_score([0.0, 0.0], [[1.0, 0.0]]),
])
def test_zero_vector_is_refused_with_one_wording(call) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match="is a zero vector: cosine is undefined"):
        call()


def test_checks_name_the_argument_and_row() -> None:
    with pytest.raises(ValueError, match="row 1 of X contains NaN"):
        validation.check_matrix([[1.0, 2.0], [np.nan, 1.0]])
    with pytest.raises(ValueError, match="k must be a positive integer, got True"):
        validation.check_positive_int(True)
    with pytest.raises(ValueError, match="a=2, b=3"):
        validation.check_consistent_length(("a", [1, 2]), ("b", [1, 2, 3]))
    with pytest.raises(ValueError, match="differ in dimension: 2 != 3"):
        cosine_to_rows([1.0, 0.0], [[1.0, 0.0, 0.0]])


def test_response_relevancy_is_the_mean_cosine_with_negatives_at_zero() -> None:
    q = [1.0, 0.0]
    gen = [[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]]  # cos 1, 0, -1
    score, cos = response_relevancy_score(q, gen)
    assert cos == pytest.approx([1.0, 0.0, -1.0])
    assert score == pytest.approx(1.0 / 3.0)
    assert response_relevancy_score(q, gen, noncommittal=True)[0] == 0.0
