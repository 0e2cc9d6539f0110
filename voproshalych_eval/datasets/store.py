"""Dataset formats: load (JSON array, JSONL, CSV), validate, hash, store in ``eval.datasets``.

Kinds and their fields (the golden format is the methodology's):

- ``golden`` — question, ground_truth_answer, chunk_id, chunk_text, confluence_url,
  relevant_chunk_ids, relevant_urls (+ optional id, question_type, question_source, dialog_context — the
  earlier turns a bot API receives with the question, a list of strings). The earlier
  benchmark's files load as they are (``syn_…`` ids, ``question_source``, no ``relevant_chunk_ids``);
  an item whose ``chunk_text`` was cut (exactly :data:`EARLIER_CHUNK_TEXT_CUT` characters, or a strict
  prefix of the knowledge-base text of its chunk) gets ``chunk_text_truncated: true``;
- ``judge`` — question, context (may be empty: production judges cached answers without one),
  answer, label (1 show / 0 no-show) or ``ground_truth_show`` (true/false), rationale (+ id, kind);
- ``dialogs`` — dialog_id, turns [{question, ...}], paraphrase_of;
- ``samples`` — the Ragas general-purpose metrics' Sample: user_input, response, reference, retrieved_contexts.

Files are read by the one reader, :mod:`voproshalych_eval.datasets.files`. Validation stops at the first
problem with :class:`DatasetError` naming the file, the row (CSV: the spreadsheet row, header = 1;
JSONL: the line; JSON: the element) and the field; nothing is stored half-way. Values are never
silently altered: text is kept as written, integers must be integers within PostgreSQL's ``integer``.
Datasets are versioned by the sha256 of their canonical JSON.
"""

from __future__ import annotations

import getpass
import hashlib
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, text

from voproshalych_eval.datasets.files import (
    FieldError,
    RecordFileError,
    as_bool,
    as_int,
    as_json_value,
    as_text,
    check_columns,
    file_format,
    read_file,
    write_csv,
)
from voproshalych_eval.db import snapshots
from voproshalych_eval.db.errors import SnapshotError
from voproshalych_eval.errors import VoproshalychEvalError

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
    version: int | None = None

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
    """Run a :mod:`.files` value check; its FieldError becomes this row's DatasetError."""
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
    if "dialog_context" in rec:  # the earlier turns a bot API receives with the question (Tier 3)
        out["dialog_context"] = _list(rec, "dialog_context", err, "text")
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


#: the fields each kind's validator reads; other columns are kept as extra fields, except near-misses of these
#: (``Question``, ``ground_truth_anwser``) while the field itself is absent: refused (:func:`datasets.files.check_columns`)
KIND_FIELDS: dict[str, tuple[str, ...]] = {
    "golden": ("id", "question", "ground_truth_answer", "chunk_id", "chunk_text", "confluence_url", "relevant_chunk_ids",
               "relevant_urls", "question_type", "question_source", "dialog_context", "chunk_text_truncated"),
    "judge": ("id", "question", "answer", "context", "label", "ground_truth_show", "rationale"),
    "dialogs": ("id", "dialog_id", "turns"),
    "samples": ("id", "user_input", "response", "reference", "retrieved_contexts"),
}


def load_file(path: str | Path, kind: str, *, name: str | None = None, data: bytes | None = None,
              encoding: str | None = None, ignore_columns: Sequence[str] = ()) -> Dataset:
    """Read (:func:`datasets.files.read_file`) and validate a dataset file (or its bytes ``data``); a column that
    looks like a misspelled or capitalised known field is refused unless ``ignore_columns`` names it."""
    p = Path(path)
    f = read_file(p, data=data, encoding=encoding)
    check_columns(f.file, f.columns, KIND_FIELDS.get(kind, ()), ignore=ignore_columns, allow_extra=True)
    if ignore_columns:
        f.records = [{k: v for k, v in r.items() if k not in set(ignore_columns)} for r in f.records]
    valid = validate_records(f.records, kind, file=f.file, rows=f.rows)
    return Dataset(name=name or p.stem, kind=kind, records=valid, content_hash=content_hash(valid), source=str(p))


