"""Versioned, content-hashed snapshots of the source's knowledge base and question log, in the store.

A snapshot copies ``chunk`` (both production variants, normalised to ``id, url, source_type, text,
embedding``) and ``question_answer`` from the source into the store's partitions
``eval.snapshot_chunks_<id>`` / ``eval.snapshot_log_<id>``, with one row in ``eval.snapshots``. The
copy runs in one REPEATABLE READ, read-only transaction on the source (a consistent picture) and one
transaction in the store (all or nothing); rows travel as binary ``COPY`` without being decoded.

Content hash
    ``row hash = sha256(length-prefixed fields || vector_send(embedding))`` per row, computed by
    PostgreSQL; ``chunks_hash`` / ``log_hash`` = sha256 of the row hashes in id order;
    ``content_hash = sha256(chunks_hash || log_hash || number of users)``. The same expression is
    evaluated on the copy in the store, which must give the same hash (the copy is verified).
    Taking a snapshot of an unchanged source finds the existing one (no duplicate).

The *current* snapshot (``eval.meta``) is what readers use by default; :func:`take` makes the snapshot
it returns current. A run resolves its snapshot once (:func:`for_run`: the source's present content,
taken if it changed; the current snapshot when the source cannot be reached) and records its id.
:func:`diff` lists chunks added, removed, or whose text, URL or vector changed between two snapshots.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Engine, text
from sqlalchemy.exc import OperationalError, ProgrammingError

from voproshalych_eval.db.engine import settings_for, source_for
from voproshalych_eval.db.errors import SnapshotError
from voproshalych_eval.db.meta import CURRENT_SNAPSHOT_KEY as CURRENT_META_KEY
from voproshalych_eval.db.meta import STORED_MODEL_KEY as DEMO_STORED_MODEL_KEY
from voproshalych_eval.db.meta import get_meta, set_meta
from voproshalych_eval.errors import VoproshalychEvalError

log = logging.getLogger(__name__)

#: advisory lock key serialising snapshot takers on one store
TAKE_LOCK = 727276

Progress = Callable[[str], None]


@dataclass(frozen=True)
class Snapshot:
    """One snapshot of a source (a row of ``eval.snapshots``)."""

    id: int
    content_hash: str
    chunks_hash: str
    log_hash: str
    source_kind: str
    source_label: str
    chunk_variant: str | None
    has_chunk: bool
    has_question_answer: bool
    has_user: bool
    chunk_dim: int | None
    question_dim: int | None
    stored_model: str | None
    n_chunks: int
    n_pages: int
    n_questions: int
    n_questions_with_embedding: int
    n_users: int | None
    seconds: float | None
    taken_at: datetime
    #: True when :func:`take` found this snapshot already in the store (source unchanged)
    reused: bool = field(default=False, compare=False)

    @property
    def chunks_table(self) -> str:
        return f"eval.snapshot_chunks_{int(self.id)}"

    @property
    def log_table(self) -> str:
        return f"eval.snapshot_log_{int(self.id)}"

    @property
    def short_hash(self) -> str:
        return self.content_hash[:12]

    @property
    def label(self) -> str:
        """``#id (hash…, taken …)`` for messages, pages and reports."""
        return f"#{self.id} ({self.short_hash}, {self.taken_at:%Y-%m-%d %H:%M})"

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["taken_at"] = self.taken_at.isoformat()
        return out


_COLUMNS = [f.name for f in Snapshot.__dataclass_fields__.values() if f.name != "reused"]


# ---------------------------------------------------------------------------------------------- reading


def _row_to_snapshot(row: Any) -> Snapshot:
    data = dict(row._mapping)
    data["content_hash"] = data["content_hash"].strip()
    data["chunks_hash"] = data["chunks_hash"].strip()
    data["log_hash"] = data["log_hash"].strip()
    return Snapshot(**data)


def _query(engine: Engine | Connection, sql: str, params: dict[str, Any] | None = None) -> list[Any]:
    if isinstance(engine, Connection):
        return list(engine.execute(text(sql), params or {}).all())
    with engine.connect() as conn:
        return list(conn.execute(text(sql), params or {}).all())


