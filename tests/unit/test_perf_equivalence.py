"""Issue 28 speed-ups give the results of the code they replaced (float64 near-duplicate scan, uncached terms)."""

from __future__ import annotations

import numpy as np
import pytest

from voproshalych_eval.analytics import text_ru
from voproshalych_eval.metrics.geometry import near_duplicate_pairs


def _float64_pairs(X: np.ndarray, threshold: float) -> list[tuple[int, int, float]]:
    """The scan before issue 28: the full float64 cosine matrix, upper triangle, sorted by similarity."""
    U = X / np.linalg.norm(X, axis=1, keepdims=True)
    S = U @ U.T
    i, j = np.nonzero(np.triu(np.greater_equal(S, threshold), 1))
    s = np.minimum(S[i, j], 1.0)
    order = np.lexsort((j, i, -s))
    return [(int(i[o]), int(j[o]), float(s[o])) for o in order]


@pytest.mark.parametrize("threshold", [0.92, 0.95, 0.5])
def test_near_duplicate_pairs_float32_tiles_match_float64_scan(threshold: float) -> None:
    rng = np.random.default_rng(3)
    base = rng.normal(size=(300, 64))
    # near-copies at several distances, some within 1e-4 of the threshold (float32 alone would misjudge them)
    noise = rng.normal(size=(300, 64))
    X = np.vstack([base, base + 0.05 * noise, base + 0.3 * noise[::-1]])
    a, b = X[0] / np.linalg.norm(X[0]), rng.normal(size=64)
    b -= (b @ a) * a
    b /= np.linalg.norm(b)
    for eps in (-3e-5, -1e-7, 1e-7, 3e-5):  # exactly around the threshold
        c = threshold + eps
        X = np.vstack([X, c * a + np.sqrt(1 - c * c) * b])
    got = near_duplicate_pairs(X, threshold=threshold, block_size=128, limit=10**7)
    want = _float64_pairs(X, threshold)
    assert [(i, j) for i, j, _ in got] == [(i, j) for i, j, _ in want]
    assert np.allclose([s for *_, s in got], [s for *_, s in want], rtol=0, atol=1e-12)
    assert len(got) > 300  # the planted copies were found


def test_terms_cached_equals_uncached_and_is_not_shared() -> None:
    texts = ["Как получить стипуху в общаге?", "ПОДСКАЖИТЕ где расписание", "", "какой-нибудь бизнес-информатика 2024"]
    for t in texts:
        for kw in ({}, {"lemmatize": False}, {"min_len": 3}, {"use_slang": False}, {"with_surface": True}):
            first = text_ru.terms(t, **kw)
            uncached = text_ru.terms(t, stop_words=set(text_ru.STOP_WORDS), **kw)  # a set: never cached
            assert first == uncached
            first.append("x")  # the caller's list is its own
            assert text_ru.terms(t, **kw) == uncached
    own = text_ru.SlangNormalizer({"стипуха": "стипендия"})
    assert text_ru.terms("стипуху дадут", slang=own) == text_ru.terms("стипуху дадут", slang=own,
                                                                      stop_words=set(text_ru.STOP_WORDS))


def test_tier0_scan_in_place_unit_rows_equal_the_copying_path() -> None:
    """A float32 input takes the in-place path (its float64 copy becomes the unit rows); a float64 input of the
    same values keeps the copying path: the metrics and neighbours are identical, the input untouched."""
    from voproshalych_eval.metrics.geometry import embedding_space_metrics_and_knn

    rng = np.random.default_rng(5)
    X32 = (rng.normal(size=(700, 48)) + 0.3).astype(np.float32)
    X32[10] = X32[11]  # a duplicate pair
    keep = X32.copy()
    res_a, (ia, da) = embedding_space_metrics_and_knn(X32, k=5, block_size=128)  # type: ignore[misc]
    res_b, (ib, db) = embedding_space_metrics_and_knn(X32.astype(np.float64), k=5, block_size=128)  # type: ignore[misc]
    assert np.array_equal(X32, keep)
    assert res_a == res_b
    assert np.array_equal(ia, ib) and np.array_equal(da, db)
    with pytest.raises(ValueError, match="row 3"):
        Z = X32.copy()
        Z[3] = 0.0
        embedding_space_metrics_and_knn(Z, k=5)


