"""Review state of dataset items and annotation files (export / import for review in a spreadsheet).

Review state lives in ``eval.dataset_reviews`` per dataset *name* (it survives versions): status
``pending`` / ``accepted`` / ``rejected``, the reason of a rejection, notes, and the three checks of the
earlier benchmark's annotation files (``is_question_ok``, ``is_answer_ok``, ``is_chunk_ok``).

What changes the evaluated content makes a new dataset version (:mod:`voproshalych_eval.datasets.versions`):
editing a question, an answer or the relevant chunks, *rejecting* an item (it leaves the records; the
item is kept in its review row with the reason, never deleted) and *restoring* it. Accepting an item and
writing notes are review metadata and do not change the content hash.

Annotation files (CSV via the ``csv`` module, or JSON) have one row per item — the head's items and the
rejected ones — with the columns :data:`ANNOTATION_COLUMNS`. Importing a file applies, in ONE new
version and one transaction: edited ``question`` / ``ground_truth_answer`` / ``relevant_chunk_ids``, and
the decisions. A row's decision is its ``status`` column when the reviewer changed it (it differs from
the item's current status), else it follows from the checks: any check ``0`` -> rejected (reason: the
failed checks and ``reason``/``notes``), all three ``1`` -> accepted, otherwise unchanged. Every bad row is reported with its row number and field; by default
nothing is applied when any row is bad (``skip_bad_rows`` applies the good ones), and never when no row
is good.

A file remembers the version it was exported from (its ``version`` column). A file from an older version
is refused — applied to the head it would silently undo the edits made since — unless ``merge`` asks for
a three-way merge: only the cells the reviewer changed relative to the exported version are applied, and a
row whose changed cell (or decision) conflicts with a later edit of the same item is refused as a bad row.
Decisions from the checks are taken only where the reviewer changed the checks, so re-importing an
unchanged file changes nothing.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import pandas as pd
from sqlalchemy import Engine, text

from voproshalych_eval import jsonable
from voproshalych_eval.datasets import versions as dv
from voproshalych_eval.datasets.files import (
    FieldError,
    RecordFileError,
    as_bool,
    as_int,
    check_columns,
    read_file,
    write_csv,
)
from voproshalych_eval.datasets.store import Dataset, DatasetError, get_dataset, list_datasets
from voproshalych_eval.datasets.store import _user as user
from voproshalych_eval.db.production import read_chunks
from voproshalych_eval.errors import VoproshalychEvalError

__all__ = [
    "ANNOTATION_COLUMNS",
    "CHECKS",
    "AnnotationImportError",
    "AnnotationReport",
    "Review",
    "StaleAnnotationFileError",
    "accept",
    "annotation_rows",
    "confirmed_gaps",
    "edit",
    "export_annotations",
    "import_annotations",
    "reject",
    "restore",
    "review_table",
    "reviews",
    "set_notes",
]

REVIEW_STATUSES = ("pending", "accepted", "rejected")
CHECKS = ("is_question_ok", "is_answer_ok", "is_chunk_ok")
ANNOTATION_COLUMNS = [
    "dataset",
    "version",
    "id",
    "status",
    "question",
    "ground_truth_answer",
    "relevant_chunk_ids",
    "relevant_urls",
    "question_type",
    "question_source",
    "chunk_id",
    "confluence_url",
    "chunk_text",
    *CHECKS,
    "reason",
    "notes",
]

_TRUE = {"1", "true", "t", "yes", "y", "да", "+", "ok"}
_FALSE = {"0", "false", "f", "no", "n", "нет", "-"}


@dataclass
class Review:
    """Review state of one item of a dataset name."""

    item_key: str
    status: str = "pending"
    reason: str | None = None
    notes: str | None = None
    is_question_ok: bool | None = None
    is_answer_ok: bool | None = None
    is_chunk_ok: bool | None = None
    item: dict[str, Any] | None = None
    item_index: int | None = None
    suggestions: list[dict[str, Any]] | None = None
    updated_by: str | None = None
    updated_at: datetime | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _user() -> str | None:
    return user()


def reviews(engine: Engine, name: str, kind: str = "golden") -> dict[str, Review]:
    """Review state of every item of ``name`` that has one, by item key."""
    with engine.connect() as conn:
        rows = conn.execute(
            text(
                "SELECT item_key, status, reason, notes, is_question_ok, is_answer_ok, is_chunk_ok, item, item_index, "
                "suggestions, updated_by, updated_at FROM eval.dataset_reviews WHERE kind = :k AND name = :n"
            ),
            {"k": kind, "n": name},
        ).all()
    return {r.item_key: Review(**dict(r._mapping)) for r in rows}


_REVIEW_FIELDS = ("status", "reason", "notes", *CHECKS, "item", "item_index", "suggestions")


def _upsert(conn: Any, kind: str, name: str, key: str, values: Mapping[str, Any]) -> None:
    unknown = set(values) - set(_REVIEW_FIELDS)
    if unknown:
        raise ValueError(f"unknown review field(s): {', '.join(sorted(unknown))}")
    if "status" in values and values["status"] not in REVIEW_STATUSES:
        raise ValueError(f"status must be one of {', '.join(REVIEW_STATUSES)}, got {values['status']!r}")
    cols = list(values)
    params: dict[str, Any] = {"k": kind, "n": name, "key": key, "u": _user()}
    sql_vals = []
    for c in cols:
        v = values[c]
        if c in ("item", "suggestions"):
            params[c] = None if v is None else json.dumps(v, ensure_ascii=False)
            sql_vals.append(f"CAST(:{c} AS jsonb)")
        else:
            params[c] = v
            sql_vals.append(f":{c}")
    updates = ", ".join(f"{c} = excluded.{c}" for c in cols)
    conn.execute(
        text(
            f"INSERT INTO eval.dataset_reviews(kind, name, item_key, {', '.join(cols)}, updated_by, updated_at) "
            f"VALUES (:k, :n, :key, {', '.join(sql_vals)}, :u, now()) ON CONFLICT (kind, name, item_key) DO UPDATE SET "
            + (updates + ", " if updates else "")
            + "updated_by = excluded.updated_by, updated_at = now()"
        ),
        params,
    )


def set_review(engine: Engine, name: str, key: str, kind: str = "golden", **values: Any) -> None:
    """Set review fields of one item (no new dataset version)."""
    with engine.begin() as conn:
        _upsert(conn, kind, name, key, values)


# ---------------------------------------------------------------- review actions


def _base(engine: Engine, ds: Dataset | str, kind: str) -> Dataset:
    return get_dataset(engine, ds, kind) if isinstance(ds, str) else ds


def accept(engine: Engine, ds: Dataset | str, key: str, *, notes: str | None = None,
           checks: Mapping[str, bool | None] | None = None) -> None:
    """Mark an item accepted (review metadata; the content and its hash do not change)."""
    base = _base(engine, ds, "golden")
    if key not in list(base.keys()):
        raise KeyError(f"dataset {base.name!r} has no item {key!r}")
    values: dict[str, Any] = {"status": "accepted", "reason": None}
    values.update({c: True for c in CHECKS})
    values.update({k: v for k, v in (checks or {}).items() if k in CHECKS})
    if notes is not None:
        values["notes"] = notes
    set_review(engine, base.name, key, base.kind, **values)


def set_notes(engine: Engine, ds: Dataset | str, key: str, notes: str) -> None:
    base = _base(engine, ds, "golden")
    set_review(engine, base.name, key, base.kind, notes=notes)


def reject(engine: Engine, ds: Dataset | str, key: str, reason: str, *, notes: str | None = None,
           checks: Mapping[str, bool | None] | None = None) -> Dataset:
    """Reject an item: a new version without it; the item is kept with the reason in its review row."""
    if not reason or not reason.strip():
        raise ValueError("a rejection needs a reason")
    base = _base(engine, ds, "golden")
    keys = base.keys()
    if key not in keys:
        raise KeyError(f"dataset {base.name!r} has no item {key!r}")
    i = keys.index(key)
    if len(base.records) == 1:
        raise ValueError("the last item of a dataset cannot be rejected (a dataset cannot be empty)")
    records = [r for j, r in enumerate(base.records) if j != i]
    values: dict[str, Any] = {"status": "rejected", "reason": reason.strip(), "item": dict(base.records[i]), "item_index": i}
    values.update({k: v for k, v in (checks or {}).items() if k in CHECKS})
    if notes is not None:
        values["notes"] = notes
    engine_ = engine
    with engine_.begin() as conn:
        new = dv.commit(engine, base, records, action="reject", note=f"{key}: {reason.strip()}", conn=conn)
        _upsert(conn, base.kind, base.name, key, values)
    return new


def restore(engine: Engine, ds: Dataset | str, key: str, *, note: str | None = None) -> Dataset:
    """Put a rejected item back (at its former position); a new version; review status back to pending."""
    base = _base(engine, ds, "golden")
    rev = reviews(engine, base.name, base.kind).get(key)
    if rev is None or rev.status != "rejected" or not rev.item:
        raise KeyError(f"item {key!r} of {base.name!r} is not a rejected item")
    if key in list(base.keys()):
        raise ValueError(f"item {key!r} is already in {base.name!r}")
    records = [dict(r) for r in base.records]
    pos = min(int(rev.item_index if rev.item_index is not None else len(records)), len(records))
    records.insert(pos, dict(rev.item))
    with engine.begin() as conn:
        new = dv.commit(engine, base, records, action="restore", note=note or f"{key} restored", conn=conn)
        _upsert(conn, base.kind, base.name, key, {"status": "pending", "reason": None, "item": None, "item_index": None})
    return new


def edit(
    engine: Engine,
    ds: Dataset | str,
    key: str,
    *,
    question: str | None = None,
    answer: str | None = None,
    relevant_chunk_ids: Sequence[int] | None = None,
    note: str | None = None,
) -> Dataset:
    """Edit the question, the reference answer and/or the relevant chunks of one item (a new version).

    Changing the relevant chunks re-derives ``chunk_id``, the FULL ``chunk_text``, ``confluence_url`` and
    ``relevant_urls`` from the knowledge base; an empty list makes the item unanswerable.
    """
    base = _base(engine, ds, "golden")
    changes: dict[str, Any] = {}
    if question is not None:
        if not question.strip():
            raise ValueError("the question must not be empty")
        changes["question"] = question.strip()
    if answer is not None:
        changes["ground_truth_answer"] = answer.strip()
    if relevant_chunk_ids is not None:
        changes.update(dv.relevant_chunk_fields(engine, list(relevant_chunk_ids)))
        if not relevant_chunk_ids:
            changes["question_type"] = "unanswerable"
    if not changes:
        return base
    what = ", ".join(sorted(changes))
    return dv.edit_item(engine, base, key, changes, note=note or f"{key}: {what}")


# ---------------------------------------------------------------- tables and files


def _list_cell(v: Any) -> str:
    return json.dumps(list(v or []), ensure_ascii=False)


def _bool_cell(v: bool | None) -> str:
    return "" if v is None else ("1" if v else "0")


def annotation_rows(engine: Engine, ds: Dataset | str) -> list[dict[str, Any]]:
    """One row per item (head items, then rejected ones) with :data:`ANNOTATION_COLUMNS` (lists as JSON)."""
    base = _base(engine, ds, "golden")
    revs = reviews(engine, base.name, base.kind)
    rows: list[dict[str, Any]] = []

    def row(rec: Mapping[str, Any], key: str, rev: Review | None, status: str) -> dict[str, Any]:
        return {
            "dataset": base.name,
            "version": base.version,
            "id": key,
            "status": status,
            "question": rec.get("question"),
            "ground_truth_answer": rec.get("ground_truth_answer"),
            "relevant_chunk_ids": _list_cell(rec.get("relevant_chunk_ids")),
            "relevant_urls": _list_cell(rec.get("relevant_urls")),
            "question_type": rec.get("question_type"),
            "question_source": rec.get("question_source"),
            "chunk_id": rec.get("chunk_id"),
            "confluence_url": rec.get("confluence_url"),
            "chunk_text": rec.get("chunk_text"),
            **{c: _bool_cell(getattr(rev, c) if rev else None) for c in CHECKS},
            "reason": (rev.reason if rev else None) or "",
            "notes": (rev.notes if rev else None) or "",
        }

    for key, rec in zip(base.keys(), base.records, strict=True):
        rev = revs.get(key)
        rows.append(row(rec, key, rev, rev.status if rev and rev.status != "rejected" else "pending"))
    for key, rev in sorted(revs.items()):
        if rev.status == "rejected" and rev.item and key not in set(base.keys()):
            rows.append(row(rev.item, key, rev, "rejected"))
    return rows


def review_table(engine: Engine, ds: Dataset | str) -> pd.DataFrame:
    """:func:`annotation_rows` as a DataFrame (the review page's table view)."""
    return pd.DataFrame(annotation_rows(engine, ds), columns=ANNOTATION_COLUMNS)


def export_annotations(engine: Engine, ds: Dataset | str, fmt: str = "csv") -> str:
    """The annotation file's text: CSV (:func:`datasets.files.write_csv`: fields quoted as needed, formula cells
    neutralised with a leading ``'`` that the importer removes) or JSON."""
    rows = annotation_rows(engine, ds)
    if fmt == "json":
        return jsonable.dumps(rows, indent=1)
    if fmt != "csv":
        raise ValueError(f"unknown format {fmt!r}; use csv or json")
    return write_csv(rows, ANNOTATION_COLUMNS)


@dataclass
class AnnotationReport:
    """What an annotation import did (and which rows it could not use)."""

    file: str
    dataset: str
    n_rows: int
    n_applied: int
    n_errors: int
    version_before: int | None
    version_after: int | None
    accepted: list[str] = field(default_factory=list)
    rejected: list[str] = field(default_factory=list)
    restored: list[str] = field(default_factory=list)
    edited: list[str] = field(default_factory=list)
    errors: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class AnnotationImportError(DatasetError):
    """Bad rows in an annotation file; ``errors`` lists every one (row, field, message)."""

    def __init__(self, file: str, errors: list[dict[str, Any]], message: str | None = None) -> None:
        first = errors[0] if errors else {"row": None, "field": None, "message": message or "no usable row"}
        more = f" (and {len(errors) - 1} more bad row(s))" if len(errors) > 1 else ""
        super().__init__(file, first.get("row"), first.get("field"), (message or first["message"]) + more)
        self.errors = errors


class _RowError(VoproshalychEvalError, ValueError):
    def __init__(self, field_name: str | None, message: str) -> None:
        super().__init__(message)
        self.field = field_name
        self.message = message


def _parse_check(v: Any, name: str) -> bool | None:
    try:
        return as_bool(v, name)
    except FieldError as exc:
        raise _RowError(name, f"'{name}' must be 1/0 (true/false, yes/no, да/нет) or empty, got {v!r}") from exc


def _parse_ids(v: Any) -> list[int] | None:
    if v is None:
        return None
    if isinstance(v, str):
        s = v.strip()
        if s.startswith("["):
            try:
                v = json.loads(s)
            except json.JSONDecodeError as exc:
                raise _RowError("relevant_chunk_ids", f"invalid JSON list: {exc.msg}") from None
        else:
            v = [p for p in s.replace(";", "|").replace(",", "|").split("|") if p.strip()]
    if not isinstance(v, list):
        raise _RowError("relevant_chunk_ids", f"must be a list of chunk ids, got {v!r}")
    out = []
    for x in v:
        try:
            n = as_int(x, "relevant_chunk_ids")
        except FieldError:
            raise _RowError("relevant_chunk_ids", f"{x!r} is not a chunk id") from None
        if n is None:
            raise _RowError("relevant_chunk_ids", f"{x!r} is not a chunk id")
        out.append(n)
    return out


def _existing_chunk_ids(engine: Engine, ids: set[int]) -> set[int]:
    if not ids:
        return set()
    return {int(i) for i in read_chunks(engine, ids=sorted(ids))["id"]}


class StaleAnnotationFileError(AnnotationImportError):
    """The annotation file was exported from an older version than the head."""

    def __init__(self, file: str, name: str, file_version: int, head_version: int) -> None:
        message = (f"exported from {name} v{file_version}, but the head is v{head_version}; applying it would undo "
                   f"the edits made since. Export the head again, or merge (--merge) to apply only the cells changed "
                   f"in the file relative to v{file_version}")
        super().__init__(file, [{"row": None, "field": "version", "message": message}])
        self.file_version = file_version
        self.head_version = head_version


def _file_version(fname: str, records: Sequence[Mapping[str, Any]]) -> int | None:
    """The one version the file was exported from (``None`` for a file without the column)."""
    found: set[int] = set()
    for r in records:
        v = str(r.get("version") or "").strip().lstrip("vV")
        if v:
            if not v.isdigit():
                raise AnnotationImportError(fname, [], f"the 'version' column must be a version number, got {r.get('version')!r}")
            found.add(int(v))
    if len(found) > 1:
        raise AnnotationImportError(fname, [], f"the file mixes versions: {', '.join(f'v{v}' for v in sorted(found))}")
    return found.pop() if found else None


_CONTENT = ("question", "ground_truth_answer", "relevant_chunk_ids")


def _content(rec: Mapping[str, Any] | None, f: str) -> Any:
    if f == "relevant_chunk_ids":
        return [int(x) for x in (rec or {}).get(f) or []]
    return str((rec or {}).get(f) or "").strip()


def _three_way(row: dict[str, Any], origin: Mapping[str, Any] | None, head: Mapping[str, Any] | None, file_version: int) -> None:
    """Keep in ``row`` only the content cells the reviewer changed relative to the exported version.

    Raises :class:`_RowError` when a changed cell was also changed, differently, by a later version.
    """
    for f in _CONTENT:
        if f not in row:
            continue
        mine, base, theirs = row[f], _content(origin, f), _content(head, f)
        if mine == base:
            del row[f]  # not touched in the file: the head's value stays
        elif theirs not in (base, mine):
            raise _RowError(f, f"changed in the file and, differently, after v{file_version} (now {theirs!r}); "
                               "this row is not applied")


def _changed_checks(row: Mapping[str, Any], rev: Review | None) -> dict[str, bool | None]:
    """The checks of a row that differ from the stored review state (what the reviewer changed)."""
    return {c: row[c] for c in CHECKS if row[c] != (getattr(rev, c) if rev else None)}


def _decision(row: Mapping[str, Any], status_before: str, rev: Review | None) -> str | None:
    """The row's decision: its status where the reviewer changed it, else from the checks the reviewer changed."""
    if row["status"] not in (None, status_before):
        return str(row["status"])
    changed = _changed_checks(row, rev)
    if not changed:
        return None
    if any(v is False for v in changed.values()):
        return "rejected"
    if all(row[c] is True for c in CHECKS):
        return "accepted"
    return None


def import_annotations(
    engine: Engine,
    path: str | Path,
    *,
    dataset: str | None = None,
    data: bytes | None = None,
    skip_bad_rows: bool = False,
    merge: bool = False,
    ignore_columns: Sequence[str] = (),
) -> AnnotationReport:
    """Apply an annotation file (see the module docstring) as one new version of its dataset.

    The dataset is ``dataset`` or the file's ``dataset`` column (one name for the whole file). Raises
    :class:`AnnotationImportError` listing every bad row (nothing applied) unless ``skip_bad_rows``;
    a file with no usable row always raises. A file exported from an older version raises
    :class:`StaleAnnotationFileError` unless ``merge`` (three-way, see the module docstring).
    """
    p = Path(path)
    fname = p.name
    try:
        f = read_file(p, data=data, skip_bad_rows=True, name=fname)
    except RecordFileError as exc:
        raise AnnotationImportError(fname, [exc.to_dict()]) from None
    try:
        check_columns(fname, f.columns, ANNOTATION_COLUMNS, ignore=ignore_columns)
    except RecordFileError as exc:
        raise AnnotationImportError(fname, [exc.to_dict()], exc.message) from None
    records, rownums = f.records, f.rows
    if ignore_columns:
        records = [{k: v for k, v in r.items() if k not in set(ignore_columns)} for r in records]
    if not records and not f.bad_rows:
        raise AnnotationImportError(fname, [], "the file has no rows")
    names = {str(r.get("dataset")).strip() for r in records if r.get("dataset") not in (None, "")}
    if dataset is None:
        if len(names) != 1:
            raise AnnotationImportError(
                fname, [], "the file must name exactly one dataset in its 'dataset' column (or pass the dataset name)"
                if not names else f"the file mixes datasets: {', '.join(sorted(names))}",
            )
        dataset = names.pop()
    base = get_dataset(engine, dataset, "golden")
    file_version = _file_version(fname, records)
    origin: Dataset | None = None
    if file_version is not None and file_version != base.version:
        if not merge or file_version > (base.version or 0):
            raise StaleAnnotationFileError(fname, base.name, file_version, base.version or 0)
        origin = get_dataset(engine, f"{base.name}@v{file_version}", "golden")
    revs = reviews(engine, base.name, base.kind)
    keys = base.keys()
    key_pos = {k: i for i, k in enumerate(keys)}
    rejected_keys = {k for k, r in revs.items() if r.status == "rejected" and r.item and k not in key_pos}
    origin_items = dict(zip(origin.keys(), origin.records, strict=True)) if origin is not None else {}
    all_ids = set()
    parsed: list[tuple[int, dict[str, Any]]] = []
    errors: list[dict[str, Any]] = [e.to_dict() for e in f.bad_rows]  # rows the reader could not use
    seen: dict[str, int] = {}
    for rec, rown in zip(records, rownums, strict=True):
        try:
            rd = str(rec.get("dataset") or "").strip()
            if rd and rd != base.name:
                raise _RowError("dataset", f"row belongs to dataset {rd!r}, not {base.name!r}")
            key = str(rec.get("id") or "").strip()
            if not key:
                raise _RowError("id", "the item id is missing")
            if key in seen:
                raise _RowError("id", f"duplicate id {key!r} (first in row {seen[key]})")
            if key not in key_pos and key not in rejected_keys:
                raise _RowError("id", f"no item {key!r} in {base.name!r} (head v{base.version}) nor among its rejected items")
            seen[key] = rown
            row: dict[str, Any] = {"key": key}
            for c in CHECKS:
                row[c] = _parse_check(rec.get(c), c)
            st = str(rec.get("status") or "").strip().lower()
            if st and st not in REVIEW_STATUSES:
                raise _RowError("status", f"status must be one of {', '.join(REVIEW_STATUSES)} or empty, got {st!r}")
            row["status"] = st or None
            if "question" in rec:
                q = str(rec.get("question") or "").strip()
                if not q:
                    raise _RowError("question", "the question must not be empty")
                row["question"] = q
            if "ground_truth_answer" in rec and rec.get("ground_truth_answer") is not None:
                row["ground_truth_answer"] = str(rec.get("ground_truth_answer")).strip()
            if "relevant_chunk_ids" in rec:
                ids = _parse_ids(rec.get("relevant_chunk_ids"))
                if ids is not None:
                    row["relevant_chunk_ids"] = ids
            row["reason"] = str(rec.get("reason") or "").strip() or None
            row["notes"] = str(rec.get("notes")).strip() if rec.get("notes") is not None else None
            rev = revs.get(key)
            current_status = "rejected" if key in rejected_keys else (rev.status if rev and rev.status != "rejected" else "pending")
            status_before = current_status  # what the file's status column is compared with
            if origin is not None:
                head_rec = base.records[key_pos[key]] if key in key_pos else (rev.item if rev else None)
                in_origin = key in origin_items
                _three_way(row, origin_items[key] if in_origin else (rev.item if rev else None), head_rec, origin.version or 0)
                status_before = "rejected" if not in_origin else current_status if key in key_pos else "pending"
            row["decision"] = _decision(row, status_before, rev)
            if (row["decision"] is not None and (row["decision"] == "rejected") != (current_status == "rejected")
                    and (status_before == "rejected") != (current_status == "rejected")):
                raise _RowError("status", f"the file {'rejects' if row['decision'] == 'rejected' else 'restores'} an item "
                                          f"a later version {'restored' if status_before == 'rejected' else 'rejected'}; "
                                          "this row is not applied")
            if "relevant_chunk_ids" in row:
                all_ids.update(row["relevant_chunk_ids"])
            parsed.append((rown, row))
        except _RowError as exc:
            errors.append({"row": rown, "field": exc.field, "message": exc.message})
    known = _existing_chunk_ids(engine, all_ids)
    good: list[dict[str, Any]] = []
    for rown, row in parsed:
        missing = [i for i in row.get("relevant_chunk_ids", []) if i not in known]
        if missing:
            errors.append({"row": rown, "field": "relevant_chunk_ids",
                           "message": f"chunk(s) {', '.join(map(str, missing))} not in the knowledge base"})
            continue
        good.append(row)
    errors.sort(key=lambda e: (e["row"] is None, e["row"] or 0))
    if errors and not skip_bad_rows:
        raise AnnotationImportError(fname, errors)
    if not good:
        raise AnnotationImportError(fname, errors, "no usable row in the file; nothing was applied")

    records_new = [dict(r) for r in base.records]
    report = AnnotationReport(fname, base.name, len(records), len(good), len(errors), base.version, base.version,
                              errors=errors)
    review_updates: dict[str, dict[str, Any]] = {}
    removed: set[str] = set()
    restored: list[tuple[int, dict[str, Any]]] = []
    for row in good:
        key = row["key"]
        rev = revs.get(key)
        current = dict(records_new[key_pos[key]]) if key in key_pos else dict(rev.item or {}) if rev else {}
        edited = dict(current)
        if "question" in row and row["question"] != current.get("question"):
            edited["question"] = row["question"]
        if "ground_truth_answer" in row and row["ground_truth_answer"] != (current.get("ground_truth_answer") or ""):
            edited["ground_truth_answer"] = row["ground_truth_answer"]
        if "relevant_chunk_ids" in row and row["relevant_chunk_ids"] != [int(x) for x in current.get("relevant_chunk_ids") or []]:
            edited.update(dv.relevant_chunk_fields(engine, row["relevant_chunk_ids"]))
            if not row["relevant_chunk_ids"]:
                edited["question_type"] = "unanswerable"
        if edited != current:
            report.edited.append(key)
        checks = {c: row[c] for c in CHECKS}
        decision = row["decision"]
        upd: dict[str, Any] = _changed_checks(row, rev)
        if row["notes"] is not None and (row["notes"] or origin is None):  # a merged empty cell keeps later notes
            upd["notes"] = row["notes"]
        was_rejected = key in rejected_keys
        if decision == "rejected":
            failed = [c for c, v in checks.items() if v is False]
            upd.update(status="rejected",
                       reason=row["reason"] or ("; ".join(f"{c}=0" for c in failed) + (f" — {row['notes']}" if row["notes"] else ""))
                       or "rejected in the annotation file",
                       item=edited)
            if not was_rejected:
                upd["item_index"] = key_pos[key]
                removed.add(key)
                report.rejected.append(key)
        elif was_rejected and decision is None:  # stays rejected; edits go to the kept item
            if edited != current:
                upd["item"] = edited
        else:
            if was_rejected:
                restored.append((int(rev.item_index if rev and rev.item_index is not None else len(records_new)), edited))
                report.restored.append(key)
                upd.update(item=None, item_index=None, reason=None)
            else:
                records_new[key_pos[key]] = edited
            if decision in ("accepted", "pending"):
                upd["status"] = decision
                if decision == "accepted":
                    report.accepted.append(key)
        if upd:
            review_updates[key] = upd
    final = [r for k, r in zip(keys, records_new, strict=True) if k not in removed]
    for pos, rec in sorted(restored, key=lambda t: t[0]):
        final.insert(min(pos, len(final)), rec)
    if not final:
        raise AnnotationImportError(fname, errors, "the file rejects every item; a dataset cannot be empty")
    note = (f"{fname}: {len(good)} row(s) applied, {len(errors)} bad; edited {len(report.edited)}, "
            f"rejected {len(report.rejected)}, restored {len(report.restored)}, accepted {len(report.accepted)}")
    with engine.begin() as conn:
        new = dv.commit(engine, base, final, action="annotate-import", note=note, conn=conn)
        for key, upd in review_updates.items():
            _upsert(conn, base.kind, base.name, key, upd)
    report.version_after = new.version
    return report


def confirmed_gaps(engine: Engine) -> pd.DataFrame:
    """Real questions a person labelled "not in the knowledge base", over the head of every golden dataset.

    Columns ``question, dataset, item_key, n_asked, log_source, log_id``; one row per distinct question
    (the first dataset that has it). These are the confirmed gaps of the coverage-gap report.
    """
    rows: list[dict[str, Any]] = []
    seen: set[str] = set()
    for d in sorted(list_datasets(engine, "golden", heads_only=True), key=lambda r: r["name"]):
        ds = get_dataset(engine, int(d["id"]))
        for key, rec in zip(ds.keys(), ds.records, strict=True):
            if not rec.get("not_in_kb"):
                continue
            q = str(rec.get("question") or "").strip()
            if not q or q.lower() in seen:
                continue
            seen.add(q.lower())
            log = rec.get("log") or {}
            rows.append({"question": q, "dataset": ds.name, "item_key": key, "n_asked": log.get("n_asked"),
                         "log_source": log.get("source"), "log_id": log.get("id")})
    return pd.DataFrame(rows, columns=["question", "dataset", "item_key", "n_asked", "log_source", "log_id"])
