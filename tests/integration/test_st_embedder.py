"""The production embedder path ``st:<dir>`` on a real sentence-transformers model the test builds itself.

Production embeds with a fine-tuned multilingual-e5-large through sentence-transformers. No model hub is
reachable here, so the session builds a tiny one the same way such a model is laid out on disk: a
WordPiece vocabulary trained (``tokenizers``) on the demo knowledge base, a 2-layer BERT (random weights,
fixed seed), mean pooling, saved with ``SentenceTransformer.save`` into a folder whose name says e5 — and
the app's own loading code (``get_embedder("st:<dir>")``) loads it.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from voproshalych_eval.config import PROJECT_ROOT

DIM = 32


@pytest.fixture(scope="session")
def tiny_st_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import torch
    from sentence_transformers import SentenceTransformer, models
    from tokenizers import Tokenizer, normalizers, pre_tokenizers
    from tokenizers.models import WordPiece
    from tokenizers.trainers import WordPieceTrainer
    from transformers import BertConfig, BertModel, BertTokenizerFast

    root = tmp_path_factory.mktemp("tiny-st")
    kb = json.loads((PROJECT_ROOT / "data" / "knowledge_base.json").read_text(encoding="utf-8"))
    corpus = [c["text"] for c in kb]
    tok = Tokenizer(WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.train_from_iterator(corpus, WordPieceTrainer(vocab_size=2000, special_tokens=[
        "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]))
    hf_tok = BertTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
                               sep_token="[SEP]", mask_token="[MASK]")
    from tokenizers.processors import TemplateProcessing

    hf_tok.backend_tokenizer.post_processor = TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B [SEP]",
        special_tokens=[("[CLS]", tok.token_to_id("[CLS]")), ("[SEP]", tok.token_to_id("[SEP]"))])
    torch.manual_seed(0)
    bert = BertModel(BertConfig(vocab_size=tok.get_vocab_size(), hidden_size=DIM, num_hidden_layers=2,
                                num_attention_heads=2, intermediate_size=64, max_position_embeddings=256))
    hf_dir = root / "hf"
    bert.save_pretrained(hf_dir)
    hf_tok.save_pretrained(hf_dir)
    word = models.Transformer(str(hf_dir), max_seq_length=128)
    pooling = models.Pooling(word.get_word_embedding_dimension(), pooling_mode="mean")
    out = root / "tiny-e5-demo"  # "e5" in the name: the embedder adds e5's query:/passage: prefixes
    SentenceTransformer(modules=[word, pooling], device="cpu").save(str(out))
    return out


def test_loading_prefixes_and_normalisation(tiny_st_model: Path) -> None:
    from sentence_transformers import SentenceTransformer

    from voproshalych_eval.embeddings import get_embedder

    emb = get_embedder(f"st:{tiny_st_model}")
    assert emb.name == f"st:{tiny_st_model}" and emb.dim == DIM and emb.asymmetric
    assert (emb.query_prefix, emb.passage_prefix) == ("query: ", "passage: ")
    texts = ["Когда выплачивают стипендию?", "Где находится общежитие №1?"]
    q, p = emb.encode_queries(texts), emb.encode_passages(texts)
    assert q.shape == p.shape == (2, DIM) and q.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(q, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(p, axis=1), 1.0, atol=1e-5)
    # the prefixes are really applied: same as encoding "query: ..." by hand, and query != passage
    raw = SentenceTransformer(str(tiny_st_model), device="cpu").encode(["query: " + t for t in texts])
    raw = raw / np.linalg.norm(raw, axis=1, keepdims=True)
    np.testing.assert_allclose(q, raw, atol=1e-5)
    assert not np.allclose(q, p, atol=1e-3)
    assert emb.encode_queries([]).shape == (0, DIM)


def test_explicit_prefixes_and_symmetric_model(tiny_st_model: Path) -> None:
    from voproshalych_eval.embeddings.backends import SentenceTransformerEmbedder

    sym = SentenceTransformerEmbedder(str(tiny_st_model), query_prefix="", passage_prefix="")
    assert not sym.asymmetric
    np.testing.assert_allclose(sym.encode_queries(["стипендия"]), sym.encode_passages(["стипендия"]), atol=1e-6)


def test_missing_model_dir_is_a_clear_error(tmp_path: Path) -> None:
    from voproshalych_eval.embeddings import EmbedderError
    from voproshalych_eval.embeddings.backends import SentenceTransformerEmbedder

    with pytest.raises(EmbedderError, match="local model directory"):
        SentenceTransformerEmbedder(str(tmp_path / "no-such-model"))


def test_dimension_checks_against_stored_vectors(demo_engine, tiny_st_model: Path) -> None:  # type: ignore[no-untyped-def]
    """Searching the demo's stored 512-d vectors with 32-d questions is refused; re-embedded into the eval
    schema for this model, the same search works and finds the chunk a question was written from."""
    from sqlalchemy import text

    from voproshalych_eval.db import DimensionMismatchError, snapshots
    from voproshalych_eval.db.retrieval import ensure_chunk_vectors, search_vectors
    from voproshalych_eval.embeddings import cached_embedder

    emb = cached_embedder(f"st:{tiny_st_model}", demo_engine)
    snap = snapshots.current(demo_engine)  # the knowledge base as the store holds it
    with demo_engine.connect() as conn:
        chunk_id, chunk_text = conn.execute(text(f"SELECT id, text FROM {snap.chunks_table} ORDER BY id LIMIT 1")).one()
    q = emb.encode_queries([chunk_text])
    with pytest.raises(DimensionMismatchError, match="32-d"):
        search_vectors(demo_engine, q, k=3)
    assert ensure_chunk_vectors(demo_engine, emb) > 0
    assert ensure_chunk_vectors(demo_engine, emb) == 0  # nothing changed: nothing re-embedded
    hits = search_vectors(demo_engine, q, k=3, model=emb.name)[0]
    assert len(hits) == 3 and hits[0].distance <= hits[1].distance
    with demo_engine.connect() as conn:
        dims = conn.execute(text("SELECT DISTINCT dim FROM eval.chunk_vectors WHERE model = :m"), {"m": emb.name}).all()
    assert [d[0] for d in dims] == [DIM]
    assert chunk_id in {h.chunk_id for h in hits}
