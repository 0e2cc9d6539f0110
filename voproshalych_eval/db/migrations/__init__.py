"""Alembic migrations of the ``eval`` schema (a package, so the import checks see them)."""