def get(engine: Engine | Connection, snapshot_id: int) -> Snapshot:
    """The snapshot ``snapshot_id`` (:class:`SnapshotError` when it does not exist)."""
    rows = _query(engine, f"SELECT {', '.join(_COLUMNS)} FROM eval.snapshots WHERE id = :i", {"i": int(snapshot_id)})
    if not rows:
        raise SnapshotError(f"There is no snapshot #{snapshot_id} in the store (voproshalych-eval snapshot list).")
    return _row_to_snapshot(rows[0])


def list_snapshots(engine: Engine | Connection) -> list[Snapshot]:
    """Every snapshot in the store, newest first."""
    rows = _query(engine, f"SELECT {', '.join(_COLUMNS)} FROM eval.snapshots ORDER BY taken_at DESC, id DESC")
    return [_row_to_snapshot(r) for r in rows]


def current_id(engine: Engine | Connection) -> int | None:
    value = get_meta(engine, CURRENT_META_KEY)
    return int(value) if value is not None else None


def current(engine: Engine | Connection) -> Snapshot | None:
    """The current snapshot (what readers use by default), or None when none was taken yet."""
    sid = current_id(engine)
    if sid is None:
        return None
    try:
        return get(engine, sid)
    except SnapshotError:
        return None


def set_current(engine: Engine, snapshot_id: int) -> Snapshot:
    """Make ``snapshot_id`` the current snapshot."""
    snap = get(engine, snapshot_id)
    with engine.begin() as conn:
        set_meta(conn, CURRENT_META_KEY, snap.id)
    return snap


def resolve(engine: Engine, snapshot: int | Snapshot | None = None) -> Snapshot:
    """The snapshot a reader should use: the given one, else the current one, else one taken now."""
    if isinstance(snapshot, Snapshot):
        return snapshot
    if snapshot is not None:
        return get(engine, int(snapshot))
    snap = current(engine)
    if snap is not None:
        return snap
    return take(engine)


def for_run(engine: Engine, snapshot: int | Snapshot | None = None, *, progress: Progress | None = None) -> Snapshot:
    """The snapshot a run reads: the given one; else the source's present content (taken when it changed);
    else, when the source cannot be reached, the newest snapshot of *the same source* (the current one when
    it is of that source; with a warning). A snapshot of another source is never used: an unreachable or
    mistyped ``DATABASE_URL`` raises :class:`SnapshotError` (the command exits non-zero) rather than give
    results on the wrong data."""
    if snapshot is not None:
        return resolve(engine, snapshot)
    try:
        return take(engine, progress=progress)
    except SnapshotError as exc:
        snap = same_source_fallback(engine)
        if snap is None:
            kind, label = configured_source(engine)
            others = list_snapshots(engine)
            if others:
                raise SnapshotError(
                    f"{exc} No snapshot of this source ({label}) is stored; the store's snapshots are of another "
                    "source, which a run never uses in its place."
                ) from exc
            raise
        log.warning("The source could not be read; the run uses the newest snapshot of the same source, %s.", snap.label)
        return snap


def configured_source(engine: Engine) -> tuple[str, str]:
    """``(source_kind, source_label)`` the store's configured source gives its snapshots (as :func:`take` does)."""
    settings = settings_for(engine)
    return ("url", settings.source_label) if settings.database_url else ("demo", "demo")


def same_source_fallback(engine: Engine) -> Snapshot | None:
    """The current snapshot when it is of the configured source, else that source's newest snapshot; None
    when the store holds none of it."""
    kind, label = configured_source(engine)
    cur = current(engine)
    if cur is not None and (cur.source_kind, cur.source_label) == (kind, label):
        return cur
    same = [s for s in list_snapshots(engine) if (s.source_kind, s.source_label) == (kind, label)]
    return max(same, key=lambda s: (s.taken_at, s.id)) if same else None


# ---------------------------------------------------------------------------------------------- hashing


def _len_field(expr: str) -> str:
    """A length-prefixed text field (NULL and '' differ; no delimiter ambiguity)."""
    return f"length({expr})::text, ':', {expr}, '|'"


def _vec(expr: str | None, schema: str | None) -> str:
    return f"coalesce({schema}.vector_send({expr}), '\\x'::bytea)" if expr and schema else "'\\x'::bytea"


def _vector_schema(conn: Connection) -> str | None:
    """The (quoted) schema of the ``vector`` extension in a database, or None when it is not installed."""
    return conn.execute(
        text(
            "SELECT quote_ident(n.nspname) FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace "
            "WHERE e.extname = 'vector'"
        )
    ).scalar()