def _old_document_terms(texts: list[str]) -> tuple[list[list[str]], text_ru.TermVocabulary]:
    """document_terms before issue 28: every row counted on its own."""
    vocab = text_ru.TermVocabulary()
    docs = []
    for t in texts:
        docs.append(vocab.add(text_ru.terms(t or "", with_surface=True)))  # type: ignore[arg-type]
    return docs, vocab


def _old_top_terms(docs: list[list[str]], vocab: text_ru.TermVocabulary, mask: np.ndarray, *, top_n: int,
                   bigram: bool) -> list[tuple[str, str, int]]:
    from collections import Counter

    c: Counter[str] = Counter()
    for d, m in zip(docs, mask, strict=True):
        if m:
            c.update(set(text_ru.bigrams(d) if bigram else d))
    return [(vocab.display(t), t, n) for t, n in c.most_common(top_n)]


def test_domain_terms_counted_per_distinct_text_equal_the_row_by_row_pass() -> None:
    from voproshalych_eval.analytics.domain import _top_terms

    rng = np.random.default_rng(11)
    pool = ["Как получить стипендию?", "стипендии когда придут", "общежитие оплата", "Общага оплата где",
            "расписание экзаменов", "расписание пересдач экзаменов", "где расписание", "", "стипуху дадут?",
            "оплата общежития и стипендия", "пересдача экзамена когда", "экзамен расписание"]
    texts = [pool[i] for i in rng.integers(0, len(pool), size=400)]
    docs, vocab = text_ru.document_terms(texts)
    old_docs, old_vocab = _old_document_terms(texts)
    assert docs == old_docs
    assert vocab._surface == old_vocab._surface
    assert all(list(vocab._surface[t]) == list(old_vocab._surface[t]) for t in vocab._surface)  # tie order too
    for mask in (np.ones(len(texts), dtype=bool), rng.random(len(texts)) < 0.4):
        for bigram in (False, True):
            got = _top_terms(docs, vocab, mask, top_n=8, bigram=bigram)
            want = _old_top_terms(old_docs, old_vocab, mask, top_n=8, bigram=bigram)
            assert list(zip(got["term"], got["stem"], got["questions"], strict=True)) == want


def _old_example_counts(texts: list[str], X: np.ndarray, picked: list[int], keys: list[str],
                        near_threshold: float) -> list[int]:
    """representative_examples' counting before issue 28: the text test row by row."""
    from voproshalych_eval.analytics.topics import _text_dup

    S = X @ X[picked].T
    dup = np.greater_equal(S, near_threshold)
    for r in range(len(texts)):
        for e in range(len(picked)):
            if not dup[r, e] and _text_dup(keys[r], keys[picked[e]]):
                dup[r, e] = True
    best = np.where(dup, S, -np.inf).argmax(axis=1)
    return [int(((best == e) & dup.any(axis=1)).sum()) for e in range(len(picked))]


def test_example_counts_per_distinct_key_equal_the_row_by_row_pass() -> None:
    from voproshalych_eval.analytics.topics import representative_examples

    rng = np.random.default_rng(4)
    stems = ["как получить стипендию", "где расписание экзаменов", "общежитие заселение когда", "пересдача долгов"]
    texts = [rng.choice(stems) + rng.choice(["", "?", " пожалуйста", " срочно", "ы"]) for _ in range(400)]
    X = rng.normal(size=(400, 16))
    X[::3] = X[0] + 0.01 * rng.normal(size=16)  # vector near-copies too
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    keys = [" ".join(t.split()[:3]) + ("" if i % 7 else " x") for i, t in enumerate(texts)]
    for n in (1, 3, 5):
        picked, counts = representative_examples(texts, X, X.mean(axis=0), n=n, near_threshold=0.9, keys=keys)
        assert counts == _old_example_counts(texts, X, picked, keys, 0.9)
        assert sum(counts) > len(picked)  # repeats were counted


