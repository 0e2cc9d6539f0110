"""Topic building blocks: diverse examples with repeat counts, names (BERTopic c-TF-IDF + filter + MMR),
clustering trust numbers."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import adjusted_rand_score

from voproshalych_eval.analytics import text_ru
from voproshalych_eval.analytics.topic_names import name_topics
from voproshalych_eval.analytics.topics import (
    format_example,
    k_stability,
    kmeans,
    representative_examples,
    seed_stability,
    silhouette_verdict,
)


def _unit(X: np.ndarray) -> np.ndarray:
    return (X / np.linalg.norm(X, axis=1, keepdims=True)).astype(np.float32)


def test_examples_skip_near_duplicates_and_count_them() -> None:
    rng = np.random.default_rng(0)
    a, b, c = rng.normal(size=(3, 32))
    texts = ["Как закрыть пропуски занятий?", "как закрыть пропуски?", "Как закрыть пропуски?", "как закрыть прапуски",
             "Когда приходит стипендия?", "где общежитие"]
    X = _unit(np.vstack([a, a + 0.05 * c, a + 0.01 * c, a + 0.3 * b, b, c]))
    center = X[:4].mean(axis=0)
    picked, counts = representative_examples(texts, X, center, n=3, near_threshold=0.92)
    assert picked[0] in (0, 1, 2)
    chosen = [texts[i] for i in picked]
    assert "Когда приходит стипендия?" in chosen and "где общежитие" in chosen
    # the four wordings of one question (embedding-close or a typo of the same content text) count as one example
    assert counts[0] == 4 and sum(counts) == len(texts)
    E = X[picked]
    sims = E @ E.T
    assert (sims[~np.eye(len(picked), dtype=bool)] < 0.92).all()
    assert format_example("как закрыть пропуски?", 14) == "как закрыть пропуски? ×14"
    assert format_example("один", 1) == "один"


def test_silhouette_verdict_bands() -> None:
    assert "сильная" in silhouette_verdict(0.6)
    assert "reasonable" in silhouette_verdict(0.3, "en")
    assert "weak" in silhouette_verdict(0.10, "en")
    assert silhouette_verdict(None) == "—"


def test_seed_stability_is_one_for_separated_clusters_and_lower_for_noise() -> None:
    rng = np.random.default_rng(1)
    centers = rng.normal(size=(4, 16)) * 10
    X = _unit(np.vstack([c + rng.normal(size=(50, 16)) for c in centers]))
    lab = kmeans(X, 4, seed=0).labels_
    st = seed_stability(X, lab, 4, seeds=(1, 2, 3))
    assert st["ari_mean"] == pytest.approx(1.0) and len(st["ari"]) == 3
    noise = _unit(rng.normal(size=(200, 16)))
    lab = kmeans(noise, 6, seed=0).labels_
    st2 = seed_stability(noise, lab, 6, seeds=(1, 2, 3))
    assert st2["ari_mean"] < 0.9
    assert st2["ari"][0] == pytest.approx(adjusted_rand_score(lab, kmeans(noise, 6, seed=1).labels_))


def test_k_stability_picks_the_same_k_on_other_samples_of_separated_clusters() -> None:
    rng = np.random.default_rng(2)
    centers = rng.normal(size=(5, 16)) * 10
    X = _unit(np.vstack([c + rng.normal(size=(80, 16)) for c in centers]))
    ks = k_stability(X, k_range=(2, 9), runs=3, sample_size=200, seed=0)
    assert list(ks.columns) == ["run", "sample_seed", "k", "silhouette"] and list(ks["run"]) == [1, 2, 3]
    assert set(ks["k"]) == {5} and (ks["silhouette"] > 0.5).all()
    assert ks["sample_seed"].nunique() == 3  # three different samples, none the main run's (seed 0)
    # on noise the silhouette is low on every sample (no structure to be stable about)
    noise = _unit(rng.normal(size=(400, 16)))
    assert (k_stability(noise, k_range=(2, 9), runs=2, sample_size=200)["silhouette"] < 0.2).all()


DOCS = {
    0: ["как получить стипендию", "когда придет стипендия", "размер стипендии", "повышенная стипендия сколько",
        "стипендия на карту мир", "стипендию не перечислили print"],
    1: ["где общежитие", "как заселиться в общежитие", "общежитие комната", "оплата общежития",
        "комната в общежитии на двоих", "общежитие на лето print"],
    2: ["как вывести print в python", "print не работает", "python print ошибка", "как работает print в python"],
}


class _HashEmbedder:
    """Deterministic word vectors (no model files): hash of the lemma's characters."""

    def encode_queries(self, texts: list[str]) -> np.ndarray:
        out = []
        for t in texts:
            v = np.zeros(64)
            for i, ch in enumerate(t):
                v[(ord(ch) * 31 + i) % 64] += 1.0
            out.append(v / (np.linalg.norm(v) or 1.0))
        return np.asarray(out, dtype=np.float32)