# ---------------------------------------------------------------- storage
#
# ``eval.datasets`` rows are immutable and content-addressed (kind, name, content hash). A *version*
# (``eval.dataset_versions``) is a numbered entry of a dataset name pointing at one of those rows, with
# its parent, the action that made it, a note, a summary of the changes and the knowledge-base
# references (chunk text hash and URL of every referenced chunk, and the id of the knowledge-base snapshot they
# were read from) at that moment. The newest version is
# the dataset's *head*; a name resolves to its head, ``name@v3`` to version 3, ``name@<hash prefix>``
# to the version with that content. Editing functions live in :mod:`voproshalych_eval.datasets.versions`.


def _user() -> str | None:
    try:
        return getpass.getuser()
    except Exception:  # noqa: BLE001
        return None


def referenced_chunk_ids(records: Sequence[dict[str, Any]]) -> list[int]:
    """Every chunk id a golden dataset references (``chunk_id`` and ``relevant_chunk_ids``), sorted."""
    ids: set[int] = set()
    for r in records:
        for v in [r.get("chunk_id"), *(r.get("relevant_chunk_ids") or [])]:
            if v is None or v == "":
                continue
            try:
                ids.add(int(v))
            except (TypeError, ValueError):
                continue
    return sorted(ids)


def kb_refs(conn: Any, records: Sequence[dict[str, Any]], snapshot_id: int | None = None
            ) -> tuple[dict[str, list[str | None]], int | None]:
    """``({chunk id: [sha256 of its text, url]}, snapshot id)`` of the referenced chunks in the knowledge-base
    snapshot ``snapshot_id`` (default: the current one). Chunks missing from it are absent; ``({}, None)``
    when there is no snapshot."""
    snap = snapshots.get(conn, snapshot_id) if snapshot_id is not None else snapshots.current(conn)
    if snap is None:
        return {}, None
    ids = referenced_chunk_ids(records)
    if not ids or not snap.has_chunk:
        return {}, snap.id
    rows = conn.execute(
        text(f"SELECT c.id, c.text_hash, c.url FROM {snap.chunks_table} c WHERE c.id = ANY(:ids)"), {"ids": ids}
    ).all()
    return {str(int(r.id)): [str(r.text_hash).strip(), r.url] for r in rows}, snap.id


def _head(conn: Any, kind: str, name: str) -> Any:
    return conn.execute(
        text(
            "SELECT version, dataset_id FROM eval.dataset_versions WHERE kind = :k AND name = :n "
            "ORDER BY version DESC LIMIT 1"
        ),
        {"k": kind, "n": name},
    ).one_or_none()


def register_version(
    conn: Any,
    ds: Dataset,
    dataset_id: int,
    *,
    action: str,
    note: str | None = None,
    parent_id: int | None = None,
    changes: dict[str, Any] | None = None,
    expected_head: int | None = None,
    snapshot_id: int | None = None,
) -> int:
    """Make ``dataset_id`` the head of ``(kind, name)`` unless it already is; returns its version number.

    Serialised per dataset name (transaction advisory lock). ``expected_head``: the dataset id the caller
    edited; if the head moved meanwhile a :class:`ConcurrentEditError` is raised and nothing is written.
    """
    conn.execute(text("SELECT pg_advisory_xact_lock(hashtext(:key))"), {"key": f"dataset:{ds.kind}:{ds.name}"})
    head = _head(conn, ds.kind, ds.name)
    if expected_head is not None and head is not None and int(head.dataset_id) != int(expected_head):
        raise ConcurrentEditError(
            f"dataset {ds.name!r} changed meanwhile (version {head.version} is newer than the one edited); reload it"
        )
    if head is not None and int(head.dataset_id) == int(dataset_id):
        return int(head.version)
    version = 1 if head is None else int(head.version) + 1
    parent = parent_id if parent_id is not None else (int(head.dataset_id) if head is not None else None)
    refs, snap_id = kb_refs(conn, ds.records, snapshot_id) if ds.kind == "golden" else ({}, None)
    conn.execute(
        text(
            "INSERT INTO eval.dataset_versions(kind, name, version, dataset_id, parent_id, action, note, changes, "
            "kb_refs, kb_snapshot_id, created_by) VALUES (:k, :n, :v, :d, :p, :a, :note, CAST(:c AS jsonb), "
            "CAST(:r AS jsonb), :s, :u)"
        ),
        {
            "k": ds.kind, "n": ds.name, "v": version, "d": int(dataset_id), "p": parent, "a": action, "note": note,
            "c": json.dumps(changes or {}, ensure_ascii=False), "r": json.dumps(refs), "s": snap_id, "u": _user(),
        },
    )
    return version


