"""Alembic revisions (frozen: they import nothing from the package above ``db``)."""
