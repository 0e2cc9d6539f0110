"""Retrieval as one object: Tier 1, Tier 3's internal pipeline, the chunk picker and the what-if plan get their
hits from a :class:`Retriever`, and its rankings are the query builder's (real PostgreSQL + pgvector, the demo)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from tests.support.plans import run as run_plan_key
from voproshalych_eval.db import retrieval as R
from voproshalych_eval.db import snapshots
from voproshalych_eval.db.retriever import METHODS, Retriever
from voproshalych_eval.embeddings import get_embedder
from voproshalych_eval.plans import spec

STORED = "use-multilingual"
QUESTIONS = ["Как пересдать экзамен?", "Где получить справку об обучении?", "общежитие заселение"]


@pytest.fixture()
def calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[str, int]]]:
    """Every question vector search and full-text search a Retriever runs, as ``(kind, snapshot id)``.

    The spies call the real methods, so the users' results are untouched."""
    seen: list[tuple[str, int]] = []
    by_vectors, fts = Retriever.by_vectors, Retriever.fts

    def spy_vectors(self: Retriever, query_vectors: Any, k: int) -> Any:
        seen.append(("vector", self.snapshot.id))
        return by_vectors(self, query_vectors, k)

    def spy_fts(self: Retriever, questions: Any, k: int) -> Any:
        seen.append(("fts", self.snapshot.id))
        return fts(self, questions, k)

    monkeypatch.setattr(Retriever, "by_vectors", spy_vectors)
    monkeypatch.setattr(Retriever, "fts", spy_fts)
    yield seen


def test_methods_are_tier1_choices() -> None:
    assert tuple(spec("tier1").param("retriever").choices) == METHODS


def test_search_is_the_query_builders_ranking(demo_engine) -> None:  # type: ignore[no-untyped-def]
    emb = get_embedder(STORED)
    snap = snapshots.current(demo_engine)
    qv = emb.encode_queries(QUESTIONS)
    vec = R.search_vectors(demo_engine, qv, k=10, model=STORED, snapshot=snap)
    fts = R.search_fts(demo_engine, QUESTIONS, k=10, snapshot=snap)
    deep_v = R.search_vectors(demo_engine, qv, k=R.FUSION_DEPTH, model=STORED, snapshot=snap)
    deep_f = R.search_fts(demo_engine, QUESTIONS, k=R.FUSION_DEPTH, snapshot=snap)
    hyb = R.hybrid(deep_v, deep_f, k=10, rrf_k=30)
    assert Retriever.open(demo_engine, embedder=emb).search(QUESTIONS, 10) == vec
    assert Retriever.open(demo_engine, method="fts").search(QUESTIONS, 10) == fts
    assert Retriever.open(demo_engine, method="hybrid", embedder=emb, rrf_k=30).search(QUESTIONS, 10) == hyb
    assert any(a != b for a, b in zip(hyb, vec, strict=True))  # the fusion is not the vector ranking
    with pytest.raises(ValueError, match="unknown retriever 'bm25'"):
        Retriever.open(demo_engine, method="bm25", embedder=emb)
    with pytest.raises(ValueError, match="need an embedder"):
        Retriever.open(demo_engine, method="hybrid")


def test_uncached_calls_the_model_itself(demo_engine) -> None:  # type: ignore[no-untyped-def]
    from voproshalych_eval.embeddings import cached_embedder

    cached = Retriever.open(demo_engine, embedder=cached_embedder(STORED, demo_engine), use_index=True)
    fresh = cached.uncached()
    assert fresh.embedder is get_embedder(STORED) and cached.embedder is not fresh.embedder
    assert fresh.model == cached.model == STORED and not cached.exact().use_index
    assert np.allclose(fresh.embed(QUESTIONS), cached.embed(QUESTIONS), atol=1e-5)


def test_tier1_asks_the_retriever(demo_engine, calls) -> None:  # type: ignore[no-untyped-def]
    ran = run_plan_key(demo_engine, "tier1", {"dataset": "demo_golden", "retriever": "hybrid", "embedder": STORED,
                                              "n_resamples": 50})
    assert ran.progress.status == "done"
    kinds = {kind for kind, _ in calls}
    assert kinds == {"vector", "fts"} and {sid for _, sid in calls} == {ran.run.snapshot_id}


