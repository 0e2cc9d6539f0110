"""Stored baselines: a bad row is skipped and named (never breaks a page); the BLEU data migration."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest
from sqlalchemy import create_engine, text

from voproshalych_eval.engine import baselines as bl
from voproshalych_eval.engine import runs


@pytest.fixture
def bad_rows(engine: Any) -> Any:
    """Two rows a save would refuse, written past it (as an older version or a catalog change leaves them)."""
    rows = [("tier2", "avg_answer_correctness_old", 0.8), ("tier3", "pass_rate", 7.0)]
    with engine.begin() as conn:
        old = conn.execute(text("SELECT value FROM eval.baselines WHERE tier = 'tier3' AND metric = 'pass_rate'")).scalar()
        for tier, metric, value in rows:
            conn.execute(text("INSERT INTO eval.baselines(tier, metric, value, attention_margin) VALUES (:t, :m, :v, 0.1) "
                              "ON CONFLICT (tier, metric) DO UPDATE SET value = EXCLUDED.value"),
                         {"t": tier, "m": metric, "v": value})
    yield engine
    with engine.begin() as conn:
        conn.execute(text("DELETE FROM eval.baselines WHERE metric = 'avg_answer_correctness_old'"))
        conn.execute(text("UPDATE eval.baselines SET value = :v WHERE tier = 'tier3' AND metric = 'pass_rate'"),
                     {"v": old if old is not None else 0.8})


def test_a_bad_stored_baseline_is_skipped_and_named(bad_rows: Any) -> None:
    engine = bad_rows
    table = bl.list_baselines(engine)  # raised BaselineError before
    assert ("tier3", "pass_rate") not in {(b.tier, b.metric) for b in table}
    assert ("tier1", "mrr") in {(b.tier, b.metric) for b in table}  # the good rows stay usable
    problems = bl.problems(engine)
    assert any("tier2/avg_answer_correctness_old" in p and "not in the metric catalog" in p for p in problems)
    assert any("tier3/pass_rate" in p and "outside the scale 0–1" in p for p in problems)
    # the readers behind the Overview, Runs and Baselines pages evaluate runs without raising
    ds = "bad_" + uuid.uuid4().hex[:6]
    run = runs.create_run(engine, "tier3", dataset_name=ds, dataset_hash=(ds * 64)[:64])
    runs.finish_run(engine, run.id, {"pass_rate": {"value": 0.9, "n": 10, "n_failed": 0}})
    assert bl.run_status(engine, runs.get_run(engine, run.id)).status == "insufficient"  # no usable tier3 baseline left
    assert runs.export_data(engine, run.id)["run"]["id"] == run.id
    runs.compare_runs(engine, run.id, run.id)
    with engine.begin() as conn:
        conn.execute(text("DELETE FROM eval.runs WHERE id = :i"), {"i": run.id})


def _store(url: str) -> Any:
    return create_engine("postgresql+psycopg://" + url.split("://", 1)[1])


@pytest.mark.parametrize(("stored", "seeded", "expected"), [
    # the unedited old default moves to corpus BLEU
    ({"avg_bleu": (20.0, 5.0)}, True, {"corpus_bleu": (20.0, 5.0)}),
    # an edited BLEU baseline is the user's: it stays, and the new default is added beside it
    ({"avg_bleu": (25.0, 5.0)}, True, {"avg_bleu": (25.0, 5.0), "corpus_bleu": (20.0, 5.0)}),
    # a store never seeded gets every default at its first seeding: nothing is added here
    ({}, False, {}),
])
def test_upgrade_moves_the_old_bleu_default_to_corpus_bleu(
        new_database: Callable[[], str], stored: dict[str, tuple[float, float]], seeded: bool,
        expected: dict[str, tuple[float, float]]) -> None:
    from voproshalych_eval.db.migrate import current_revisions, upgrade

    engine = _store(new_database())
    try:
        upgrade(engine, "0002_baselines_catalog")  # a store as the version before this migration left it
        with engine.begin() as conn:
            for metric, (value, margin) in stored.items():
                conn.execute(text("INSERT INTO eval.baselines(tier, metric, value, attention_margin, note) "
                                  "VALUES ('tier2', :m, :v, :a, 'sacrebleu')"), {"m": metric, "v": value, "a": margin})
            if seeded:
                conn.execute(text("INSERT INTO eval.meta(key, value) VALUES ('baselines_seeded', 'true'::jsonb)"))
        upgrade(engine)
        # 0022 ran: it is a head, or an ancestor of the heads (later revisions build on it)
        from alembic.script import ScriptDirectory

        from voproshalych_eval.db.migrate import alembic_config

        script = ScriptDirectory.from_config(alembic_config())
        applied = {r.revision for head in current_revisions(engine) for r in script.iterate_revisions(head, "base")}
        assert "0022_baselines_corpus_bleu" in applied
        with engine.connect() as conn:
            got = {m: (v, a) for m, v, a in conn.execute(text(
                "SELECT metric, value, attention_margin FROM eval.baselines WHERE tier = 'tier2'"))}
        assert got == expected
        assert bl.problems(engine) == []  # every row the migration leaves is valid against the catalog
    finally:
        engine.dispose()
