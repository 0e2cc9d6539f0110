"""Errors raised by the database layer. Messages are sentences a user can act on; no credentials."""

from voproshalych_eval.errors import VoproshalychEvalError


class DatabaseError(VoproshalychEvalError, RuntimeError):
    """Base class for database-layer errors shown to users."""


class ProductionWriteError(DatabaseError):
    """A statement tried to modify a source (production or demo) database; sources are only read."""


class DimensionMismatchError(DatabaseError):
    """The configured embedder's dimension differs from the stored vectors' dimension."""


class SchemaError(DatabaseError):
    """The database does not hold the tables the app needs (or holds an unknown variant)."""


class SourceNotReadOnlyError(ProductionWriteError):
    """A source connection's transaction was not read-only; nothing was sent and the connection dropped."""


class PrivilegedSourceError(DatabaseError):
    """The source login is a superuser or owns the bot's tables, and privileged sources were not allowed."""


class StoreError(DatabaseError):
    """The store (the app's own database) is misconfigured, e.g. it is the source itself."""


class SnapshotError(DatabaseError):
    """No snapshot of the knowledge base is available, or a snapshot id does not exist."""