def _ts(expr: str | None) -> str:
    if not expr:
        return "NULL::text"
    return f"to_char(CAST({expr} AS timestamptz) AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US')"


@dataclass(frozen=True)
class _SourceShape:
    """Column expressions of the source tables (missing columns become NULL)."""

    has_chunk: bool
    chunk_variant: str | None
    has_question_answer: bool
    has_user: bool
    chunk: dict[str, str | None]
    log: dict[str, str | None]
    chunk_dim: int | None
    question_dim: int | None
    #: quoted schema of the ``vector`` extension (None: not installed, so no vector columns)
    vector_schema: str | None = None


def _shape(conn: Connection, qualifier: str = "public") -> _SourceShape:
    from voproshalych_eval.db.production import inspect_source  # heavy: defers pandas (via db.production)

    schema = inspect_source(conn)
    cols: dict[str, set[str]] = {}
    for t in ("chunk", "question_answer"):
        cols[t] = {
            r[0]
            for r in conn.execute(
                text("SELECT column_name FROM information_schema.columns WHERE table_schema = :s AND table_name = :t"),
                {"s": qualifier, "t": t},
            )
        }

    def pick(table: str, name: str) -> str | None:
        return name if name in cols[table] else None

    chunk = {
        "id": "id",
        "url": schema.chunk_variant,
        "source_type": pick("chunk", "source_type"),
        "text": "text",
        "embedding": pick("chunk", "embedding"),
        "created_at": pick("chunk", "created_at"),
        "updated_at": pick("chunk", "updated_at"),
    }
    log_cols = {
        "id": "id",
        "question": pick("question_answer", "question"),
        "answer": pick("question_answer", "answer"),
        "url": pick("question_answer", "confluence_url") or pick("question_answer", "url"),
        "score": pick("question_answer", "score"),
        "user_id": pick("question_answer", "user_id"),
        "stop_point": pick("question_answer", "stop_point"),
        "created_at": pick("question_answer", "created_at"),
        "updated_at": pick("question_answer", "updated_at"),
        "embedding": pick("question_answer", "embedding"),
    }
    vector_schema = _vector_schema(conn)
    if vector_schema is None:
        chunk["embedding"] = log_cols["embedding"] = None
    chunk_dim, question_dim = schema.chunk_dim, schema.question_dim
    if chunk_dim is None and schema.has_chunk and chunk["embedding"]:  # untyped ``vector`` column
        chunk_dim = conn.execute(text(f"SELECT max({vector_schema}.vector_dims(embedding)) FROM {qualifier}.chunk")).scalar()
    if question_dim is None and schema.has_question_answer and log_cols["embedding"]:
        question_dim = conn.execute(
            text(f"SELECT max({vector_schema}.vector_dims(embedding)) FROM {qualifier}.question_answer")
        ).scalar()
    return _SourceShape(
        schema.has_chunk, schema.chunk_variant, schema.has_question_answer, schema.has_user,
        chunk, log_cols, chunk_dim, question_dim, vector_schema,
    )


def _chunk_row_hash(c: dict[str, str | None], vs: str | None) -> str:
    parts = ", ".join(_len_field(f"CAST({c[k]} AS text)" if c[k] else "NULL::text") for k in ("url", "source_type", "text"))
    return f"sha256(convert_to(concat(id::text, '|', {parts}), 'UTF8') || {_vec(c['embedding'], vs)})"


def _log_row_hash(q: dict[str, str | None], vs: str | None) -> str:
    fields = [f"CAST({q[k]} AS text)" if q[k] else "NULL::text" for k in ("question", "answer", "url", "score", "user_id", "stop_point")]
    fields += [_ts(q["created_at"]), _ts(q["updated_at"])]
    parts = ", ".join(_len_field(f) for f in fields)
    return f"sha256(convert_to(concat(id::text, '|', {parts}), 'UTF8') || {_vec(q['embedding'], vs)})"


def _agg_hash(row_hash: str, table: str) -> str:
    return (
        f"(SELECT encode(sha256(coalesce(string_agg({row_hash}, '\\x'::bytea ORDER BY id), '\\x'::bytea)), 'hex') "
        f"FROM {table})"
    )


_EMPTY = hashlib.sha256(b"").hexdigest()