@pytest.mark.parametrize("embedder", [None, _HashEmbedder()])
def test_names_are_distinctive_lemmas_without_stop_words(embedder) -> None:  # type: ignore[no-untyped-def]
    docs = [d for t in DOCS for d in DOCS[t]]
    labels = np.asarray([t for t in DOCS for _ in DOCS[t]])
    X = _unit(np.random.default_rng(0).normal(size=(len(docs), 16)))
    named = name_topics(docs, labels, X, embedder=embedder, n_terms=4)
    assert named[0].terms[0] == "стипендия" and named[1].terms[0] == "общежитие"
    # "print" and "python" concentrate in topic 2: they characterise it; the stray "print" elsewhere is dropped
    assert {"print", "python"} <= set(named[2].terms)
    assert "print" not in named[0].terms and "print" not in named[1].terms
    for t in named.values():
        for term in t.terms:
            assert term not in text_ru.STOP_WORDS and term not in text_ru.FILLER_WORDS
        assert len(t.terms) == len(set(t.terms))


def test_caps_lock_rows_are_detected() -> None:
    from voproshalych_eval.analytics.topics import caps_rows

    got = caps_rows(["пАРУ ПЕРЕНЕСЛИ ГДЕ СМОТРЕТЬ", "Когда стипендия?", "ГДЕ", "ИМиКН-241 расписание", "LMS НЕ РАБОТАЕТ"])
    assert got.tolist() == [True, False, False, False, True]


def test_class_tfidf_matches_the_formula_by_hand():
    """w(t, c) = tf(t, c)/|c| · log(1 + A/f(t)); A = mean term count per topic, truncated to an integer."""
    from voproshalych_eval.analytics.topic_names import class_tfidf

    counts = np.array([[2, 1, 0], [0, 1, 3]])  # topic sizes 3 and 4 -> A = int(3.5) = 3; f = (2, 2, 3)
    W = class_tfidf(counts).toarray()
    expected = np.array([
        [2 / 3 * np.log(1 + 3 / 2), 1 / 3 * np.log(1 + 3 / 2), 0.0],
        [0.0, 1 / 4 * np.log(1 + 3 / 2), 3 / 4 * np.log(1 + 3 / 3)],
    ])
    np.testing.assert_allclose(W, expected, rtol=1e-12)


def test_equal_weights_are_ordered_alphabetically():
    import scipy.sparse as sp

    from voproshalych_eval.analytics.topic_names import _top_words

    words = np.array(["вуз", "абитуриент", "бюджет", "грант"])
    row = sp.csr_matrix(np.array([[0.5, 0.5, 0.9, 0.0]]))
    assert _top_words(row, words, 3) == [("бюджет", 0.9), ("абитуриент", 0.5), ("вуз", 0.5)]


def test_naming_topics_imports_no_deep_learning_stack():
    """Naming topics needs scikit-learn only: bertopic/torch/umap imports cost a third of a topics click."""
    import subprocess
    import sys

    code = (
        "import sys, numpy as np\n"
        "from voproshalych_eval.analytics.topic_names import name_topics\n"
        "docs = ['стипендия когда придет', 'стипендия повышенная', 'общежитие заселение', 'общежитие оплата']\n"
        "out = name_topics(docs, np.array([0, 0, 1, 1]), np.eye(4), n_terms=3)\n"
        "assert out[0].terms[0] == 'стипендия' and out[1].terms[0] == 'общежитие', out\n"
        "print(sorted(m for m in ('torch', 'bertopic', 'umap', 'transformers') if m in sys.modules))\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert res.stdout.strip() == "[]"
