"""Production-compatible tables (``chunk``, ``question_answer``, ``user``): inspect a source, create (demo
only), and read the knowledge base from its snapshot in the store.

Two ``chunk`` variants exist in production: the original one with ``confluence_url``, and a later one
that renames it to ``url`` and adds ``source_type``. :func:`inspect_source` detects which one a source
database holds (used when a snapshot is taken). Snapshots normalise both to ``id, url, source_type,
text, embedding``; the readers here (:func:`inspect_schema`, :func:`read_chunks`, :func:`table_counts`)
take the STORE engine and read a snapshot (default: the current one, see
:mod:`voproshalych_eval.db.snapshots`), so SQL never hard-codes a variant, a dimension or a table size.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd
from sqlalchemy import Connection, Engine, text

from voproshalych_eval.db import snapshots
from voproshalych_eval.db.errors import DimensionMismatchError, SchemaError, SnapshotError

if TYPE_CHECKING:  # db.snapshots imports this module
    from voproshalych_eval.db.snapshots import Snapshot

ChunkVariant = Literal["confluence_url", "url"]


@dataclass(frozen=True)
class ProductionSchema:
    """What the connected database holds."""

    has_chunk: bool
    chunk_variant: ChunkVariant | None
    chunk_dim: int | None
    has_question_answer: bool
    question_dim: int | None
    has_user: bool
    #: the variant of the source's ``chunk`` table (snapshots are always normalised to ``url``)
    source_variant: ChunkVariant | None = None

    @property
    def chunk_url_column(self) -> str:
        if not self.has_chunk or self.chunk_variant is None:
            raise SchemaError(
                "The database has no 'chunk' table. Load the demo data (voproshalych-eval demo) or point "
                "DATABASE_URL at a database with the bot's knowledge base."
            )
        return self.chunk_variant

    def chunk_select(self, alias: str = "c") -> str:
        """SELECT list that normalises both variants to ``id, url, source_type, text``."""
        url = f"{alias}.{self.chunk_url_column}"
        source = f"{alias}.source_type" if self.chunk_variant == "url" else "NULL::varchar"
        return f"{alias}.id AS id, {url} AS url, {source} AS source_type, {alias}.text AS text"


def _vector_dim(conn: Connection, table: str, column: str = "embedding") -> int | None:
    row = conn.execute(
        text(
            "SELECT format_type(a.atttypid, a.atttypmod) FROM pg_attribute a "
            "WHERE a.attrelid = to_regclass(:t) AND a.attname = :c AND NOT a.attisdropped"
        ),
        {"t": f'public."{table}"', "c": column},
    ).scalar()
    if not row or "(" not in row:
        return None
    return int(row.split("(", 1)[1].rstrip(")"))


def inspect_source(engine: Engine | Connection) -> ProductionSchema:
    """Detect a SOURCE's production tables, its ``chunk`` variant and the stored vector dimensions."""

    def _run(conn: Connection) -> ProductionSchema:
        tables: dict[str, set[str]] = {
            r[0]: set()
            for r in conn.execute(
                text(
                    "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' "
                    "AND table_name IN ('chunk', 'question_answer', 'user')"
                )
            )
        }
        for t in tables:
            tables[t] = {
                r[0]
                for r in conn.execute(
                    text(
                        "SELECT column_name FROM information_schema.columns "
                        "WHERE table_schema = 'public' AND table_name = :t"
                    ),
                    {"t": t},
                )
            }
        variant: ChunkVariant | None = None
        if "chunk" in tables:
            cols = tables["chunk"]
            if "confluence_url" in cols:
                variant = "confluence_url"
            elif "url" in cols:
                variant = "url"
            else:
                raise SchemaError("The 'chunk' table has neither a 'confluence_url' nor a 'url' column.")
        return ProductionSchema(
            has_chunk="chunk" in tables,
            chunk_variant=variant,
            chunk_dim=_vector_dim(conn, "chunk") if "chunk" in tables else None,
            has_question_answer="question_answer" in tables,
            question_dim=_vector_dim(conn, "question_answer") if "question_answer" in tables else None,
            has_user="user" in tables,
            source_variant=variant,
        )

    if isinstance(engine, Connection):
        return _run(engine)
    with engine.connect() as conn:
        return _run(conn)