def _hashes(conn: Connection, shape: _SourceShape, chunk_table: str, log_table: str, user_table: str | None) -> dict[str, Any]:
    """chunks_hash, log_hash, counts, computed by PostgreSQL over the given tables."""
    sel = []
    if shape.has_chunk:
        url = shape.chunk["url"]
        sel += [
            f"{_agg_hash(_chunk_row_hash(shape.chunk, shape.vector_schema), chunk_table)} AS chunks_hash",
            f"(SELECT count(*) FROM {chunk_table}) AS n_chunks",
            f"(SELECT count(DISTINCT {url}) FROM {chunk_table}) AS n_pages",
        ]
    else:
        sel += [f"'{_EMPTY}' AS chunks_hash", "0 AS n_chunks", "0 AS n_pages"]
    if shape.has_question_answer:
        emb = shape.log["embedding"]
        sel += [
            f"{_agg_hash(_log_row_hash(shape.log, shape.vector_schema), log_table)} AS log_hash",
            f"(SELECT count(*) FROM {log_table}) AS n_questions",
            f"(SELECT count({emb}) FROM {log_table}) AS n_questions_with_embedding" if emb else "0 AS n_questions_with_embedding",
        ]
    else:
        sel += [f"'{_EMPTY}' AS log_hash", "0 AS n_questions", "0 AS n_questions_with_embedding"]
    sel.append(f"(SELECT count(*) FROM {user_table}) AS n_users" if user_table else "NULL::bigint AS n_users")
    row = conn.execute(text("SELECT " + ", ".join(sel))).one()
    out = dict(row._mapping)
    out["content_hash"] = content_hash(out["chunks_hash"], out["log_hash"], out["n_users"])
    return out


def content_hash(chunks_hash: str, log_hash: str, n_users: int | None) -> str:
    """``sha256(chunks_hash || log_hash || number of users)`` (hex)."""
    return hashlib.sha256(f"{chunks_hash}|{log_hash}|{'' if n_users is None else int(n_users)}".encode()).hexdigest()


# ---------------------------------------------------------------------------------------------- taking


def _stored_model_for(store: Engine, source_is_demo: bool) -> str | None:
    if source_is_demo:
        value = get_meta(store, DEMO_STORED_MODEL_KEY)
        if value and value.get("model"):
            return str(value["model"])
    return settings_for(store).stored_embedding_model


def _source_error(exc: Exception, *, demo: bool) -> SnapshotError:
    if demo:
        return SnapshotError(
            "No knowledge base to snapshot: the demo database is not loaded. Run `voproshalych-eval demo`, or set "
            "DATABASE_URL to the bot's database."
        )
    return SnapshotError(f"The source database could not be read ({type(exc).__name__}): check DATABASE_URL.")


