"""The four users of retrieval (Tier 1, Tier 3's internal pipeline, the chunk picker, the what-if plan) and the
gap diagnosis search through :class:`voproshalych_eval.db.retriever.Retriever`, never the query builder itself."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "voproshalych_eval"
USERS = ["tiers/tier1.py", "tiers/tier3.py", "generation/picker.py", "tiers/whatif.py", "tiers/gap_diagnosis.py",
         "tiers/ux.py", "generation/plan.py", "datasets/staleness.py"]
#: the query builder's searches (db.retrieval); only the Retriever calls them
SEARCHES = {"search_vectors", "search_fts", "search_one", "hybrid", "ensure_chunk_vectors", "build_hnsw_index"}


def _names(tree: ast.AST) -> set[str]:
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            out.add(node.attr)
        elif isinstance(node, ast.Name):
            out.add(node.id)
        elif isinstance(node, ast.ImportFrom):
            out |= {a.name for a in node.names}
    return out


@pytest.mark.parametrize("path", USERS)
def test_user_searches_through_the_retriever(path: str) -> None:
    tree = ast.parse((PACKAGE / path).read_text(encoding="utf-8"))
    names = _names(tree)
    assert "Retriever" in names or "picker_retriever" in names, f"{path} does not build a Retriever"
    assert not names & SEARCHES, f"{path} calls the query builder directly: {sorted(names & SEARCHES)}"
