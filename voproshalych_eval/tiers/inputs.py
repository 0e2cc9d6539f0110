"""What the LLM tiers read: dataset items (stored datasets by id or name, or files) and the FULL
reference contexts of golden items from the knowledge base."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sqlalchemy import Engine

from voproshalych_eval.datasets import store as datasets
from voproshalych_eval.db.errors import SnapshotError


def load_dataset(engine: Engine, ref: str | int, kind: str) -> datasets.Dataset:
    """A stored dataset by id or name, or a file path (imported and stored)."""
    if isinstance(ref, int) or (isinstance(ref, str) and ref.isdigit()):
        return datasets.get_dataset(engine, int(ref), kind)
    return datasets.resolve(engine, str(ref), kind)


def select_items(ds: datasets.Dataset, *, limit: int | None = None, only: Sequence[str] | None = None) -> list[tuple[str, dict[str, Any]]]:
    """``(item_key, record)`` pairs of a dataset, optionally a subset (first ``limit`` / listed keys)."""
    pairs = list(zip(ds.keys(), ds.records, strict=True))
    if only:
        wanted = {str(k) for k in only}
        pairs = [p for p in pairs if p[0] in wanted]
    if limit is not None and limit > 0:
        pairs = pairs[:limit]
    return pairs


def chunk_texts(engine: Engine, ids: Iterable[int], *, snapshot: Any = None) -> dict[int, dict[str, Any]]:
    """``{chunk id: {"text", "url"}}`` read from a snapshot of the knowledge base (default: the current one)."""
    from voproshalych_eval.db.production import read_chunks  # heavy: defers pandas (via db.production)

    wanted = sorted({int(i) for i in ids})
    if not wanted:
        return {}
    try:
        df = read_chunks(engine, ids=wanted, snapshot=snapshot)
    except SnapshotError:  # no knowledge base at all: callers fall back to the dataset's chunk_text
        return {}
    return {int(r.id): {"url": r.url, "text": r.text} for r in df.itertuples(index=False)}


def full_reference_context(
    record: Mapping[str, Any], kb: Mapping[int, Mapping[str, Any]], *, max_chars: int | None = None
) -> dict[str, Any]:
    """The FULL reference context of a golden item: the texts of all its relevant chunks, in order.

    Chunk texts come from the knowledge base (never the dataset's possibly shortened ``chunk_text``,
    which is only a fallback for chunks missing from the KB). Nothing is cut unless ``max_chars`` is
    given; then the total is cut at ``max_chars`` characters and the cut is reported
    (``truncated``, ``chars_full``, ``chars_used``).
    """
    ids = [int(i) for i in (record.get("relevant_chunk_ids") or [])]
    if not ids and record.get("chunk_id") is not None:
        ids = [int(record["chunk_id"])]
    contexts: list[str] = []
    missing: list[int] = []
    for cid in ids:
        if cid in kb:
            contexts.append(str(kb[cid]["text"]))
        else:
            missing.append(cid)
    if not contexts and record.get("chunk_text"):
        contexts = [str(record["chunk_text"])]
    full = sum(len(c) for c in contexts)
    truncated = False
    if max_chars is not None and max_chars > 0 and full > max_chars:
        out, left = [], max_chars
        for c in contexts:
            if left <= 0:
                break
            out.append(c[:left])
            left -= len(out[-1])
        contexts, truncated = out, True
    return {
        "contexts": contexts,
        "chunk_ids": ids,
        "missing_chunk_ids": missing,
        "truncated": truncated,
        "chars_full": full,
        "chars_used": sum(len(c) for c in contexts),
    }