class ConcurrentEditError(VoproshalychEvalError, RuntimeError):
    """A dataset was edited from a version that is no longer its head."""


def store(
    engine: Engine,
    ds: Dataset,
    *,
    action: str = "import",
    note: str | None = None,
    parent_id: int | None = None,
    changes: dict[str, Any] | None = None,
    expected_head: int | None = None,
    snapshot_id: int | None = None,
) -> Dataset:
    """Store a dataset in one transaction and make it the head version of its name; returns it with id and version.

    Idempotent: the same kind + name + content is stored once (a content equal to an older version makes
    that row the head again, as a new version); storing the current head again changes nothing. The
    version's knowledge-base references are read from snapshot ``snapshot_id`` (default: the current one).
    """
    with engine.begin() as conn:
        return store_in(conn, ds, action=action, note=note, parent_id=parent_id, changes=changes,
                        expected_head=expected_head, snapshot_id=snapshot_id)


def store_in(
    conn: Any,
    ds: Dataset,
    *,
    action: str = "import",
    note: str | None = None,
    parent_id: int | None = None,
    changes: dict[str, Any] | None = None,
    expected_head: int | None = None,
    snapshot_id: int | None = None,
) -> Dataset:
    """:func:`store` inside the caller's transaction ``conn`` (so that other writes commit with it or not at all).

    Stores of one kind + name are serialised (a transaction-scoped advisory lock), so two concurrent
    imports of the same file leave one stored version, not two."""
    conn.execute(text("SELECT pg_advisory_xact_lock(hashtext('eval.datasets'), hashtext(:k || '/' || :n))"),
                 {"k": ds.kind, "n": ds.name})
    existing = conn.execute(
        text("SELECT id FROM eval.datasets WHERE kind = :k AND name = :n AND content_hash = :h"),
        {"k": ds.kind, "n": ds.name, "h": ds.content_hash},
    ).scalar()
    if existing is not None:
        did = int(existing)
    else:
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
    version = register_version(
        conn, ds, did, action=action, note=note, parent_id=parent_id, changes=changes, expected_head=expected_head,
        snapshot_id=snapshot_id,
    )
    return Dataset(ds.name, ds.kind, ds.records, ds.content_hash, ds.source, int(did), version)


def list_datasets(engine: Engine, kind: str | None = None, *, heads_only: bool = False) -> list[dict[str, Any]]:
    """Stored datasets, newest first: id, name, kind, content_hash, n_items, source, created_at, version, is_head.

    Every stored content is one row; ``heads_only`` keeps the newest version of each name.
    """
    cond = "WHERE d.kind = :k" if kind else ""
    sql = (
        "SELECT d.id, d.name, d.kind, d.content_hash, d.n_items, d.source, d.created_at, v.version, "
        "(v.version IS NOT NULL AND v.version = h.max_version) AS is_head "
        "FROM eval.datasets d "
        "LEFT JOIN LATERAL (SELECT max(x.version) AS version FROM eval.dataset_versions x WHERE x.dataset_id = d.id) v ON true "
        "LEFT JOIN LATERAL (SELECT max(y.version) AS max_version FROM eval.dataset_versions y "
        "WHERE y.kind = d.kind AND y.name = d.name) h ON true "
        f"{cond} ORDER BY d.id DESC"
    )
    with engine.connect() as conn:
        rows = [dict(r._mapping) for r in conn.execute(text(sql), {"k": kind} if kind else {})]
    if heads_only:
        seen: set[tuple[str, str]] = set()
        out = []
        for r in rows:
            if r["is_head"] and (r["kind"], r["name"]) not in seen:
                seen.add((r["kind"], r["name"]))
                out.append(r)
        rows = out
    return rows


