"""Alembic environment: runs on the connection handed over by ``voproshalych_eval.db.migrate``."""

from alembic import context

config = context.config
connection = config.attributes.get("connection")
if connection is None:  # pragma: no cover - only programmatic use is supported
    raise RuntimeError("Run migrations through voproshalych_eval.db.migrate.upgrade(engine).")

context.configure(connection=connection, version_table_schema="eval", transaction_per_migration=False)
with context.begin_transaction():
    context.run_migrations()