def take(
    store: Engine,
    source: Engine | None = None,
    *,
    stored_model: str | None = None,
    progress: Progress | None = None,
) -> Snapshot:
    """Snapshot the source into the store (or find the identical snapshot) and make it current.

    Args:
        store: the store engine (:func:`voproshalych_eval.db.get_engine`).
        source: a read-only source engine; default: the store's configured source.
        stored_model: the model that filled ``chunk.embedding``; default: the demo's model for the demo,
            else the ``stored_embedding_model`` setting.
    """
    settings = settings_for(store)
    is_demo = source is None and not settings.database_url
    say = progress or (lambda _m: None)
    t0 = time.perf_counter()
    src = source if source is not None else source_for(store)
    try:
        sconn = src.connect().execution_options(isolation_level="REPEATABLE READ")
    except (OperationalError, ProgrammingError) as exc:
        raise _source_error(exc, demo=is_demo) from exc
    with sconn:
        shape = _shape(sconn)
        if not shape.has_chunk and not shape.has_question_answer:
            raise SnapshotError(
                f"The source ({'demo' if is_demo else settings.source_label}) has neither a 'chunk' nor a "
                "'question_answer' table: nothing to snapshot."
            )
        say("Hashing the source's knowledge base and question log…")
        hashes = _hashes(
            sconn, shape, "public.chunk", "public.question_answer", 'public."user"' if shape.has_user else None
        )
        existing = _by_hash(store, hashes["content_hash"])
        model = stored_model if stored_model is not None else _stored_model_for(store, is_demo)
        if existing is not None:
            _fill_stored_model(store, existing, model)
            set_current(store, existing.id)
            say(f"The source is unchanged: snapshot {existing.label}.")
            return replace(get(store, existing.id), reused=True)
        say(f"Copying {hashes['n_chunks']} chunks and {hashes['n_questions']} logged questions into the store…")
        with store.begin() as conn:
            conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": TAKE_LOCK})
            again = _by_hash(conn, hashes["content_hash"])
            if again is not None:
                set_meta(conn, CURRENT_META_KEY, again.id)
                return replace(again, reused=True)
            sid = conn.execute(
                text(
                    "INSERT INTO eval.snapshots(content_hash, chunks_hash, log_hash, source_kind, source_label, "
                    "chunk_variant, has_chunk, has_question_answer, has_user, chunk_dim, question_dim, stored_model, "
                    "n_chunks, n_pages, n_questions, n_questions_with_embedding, n_users) VALUES (:ch, :kh, :lh, "
                    ":kind, :label, :variant, :hc, :hq, :hu, :cd, :qd, :model, :nc, :np, :nq, :nqe, :nu) RETURNING id"
                ),
                {
                    "ch": hashes["content_hash"], "kh": hashes["chunks_hash"], "lh": hashes["log_hash"],
                    "kind": "demo" if is_demo else "url",
                    "label": "demo" if is_demo else settings.source_label,
                    "variant": shape.chunk_variant, "hc": shape.has_chunk, "hq": shape.has_question_answer,
                    "hu": shape.has_user, "cd": shape.chunk_dim, "qd": shape.question_dim, "model": model,
                    "nc": hashes["n_chunks"], "np": hashes["n_pages"], "nq": hashes["n_questions"],
                    "nqe": hashes["n_questions_with_embedding"], "nu": hashes["n_users"],
                },
            ).scalar_one()
            _copy(sconn, conn, shape, int(sid))
            stored = replace(_store_shape(shape), vector_schema=_vector_schema(conn))
            check = _hashes(conn, stored, f"eval.snapshot_chunks_{sid}", f"eval.snapshot_log_{sid}", None)
            if (check["chunks_hash"], check["log_hash"]) != (hashes["chunks_hash"], hashes["log_hash"]):
                raise SnapshotError(
                    "The copy in the store does not hash like the source (the source changed types during the copy?); "
                    "nothing was stored."
                )
            seconds = time.perf_counter() - t0
            conn.execute(text("UPDATE eval.snapshots SET seconds = :s WHERE id = :i"), {"s": seconds, "i": sid})
            set_meta(conn, CURRENT_META_KEY, int(sid))
    snap = get(store, int(sid))
    say(f"Snapshot {snap.label} taken in {seconds:.1f} s.")
    return snap


def _by_hash(engine: Engine | Connection, content: str) -> Snapshot | None:
    rows = _query(engine, f"SELECT {', '.join(_COLUMNS)} FROM eval.snapshots WHERE content_hash = :h", {"h": content})
    return _row_to_snapshot(rows[0]) if rows else None


def _fill_stored_model(store: Engine, snap: Snapshot, model: str | None) -> None:
    if model and not snap.stored_model:
        with store.begin() as conn:
            conn.execute(text("UPDATE eval.snapshots SET stored_model = :m WHERE id = :i"), {"m": model, "i": snap.id})


def _store_shape(shape: _SourceShape) -> _SourceShape:
    """The same shape over the store's normalised partitions (hash verification)."""
    chunk: dict[str, str | None] = {k: k for k in shape.chunk}
    chunk.update({k: None for k, v in shape.chunk.items() if v is None})
    chunk["url"] = "url" if shape.has_chunk else None
    log_cols: dict[str, str | None] = {k: k for k in shape.log}
    log_cols.update({k: None for k, v in shape.log.items() if v is None})
    if shape.log.get("url") is not None:
        log_cols["url"] = "url"
    return replace(shape, chunk=chunk, log=log_cols)