def _resolve_row(conn: Any, ref: int | str, kind: str | None) -> Any:
    cols = "d.id, d.name, d.kind, d.content_hash, d.source"
    kcond = " AND d.kind = :k" if kind else ""
    if isinstance(ref, int) or (isinstance(ref, str) and ref.isdigit()):
        return conn.execute(text(f"SELECT {cols} FROM eval.datasets d WHERE d.id = :i"), {"i": int(ref)}).one_or_none()
    ref = str(ref)
    if "@" in ref:
        name, _, ver = ref.rpartition("@")
        v = ver[1:] if ver[:1] in ("v", "V") and ver[1:].isdigit() else ver
        if v.isdigit():
            return conn.execute(
                text(
                    f"SELECT {cols} FROM eval.dataset_versions x JOIN eval.datasets d ON d.id = x.dataset_id "
                    f"WHERE x.name = :n AND x.version = :v{kcond.replace('d.kind', 'x.kind')} LIMIT 1"
                ),
                {"n": name, "v": int(v), "k": kind},
            ).one_or_none()
        return conn.execute(
            text(f"SELECT {cols} FROM eval.datasets d WHERE d.name = :n AND d.content_hash LIKE :p{kcond} ORDER BY d.id DESC LIMIT 1"),
            {"n": name, "p": f"{v}%", "k": kind},
        ).one_or_none()
    row = conn.execute(
        text(
            f"SELECT {cols} FROM eval.dataset_versions x JOIN eval.datasets d ON d.id = x.dataset_id "
            f"WHERE x.name = :r{kcond.replace('d.kind', 'x.kind')} ORDER BY x.version DESC LIMIT 1"
        ),
        {"r": ref, "k": kind},
    ).one_or_none()
    if row is not None:
        return row
    return conn.execute(
        text(f"SELECT {cols} FROM eval.datasets d WHERE (d.name = :r OR d.content_hash LIKE :p){kcond} ORDER BY d.id DESC LIMIT 1"),
        {"r": ref, "p": f"{ref}%", "k": kind},
    ).one_or_none()


def get_dataset(engine: Engine, ref: int | str, kind: str | None = None) -> Dataset:
    """A stored dataset: by id, by name (its head version), ``name@v3`` / ``name@3`` (a version), ``name@<hash
    prefix>`` or a content-hash prefix."""
    with engine.connect() as conn:
        row = _resolve_row(conn, ref, kind)
        if row is None:
            raise LookupError(f"No stored dataset {ref!r}" + (f" of kind {kind!r}" if kind else "") + ".")
        items = conn.execute(
            text("SELECT payload FROM eval.dataset_items WHERE dataset_id = :d ORDER BY item_index"), {"d": row.id}
        ).scalars().all()
        version = conn.execute(
            text("SELECT max(version) FROM eval.dataset_versions WHERE dataset_id = :d"), {"d": row.id}
        ).scalar()
    return Dataset(row.name, row.kind, list(items), row.content_hash, row.source, int(row.id),
                   int(version) if version is not None else None)


def resolve(engine: Engine, path_or_name: str, kind: str) -> Dataset:
    """A dataset from a file path (validated and stored) or the name/id of a stored one."""
    p = Path(path_or_name)
    if file_format(p) is not None or p.is_file():
        return store_file(engine, p, kind)
    return get_dataset(engine, path_or_name, kind)


def store_file(engine: Engine, path: str | Path, kind: str, *, name: str | None = None, data: bytes | None = None,
               ignore_columns: Sequence[str] = ()) -> Dataset:
    """Read, validate and store a dataset file (a golden one flagged by :func:`with_kb_truncation_flags`)."""
    ds = load_file(path, kind, name=name, data=data, ignore_columns=ignore_columns)
    if kind == "golden":
        ds = with_kb_truncation_flags(engine, ds)
    return store(engine, ds)


