"""Remove the datasets a test module created (the session database is shared: other tests pick the newest)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import text


@pytest.fixture(autouse=True)
def drop_new_datasets(request: pytest.FixtureRequest) -> Iterator[None]:
    """Delete, after each test, every dataset name first stored during it (all kinds, all versions)."""
    if "demo_engine" not in request.fixturenames:
        yield
        return
    engine = request.getfixturevalue("demo_engine")
    with engine.connect() as conn:
        before = conn.execute(text("SELECT coalesce(max(id), 0) FROM eval.datasets")).scalar_one()
    yield
    from voproshalych_eval.datasets.store import delete_dataset

    with engine.connect() as conn:
        new = conn.execute(
            text("SELECT DISTINCT kind, name FROM eval.datasets d WHERE id > :b AND NOT EXISTS "
                 "(SELECT 1 FROM eval.datasets o WHERE o.kind = d.kind AND o.name = d.name AND o.id <= :b)"),
            {"b": before},
        ).all()
    for kind, name in new:
        delete_dataset(engine, name, kind)