def _copy(src: Connection, dst: Connection, shape: _SourceShape, sid: int) -> None:
    """Create the snapshot's partitions and stream the rows as binary COPY (types cast on the source side)."""
    dst.execute(text(f"CREATE TABLE eval.snapshot_chunks_{sid} PARTITION OF eval.snapshot_chunks FOR VALUES IN ({sid})"))
    dst.execute(text(f"CREATE TABLE eval.snapshot_log_{sid} PARTITION OF eval.snapshot_log FOR VALUES IN ({sid})"))

    vector = f"{shape.vector_schema}.vector" if shape.vector_schema else "text"  # a binary NULL has no type

    def col(expr: str | None, typ: str) -> str:
        return f"CAST({expr} AS {typ})" if expr else f"CAST(NULL AS {typ})"

    copies = []
    if shape.has_chunk:
        c = shape.chunk
        copies.append((
            f"SELECT {sid}::integer, id::integer, {col(c['url'], 'text')}, {col(c['source_type'], 'text')}, "
            f"text::text, CAST(encode(sha256(convert_to(text, 'UTF8')), 'hex') AS char(64)), "
            f"{col(c['embedding'], vector)}, {col(c['created_at'], 'timestamptz')}, "
            f"{col(c['updated_at'], 'timestamptz')} FROM public.chunk ORDER BY id",
            f"eval.snapshot_chunks_{sid} (snapshot_id, id, url, source_type, text, text_hash, embedding, created_at, "
            "updated_at)",
        ))
    if shape.has_question_answer:
        q = shape.log
        copies.append((
            f"SELECT {sid}::integer, id::integer, {col(q['question'], 'text')}, {col(q['answer'], 'text')}, "
            f"{col(q['url'], 'text')}, {col(q['score'], 'integer')}, {col(q['user_id'], 'integer')}, "
            f"{col(q['stop_point'], 'boolean')}, {col(q['created_at'], 'timestamptz')}, "
            f"{col(q['updated_at'], 'timestamptz')}, {col(q['embedding'], vector)} FROM public.question_answer "
            "ORDER BY id",
            f"eval.snapshot_log_{sid} (snapshot_id, id, question, answer, url, score, user_id, stop_point, created_at, "
            "updated_at, embedding)",
        ))
    raw_src: Any = src.connection.dbapi_connection  # psycopg's connection: its cursors have copy()
    raw_dst: Any = dst.connection.dbapi_connection
    for select, target in copies:
        with (
            raw_src.cursor() as rc,
            raw_dst.cursor() as wc,
            rc.copy(f"COPY ({select}) TO STDOUT (FORMAT BINARY)") as cin,
            wc.copy(f"COPY {target} FROM STDIN (FORMAT BINARY)") as cout,
        ):
            for block in cin:
                cout.write(block)
    dst.execute(text(f"ANALYZE eval.snapshot_chunks_{sid}"))
    dst.execute(text(f"ANALYZE eval.snapshot_log_{sid}"))


# ---------------------------------------------------------------------------------------------- status and diff


def source_changed(store: Engine, source: Engine | None = None) -> bool | None:
    """Whether the source's content differs from the current snapshot (None: no snapshot or source unreadable)."""
    snap = current(store)
    if snap is None:
        return None
    try:
        src = source if source is not None else source_for(store)
        with src.connect().execution_options(isolation_level="REPEATABLE READ") as conn:
            shape = _shape(conn)
            hashes = _hashes(conn, shape, "public.chunk", "public.question_answer",
                             'public."user"' if shape.has_user else None)
    except Exception as exc:  # noqa: BLE001 - status: the source may be down
        log.info("source not readable for the change check: %s", type(exc).__name__)
        return None
    return hashes["content_hash"] != snap.content_hash


