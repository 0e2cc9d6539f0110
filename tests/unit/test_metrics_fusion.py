"""Reciprocal rank fusion: formula, duplicates, ties, cut-off, weights."""

from __future__ import annotations

import pytest

from voproshalych_eval.metrics.fusion import reciprocal_rank_fusion


def test_scores_follow_the_formula() -> None:
    fused = dict(reciprocal_rank_fusion([["a", "b", "c"], ["b", "d"]], rrf_k=60))
    assert fused["a"] == pytest.approx(1 / 61)
    assert fused["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert fused["c"] == pytest.approx(1 / 63)
    assert fused["d"] == pytest.approx(1 / 62)


def test_order_is_by_score_then_best_rank_then_first_appearance() -> None:
    out = [d for d, _ in reciprocal_rank_fusion([["a", "b", "c"], ["b", "d"]])]
    assert out == ["b", "a", "d", "c"]  # a (1/61) and d (1/62): a first; c last
    # exact tie in score and in best rank: first appearance decides (deterministic)
    tie = [d for d, _ in reciprocal_rank_fusion([["x", "y"], ["y", "x"]])]
    assert tie == ["x", "y"]


def test_duplicates_count_once_at_their_best_rank() -> None:
    fused = dict(reciprocal_rank_fusion([["a", "a", "b"]], rrf_k=10))
    assert fused["a"] == pytest.approx(1 / 11)
    assert fused["b"] == pytest.approx(1 / 13)  # b keeps its own position (3)


def test_cut_off_weights_and_empty_inputs() -> None:
    assert len(reciprocal_rank_fusion([[1, 2, 3], [4, 5]], k=2)) == 2
    w = dict(reciprocal_rank_fusion([["a"], ["b"]], weights=[2.0, 1.0], rrf_k=1))
    assert w["a"] == pytest.approx(1.0) and w["b"] == pytest.approx(0.5)
    assert reciprocal_rank_fusion([[], []]) == []
    assert reciprocal_rank_fusion([]) == []
    only_one = reciprocal_rank_fusion([[], [7, 8]])
    assert [d for d, _ in only_one] == [7, 8]


@pytest.mark.parametrize(
    "kwargs",
    [{"rrf_k": 0}, {"k": 0}, {"k": True}, {"weights": [1.0]}, {"weights": [1.0, -1.0]}],
)
def test_invalid_arguments(kwargs: dict) -> None:  # type: ignore[type-arg]
    with pytest.raises(ValueError):
        reciprocal_rank_fusion([["a"], ["b"]], **kwargs)
