"""Offline embedder backends: dimension, unit norm, semantic sanity on Russian text."""

from __future__ import annotations

import numpy as np
import pytest

from voproshalych_eval.embeddings import EmbedderError, get_embedder, normalize_rows

SIMILAR = ("Когда выплачивают стипендию?", "В какой день приходит стипендия?")
UNRELATED = "Как записаться в секцию плавания?"


@pytest.mark.parametrize(("name", "dim"), [("use-multilingual", 512), ("e5-small", 384)])
def test_builtin_embedder_unit_vectors_and_similarity(name: str, dim: int) -> None:
    emb = get_embedder(name)
    assert emb.dim == dim
    q = emb.encode_queries([SIMILAR[0], SIMILAR[1], UNRELATED])
    p = emb.encode_passages([SIMILAR[1]])
    assert q.shape == (3, dim) and p.shape == (1, dim)
    assert q.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(q, axis=1), 1.0, atol=1e-5)
    sim_close = float(q[0] @ q[1])
    sim_far = float(q[0] @ q[2])
    assert sim_close > sim_far + 0.1, (sim_close, sim_far)
    assert emb.encode_queries([]).shape == (0, dim)


def test_e5_is_asymmetric_use_is_not() -> None:
    assert get_embedder("e5-small").asymmetric is True
    assert get_embedder("use-multilingual").asymmetric is False


def test_unknown_embedder_is_a_clear_error() -> None:
    with pytest.raises(EmbedderError, match="Unknown embedder"):
        get_embedder("no-such-model")


def test_missing_sentence_transformers_model_is_a_clear_error(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(EmbedderError, match="local model directory"):
        get_embedder(f"st:{tmp_path / 'missing-model'}")


def test_normalize_rows_keeps_zero_rows() -> None:
    x = normalize_rows(np.array([[3.0, 4.0], [0.0, 0.0]]))
    np.testing.assert_allclose(x, [[0.6, 0.8], [0.0, 0.0]])
