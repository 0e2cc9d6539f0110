"""Dataset versions: history, diff between two versions, edits that make a new version, revert.

Every change of a dataset's content (an edited question or answer, changed relevant chunks, a rejected
or restored item, an imported annotation file, a labelled real question) goes through :func:`commit`,
which validates the new records, stores them as a new content-addressed row and appends a version
(:func:`voproshalych_eval.datasets.store.register_version`) with its parent, the action, a note and a summary
of the changes. Versions are never rewritten; a run records the dataset id and content hash of the
version it used, so ``name@v2`` (or the id, or the hash prefix) addresses exactly what a run saw.

Edits are optimistic: :func:`commit` refuses (:class:`~voproshalych_eval.datasets.store.ConcurrentEditError`)
when the version being edited is no longer the head, so two reviewers never overwrite each other.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import pandas as pd
from sqlalchemy import Engine, text

from voproshalych_eval.datasets.store import (
    ConcurrentEditError,
    Dataset,
    content_hash,
    get_dataset,
    item_key,
    store,
    store_in,
    validate_records,
)
from voproshalych_eval.db.production import read_chunks

__all__ = [
    "ConcurrentEditError",
    "DatasetDiff",
    "ItemChange",
    "VersionInfo",
    "commit",
    "diff_frame",
    "diff_records",
    "diff_versions",
    "edit_item",
    "history",
    "relevant_chunk_fields",
    "revert",
]

#: Golden fields compared by :func:`diff_records` first (others follow alphabetically).
DIFF_FIELDS = (
    "question",
    "ground_truth_answer",
    "relevant_chunk_ids",
    "relevant_urls",
    "chunk_id",
    "confluence_url",
    "chunk_text",
    "question_type",
)


@dataclass(frozen=True)
class VersionInfo:
    """One version of a dataset name."""

    version: int
    dataset_id: int
    content_hash: str
    n_items: int
    action: str
    note: str | None
    changes: dict[str, Any]
    parent_id: int | None
    parent_version: int | None
    created_by: str | None
    created_at: datetime | None

    @property
    def ref(self) -> str:
        return f"v{self.version}"


def history(engine: Engine, name: str, kind: str = "golden") -> list[VersionInfo]:
    """Versions of ``name``, newest first."""
    with engine.connect() as conn:
        rows = conn.execute(
            text(
                "SELECT v.version, v.dataset_id, d.content_hash, d.n_items, v.action, v.note, v.changes, v.parent_id, "
                "(SELECT max(p.version) FROM eval.dataset_versions p WHERE p.dataset_id = v.parent_id "
                " AND p.version < v.version) AS parent_version, v.created_by, v.created_at "
                "FROM eval.dataset_versions v JOIN eval.datasets d ON d.id = v.dataset_id "
                "WHERE v.kind = :k AND v.name = :n ORDER BY v.version DESC"
            ),
            {"k": kind, "n": name},
        ).all()
    return [
        VersionInfo(
            version=int(r.version), dataset_id=int(r.dataset_id), content_hash=str(r.content_hash).strip(),
            n_items=int(r.n_items), action=r.action, note=r.note, changes=dict(r.changes or {}),
            parent_id=r.parent_id, parent_version=r.parent_version, created_by=r.created_by, created_at=r.created_at,
        )
        for r in rows
    ]


def history_frame(engine: Engine, name: str, kind: str = "golden") -> pd.DataFrame:
    """:func:`history` as a table (one row per version, change counts flattened)."""
    rows = []
    for v in history(engine, name, kind):
        ch = v.changes or {}
        rows.append({
            "version": v.version, "dataset_id": v.dataset_id, "hash": v.content_hash[:12], "n_items": v.n_items,
            "action": v.action, "note": v.note, "parent_version": v.parent_version,
            "added": len(ch.get("added", [])), "removed": len(ch.get("removed", [])),
            "changed": len(ch.get("changed", [])), "created_by": v.created_by, "created_at": v.created_at,
        })
    return pd.DataFrame(rows)


# ---------------------------------------------------------------- diff


@dataclass(frozen=True)
class ItemChange:
    """Fields of one item that differ between two versions: ``{field: (old, new)}``."""

    key: str
    fields: dict[str, tuple[Any, Any]]


@dataclass
class DatasetDiff:
    """Items added, removed and changed (by item key) from ``old`` to ``new``."""

    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    changed: list[ItemChange] = field(default_factory=list)
    old_hash: str | None = None
    new_hash: str | None = None

    @property
    def is_empty(self) -> bool:
        return not (self.added or self.removed or self.changed)

    def summary(self) -> dict[str, Any]:
        """Compact JSON form stored with a version: keys added/removed, and changed keys with their fields."""
        return {
            "added": list(self.added),
            "removed": list(self.removed),
            "changed": [{"key": c.key, "fields": sorted(c.fields)} for c in self.changed],
        }


def _order(fields: set[str]) -> list[str]:
    first = [f for f in DIFF_FIELDS if f in fields]
    return first + sorted(fields - set(DIFF_FIELDS))


def diff_records(old: Sequence[Mapping[str, Any]], new: Sequence[Mapping[str, Any]]) -> DatasetDiff:
    """Pure diff of two record lists matched by item key (``id`` field, else position)."""
    a = {item_key(dict(r), i): dict(r) for i, r in enumerate(old)}
    b = {item_key(dict(r), i): dict(r) for i, r in enumerate(new)}
    out = DatasetDiff(old_hash=content_hash(list(old)), new_hash=content_hash(list(new)))
    out.added = [k for k in b if k not in a]
    out.removed = [k for k in a if k not in b]
    for k in b:
        if k not in a:
            continue
        ra, rb = a[k], b[k]
        changed = {f: (ra.get(f), rb.get(f)) for f in _order(set(ra) | set(rb)) if ra.get(f) != rb.get(f)}
        if changed:
            out.changed.append(ItemChange(k, changed))
    return out


def diff_versions(engine: Engine, name: str, a: int | str, b: int | str, kind: str = "golden") -> DatasetDiff:
    """Diff of version ``a`` -> version ``b`` of ``name`` (numbers, ``v3``, or hash prefixes)."""
    da = get_dataset(engine, f"{name}@{a}", kind)
    db = get_dataset(engine, f"{name}@{b}", kind)
    return diff_records(da.records, db.records)


def _cell(v: Any) -> Any:
    if isinstance(v, list | dict):
        return json.dumps(v, ensure_ascii=False)
    return v


def diff_frame(diff: DatasetDiff) -> pd.DataFrame:
    """One row per change: ``item_key, change (added|removed|changed), field, old, new``."""
    rows: list[dict[str, Any]] = [{"item_key": k, "change": "added", "field": None, "old": None, "new": None} for k in diff.added]
    rows += [{"item_key": k, "change": "removed", "field": None, "old": None, "new": None} for k in diff.removed]
    for c in diff.changed:
        for f, (o, n) in c.fields.items():
            rows.append({"item_key": c.key, "change": "changed", "field": f, "old": _cell(o), "new": _cell(n)})
    return pd.DataFrame(rows, columns=["item_key", "change", "field", "old", "new"])


# ---------------------------------------------------------------- edits


def commit(
    engine: Engine,
    base: Dataset,
    records: Sequence[Mapping[str, Any]],
    *,
    action: str,
    note: str | None = None,
    conn: Any = None,
) -> Dataset:
    """Store ``records`` as the next version of ``base``'s dataset (validated); returns the new head.

    Nothing is written when the content equals ``base``'s. Raises
    :class:`~voproshalych_eval.datasets.store.DatasetError` for invalid records and
    :class:`~voproshalych_eval.datasets.store.ConcurrentEditError` when ``base`` is no longer the head. With
    ``conn`` the version is written inside the caller's transaction.
    """
    if base.id is None:
        raise ValueError("commit needs a stored dataset as its base (base.id is None)")
    valid = validate_records([dict(r) for r in records], base.kind, file=f"{base.name} ({action})")
    h = content_hash(valid)
    if h == base.content_hash:
        return base
    diff = diff_records(base.records, valid)
    new = Dataset(base.name, base.kind, valid, h, base.source)
    kw: dict[str, Any] = {"action": action, "note": note, "parent_id": base.id, "changes": diff.summary(),
                          "expected_head": base.id}
    return store_in(conn, new, **kw) if conn is not None else store(engine, new, **kw)


def edit_item(engine: Engine, base: Dataset, key: str, changes: Mapping[str, Any], *, note: str | None = None,
              action: str = "edit") -> Dataset:
    """A new version with the fields of item ``key`` replaced by ``changes``."""
    keys = base.keys()
    if key not in keys:
        raise KeyError(f"dataset {base.name!r} has no item {key!r}")
    records = [dict(r) for r in base.records]
    i = keys.index(key)
    records[i] = {**records[i], **dict(changes)}
    return commit(engine, base, records, action=action, note=note)


def revert(engine: Engine, name: str, version: int | str, kind: str = "golden", *, note: str | None = None) -> Dataset:
    """Make the content of an earlier version the head again (as a new version; history is kept)."""
    head = get_dataset(engine, name, kind)
    old = get_dataset(engine, f"{name}@{version}", kind)
    if old.content_hash == head.content_hash:
        return head
    return store(engine, Dataset(name, kind, old.records, old.content_hash, old.source), action="revert",
                 note=note or f"revert to {version}", parent_id=head.id,
                 changes=diff_records(head.records, old.records).summary(), expected_head=head.id)


def relevant_chunk_fields(engine: Engine, chunk_ids: Sequence[int]) -> dict[str, Any]:
    """The golden fields that follow from a list of relevant chunk ids, read from the knowledge base.

    ``chunk_id`` is the first id, ``chunk_text`` its FULL text, ``confluence_url`` its page;
    ``relevant_urls`` the pages of all ids, deduplicated in order. An empty list gives the fields of an
    unanswerable item. Raises ``LookupError`` naming ids missing from the knowledge base.
    """
    ids = [int(i) for i in dict.fromkeys(int(x) for x in chunk_ids)]
    if not ids:
        return {"chunk_id": None, "chunk_text": "", "confluence_url": None, "relevant_chunk_ids": [], "relevant_urls": []}
    df = read_chunks(engine, ids=ids)
    found = {int(r.id): r for r in df.itertuples(index=False)}
    missing = [i for i in ids if i not in found]
    if missing:
        raise LookupError(f"chunk(s) {', '.join(map(str, missing))} not in the knowledge base")
    first = found[ids[0]]
    return {
        "chunk_id": ids[0],
        "chunk_text": str(first.text),
        "confluence_url": str(first.url),
        "relevant_chunk_ids": ids,
        "relevant_urls": list(dict.fromkeys(str(found[i].url) for i in ids)),
    }
