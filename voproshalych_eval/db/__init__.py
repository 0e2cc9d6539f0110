"""Database access: engine (embedded or by URL), production-compatible tables, the `eval` schema."""

from voproshalych_eval.db.engine import get_engine, reset_engines
from voproshalych_eval.db.errors import DimensionMismatchError, ProductionWriteError

__all__ = ["DimensionMismatchError", "ProductionWriteError", "get_engine", "reset_engines"]
