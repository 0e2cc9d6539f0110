"""Dataset formats: load (JSON array, JSONL, CSV), validate, hash, store in ``eval.datasets``.

Kinds and their fields (the golden format is the seed's):

- ``golden`` — question, ground_truth_answer, chunk_id, chunk_text, confluence_url,
  relevant_chunk_ids, relevant_urls (+ optional id, question_type);
- ``judge`` — question, context, answer, label (1 show / 0 no-show), rationale (+ id, kind);
- ``dialogs`` — dialog_id, turns [{question, ...}], paraphrase_of;
- ``samples`` — seed 004's Sample: user_input, response, reference, retrieved_contexts.

Validation stops at the first problem with :class:`DatasetError` naming the file, the row (1-based;
for CSV the line number including the header) and the field; nothing is stored half-way.
Datasets are versioned by the sha256 of their canonical JSON.
"""

from __future__ import annotations

import csv
import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, text

DATASET_KINDS = ("golden", "judge", "dialogs", "samples")


class DatasetError(ValueError):
    """A dataset file is malformed: names the file, the row and the field."""

    def __init__(self, file: str, row: int | None, field: str | None, message: str) -> None:
        self.file, self.row, self.field, self.message = file, row, field, message
        where = file + (f", row {row}" if row is not None else "") + (f", field '{field}'" if field else "")
        super().__init__(f"{where}: {message}")


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


# ---------------------------------------------------------------- reading files


def _parse_csv_value(field: str, value: str) -> Any:
    if field in {"relevant_chunk_ids", "relevant_urls", "retrieved_contexts", "turns"}:
        v = value.strip()
        if not v:
            return []
        if v.startswith("["):
            return json.loads(v)
        parts = [p.strip() for p in v.replace(";", "|").split("|") if p.strip()]
        return parts
    return value


JSON_LIST_KEYS = ("items", "samples", "data", "questions", "records", "question_answer")


