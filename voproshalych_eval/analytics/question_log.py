"""The real-user question log: read (production ``question_answer`` or imported ``eval.question_log``),
filter, import exports, and embed the whole log.

Sources: ``"question_answer"`` (:data:`PRODUCTION_SOURCE`) is the bot's own table (production or the demo),
read from its snapshot in the store (``eval.snapshot_log_<id>``; default: the current snapshot, named in
``df.attrs["snapshot_id"]``); any other name is a log imported from a file into ``eval.question_log``
(``source`` column).

Every analysis works on the **whole** filtered log: :func:`embed_log` takes the stored embedding of a
row when the embedder is the model that filled the table, and embeds every other question with the
cached embedder, so ``n_used == len(log)`` and the n is reported with each result.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from sqlalchemy import Engine, text

from voproshalych_eval.bilingual import text as bi
from voproshalych_eval.config import get_settings
from voproshalych_eval.datasets.files import (
    FieldError,
    RecordFileError,
    as_bool,
    as_datetime,
    as_int,
    as_text,
    check_columns,
    open_records,
)
from voproshalych_eval.db import production, snapshots
from voproshalych_eval.db.errors import SnapshotError
from voproshalych_eval.db.retrieval import stored_model_name
from voproshalych_eval.embeddings import cached_embedder

log = logging.getLogger(__name__)

PRODUCTION_SOURCE = "question_answer"
#: every character Python's ``str.strip()`` removes (``str.isspace``): an answer made only of these is no answer,
#: in SQL (:data:`HAS_TEXT_PATTERN`, a PostgreSQL regular expression) exactly as in Python (``answered``)
WHITESPACE = "".join(chr(c) for c in range(0x3100) if chr(c).isspace())
HAS_TEXT_PATTERN = f"[^{WHITESPACE}]"
#: rows validated and inserted together by :func:`import_file`
IMPORT_BATCH = 5000
#: the columns an import reads (or knowingly skips: ``updated_at``, ``embedding`` of production exports)
IMPORT_COLUMNS = ("id", "question", "answer", "confluence_url", "url", "score", "user_id", "stop_point", "created_at",
                  "updated_at", "embedding")
LOG_COLUMNS = ["source", "id", "question", "answer", "url", "score", "user_id", "stop_point", "created_at"]
SCORE_UP, SCORE_DOWN = 5, 1

Progress = Callable[[str], None]


class QuestionLogImportError(RecordFileError):
    """An import file is malformed: names the file, the row (1-based data row) and the field."""


# ---------------------------------------------------------------------------------------------
# filters and reading
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LogFilters:
    """Filters applied to the log everywhere.

    ``start``/``end``: inclusive dates on ``created_at`` (rows without a timestamp are dropped when a
    period is set); ``answered``: True = non-empty answer, False = no answer, None = both; ``scores``:
    allowed score values, where None stands for "unrated" (e.g. ``(5,)`` thumbs up only).
    """

    start: date | None = None
    end: date | None = None
    answered: bool | None = None
    scores: tuple[int | None, ...] | None = None

    def describe(self) -> dict[str, Any]:
        return {k: (v.isoformat() if isinstance(v, date) else v) for k, v in asdict(self).items() if v is not None}


def _snapshot_has_log(engine: Engine, snapshot: Any = None) -> bool:
    try:
        return production.inspect_schema(engine, snapshot=snapshot).has_question_answer
    except SnapshotError:
        return False


def imported_sources(engine: Engine) -> list[str]:
    """Names of the logs imported from files (``eval.question_log``), sorted; reads no knowledge base."""
    with engine.connect() as conn:
        return [r[0] for r in conn.execute(text("SELECT DISTINCT source FROM eval.question_log ORDER BY 1"))]


def list_sources(engine: Engine, *, snapshot: Any = None) -> list[str]:
    """Available log sources: ``question_answer`` (when the snapshot has the table) and imported source names."""
    out: list[str] = []
    if _snapshot_has_log(engine, snapshot):
        out.append(PRODUCTION_SOURCE)
    return out + imported_sources(engine)


def default_source(engine: Engine, *, snapshot: Any = None) -> str | None:
    sources = list_sources(engine, snapshot=snapshot)
    return sources[0] if sources else None


def read_log(
    engine: Engine,
    *,
    source: str | None = None,
    filters: LogFilters | None = None,
    snapshot: Any = None,
) -> pd.DataFrame:
    """The log as a DataFrame (:data:`LOG_COLUMNS` + ``answered``, ``has_stored_embedding``,
    ``is_empty_question``), filters applied. Rows without question text are kept: they are events of
    sessions and users; text analyses take :func:`text_rows`.

    Ordered by ``created_at`` (rows without one last), then ``id``. The bot's own log is read from a
    snapshot (``snapshot``: id or ``Snapshot``, default the current one); ``df.attrs["snapshot_id"]`` names it.
    """
    source = source or default_source(engine, snapshot=snapshot)
    if source is None:
        raise LookupError(
            "No question log: the database has no 'question_answer' table and nothing was imported. "
            "Load the demo data or import a log file (voproshalych-eval import-questions FILE)."
        )
    f = filters or LogFilters()
    where: list[str] = []
    params: dict[str, Any] = {}
    if f.start is not None:
        where.append("q.created_at >= :start")
        params["start"] = datetime.combine(f.start, datetime.min.time(), tzinfo=UTC)
    if f.end is not None:
        where.append("q.created_at < :end")
        params["end"] = datetime.combine(f.end, datetime.min.time(), tzinfo=UTC) + pd.Timedelta(days=1)
    if f.answered is True:
        where.append("q.answer ~ :has_text")
        params["has_text"] = HAS_TEXT_PATTERN
    elif f.answered is False:
        where.append("(q.answer IS NULL OR q.answer !~ :has_text)")
        params["has_text"] = HAS_TEXT_PATTERN
    if f.scores is not None:
        vals = [s for s in f.scores if s is not None]
        conds = []
        if vals:
            conds.append("q.score = ANY(:scores)")
            params["scores"] = [int(v) for v in vals]
        if None in f.scores:
            conds.append("q.score IS NULL")
        where.append("(" + (" OR ".join(conds) or "false") + ")")
    snapshot_id = None
    if source == PRODUCTION_SOURCE:
        snap = snapshots.resolve(engine, snapshot)
        if not snap.has_question_answer:
            raise LookupError(f"Snapshot {snap.label} has no 'question_answer' table (the source had none).")
        snapshot_id = snap.id
        sql = (
            "SELECT :src AS source, q.id, COALESCE(q.question, '') AS question, q.answer, q.url, q.score, q.user_id, "
            "COALESCE(q.stop_point, false) AS stop_point, q.created_at, (q.embedding IS NOT NULL) AS "
            f"has_stored_embedding FROM {snap.log_table} q"
        )
    else:
        sql = (
            "SELECT q.source, q.id, q.question, q.answer, q.url, q.score, q.user_id, q.stop_point, q.created_at, "
            "false AS has_stored_embedding FROM eval.question_log q"
        )
        where.insert(0, "q.source = :src")
    params["src"] = source
    if where:
        sql += " WHERE " + " AND ".join(where)
    sql += " ORDER BY q.created_at NULLS LAST, q.id"
    with engine.connect() as conn:
        df = pd.read_sql_query(text(sql), conn, params=params)
    df["created_at"] = pd.to_datetime(df["created_at"], utc=True)
    df["question"] = df["question"].fillna("").astype(str)
    df["is_empty_question"] = df["question"].str.strip().eq("")
    df["answer"] = df["answer"].where(df["answer"].notna(), None)
    df["answered"] = df["answer"].fillna("").astype(str).str.strip().ne("")
    df["score"] = df["score"].astype("Int64")
    df["user_id"] = df["user_id"].astype("Int64")
    df["stop_point"] = df["stop_point"].fillna(False).astype(bool)
    df = df.reset_index(drop=True)
    df.attrs["snapshot_id"] = snapshot_id
    return df


def text_rows(df: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """``(rows with question text, number of rows without)``: what text analyses (topics, embeddings,
    classification) work on, and the count they report as left out. Index reset; order kept."""
    empty = df["question"].map(is_empty_question) if "is_empty_question" not in df else df["is_empty_question"]
    out = df.loc[~empty.astype(bool)].reset_index(drop=True)
    out.attrs = dict(df.attrs)  # the snapshot it was read from
    return out, int(empty.sum())


# ---------------------------------------------------------------------------------------------
# embeddings of the whole log
# ---------------------------------------------------------------------------------------------


@dataclass
class LogEmbeddings:
    """Unit vectors of every row of a log DataFrame (row order kept) and where they came from."""

    vectors: np.ndarray
    model: str
    n_used: int
    n_stored: int
    n_embedded: int
    stored_mask: np.ndarray | None = None

    def info(self) -> dict[str, Any]:
        return {"model": self.model, "n_used": self.n_used, "n_stored": self.n_stored, "n_embedded": self.n_embedded}


def analysis_embedder_name(engine: Engine, requested: str | None = None, *, snapshot: Any = None) -> str:
    """The embedder analytics should use: the requested one, else the model that filled ``chunk.embedding``
    (so that questions and chunks share one space), else the configured default."""
    if requested:
        return requested

    return stored_model_name(engine, snapshot=snapshot) or get_settings().embedder


def embed_log(
    engine: Engine,
    df: pd.DataFrame,
    *,
    embedder_name: str | None = None,
    progress: Progress | None = None,
    snapshot: Any = None,
) -> LogEmbeddings:
    """Vectors for every row of ``df``: stored ``question_answer.embedding`` (from the snapshot ``df`` was read
    from, ``df.attrs["snapshot_id"]``, else ``snapshot``) where it was made by the same model, the cached
    embedder (``encode_queries``) for all the rest. Never silently drops a row."""
    if df.attrs.get("snapshot_id") is not None:
        snapshot = df.attrs["snapshot_id"]
    name = analysis_embedder_name(engine, embedder_name, snapshot=snapshot)
    emb = cached_embedder(name, engine)
    n = len(df)
    out = np.zeros((n, emb.dim), dtype=np.float32)
    have = np.zeros(n, dtype=bool)
    # only the bot's own log has stored vectors; an imported log reads no knowledge base
    production_log = bool(n) and "source" in df and bool((df["source"] == PRODUCTION_SOURCE).all())
    stored_model = stored_model_name(engine, snapshot=snapshot) if production_log else None
    if (
        production_log
        and stored_model == name
        and "has_stored_embedding" in df
        and bool(df["has_stored_embedding"].any())
    ):
        ids = df.loc[df["has_stored_embedding"], "id"].astype(int).tolist()
        pos = {int(i): k for k, i in enumerate(df["id"].astype(int).tolist())}
        log_table = snapshots.resolve(engine, snapshot).log_table
        with engine.connect() as conn:
            for s in range(0, len(ids), 5000):
                rows = conn.execute(
                    text(f"SELECT id, embedding FROM {log_table} WHERE id = ANY(:ids)"),
                    {"ids": ids[s : s + 5000]},
                )
                for qid, vec in rows:
                    v = production.parse_vector(vec)
                    if v.shape[0] != emb.dim:
                        continue
                    k = pos[int(qid)]
                    nv = float(np.linalg.norm(v))
                    out[k] = v / nv if nv > 0 else v
                    have[k] = True
    missing = np.flatnonzero(~have)
    if missing.size:
        texts = df["question"].iloc[missing].astype(str).tolist()
        unique = list(dict.fromkeys(texts))
        if progress:
            progress(bi(f"Эмбеддинги {len(unique)} разных вопросов (строк без сохранённого вектора: {missing.size})…",
                        f"Embedding {len(unique)} distinct questions ({missing.size} rows without a stored vector)…"))
        vecs = emb.encode_queries(unique)
        index = {t: i for i, t in enumerate(unique)}
        out[missing] = vecs[[index[t] for t in texts]]
    return LogEmbeddings(out, name, n, int(have.sum()), int(missing.size), have)


# ---------------------------------------------------------------------------------------------
# import
# ---------------------------------------------------------------------------------------------


@dataclass
class ImportReport:
    file: str
    source: str
    n_rows: int
    n_imported: int
    n_skipped: int
    replaced: int = 0
    n_empty_questions: int = 0
    errors: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def is_empty_question(question: Any) -> bool:
    """A logged event without question text (a sticker, whitespace): kept in sessions and user counts,
    left out of every text analysis (topics, embeddings, classification)."""
    return question is None or not str(question).strip()


def validate_record(rec: Mapping[str, Any], row_number: int) -> dict[str, Any]:
    """One export row → an ``eval.question_log`` row (values as written: nothing stripped or rounded).

    Raises :class:`datasets.files.FieldError` (field, message). An empty or whitespace ``question`` is
    valid (an event without text, see :func:`is_empty_question`); a missing ``id`` is the row's number
    in the file (``row_number``), so it stays the same whatever other rows are skipped.
    """
    out: dict[str, Any] = {}
    q = as_text(rec.get("question"), "question")
    out["question"] = q if q is not None else ""
    out["id"] = as_int(rec.get("id"), "id")
    if out["id"] is None:
        out["id"] = row_number
    out["answer"] = as_text(rec.get("answer"), "answer") or None
    url_field = "confluence_url" if rec.get("confluence_url") not in (None, "") else "url"
    out["url"] = as_text(rec.get(url_field), url_field) or None
    out["score"] = as_int(rec.get("score"), "score")
    if out["score"] is not None and not 1 <= out["score"] <= 5:
        raise FieldError("score", f"must be between 1 and 5 (5 = thumbs up, 1 = thumbs down), got {out['score']}")
    out["user_id"] = as_int(rec.get("user_id"), "user_id")
    out["stop_point"] = bool(as_bool(rec.get("stop_point"), "stop_point"))
    out["created_at"] = as_datetime(rec.get("created_at"), "created_at")
    return out


def import_file(
    engine: Engine,
    path: str | Path,
    *,
    source: str | None = None,
    skip_bad_rows: bool = False,
    data: bytes | None = None,
    encoding: str | None = None,
    ignore_columns: Sequence[str] = (),
) -> ImportReport:
    """Import a CSV / JSONL / JSON export of ``question_answer`` into ``eval.question_log`` under ``source``.

    Columns: ``question`` (required column; an empty value is an event without text, imported and
    counted in ``n_empty_questions``), ``id``, ``answer``, ``confluence_url`` or ``url``, ``score`` (1–5),
    ``user_id``, ``created_at`` (ISO; may be empty), ``stop_point``; ``updated_at`` and ``embedding`` (in the
    production table's exports) are ignored. Any other column — a misspelled or capitalised one (``Answer``,
    ``Score``) included — is refused, naming the column it resembles, unless ``ignore_columns`` lists it
    (``--ignore-columns``): nothing is dropped without a word.
    The file is read by :func:`datasets.files.open_records` (``encoding`` for non-UTF-8 files): a CSV file is
    streamed and inserted in batches of :data:`IMPORT_BATCH` rows inside the replacing transaction, so memory
    stays that of a batch (plus the ids seen, for the duplicate check).

    All or nothing: the first bad row raises :class:`QuestionLogImportError` (file, row, field) and
    nothing is written. With ``skip_bad_rows`` bad rows are left out and listed in the report — but an
    import with no good row raises and replaces nothing. Re-importing a source replaces it in one
    transaction; imports into one source are serialised by an advisory lock, so two concurrent imports
    end with exactly one file's rows. ``data`` passes the file's bytes (uploads).
    """
    p = Path(path)
    src = (source or p.stem).strip()
    if not src:
        raise QuestionLogImportError(p.name, None, "source", "the source name is empty")
    if src == PRODUCTION_SOURCE:
        raise QuestionLogImportError(
            p.name, None, "source", f"'{PRODUCTION_SOURCE}' is the bot's own table; choose another source name"
        )
    try:
        stream = open_records(p, data=data, encoding=encoding, skip_bad_rows=skip_bad_rows, name=p.name)
        columns = stream.read_header()
        if columns:
            check_columns(p.name, columns, IMPORT_COLUMNS, ignore=ignore_columns)
    except QuestionLogImportError:
        raise
    except RecordFileError as exc:
        raise QuestionLogImportError(exc.file, exc.row, exc.field, exc.message, line=exc.line) from None
    # Streamed: records are validated and inserted one batch at a time inside the transaction that replaces
    # the source, so memory stays that of a batch; any error before the end rolls everything back.
    errors: list[dict[str, Any]] = []
    seen: dict[int, int] = {}
    batch: list[dict[str, Any]] = []
    n_good = n_empty = 0
    insert = text("INSERT INTO eval.question_log(source, id, question, answer, url, score, user_id, stop_point, "
                  "created_at) VALUES (:source, :id, :question, :answer, :url, :score, :user_id, :stop_point, "
                  ":created_at)")
    with engine.begin() as conn:
        conn.execute(text("SELECT pg_advisory_xact_lock(hashtext('eval.question_log'), hashtext(:s))"), {"s": src})
        replaced = conn.execute(text("DELETE FROM eval.question_log WHERE source = :s"), {"s": src}).rowcount
        checked = bool(columns)
        try:
            for rec, row_no in stream:
                if not checked:  # JSON / JSONL: the keys of the records read whole
                    check_columns(p.name, stream.columns, IMPORT_COLUMNS, ignore=ignore_columns)
                    checked = True
                if "question" not in stream.columns:
                    raise QuestionLogImportError(p.name, None, "question", "required column 'question' is missing")
                try:
                    if "question" not in rec:
                        raise FieldError("question", "the row has no 'question' field")
                    row = validate_record(rec, row_no)
                    if row["id"] in seen:
                        raise FieldError("id", f"duplicate id {row['id']} (first seen in row {seen[row['id']]})")
                    seen[row["id"]] = row_no
                except FieldError as exc:
                    if not skip_bad_rows:
                        raise QuestionLogImportError(p.name, row_no, exc.field, exc.message) from None
                    errors.append({"row": row_no, "field": exc.field, "message": exc.message})
                    continue
                batch.append({**row, "source": src})
                n_good += 1
                n_empty += is_empty_question(row["question"])
                if len(batch) >= IMPORT_BATCH:
                    conn.execute(insert, batch)
                    batch = []
        except RecordFileError as exc:
            if isinstance(exc, QuestionLogImportError):
                raise
            raise QuestionLogImportError(exc.file, exc.row, exc.field, exc.message, line=exc.line) from None
        errors = sorted([e.to_dict() for e in stream.bad_rows] + errors,
                        key=lambda e: e["row"] if e["row"] is not None else 0)
        if not n_good and not errors:
            raise QuestionLogImportError(p.name, None, None, "the file has no rows")
        if not n_good:
            first = errors[0] if errors else None
            detail = f"; first: row {first['row']}, field '{first['field']}': {first['message']}" if first else ""
            raise QuestionLogImportError(
                p.name, None, None,
                f"no good rows ({len(errors)} bad{detail}); nothing imported, source '{src}' left unchanged",
            )
        if batch:
            conn.execute(insert, batch)
    n_rows = n_good + len(errors)
    return ImportReport(p.name, src, n_rows, n_good, len(errors), max(replaced, 0), n_empty, errors)


def delete_source(engine: Engine, source: str) -> int:
    """Remove an imported source from ``eval.question_log``; returns the rows deleted."""
    if source == PRODUCTION_SOURCE:
        raise ValueError("The bot's own question_answer table is never modified.")
    with engine.begin() as conn:
        return conn.execute(text("DELETE FROM eval.question_log WHERE source = :s"), {"s": source}).rowcount