def check_dimension(*, expected: int, stored: int | None, embedder: str, table: str = "chunk") -> None:
    """Raise :class:`DimensionMismatchError` when ``stored`` vectors differ from the embedder's dimension."""
    if stored is not None and stored != expected:
        raise DimensionMismatchError(
            f"The embedder '{embedder}' produces {expected}-d vectors, but '{table}.embedding' stores "
            f"{stored}-d vectors. Choose the embedder that filled the table, or compare embedders "
            "through re-embedding into the eval schema (Retrieval page, 'embedder' selector)."
        )


def create_tables(conn: Connection, *, dim: int, variant: ChunkVariant = "url") -> None:
    """Create empty production-compatible tables (demo database only)."""
    url_cols = (
        "confluence_url text NOT NULL"
        if variant == "confluence_url"
        else "url text NOT NULL, source_type varchar(50)"
    )
    url_col = "confluence_url" if variant == "confluence_url" else "url"
    conn.execute(
        text(
            f"""
            CREATE TABLE IF NOT EXISTS public."user" (
                id integer PRIMARY KEY,
                vk_id bigint,
                telegram_id bigint,
                is_subscribed boolean NOT NULL DEFAULT true,
                created_at timestamptz,
                updated_at timestamptz
            );
            CREATE TABLE IF NOT EXISTS public.chunk (
                id integer PRIMARY KEY,
                {url_cols},
                text text NOT NULL,
                embedding vector({dim}) NOT NULL,
                created_at timestamptz DEFAULT now(),
                updated_at timestamptz DEFAULT now()
            );
            CREATE INDEX IF NOT EXISTS chunk_{url_col}_idx ON public.chunk({url_col});
            CREATE TABLE IF NOT EXISTS public.question_answer (
                id integer PRIMARY KEY,
                question text NOT NULL,
                embedding vector({dim}),
                answer text,
                confluence_url text,
                score integer,
                user_id integer REFERENCES public."user"(id),
                stop_point boolean DEFAULT false,
                created_at timestamptz,
                updated_at timestamptz
            );
            """
        )
    )


def inspect_schema(engine: Engine, *, snapshot: Any = None) -> ProductionSchema:
    """What the knowledge base of a snapshot holds (store engine; default: the current snapshot).

    The snapshot's tables are normalised: ``chunk_variant`` is ``"url"`` (``source_variant`` keeps the
    source's own variant), so :meth:`ProductionSchema.chunk_select` works on them.
    """
    snap = _snapshot(engine, snapshot)
    return ProductionSchema(
        has_chunk=snap.has_chunk,
        chunk_variant="url" if snap.has_chunk else None,
        chunk_dim=snap.chunk_dim,
        has_question_answer=snap.has_question_answer,
        question_dim=snap.question_dim,
        has_user=snap.has_user,
        source_variant=snap.chunk_variant,  # type: ignore[arg-type]
    )


def _snapshot(engine: Engine, snapshot: Any) -> Snapshot:
    """``db.snapshots.resolve`` (imported here: ``db.snapshots`` imports this module)."""
    return snapshots.resolve(engine, snapshot)


def read_chunks(
    engine: Engine, *, with_embeddings: bool = False, snapshot: Any = None, ids: Iterable[int] | None = None
) -> pd.DataFrame:
    """Chunks of a snapshot as a DataFrame ``id, url, source_type, text`` (+ ``embedding`` as float32 arrays).

    ``engine`` is the store; ``snapshot`` an id or :class:`~voproshalych_eval.db.snapshots.Snapshot`
    (default: the current one); ``ids`` restricts to those chunk ids. ``df.attrs["snapshot_id"]`` names it.
    """
    snap = _snapshot(engine, snapshot)
    cols = "c.id AS id, c.url AS url, c.source_type AS source_type, c.text AS text" + (
        ", c.embedding AS embedding" if with_embeddings else ""
    )
    where, params = "", {}
    if ids is not None:
        where, params = "WHERE c.id = ANY(:ids)", {"ids": sorted({int(i) for i in ids})}
    if not snap.has_chunk:
        df = pd.DataFrame(columns=["id", "url", "source_type", "text"] + (["embedding"] if with_embeddings else []))
    else:
        with engine.connect() as conn:
            df = pd.read_sql_query(text(f"SELECT {cols} FROM {snap.chunks_table} c {where} ORDER BY c.id"), conn,
                                   params=params)
    if with_embeddings:
        df["embedding"] = [parse_vector(v) for v in df["embedding"]]
    df.attrs["snapshot_id"] = snap.id
    return df


