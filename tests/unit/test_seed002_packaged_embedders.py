"""Seed 002's Moscow example with the packaged embedders (default suite, no server, no network).

The seed's order is a property of the embedding model: a paraphrase of the reference scores above an answer
on the same topic, which scores above an unrelated one. The local-LLM group checks the same example against
llama.cpp's mean-pooled chat-model embeddings, where it does not hold (docs/LLM.md); these are the embedders
the app ships and uses for semantic similarity.
"""

from __future__ import annotations

import pytest

from voproshalych_eval.embeddings import BUILTIN_EMBEDDERS, get_embedder
from voproshalych_eval.judges import Judge, Sample

REFERENCE = "Москва является столицей России."
ANSWERS = (
    "Столица Российской Федерации — город Москва.",  # same meaning
    "Россия — самая большая страна в мире по площади.",  # same topic
    "Искусственный интеллект — это область компьютерных наук.",  # unrelated
)


@pytest.mark.parametrize("name", sorted(BUILTIN_EMBEDDERS))
def test_seed002_moscow_answers_in_order(name: str) -> None:
    judge = Judge(None, offline=True, embedder=get_embedder(name))
    scores = [judge.semantic_similarity(Sample("", a, reference=REFERENCE)).score for a in ANSWERS]
    assert all(s is not None for s in scores)
    assert scores[0] > scores[1] > scores[2], f"{name}: {scores}"