def read_records(path: str | Path, *, data: bytes | None = None) -> tuple[list[dict[str, Any]], list[int]]:
    """Read a JSON array, JSONL or CSV file (or its bytes, ``data``, e.g. an upload named ``path``).

    Returns the records and their row numbers in the file (CSV: line number including the header;
    JSONL: line number; JSON: position). A JSON object holding a list under one of :data:`JSON_LIST_KEYS`
    is accepted. Problems raise :class:`DatasetError` naming the file and, where known, the row.
    """
    p = Path(path)
    name = str(p)
    if data is None and not p.is_file():
        raise DatasetError(name, None, None, "file not found")
    try:
        raw = (data if data is not None else p.read_bytes()).decode("utf-8-sig")
    except UnicodeDecodeError:
        raise DatasetError(name, None, None, "the file is not UTF-8 text") from None
    suffix = p.suffix.lower()
    if suffix == ".csv":
        reader = csv.DictReader(raw.splitlines())
        if not reader.fieldnames:
            raise DatasetError(name, None, None, "the CSV file has no header row")
        records, rows = [], []
        for i, row in enumerate(reader, start=2):
            try:
                records.append({k: _parse_csv_value(k, v or "") for k, v in row.items() if k is not None})
            except json.JSONDecodeError as exc:
                raise DatasetError(name, i, None, f"invalid JSON list in a cell: {exc.msg}") from None
            rows.append(i)
        return records, rows
    if suffix == ".jsonl":
        records, rows = [], []
        for i, line in enumerate(raw.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DatasetError(name, i, None, f"invalid JSON: {exc.msg} (column {exc.colno})") from None
            if not isinstance(obj, dict):
                raise DatasetError(name, i, None, "each line must be a JSON object")
            records.append(obj)
            rows.append(i)
        return records, rows
    if suffix != ".json":
        raise DatasetError(name, None, None, f"unsupported file type '{suffix}' (use .json, .jsonl or .csv)")
    try:
        parsed = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise DatasetError(name, None, None, f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}") from None
    if isinstance(parsed, dict):
        for k in JSON_LIST_KEYS:
            if isinstance(parsed.get(k), list):
                parsed = parsed[k]
                break
    if not isinstance(parsed, list):
        raise DatasetError(name, None, None, "expected a JSON array of objects")
    for i, obj in enumerate(parsed, start=1):
        if not isinstance(obj, dict):
            raise DatasetError(name, i, None, "expected a JSON object")
    return list(parsed), list(range(1, len(parsed) + 1))


# ---------------------------------------------------------------- validation

Validator = Callable[[dict[str, Any], Callable[[str, str], DatasetError]], dict[str, Any]]


def _req_str(rec: dict[str, Any], f: str, err: Callable[[str, str], DatasetError], *, allow_empty: bool = False) -> str:
    if f not in rec or rec[f] is None:
        raise err(f, "is required")
    v = rec[f]
    if not isinstance(v, str):
        raise err(f, f"must be a string, got {type(v).__name__}")
    if not allow_empty and not v.strip():
        raise err(f, "must not be empty")
    return v


def _opt_int(rec: dict[str, Any], f: str, err: Callable[[str, str], DatasetError]) -> int | None:
    v = rec.get(f)
    if v in (None, ""):
        return None
    if isinstance(v, bool):
        raise err(f, "must be an integer")
    try:
        return int(v)
    except (TypeError, ValueError):
        raise err(f, f"must be an integer, got {v!r}") from None


def _list(rec: dict[str, Any], f: str, err: Callable[[str, str], DatasetError], conv: Callable[[Any], Any]) -> list[Any]:
    v = rec.get(f, [])
    if v in (None, ""):
        return []
    if not isinstance(v, list):
        raise err(f, f"must be a list, got {type(v).__name__}")
    out = []
    for j, x in enumerate(v):
        try:
            out.append(conv(x))
        except (TypeError, ValueError):
            raise err(f, f"element {j + 1} ({x!r}) has the wrong type") from None
    return out


def _validate_golden(rec: dict[str, Any], err: Callable[[str, str], DatasetError]) -> dict[str, Any]:
    out = dict(rec)
    out["question"] = _req_str(rec, "question", err)
    out["ground_truth_answer"] = _req_str(rec, "ground_truth_answer", err, allow_empty=True)
    out["chunk_id"] = _opt_int(rec, "chunk_id", err)
    out["chunk_text"] = rec.get("chunk_text") or ""
    if not isinstance(out["chunk_text"], str):
        raise err("chunk_text", "must be a string")
    out["confluence_url"] = rec.get("confluence_url") or None
    out["relevant_chunk_ids"] = _list(rec, "relevant_chunk_ids", err, int)
    out["relevant_urls"] = _list(rec, "relevant_urls", err, str)
    if out["chunk_id"] is not None and not out["relevant_chunk_ids"]:
        out["relevant_chunk_ids"] = [out["chunk_id"]]
    if out["confluence_url"] and not out["relevant_urls"]:
        out["relevant_urls"] = [out["confluence_url"]]
    return out


def _validate_judge(rec: dict[str, Any], err: Callable[[str, str], DatasetError]) -> dict[str, Any]:
    out = dict(rec)
    for f in ("question", "context", "answer"):
        out[f] = _req_str(rec, f, err)
    label = rec.get("label")
    if isinstance(label, str) and label.strip().lower() in {"1", "0", "true", "false", "show", "no_show", "yes", "no"}:
        label = label.strip().lower() in {"1", "true", "show", "yes"}
    if label not in (0, 1, True, False):
        raise err("label", f"must be 1 (show) or 0 (no-show), got {rec.get('label')!r}")
    out["label"] = int(bool(label))
    out["rationale"] = rec.get("rationale") or ""
    return out


def _validate_dialog(rec: dict[str, Any], err: Callable[[str, str], DatasetError]) -> dict[str, Any]:
    out = dict(rec)
    out["dialog_id"] = str(rec.get("dialog_id") or "") or None
    if not out["dialog_id"]:
        raise err("dialog_id", "is required")
    turns = rec.get("turns")
    if not isinstance(turns, list) or not turns:
        raise err("turns", "must be a non-empty list of {question: ...} objects")
    for j, t in enumerate(turns):
        if not isinstance(t, dict) or not isinstance(t.get("question"), str) or not t["question"].strip():
            raise err("turns", f"turn {j + 1} must be an object with a non-empty 'question'")
    return out


def _validate_sample(rec: dict[str, Any], err: Callable[[str, str], DatasetError]) -> dict[str, Any]:
    out = dict(rec)
    out["user_input"] = _req_str(rec, "user_input", err)
    for f in ("response", "reference"):
        v = rec.get(f)
        if v is not None and not isinstance(v, str):
            raise err(f, "must be a string")
        out[f] = v
    out["retrieved_contexts"] = _list(rec, "retrieved_contexts", err, str)
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


def load_file(path: str | Path, kind: str, *, name: str | None = None) -> Dataset:
    """Read and validate a dataset file."""
    p = Path(path)
    records, rows = read_records(p)
    valid = validate_records(records, kind, file=str(p), rows=rows)
    return Dataset(name=name or p.stem, kind=kind, records=valid, content_hash=content_hash(valid), source=str(p))


# ---------------------------------------------------------------- storage


def store(engine: Engine, ds: Dataset) -> Dataset:
    """Store a dataset (idempotent by kind + name + content hash) in one transaction; returns it with its id."""
    with engine.begin() as conn:
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
    if p.suffix.lower() in {".json", ".jsonl", ".csv"} or p.is_file():
        return store(engine, load_file(p, kind))
    return get_dataset(engine, path_or_name, kind)