def test_tier3_internal_asks_the_retriever(demo_engine, calls) -> None:  # type: ignore[no-untyped-def]
    ran = run_plan_key(demo_engine, "tier3", {"limit": 2, "offline": True, "embedder": STORED})
    assert ran.progress.status == "done"
    assert [kind for kind, _ in calls] == ["vector", "vector"]  # one top-k per question, like production


def test_picker_asks_the_retriever(demo_engine, calls) -> None:  # type: ignore[no-untyped-def]
    from voproshalych_eval.generation.picker import search_chunks

    table = search_chunks(demo_engine, QUESTIONS[0], k=5, embedder=get_embedder(STORED))
    assert len(table) == 5 and sorted(kind for kind, _ in calls) == ["fts", "vector"]


def test_what_if_asks_one_retriever_per_side(demo_engine, calls, capsys) -> None:  # type: ignore[no-untyped-def]
    from voproshalych_eval.cli import main

    page = "https://wiki.sevgu-demo.ru/display/STUD/Peresdachi"
    assert main(["what-if", "--dataset", "demo_golden", "--json", "--remove-page", page]) == 0
    out = json.loads(capsys.readouterr().out)
    sides = {sid for kind, sid in calls if kind == "vector"}
    assert sides == {out["sandbox"]["id"], out["sandbox"]["parent_id"]}


def _direct_top(engine: Any, emb: Any, questions: list[str], k: int, snapshot_id: int) -> list[list[R.Hit]]:
    """What the users below asked the query builder directly before they held a Retriever."""
    snap = snapshots.get(engine, snapshot_id)
    return R.search_vectors(engine, np.asarray(emb.encode_queries(questions), dtype=float), k=k, model=emb.name,
                            snapshot=snap)


def test_ux_dialogs_ask_the_retriever_with_the_same_hits(demo_engine, calls) -> None:  # type: ignore[no-untyped-def]
    ran = run_plan_key(demo_engine, "ux", {"source": "dialogs", "offline": True, "limit": 3, "embedder": STORED})
    assert ran.progress.status == "done" and len(ran.records) == 3
    assert calls and {kind for kind, _ in calls} == {"vector"} and {sid for _, sid in calls} == {ran.run.snapshot_id}
    emb = get_embedder(STORED)
    for rec in ran.records:
        turns = rec["result"]["turns"]
        direct = _direct_top(demo_engine, emb, [t["question"] for t in turns], 1, ran.run.snapshot_id)
        assert [t["retrieved_chunk_id"] for t in turns] == [int(h[0].chunk_id) if h else None for h in direct]


def test_generation_answerability_asks_the_retriever_with_the_same_hits(demo_engine, calls) -> None:  # type: ignore[no-untyped-def]
    from voproshalych_eval.generation.plan import build_plan

    plan = build_plan(demo_engine, {"size": 2, "types": "unanswerable", "offline": True, "embedder": STORED,
                                    "name": "retriever_probe", "answerability_k": 3})
    verdicts, tokens = plan._answerability(QUESTIONS[0])
    assert tokens == 0 and calls == [("vector", plan.snapshot_id)]
    direct = _direct_top(demo_engine, get_embedder(STORED), [QUESTIONS[0]], 3, plan.snapshot_id)[0]
    assert [v["chunk_id"] for v in verdicts] == [h.chunk_id for h in direct]
    assert [v["cosine"] for v in verdicts] == [round(1.0 - float(h.distance), 4) for h in direct]


def test_staleness_suggestion_asks_the_retriever_with_the_same_hit(demo_engine, calls) -> None:  # type: ignore[no-untyped-def]
    from voproshalych_eval.datasets.staleness import _suggest

    snap = snapshots.current(demo_engine)
    emb = get_embedder(STORED)
    rec = {"question": QUESTIONS[1], "confluence_url": None}  # no page to look in: the nearest chunk of the KB
    sug = _suggest(demo_engine, rec, [], emb, snap)
    assert calls == [("vector", snap.id)]
    top = _direct_top(demo_engine, emb, [QUESTIONS[1]], 1, snap.id)[0][0]
    assert sug is not None and sug["chunk_id"] == top.chunk_id and sug["url"] == top.url
    assert sug["similarity"] == round(1.0 - top.distance, 4)