def test_k_search_on_two_threads_equals_the_sequential_search(monkeypatch: pytest.MonkeyPatch) -> None:
    from voproshalych_eval.analytics import topics

    rng = np.random.default_rng(8)
    centres = rng.normal(size=(9, 24))
    X = topics.unit_rows(np.vstack([c + 0.35 * rng.normal(size=(60, 24)) for c in centres]))
    monkeypatch.setattr(topics, "SEARCH_WORKERS", 1)
    k1, table1, cent1 = topics.choose_k(X, k_range=(3, 14), sample_size=400)
    monkeypatch.setattr(topics, "SEARCH_WORKERS", 2)
    k2, table2, cent2 = topics.choose_k(X, k_range=(3, 14), sample_size=400)
    assert k1 == k2 and table1.equals(table2) and cent1 is not None and cent2 is not None
    assert np.array_equal(cent1, cent2) and len(table1) == 12


def test_topic_trends_calendar_months_parsed_once_equal_the_per_row_parse() -> None:
    import pandas as pd

    from voproshalych_eval.analytics.topic_trends import topic_trends

    rng = np.random.default_rng(2)
    months = rng.choice(["2024-09", "2024-10", "2025-01", "2025-09", "2025-10"], size=900).tolist()
    months[3] = None  # a row without time
    labels = rng.integers(0, 4, size=900)
    labels[np.array([m in ("2024-09", "2025-09") for m in months])] = 2  # a September peak
    got = topic_trends(labels, months, {0: "a", 1: "b", 2: "c", 3: "d"})
    frame = pd.DataFrame({"period": [m for m in months if m is not None]})
    want_month = pd.PeriodIndex(frame["period"], freq="M").month  # the parse before issue 28's fourth round
    assert want_month.tolist().count(9) > 0
    assert not got.peaks.empty and set(got.peaks["peak_month"]) <= set(want_month.tolist())


def test_final_fit_on_distinct_rows_equals_the_fit_on_every_row() -> None:
    """Topics' final KMeans runs on the distinct rows weighted by their repeats (issue 28): the labels of the fit on
    every row (repeated questions as in a real log), with the same stopping rule."""
    from voproshalych_eval.analytics.topics import _fit_distinct, choose_k, unit_rows
    from voproshalych_eval.metrics.clusters import kmeans

    rng = np.random.default_rng(11)
    centres = rng.normal(size=(8, 32))
    base = unit_rows(np.vstack([c + 0.6 * rng.normal(size=(150, 32)) for c in centres]))
    X = base[rng.integers(0, len(base), size=3000)]  # ~1,100 distinct rows, repeated unevenly
    k, _, init = choose_k(X, k_range=(4, 12), sample_size=800)
    assert init is not None
    want = kmeans(X, k, n_init=2, init=init).labels_
    got = _fit_distinct(X, k, init)
    assert np.array_equal(got, want)
    assert len(np.unique(X, axis=0)) < len(X) / 2


def test_nonzero_2d_equals_numpys_nonzero_on_tiles_views_and_transposes() -> None:
    from voproshalych_eval.metrics.geometry import nonzero_2d

    rng = np.random.default_rng(3)
    base = rng.random((300, 520)) > 0.97
    for mask in (base, base[:, :257], base.T, base[5:5, :], np.zeros((4, 0), bool), np.ones((3, 7), bool)):
        r, c = nonzero_2d(mask)
        er, ec = np.nonzero(mask)
        assert np.array_equal(r, er) and np.array_equal(c, ec)


def test_near_duplicate_components_equal_a_union_find() -> None:
    """The domain's near-duplicate clusters: connected components named by their smallest index, as the
    union-find they replace (parent of the larger root set to the smaller one)."""
    from voproshalych_eval.analytics.domain import near_duplicate_components

    def union_find(n: int, pairs: list[tuple[int, int, float]]) -> np.ndarray:
        parent = list(range(n))

        def find(a: int) -> int:
            while parent[a] != a:
                parent[a] = parent[parent[a]]
                a = parent[a]
            return a

        for i, j, _ in pairs:
            ri, rj = find(i), find(j)
            if ri != rj:
                parent[max(ri, rj)] = min(ri, rj)
        return np.asarray([find(i) for i in range(n)])

    rng = np.random.default_rng(11)
    for n, m in ((1, 0), (5, 0), (50, 30), (400, 350), (2000, 900)):
        pairs = [(int(a), int(b), 0.95) for a, b in rng.integers(0, n, (m, 2)) if a != b]
        assert np.array_equal(near_duplicate_components(n, pairs), union_find(n, pairs))