def n_truncated(records: Sequence[Mapping[str, Any]]) -> int:
    """Items whose ``chunk_text`` is cut short (``chunk_text_truncated``)."""
    return sum(1 for r in records if r.get("chunk_text_truncated"))


def truncation_note(n: int, n_items: int, lang: str = "en") -> str:
    """One sentence about the items whose ``chunk_text`` was cut (the earlier benchmark cut it)."""
    if lang == "ru":
        return (f"У {n} из {n_items} элементов `chunk_text` обрезан (файлы прежнего бенчмарка обрезали его до "
                f"{EARLIER_CHUNK_TEXT_CUT} символов): это не полный текст чанка, а его начало.")
    return (f"{n} of {n_items} items have a cut `chunk_text` (the earlier benchmark's files cut it to {EARLIER_CHUNK_TEXT_CUT} "
            "characters): it is the start of the chunk, not its full text.")


def with_kb_truncation_flags(engine: Engine, ds: Dataset) -> Dataset:
    """``ds`` with :func:`flag_truncated_chunk_texts` applied against the chunk texts of the knowledge base's
    current snapshot (unchanged when there is none)."""
    from voproshalych_eval.db.production import read_chunks  # heavy: defers pandas (via db.production)

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


# ---------------------------------------------------------------- export

GOLDEN_COLUMNS = ["id", "question", "ground_truth_answer", "chunk_id", "chunk_text", "confluence_url",
                  "relevant_chunk_ids", "relevant_urls", "question_type", "question_source"]


def export_csv(records: Sequence[dict[str, Any]]) -> str:
    """Golden records as CSV text (:func:`datasets.files.write_csv`: multi-line fields quoted, formula cells
    neutralised with a leading ``'`` that the reader removes; lists and objects as JSON cells, which
    :func:`read_records` reads back). The methodology's columns come first, other fields after."""
    extra = sorted({k for r in records for k in r} - set(GOLDEN_COLUMNS))
    cols = GOLDEN_COLUMNS + extra
    return write_csv(({c: (json.dumps(v, ensure_ascii=False) if isinstance(v := r.get(c), list | dict) else v)
                       for c in cols} for r in records), cols)


def delete_dataset(engine: Engine, name: str, kind: str = "golden") -> int:
    """Delete every version of dataset ``name`` with its review state; returns the contents deleted.

    Runs that used it keep their results and its name and hash; their ``dataset_id`` becomes NULL.
    """
    with engine.begin() as conn:
        conn.execute(text("DELETE FROM eval.dataset_reviews WHERE kind = :k AND name = :n"), {"k": kind, "n": name})
        conn.execute(text("DELETE FROM eval.dataset_versions WHERE kind = :k AND name = :n"), {"k": kind, "n": name})
        return conn.execute(text("DELETE FROM eval.datasets WHERE kind = :k AND name = :n"), {"k": kind, "n": name}).rowcount


def item_payloads(engine: Engine, dataset_id: int) -> dict[str, Any]:
    """The stored records of one dataset content, by item key (``eval.dataset_items``)."""
    with engine.connect() as conn:
        rows = conn.execute(
            text("SELECT item_key, payload FROM eval.dataset_items WHERE dataset_id = :d"), {"d": int(dataset_id)}
        ).all()
    return {str(key): payload for key, payload in rows}


def first_version_kb_refs(engine: Engine, dataset_id: int) -> dict[str, Any]:
    """The knowledge-base references (``kb_refs``) recorded when the content ``dataset_id`` was first stored as a version."""
    with engine.connect() as conn:
        row = conn.execute(
            text("SELECT kb_refs FROM eval.dataset_versions WHERE dataset_id = :d ORDER BY version LIMIT 1"),
            {"d": int(dataset_id)},
        ).scalar()
    return dict(row or {})