@dataclass(frozen=True)
class SnapshotDiff:
    """What changed in the knowledge base (and how much in the log) from snapshot ``a`` to ``b``."""

    a: int
    b: int
    added: list[int]
    removed: list[int]
    text_changed: list[int]
    url_changed: list[int]
    embedding_changed: list[int]
    log_added: int
    log_removed: int
    log_changed: int

    @property
    def changed_chunks(self) -> set[int]:
        """Chunk ids whose content (text or URL) differs or that disappeared: what a golden item may cite stale."""
        return set(self.removed) | set(self.text_changed) | set(self.url_changed)

    @property
    def unchanged(self) -> bool:
        return not (self.added or self.removed or self.text_changed or self.url_changed or self.embedding_changed
                    or self.log_added or self.log_removed or self.log_changed)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def diff(engine: Engine, a: int | Snapshot, b: int | Snapshot) -> SnapshotDiff:
    """Chunk ids added, removed, with changed text / URL / vector, and log row counts, from ``a`` to ``b``."""
    sa, sb = resolve(engine, a), resolve(engine, b)
    ta, tb = sa.chunks_table, sb.chunks_table
    la, lb = sa.log_table, sb.log_table
    with engine.connect() as conn:
        rows = conn.execute(
            text(
                f"SELECT coalesce(x.id, y.id) AS id, x.id IS NULL AS added, y.id IS NULL AS removed, "
                f"x.text_hash IS DISTINCT FROM y.text_hash AS text_changed, x.url IS DISTINCT FROM y.url AS url_changed, "
                f"x.embedding IS DISTINCT FROM y.embedding AS emb_changed "
                f"FROM {ta} x FULL JOIN {tb} y ON x.id = y.id ORDER BY 1"
            )
        ).all()
        log_row = conn.execute(
            text(
                f"SELECT count(*) FILTER (WHERE x.id IS NULL), count(*) FILTER (WHERE y.id IS NULL), "
                f"count(*) FILTER (WHERE x.id IS NOT NULL AND y.id IS NOT NULL AND "
                f"(x.question, x.answer, x.url, x.score, x.user_id, x.stop_point, x.created_at, x.updated_at) IS DISTINCT "
                f"FROM (y.question, y.answer, y.url, y.score, y.user_id, y.stop_point, y.created_at, y.updated_at)) "
                f"FROM {la} x FULL JOIN {lb} y ON x.id = y.id"
            )
        ).one()
    both = [r for r in rows if not r.added and not r.removed]
    return SnapshotDiff(
        a=sa.id,
        b=sb.id,
        added=[int(r.id) for r in rows if r.added],
        removed=[int(r.id) for r in rows if r.removed],
        text_changed=[int(r.id) for r in both if r.text_changed],
        url_changed=[int(r.id) for r in both if r.url_changed],
        embedding_changed=[int(r.id) for r in both if r.emb_changed],
        log_added=int(log_row[0]),
        log_removed=int(log_row[1]),
        log_changed=int(log_row[2]),
    )


def delete(engine: Engine, snapshot_id: int, *, n_runs: int, force: bool = False) -> None:
    """Delete a snapshot that is not current and that no run read (``force``: even if runs did); its partitions
    and HNSW copies go with it. ``n_runs`` — how many recorded runs read it — comes from the caller
    (``runs.count_runs_reading_snapshot``: the run tables belong to :mod:`voproshalych_eval.engine.runs`)."""
    snap = get(engine, snapshot_id)
    if current_id(engine) == snap.id:
        raise SnapshotError(f"Snapshot #{snap.id} is the current snapshot; take or select another one first.")
    if n_runs and not force:
        raise SnapshotError(
            f"{n_runs} recorded run(s) read snapshot #{snap.id}; their results could no longer be reproduced. "
            "Delete those runs first, or force the deletion."
        )
    with engine.begin() as conn:
        conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": TAKE_LOCK})
        for table in conn.execute(
            text("SELECT tablename FROM pg_tables WHERE schemaname = 'eval' AND tablename LIKE :p"),
            {"p": f"ann\\_s{snap.id}\\_%"},
        ).scalars():
            conn.execute(text(f'DROP TABLE eval."{table}"'))
        conn.execute(text(f"DROP TABLE IF EXISTS {snap.chunks_table}, {snap.log_table}"))
        conn.execute(text("DELETE FROM eval.snapshots WHERE id = :i"), {"i": snap.id})


# ---------------------------------------------------------------------------------------------- derived (sandboxes)


class _Existing(VoproshalychEvalError):  # noqa: N818 - control flow: roll the new copy back, reuse the identical one
    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot


