"""Database access: the app's store (read-write), the read-only source, snapshots, production-compatible
tables, retrieval queries, the ``eval`` schema and its migrations."""

from voproshalych_eval.db.engine import get_engine, get_source_engine, reset_engines
from voproshalych_eval.db.errors import DimensionMismatchError, ProductionWriteError, SnapshotError

__all__ = [
    "DimensionMismatchError",
    "ProductionWriteError",
    "SnapshotError",
    "get_engine",
    "get_source_engine",
    "reset_engines",
]
