"""Dataset formats: load (JSON array, JSONL, CSV), validate, hash, store in ``eval.datasets``.

Kinds and their fields (the golden format is the seed's):

- ``golden`` — question, ground_truth_answer, chunk_id, chunk_text, confluence_url,
  relevant_chunk_ids, relevant_urls (+ optional id, question_type, question_source). The earlier
  benchmark's files load as they are (``syn_…`` ids, ``question_source``, no ``relevant_chunk_ids``);
  an item whose ``chunk_text`` was cut (exactly :data:`EARLIER_CHUNK_TEXT_CUT` characters, or a strict
  prefix of the knowledge-base text of its chunk) gets ``chunk_text_truncated: true``;
- ``judge`` — question, context (may be empty: production judges cached answers without one),
  answer, label (1 show / 0 no-show) or ``ground_truth_show`` (true/false), rationale (+ id, kind);
- ``dialogs`` — dialog_id, turns [{question, ...}], paraphrase_of;
- ``samples`` — seed 004's Sample: user_input, response, reference, retrieved_contexts.

Files are read by the one reader, :mod:`voproshalych_eval.record_files`. Validation stops at the first
problem with :class:`DatasetError` naming the file, the row (CSV: the spreadsheet row, header = 1;
JSONL: the line; JSON: the element) and the field; nothing is stored half-way. Values are never
silently altered: text is kept as written, integers must be integers within PostgreSQL's ``integer``.
Datasets are versioned by the sha256 of their canonical JSON.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, text

from voproshalych_eval.record_files import (
    FieldError,
    RecordFileError,
    as_bool,
    as_int,
    as_json_value,
    as_text,
    file_format,
    read_file,
)

DATASET_KINDS = ("golden", "judge", "dialogs", "samples")
EARLIER_CHUNK_TEXT_CUT = 500
"""The earlier benchmark stored ``chunk_text`` cut to this many characters."""

DatasetError = RecordFileError
"""A dataset file is malformed: names the file, the row and the field (the reader's error type)."""


@dataclass(frozen=True)
class Dataset:
    name: str
    kind: str
    records: list[dict[str, Any]]
    content_hash: str
    source: str | None = None
    id: int | None = None

    def __len__(self) -> int:
        return len(self.records)

    def keys(self) -> list[str]:
        return [item_key(r, i) for i, r in enumerate(self.records)]


def item_key(record: dict[str, Any], index: int) -> str:
    """Stable key of a dataset item: its ``id`` / ``dialog_id`` field, else its 1-based position."""
    for f in ("id", "dialog_id"):
        if record.get(f) not in (None, ""):
            return str(record[f])
    return f"row{index + 1}"


def content_hash(records: Sequence[dict[str, Any]]) -> str:
    canon = json.dumps(list(records), ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canon.encode("utf-8")).hexdigest()


# ---------------------------------------------------------------- value checks

Validator = Callable[[dict[str, Any], Callable[[str, str], DatasetError]], dict[str, Any]]
Err = Callable[[str, str], DatasetError]


def _field(err: Err, check: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Run a :mod:`record_files` value check; its FieldError becomes this row's DatasetError."""
    try:
        return check(*args, **kwargs)
    except FieldError as exc:
        raise err(exc.field or "", exc.message) from None


def _req_str(rec: dict[str, Any], f: str, err: Err, *, allow_empty: bool = False) -> str:
    return _field(err, as_text, rec.get(f), f, required=True, allow_blank=allow_empty)


def _opt_str(rec: dict[str, Any], f: str, err: Err) -> str | None:
    return _field(err, as_text, rec.get(f), f)


def _opt_int(rec: dict[str, Any], f: str, err: Err) -> int | None:
    return _field(err, as_int, rec.get(f), f)


_SPLIT_IDS = re.compile(r"[;|,\s]+")
_SPLIT_URLS = re.compile(r"[;|\s]+")


def _list(rec: dict[str, Any], f: str, err: Err, item: str) -> list[Any]:
    """A list field: a JSON array, or (in a CSV cell) JSON text; ids and URLs may also be separated by
    ``;`` / ``|`` (ids also by commas); a text list cell without ``[`` is one element. ``item``: int, url, text."""
    v = _field(err, as_json_value, rec.get(f), f)
    if v is None or (isinstance(v, str) and not v.strip()):
        return []
    if isinstance(v, str):
        if item == "text":
            v = [v]
        else:
            v = [p for p in (_SPLIT_IDS if item == "int" else _SPLIT_URLS).split(v.strip()) if p]
    if not isinstance(v, list):
        raise err(f, f"must be a list, got {type(v).__name__}")
    out = []
    for j, x in enumerate(v):
        if item == "int":
            try:
                n = as_int(x, f)
            except FieldError as exc:
                raise err(f, f"element {j + 1}: {exc.message}") from None
            if n is None:
                raise err(f, f"element {j + 1} is empty")
            out.append(n)
        elif not isinstance(x, str):
            raise err(f, f"element {j + 1} must be a string, got {type(x).__name__}")
        else:
            out.append(x)
    return out


def _check_id(rec: dict[str, Any], err: Err) -> None:
    for f in ("id", "dialog_id"):
        v = rec.get(f)
        if v is not None and (isinstance(v, bool) or not isinstance(v, (str, int))):
            raise err(f, f"must be a string or an integer, got {type(v).__name__}")


def _validate_golden(rec: dict[str, Any], err: Err) -> dict[str, Any]:
    out = dict(rec)
    _check_id(rec, err)
    out["question"] = _req_str(rec, "question", err)
    out["ground_truth_answer"] = _req_str(rec, "ground_truth_answer", err, allow_empty=True)
    out["chunk_id"] = _opt_int(rec, "chunk_id", err)
    out["chunk_text"] = _opt_str(rec, "chunk_text", err) or ""
    out["confluence_url"] = _opt_str(rec, "confluence_url", err) or None
    for f in ("question_type", "question_source"):
        if f in rec:
            out[f] = _opt_str(rec, f, err)
    out["relevant_chunk_ids"] = _list(rec, "relevant_chunk_ids", err, "int")
    out["relevant_urls"] = _list(rec, "relevant_urls", err, "url")
    if out["chunk_id"] is not None and not out["relevant_chunk_ids"]:
        out["relevant_chunk_ids"] = [out["chunk_id"]]
    if out["confluence_url"] and not out["relevant_urls"]:
        out["relevant_urls"] = [out["confluence_url"]]
    given = _field(err, as_bool, rec.get("chunk_text_truncated"), "chunk_text_truncated")
    if given or len(out["chunk_text"]) == EARLIER_CHUNK_TEXT_CUT:
        out["chunk_text_truncated"] = True
    elif given is False:
        out["chunk_text_truncated"] = False
    return out


def _validate_judge(rec: dict[str, Any], err: Err) -> dict[str, Any]:
    out = dict(rec)
    _check_id(rec, err)
    for f in ("question", "answer"):
        out[f] = _req_str(rec, f, err)
    out["context"] = _opt_str(rec, "context", err) or ""
    label = _field(err, as_bool, rec.get("label"), "label")
    show = _field(err, as_bool, rec.get("ground_truth_show"), "ground_truth_show")
    if label is None and show is None:
        raise err("label", f"is required: 1 (show) or 0 (no-show), or ground_truth_show true/false; got {rec.get('label')!r}")
    if label is not None and show is not None and label != show:
        raise err("ground_truth_show", f"disagrees with label ({rec.get('label')!r} vs {rec.get('ground_truth_show')!r})")
    out["label"] = int(label if label is not None else bool(show))
    out["rationale"] = _opt_str(rec, "rationale", err) or ""
    return out


def _validate_dialog(rec: dict[str, Any], err: Err) -> dict[str, Any]:
    out = dict(rec)
    _check_id(rec, err)
    out["dialog_id"] = str(rec.get("dialog_id") or "") or None
    if not out["dialog_id"]:
        raise err("dialog_id", "is required")
    turns = _field(err, as_json_value, rec.get("turns"), "turns")
    if not isinstance(turns, list) or not turns:
        raise err("turns", "must be a non-empty list of {question: ...} objects")
    for j, t in enumerate(turns):
        if not isinstance(t, dict) or not isinstance(t.get("question"), str) or not t["question"].strip():
            raise err("turns", f"turn {j + 1} must be an object with a non-empty 'question'")
    out["turns"] = turns
    return out


def _validate_sample(rec: dict[str, Any], err: Err) -> dict[str, Any]:
    out = dict(rec)
    _check_id(rec, err)
    out["user_input"] = _req_str(rec, "user_input", err)
    for f in ("response", "reference"):
        out[f] = _opt_str(rec, f, err)
    out["retrieved_contexts"] = _list(rec, "retrieved_contexts", err, "text")
    return out


def flag_truncated_chunk_texts(records: Sequence[dict[str, Any]], kb_texts: Mapping[int, str]) -> list[dict[str, Any]]:
    """Golden records with ``chunk_text_truncated: true`` where ``chunk_text`` is a strict prefix of (or
    shorter than and contained at the start of) the knowledge-base text of ``chunk_id``."""
    out = []
    for r in records:
        kb = kb_texts.get(r["chunk_id"]) if r.get("chunk_id") is not None else None
        ct = r.get("chunk_text") or ""
        if kb is not None and ct and len(ct) < len(kb) and kb.startswith(ct.rstrip()) and not r.get("chunk_text_truncated"):
            r = {**r, "chunk_text_truncated": True}
        out.append(r)
    return out


VALIDATORS: dict[str, Validator] = {
    "golden": _validate_golden,
    "judge": _validate_judge,
    "dialogs": _validate_dialog,
    "samples": _validate_sample,
}


def validate_records(records: Sequence[dict[str, Any]], kind: str, *, file: str = "<records>", rows: Sequence[int] | None = None) -> list[dict[str, Any]]:
    """Validate and normalise ``records`` of ``kind``; raise :class:`DatasetError` on the first problem."""
    if kind not in VALIDATORS:
        raise ValueError(f"unknown dataset kind {kind!r}; expected one of {DATASET_KINDS}")
    if not records:
        raise DatasetError(file, None, None, "the dataset is empty")
    validator = VALIDATORS[kind]
    out, seen = [], {}
    for i, rec in enumerate(records):
        row = rows[i] if rows else i + 1

        def err(field: str, msg: str, _row: int = row) -> DatasetError:
            return DatasetError(file, _row, field, msg)

        norm = validator(rec, err)
        key = item_key(norm, i)
        if key in seen:
            raise DatasetError(file, row, "id", f"duplicate id {key!r} (first at row {seen[key]})")
        seen[key] = row
        out.append(norm)
    return out


def load_file(path: str | Path, kind: str, *, name: str | None = None, data: bytes | None = None,
              encoding: str | None = None) -> Dataset:
    """Read (:func:`record_files.read_file`) and validate a dataset file (or its bytes ``data``)."""
    p = Path(path)
    f = read_file(p, data=data, encoding=encoding)
    valid = validate_records(f.records, kind, file=f.file, rows=f.rows)
    return Dataset(name=name or p.stem, kind=kind, records=valid, content_hash=content_hash(valid), source=str(p))


# ---------------------------------------------------------------- storage


def store(engine: Engine, ds: Dataset) -> Dataset:
    """Store a dataset (idempotent by kind + name + content hash) in one transaction; returns it with its id.

    Stores of one kind + name are serialised (a transaction-scoped advisory lock), so two concurrent
    imports of the same file leave one stored version, not two."""
    with engine.begin() as conn:
        conn.execute(text("SELECT pg_advisory_xact_lock(hashtext('eval.datasets'), hashtext(:k || '/' || :n))"),
                     {"k": ds.kind, "n": ds.name})
        existing = conn.execute(
            text("SELECT id FROM eval.datasets WHERE kind = :k AND name = :n AND content_hash = :h"),
            {"k": ds.kind, "n": ds.name, "h": ds.content_hash},
        ).scalar()
        if existing is not None:
            return Dataset(ds.name, ds.kind, ds.records, ds.content_hash, ds.source, int(existing))
        did = conn.execute(
            text(
                "INSERT INTO eval.datasets(name, kind, content_hash, n_items, source) "
                "VALUES (:n, :k, :h, :c, :s) RETURNING id"
            ),
            {"n": ds.name, "k": ds.kind, "h": ds.content_hash, "c": len(ds.records), "s": ds.source},
        ).scalar_one()
        conn.execute(
            text(
                "INSERT INTO eval.dataset_items(dataset_id, item_index, item_key, payload) "
                "VALUES (:d, :i, :k, CAST(:p AS jsonb))"
            ),
            [
                {"d": did, "i": i, "k": item_key(r, i), "p": json.dumps(r, ensure_ascii=False)}
                for i, r in enumerate(ds.records)
            ],
        )
    return Dataset(ds.name, ds.kind, ds.records, ds.content_hash, ds.source, int(did))


def list_datasets(engine: Engine, kind: str | None = None) -> list[dict[str, Any]]:
    """Stored datasets, newest first: id, name, kind, content_hash, n_items, source, created_at."""
    cond = "WHERE kind = :k" if kind else ""
    with engine.connect() as conn:
        rows = conn.execute(
            text(f"SELECT id, name, kind, content_hash, n_items, source, created_at FROM eval.datasets {cond} ORDER BY id DESC"),
            {"k": kind} if kind else {},
        )
        return [dict(r._mapping) for r in rows]


def get_dataset(engine: Engine, ref: int | str, kind: str | None = None) -> Dataset:
    """A stored dataset by id, by name (newest version) or by content-hash prefix."""
    with engine.connect() as conn:
        if isinstance(ref, int) or (isinstance(ref, str) and ref.isdigit()):
            row = conn.execute(
                text("SELECT id, name, kind, content_hash, source FROM eval.datasets WHERE id = :i"), {"i": int(ref)}
            ).one_or_none()
        else:
            cond = " AND kind = :k" if kind else ""
            row = conn.execute(
                text(
                    "SELECT id, name, kind, content_hash, source FROM eval.datasets "
                    f"WHERE (name = :r OR content_hash LIKE :p){cond} ORDER BY id DESC LIMIT 1"
                ),
                {"r": ref, "p": f"{ref}%", "k": kind},
            ).one_or_none()
        if row is None:
            raise LookupError(f"No stored dataset {ref!r}" + (f" of kind {kind!r}" if kind else "") + ".")
        items = conn.execute(
            text("SELECT payload FROM eval.dataset_items WHERE dataset_id = :d ORDER BY item_index"), {"d": row.id}
        ).scalars().all()
    return Dataset(row.name, row.kind, list(items), row.content_hash, row.source, int(row.id))


def resolve(engine: Engine, path_or_name: str, kind: str) -> Dataset:
    """A dataset from a file path (validated and stored) or the name/id of a stored one."""
    p = Path(path_or_name)
    if file_format(p) is not None or p.is_file():
        ds = load_file(p, kind)
        if kind == "golden":
            ds = with_kb_truncation_flags(engine, ds)
        return store(engine, ds)
    return get_dataset(engine, path_or_name, kind)


def with_kb_truncation_flags(engine: Engine, ds: Dataset) -> Dataset:
    """``ds`` with :func:`flag_truncated_chunk_texts` applied against the chunk texts of the knowledge base's
    current snapshot (unchanged when there is none)."""
    from voproshalych_eval.db.errors import SnapshotError
    from voproshalych_eval.db.production import read_chunks

    ids = sorted({int(r["chunk_id"]) for r in ds.records if r.get("chunk_id") is not None and r.get("chunk_text")})
    if not ids:
        return ds
    try:
        df = read_chunks(engine, ids=ids)
    except SnapshotError:
        return ds
    kb = {int(i): str(t) for i, t in zip(df["id"], df["text"], strict=True)}
    records = flag_truncated_chunk_texts(ds.records, kb)
    if records == ds.records:
        return ds
    return Dataset(ds.name, ds.kind, records, content_hash(records), ds.source, ds.id)
