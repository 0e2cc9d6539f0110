"""Datasets true to a changing knowledge base: which items reference chunks that changed, and what to use now.

A golden dataset version remembers, for every chunk it references, the sha256 of the chunk's text and
its URL in the knowledge-base snapshot that was current when the version was made
(``eval.dataset_versions.kb_refs`` / ``kb_snapshot_id``). :func:`check_dataset` compares that — and each
item's own ``chunk_text`` — with a snapshot (default: the current one; a run passes its own):

* ``missing`` — the chunk id is gone (re-split, deleted);
* ``changed`` — the chunk's text differs from the one the version saw (hash), or from the item's own
  ``chunk_text`` (a ``chunk_text`` cut to a prefix of the current text is not a change);
* ``url_changed`` — the chunk now belongs to another page;
* ``url_gone`` — a page of ``relevant_urls`` no longer has any chunk.

For every affected item the likely new chunk is suggested: among the chunks of the item's page (same
URL), the one most similar (embedding cosine) to the old chunk text (the item's ``chunk_text``, else its
question and answer); when the page is gone, the nearest chunk of the whole knowledge base to the
question. A suggestion is only a suggestion: applying it is an edit (a new version).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from sqlalchemy import Engine

from voproshalych_eval.config import get_settings
from voproshalych_eval.datasets.store import (
    Dataset,
    first_version_kb_refs,
    get_dataset,
    item_key,
    list_datasets,
    referenced_chunk_ids,
)
from voproshalych_eval.db import production, snapshots
from voproshalych_eval.db.errors import SnapshotError
from voproshalych_eval.db.retriever import Retriever
from voproshalych_eval.embeddings import cached_embedder

PROBLEM_KINDS = ("missing", "changed", "url_changed", "url_gone")


@dataclass
class AffectedItem:
    item_key: str
    question: str
    problems: list[dict[str, Any]]
    suggestion: dict[str, Any] | None = None


@dataclass
class StaleReport:
    """Staleness of one dataset version against the current knowledge base."""

    dataset: str
    version: int | None
    dataset_id: int | None
    content_hash: str
    n_items: int
    affected: list[AffectedItem] = field(default_factory=list)
    n_refs_checked: int = 0
    snapshot_id: int | None = None

    @property
    def stale(self) -> bool:
        return bool(self.affected)

    def by_kind(self) -> dict[str, int]:
        c: Counter[str] = Counter(p["kind"] for a in self.affected for p in a.problems)
        return {k: c.get(k, 0) for k in PROBLEM_KINDS}

    def summary(self) -> dict[str, Any]:
        return {"dataset": self.dataset, "version": self.version, "dataset_id": self.dataset_id, "stale": self.stale,
                "n_items": self.n_items, "n_items_affected": len(self.affected), "by_kind": self.by_kind(),
                "snapshot_id": self.snapshot_id}

    def to_dict(self) -> dict[str, Any]:
        d = self.summary()
        d["affected"] = [asdict(a) for a in self.affected]
        return d


def version_refs(engine: Engine, dataset_id: int) -> dict[int, tuple[str | None, str | None]]:
    """The knowledge-base references recorded when the content ``dataset_id`` was first stored as a version."""
    return {int(k): (v[0], v[1]) for k, v in first_version_kb_refs(engine, dataset_id).items()}


def _current(engine: Engine, ids: list[int], snapshot: Any) -> tuple[dict[int, dict[str, Any]], set[str], Any]:
    """``({id: {text, url, hash}}, urls of the snapshot, snapshot)`` of the chunks ``ids`` in ``snapshot``."""
    snap = snapshots.resolve(engine, snapshot)
    if not snap.has_chunk:
        return {}, set(), snap
    cur = production.chunk_refs(engine, ids, snapshot=snap)
    urls = production.page_urls(engine, snapshot=snap)
    return cur, urls, snap


def find_problems(
    records: list[Mapping[str, Any]],
    refs: Mapping[int, tuple[str | None, str | None]],
    current: Mapping[int, Mapping[str, Any]],
    urls_now: set[str],
) -> list[tuple[str, dict[str, Any], list[dict[str, Any]]]]:
    """Pure core of :func:`check_dataset`: ``(item_key, record, problems)`` for every affected item."""
    out = []
    for i, rec in enumerate(records):
        problems: list[dict[str, Any]] = []
        ids: list[int] = []
        for v in [rec.get("chunk_id"), *(rec.get("relevant_chunk_ids") or [])]:
            if v not in (None, "") and int(v) not in ids:
                ids.append(int(v))
        for cid in ids:
            old_hash, old_url = refs.get(cid, (None, None))
            cur = current.get(cid)
            if cur is None:
                problems.append({"chunk_id": cid, "kind": "missing", "old_url": old_url or rec.get("confluence_url")})
                continue
            changed = old_hash is not None and cur["hash"] != old_hash
            own = rec.get("chunk_text") or ""
            if cid == rec.get("chunk_id") and own and cur["text"] != own and not cur["text"].startswith(own):
                changed = True
            if changed:
                problems.append({"chunk_id": cid, "kind": "changed", "url": cur["url"]})
            if old_url is not None and cur["url"] != old_url:
                problems.append({"chunk_id": cid, "kind": "url_changed", "old_url": old_url, "new_url": cur["url"]})
        for u in dict.fromkeys([*(rec.get("relevant_urls") or []), *([rec["confluence_url"]] if rec.get("confluence_url") else [])]):
            if urls_now and str(u) not in urls_now:
                problems.append({"chunk_id": None, "kind": "url_gone", "old_url": str(u)})
        if problems:
            out.append((item_key(dict(rec), i), dict(rec), problems))
    return out


def _suggest(engine: Engine, rec: Mapping[str, Any], problems: list[dict[str, Any]], embedder: Any,
             snap: Any) -> dict[str, Any] | None:
    url = rec.get("confluence_url") or next((p.get("old_url") for p in problems if p.get("old_url")), None)
    old_text = rec.get("chunk_text") or f"{rec.get('question') or ''} {rec.get('ground_truth_answer') or ''}"
    if url:
        ids = production.page_chunk_ids(engine, url, snapshot=snap)
        if ids:
            df = production.read_chunks(engine, ids=ids, snapshot=snap)
            texts = df["text"].astype(str).tolist()
            cand = np.asarray(embedder.encode_passages(texts), dtype=np.float32)
            q = np.asarray(embedder.encode_passages([old_text]), dtype=np.float32)[0]
            sims = cand @ q / np.maximum(np.linalg.norm(cand, axis=1) * (np.linalg.norm(q) or 1.0), 1e-12)
            j = int(np.argmax(sims))
            return {"chunk_id": int(df["id"].iloc[j]), "url": str(df["url"].iloc[j]), "similarity": round(float(sims[j]), 4),
                    "how": "same page, most similar to the old chunk text"}
    search = Retriever.open(engine, snapshot=snap, embedder=embedder)
    search.prepare()  # the snapshot's vectors for this embedder
    hits = search.vector([str(rec.get("question") or old_text)], 1)[0]
    if not hits:
        return None
    return {"chunk_id": hits[0].chunk_id, "url": hits[0].url, "similarity": round(1.0 - hits[0].distance, 4),
            "how": "page gone: nearest chunk of the knowledge base to the question"}


def check_dataset(engine: Engine, ds: Dataset | str | int, *, suggest: bool = True, embedder: Any = None,
                  snapshot: Any = None) -> StaleReport:
    """Staleness of a golden dataset version (default: the head of a name) against a knowledge-base snapshot
    (default: the current one)."""
    if not isinstance(ds, Dataset):
        ds = get_dataset(engine, ds, "golden")
    refs = version_refs(engine, ds.id) if ds.id is not None else {}
    ids = sorted(set(referenced_chunk_ids(ds.records)) | set(refs))
    current, urls_now, snap = _current(engine, ids, snapshot)
    rep = StaleReport(ds.name, ds.version, ds.id, ds.content_hash, len(ds.records), n_refs_checked=len(ids),
                      snapshot_id=snap.id)
    found = find_problems(ds.records, refs, current, urls_now)
    if found and suggest and embedder is None:
        embedder = cached_embedder(get_settings().embedder, engine)
    for key, rec, problems in found:
        sug = _suggest(engine, rec, problems, embedder, snap) if suggest else None
        rep.affected.append(AffectedItem(key, str(rec.get("question") or ""), problems, sug))
    return rep


def check_all(engine: Engine, *, suggest: bool = False) -> list[StaleReport]:
    """:func:`check_dataset` for the head version of every golden dataset."""
    return [check_dataset(engine, int(d["id"]), suggest=suggest) for d in list_datasets(engine, "golden", heads_only=True)]


def source_note(engine: Engine) -> dict[str, Any] | None:
    """``{"source_changed": True, "current_snapshot_id": N}`` when the source's content differs from the current
    snapshot (the checks here read snapshots, so edits not yet snapshotted are unseen), else None (also
    when the source cannot be read)."""
    if not snapshots.source_changed(engine):
        return None
    return {"source_changed": True, "current_snapshot_id": snapshots.current_id(engine)}


#: (store url, current snapshot id) -> (monotonic time, note): run captions re-render often, and the check
#: hashes the whole source
_NOTES: dict[tuple[str, int | None], tuple[float, dict[str, Any] | None]] = {}
NOTE_TTL_S = 60.0


def recent_source_note(engine: Engine) -> dict[str, Any] | None:
    """:func:`source_note`, reused for :data:`NOTE_TTL_S` seconds per store and current snapshot."""
    key = (str(engine.url), snapshots.current_id(engine))
    hit = _NOTES.get(key)
    if hit is not None and time.monotonic() - hit[0] < NOTE_TTL_S:
        return hit[1]
    note = source_note(engine)
    _NOTES[key] = (time.monotonic(), note)
    return note


def dataset_warning(engine: Engine, dataset_id: int | None, snapshot: Any = None, *,
                    check_source: bool = False) -> dict[str, Any] | None:
    """The summary of :func:`check_dataset` (no suggestions) when the dataset ``dataset_id`` is stale against
    ``snapshot`` (a run's own snapshot; default the current one), else None. Shown with runs on that version.

    With ``check_source`` and the current snapshot, a source changed since that snapshot is reported too
    (``source_changed``, by :func:`recent_source_note`), even when the dataset is up to date against the snapshot.
    """
    if dataset_id is None:
        return None
    try:
        rep = check_dataset(engine, int(dataset_id), suggest=False, snapshot=snapshot)
    except (LookupError, SnapshotError):
        return None
    warn = rep.summary() if rep.stale else None
    if check_source and rep.snapshot_id == snapshots.current_id(engine):
        note = recent_source_note(engine)
        if note:
            warn = {**(warn or rep.summary()), **note}
    return warn


def run_warning(engine: Engine, run: Any) -> dict[str, Any] | None:
    """:func:`dataset_warning` for a recorded run: its dataset version against the snapshot the run read
    (``params["snapshot"]["id"]`` or ``params["snapshot_id"]``; the current one when the run names none).
    When that is the current snapshot, a source changed since is reported too."""
    params = getattr(run, "params", None) or {}
    snap = (params.get("snapshot") or {}).get("id") if isinstance(params.get("snapshot"), Mapping) else None
    snap = snap or params.get("snapshot_id") or getattr(run, "snapshot_id", None)
    return dataset_warning(engine, getattr(run, "dataset_id", None), snapshot=snap, check_source=True)


def source_text(note: Mapping[str, Any], lang: str = "en") -> str:
    """One sentence: the source changed since the current snapshot (the staleness check has not seen it)."""
    sid = note.get("current_snapshot_id") or note.get("snapshot_id")
    if lang == "ru":
        return (f"База знаний изменилась после снимка #{sid}, по которому проверялась актуальность: эти правки ещё не "
                "учтены. Сделайте снимок (кнопка на вкладке «Актуальность» страницы «Наборы данных» или "
                "`dataset stale --refresh`).")
    return (f"The knowledge base changed since snapshot #{sid}, which the staleness check read: those edits are not "
            "seen yet. Take a snapshot (the button in the Datasets page's Staleness tab, or `dataset stale --refresh`).")


def warning_text(warn: Mapping[str, Any], lang: str = "en") -> str:
    """The sentence(s) of a stale-dataset warning, in ``lang`` (and the source note when it has one)."""
    parts = []
    if warn.get("n_items_affected"):
        parts.append(_stale_text(warn, lang))
    if warn.get("source_changed"):
        parts.append(source_text(warn, lang))
    return " ".join(parts)


def _stale_text(warn: Mapping[str, Any], lang: str) -> str:
    kinds = ", ".join(f"{k} {v}" for k, v in (warn.get("by_kind") or {}).items() if v)
    if lang == "ru":
        return (f"Набор «{warn.get('dataset')}» v{warn.get('version')} устарел относительно базы знаний "
                f"(снимок #{warn.get('snapshot_id')}): {warn.get('n_items_affected')} из {warn.get('n_items')} элементов "
                f"ссылаются на изменённые или удалённые чанки ({kinds}). Исправьте набор на странице «Наборы данных».")
    return (f"Dataset '{warn.get('dataset')}' v{warn.get('version')} is stale against the knowledge base "
            f"(snapshot #{warn.get('snapshot_id')}): {warn.get('n_items_affected')} of {warn.get('n_items')} items reference "
            f"changed or deleted chunks ({kinds}). Fix it on the Datasets page or with `dataset stale`.")
