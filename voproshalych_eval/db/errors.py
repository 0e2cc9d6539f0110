"""Errors raised by the database layer. Messages are sentences a user can act on; no credentials."""


class DatabaseError(RuntimeError):
    """Base class for database-layer errors shown to users."""


class ProductionWriteError(DatabaseError):
    """A statement tried to modify a production table (chunk, question_answer, user)."""


class DimensionMismatchError(DatabaseError):
    """The configured embedder's dimension differs from the stored vectors' dimension."""


class SchemaError(DatabaseError):
    """The database does not hold the tables the app needs (or holds an unknown variant)."""
