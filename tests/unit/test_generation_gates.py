"""Quality gates of generated items against hand-computed values."""

from __future__ import annotations

import numpy as np
import pytest

from voproshalych_eval.generation import gates as G


def test_verbatim_overlap_hand_computed() -> None:
    assert G.verbatim_overlap("a b c d", "x a b c y") == pytest.approx(3 / 4)
    assert G.verbatim_overlap("Сроки пересдач?", "Сроки пересдач в 2025 году.") == 1.0
    assert G.verbatim_overlap("Когда платить за общежитие?", "Оплата общежития до 10 числа.") == 0.0
    # order matters: the same words in another order are not a copy
    assert G.verbatim_overlap("c b a", "a b c") == pytest.approx(1 / 3)
    assert G.verbatim_overlap("", "a b") == 0.0
    assert G.verbatim_overlap("ЁЖИК бежит", "ежик бежит домой") == 1.0  # lower-case, ё -> е


def test_content_containment_and_offline_answered() -> None:
    stop = frozenset({"как", "а"})
    assert G.content_containment("Как оплатить общежитие", "Общежитие оплачивают до 10 числа", stop) == pytest.approx(0.5)
    assert G.content_containment("как а", "что угодно", stop) == 0.0
    assert G.answered_offline(0.75, 0.6) and not G.answered_offline(0.74, 0.9) and not G.answered_offline(1.0, 0.59)


def test_near_duplicates_greedy_in_order() -> None:
    v = np.array([[1, 0], [0.99, 0.141], [0, 1], [1, 0.001], [0.6, 0.8]], dtype=np.float32)
    # cos(v0, v1) = 0.99; cos(v0, v3) ~ 1; v4 vs v2 = 0.8
    out = G.near_duplicates(v, threshold=0.95)
    assert out[0] is None and out[2] is None and out[4] is None
    assert out[1] is not None and out[1].index == 0 and not out[1].existing and out[1].cosine == pytest.approx(0.99, abs=1e-3)
    assert out[3] is not None and out[3].index == 0
    existing = np.array([[0, 2]], dtype=np.float32)  # parallel to v2 (unnormalised on purpose)
    out = G.near_duplicates(v, threshold=0.95, existing=existing)
    assert out[2] is not None and out[2].existing and out[2].index == 0 and out[2].cosine == pytest.approx(1.0)
    # the kept set has no pair above the threshold
    kept = v[[i for i, d in enumerate(G.near_duplicates(v, threshold=0.95)) if d is None]]
    assert G.max_pairwise_cosine(kept) < 0.95
    with pytest.raises(ValueError):
        G.near_duplicates(v, threshold=0.0)
    with pytest.raises(ValueError, match="-d"):
        G.near_duplicates(v, threshold=0.9, existing=np.ones((1, 3)))
    assert G.near_duplicates(np.zeros((0, 2)), threshold=0.9) == []


def test_select_kept_quota_coverage_and_spares() -> None:
    cands = [
        ("s0001", "factual", False, ("p1",)),
        ("s0002", "factual", False, ("p1",)),
        ("s0003", "unanswerable", False, ()),
        ("s0004", "factual", True, ("p2",)),  # a spare, but the only question of page p2
        ("s0005", "unanswerable", True, ()),
    ]
    chosen = G.select_kept(cands, size=3, mix={"factual": 2, "unanswerable": 1})
    assert chosen == ["s0001", "s0003", "s0004"]  # p2 covered by its spare; quotas 2 + 1 respected
    # a type short of candidates leaves room that other types fill
    chosen = G.select_kept(cands[:2], size=2, mix={"factual": 1, "unanswerable": 1})
    assert chosen == ["s0001", "s0002"]
    assert G.select_kept([], size=5, mix={"factual": 1}) == []


def test_select_kept_most_constrained_page_first() -> None:
    # p2's only candidate is multi_chunk; p1 could take factual or multi_chunk: the greedy in plan order would
    # spend the single multi_chunk quota on p1 and leave p2 uncovered
    cands = [
        ("s0001", "multi_chunk", False, ("p1", "p3")),
        ("s0002", "factual", False, ("p1",)),
        ("s0003", "multi_chunk", False, ("p2",)),
    ]
    chosen = G.select_kept(cands, size=2, mix={"factual": 1, "multi_chunk": 1})
    assert chosen == ["s0002", "s0003"]