def derive(
    store: Engine,
    parent: int | Snapshot,
    *,
    remove_urls: list[str],
    add_chunks: list[dict[str, Any]],
    label: str,
) -> Snapshot:
    """A new ``sandbox`` snapshot: ``parent``'s chunks without the pages ``remove_urls``, plus ``add_chunks``
    (``{"url", "text", "source_type", "embedding"}``, ``embedding`` a vector of the parent's stored model or
    None), and ``parent``'s question log. New chunks get ids after the parent's largest; the parent is never
    touched and the sandbox never becomes the current snapshot.

    ``content_hash = sha256("sandbox" | parent's content hash | chunks_hash | log_hash)``: deriving the same
    edits again finds the existing sandbox (``reused=True``)."""
    base = resolve(store, parent)
    if not base.has_chunk:
        raise SnapshotError(f"Snapshot {base.label} has no knowledge base to edit.")
    t0 = time.perf_counter()
    try:
        with store.begin() as conn:
            conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": TAKE_LOCK})
            sid = int(conn.execute(
                text(
                    "INSERT INTO eval.snapshots(content_hash, chunks_hash, log_hash, source_kind, source_label, "
                    "chunk_variant, has_chunk, has_question_answer, has_user, chunk_dim, question_dim, stored_model, "
                    "n_chunks, n_pages, n_questions, n_questions_with_embedding, n_users) SELECT "
                    "md5(random()::text) || md5(random()::text), '', '', 'sandbox', :label, chunk_variant, true, "
                    "has_question_answer, has_user, chunk_dim, question_dim, stored_model, 0, 0, 0, 0, n_users "
                    "FROM eval.snapshots WHERE id = :p RETURNING id"
                ),
                {"label": label, "p": base.id},
            ).scalar_one())
            conn.execute(text(f"CREATE TABLE eval.snapshot_chunks_{sid} PARTITION OF eval.snapshot_chunks "
                              f"FOR VALUES IN ({sid})"))
            conn.execute(text(f"CREATE TABLE eval.snapshot_log_{sid} PARTITION OF eval.snapshot_log FOR VALUES IN ({sid})"))
            conn.execute(
                text(f"INSERT INTO eval.snapshot_chunks_{sid} (snapshot_id, id, url, source_type, text, text_hash, "
                     f"embedding, created_at, updated_at) SELECT {sid}, id, url, source_type, text, text_hash, embedding, "
                     f"created_at, updated_at FROM {base.chunks_table} WHERE url IS NULL OR NOT (url = ANY(:r))"),
                {"r": list(remove_urls)},
            )
            next_id = int(conn.execute(text(f"SELECT coalesce(max(id), 0) FROM {base.chunks_table}")).scalar_one()) + 1
            if add_chunks:
                conn.execute(
                    text(f"INSERT INTO eval.snapshot_chunks_{sid} (snapshot_id, id, url, source_type, text, text_hash, "
                         "embedding, created_at, updated_at) VALUES (:s, :i, :u, :st, :t, :h, :e, now(), now())"),
                    [{"s": sid, "i": next_id + j, "u": c["url"], "st": c.get("source_type"), "t": c["text"],
                      "h": hashlib.sha256(str(c["text"]).encode("utf-8")).hexdigest(), "e": c.get("embedding")}
                     for j, c in enumerate(add_chunks)],
                )
            conn.execute(text(f"INSERT INTO eval.snapshot_log_{sid} SELECT {sid}, id, question, answer, url, score, "
                              f"user_id, stop_point, created_at, updated_at, embedding FROM {base.log_table}"))
            cols: dict[str, str | None] = {k: k for k in ("id", "url", "source_type", "text", "embedding", "created_at", "updated_at")}
            lcols: dict[str, str | None] = {k: k for k in ("id", "question", "answer", "url", "score", "user_id", "stop_point", "created_at",
                                    "updated_at", "embedding")}
            shape = _SourceShape(True, base.chunk_variant, True, False, cols, lcols, base.chunk_dim, base.question_dim,
                                 _vector_schema(conn))
            h = _hashes(conn, shape, f"eval.snapshot_chunks_{sid}", f"eval.snapshot_log_{sid}", None)
            content = hashlib.sha256(f"sandbox|{base.content_hash}|{h['chunks_hash']}|{h['log_hash']}".encode()).hexdigest()
            existing = _by_hash(conn, content)
            if existing is not None:
                raise _Existing(existing)
            conn.execute(
                text("UPDATE eval.snapshots SET content_hash = :c, chunks_hash = :kh, log_hash = :lh, n_chunks = :nc, "
                     "n_pages = :np, n_questions = :nq, n_questions_with_embedding = :nqe, seconds = :sec WHERE id = :i"),
                {"c": content, "kh": h["chunks_hash"], "lh": h["log_hash"], "nc": h["n_chunks"], "np": h["n_pages"],
                 "nq": h["n_questions"], "nqe": h["n_questions_with_embedding"], "sec": time.perf_counter() - t0,
                 "i": sid},
            )
            conn.execute(text(f"ANALYZE eval.snapshot_chunks_{sid}"))
    except _Existing as found:
        return replace(found.snapshot, reused=True)
    return get(store, sid)