def read_page_chunks(engine: Engine, urls: Iterable[str], *, snapshot: Any = None) -> list[dict[str, Any]]:
    """``[{"id", "text"}]`` of a snapshot's chunks whose page URL is one of ``urls``, by id ([] without chunks)."""
    snap = _snapshot(engine, snapshot)
    if not snap.has_chunk:
        return []
    with engine.connect() as conn:
        rows = conn.execute(
            text(f"SELECT c.id, c.text FROM {snap.chunks_table} c WHERE c.url = ANY(:u) ORDER BY c.id"),
            {"u": list(urls)},
        ).all()
    return [{"id": int(r.id), "text": str(r.text)} for r in rows]


def chunk_refs(engine: Engine, ids: Iterable[int], *, snapshot: Any) -> dict[int, dict[str, str]]:
    """``{id: {"text", "url", "hash"}}`` of the chunks ``ids`` present in a snapshot (``hash``: sha256 of the text)."""
    snap = _snapshot(engine, snapshot)
    wanted = [int(i) for i in ids]
    if not wanted or not snap.has_chunk:
        return {}
    with engine.connect() as conn:
        rows = conn.execute(
            text(f"SELECT c.id, c.text, c.url, c.text_hash FROM {snap.chunks_table} c WHERE c.id = ANY(:ids)"),
            {"ids": wanted},
        ).all()
    return {int(r.id): {"text": str(r.text), "url": str(r.url), "hash": str(r.text_hash).strip()} for r in rows}


def page_urls(engine: Engine, *, snapshot: Any) -> set[str]:
    """The page URLs of a snapshot's chunks."""
    snap = _snapshot(engine, snapshot)
    if not snap.has_chunk:
        return set()
    with engine.connect() as conn:
        return {str(u) for u in conn.execute(text(f"SELECT DISTINCT c.url FROM {snap.chunks_table} c")).scalars()}


def page_chunk_ids(engine: Engine, url: str, *, snapshot: Any) -> list[int]:
    """The ids of a snapshot's chunks on page ``url`` (exactly as stored), ascending."""
    snap = _snapshot(engine, snapshot)
    with engine.connect() as conn:
        return [int(x) for x in conn.execute(text(f"SELECT id FROM {snap.chunks_table} WHERE url = :u ORDER BY id"),
                                             {"u": url}).scalars()]


def page_centroids(engine: Engine, *, snapshot: Any) -> dict[str, np.ndarray]:
    """``{url: mean of the page's stored chunk vectors}`` of a snapshot (pages without vectors left out)."""
    snap = _snapshot(engine, snapshot)
    with engine.connect() as conn:
        rows = conn.execute(text(f"SELECT c.url AS url, avg(c.embedding) AS v FROM {snap.chunks_table} c GROUP BY c.url")).all()
    return {str(r.url): parse_vector(r.v) for r in rows if r.v is not None}


def parse_vector(value: object) -> np.ndarray:
    """pgvector value (numpy array, list or text '[1,2,...]') -> float32 numpy array."""
    if isinstance(value, np.ndarray):
        return value.astype(np.float32, copy=False)
    if hasattr(value, "to_numpy"):  # pgvector.Vector (untyped ``vector`` columns)
        return np.asarray(value.to_numpy(), dtype=np.float32)
    if isinstance(value, str):
        return np.asarray(value.strip("[]").split(","), dtype=np.float32)
    return np.asarray(value, dtype=np.float32)


def vector_literal(vec: np.ndarray | list[float]) -> str:
    """Text form of a vector for a ``::vector`` cast (bound as a parameter, never interpolated)."""
    return "[" + ",".join(f"{float(x):.8g}" for x in np.asarray(vec).ravel()) + "]"


def table_counts(engine: Engine, *, snapshot: Any = None) -> dict[str, int | None]:
    """Row counts of the knowledge base and log in a snapshot (None where the source had no such table;
    all None when the store has no snapshot and none can be taken)."""
    try:
        snap = _snapshot(engine, snapshot)
    except SnapshotError:
        return {"chunks": None, "pages": None, "questions": None, "users": None}
    return {
        "chunks": snap.n_chunks if snap.has_chunk else None,
        "pages": snap.n_pages if snap.has_chunk else None,
        "questions": snap.n_questions if snap.has_question_answer else None,
        "users": snap.n_users if snap.has_user else None,
    }
