"""The Retrieval page copes with a Tier 1 run whose items lack the per-question fields (found by the browser test)."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from voproshalych_eval.config import PROJECT_ROOT
from voproshalych_eval.engine import runs
from voproshalych_eval.tiers.tier1 import missing_item_fields


def test_page_survives_partial_tier1_items(demo_engine) -> None:  # type: ignore[no-untyped-def]
    from voproshalych_eval.datasets.store import list_datasets

    # on the dataset the page's form chooses first: the run picker lists that dataset's runs
    shown = list_datasets(demo_engine, "golden")[0]["name"]
    run = runs.create_run(demo_engine, "tier1", params={"k": 10}, n_items_total=1, dataset_name=shown)
    try:
        runs.record_item(demo_engine, run.id, "q1", {"mrr": 1.0})
        runs.finish_run(demo_engine, run.id, {"chunk": {"mrr": 1.0}})
        assert "relevant_chunk_ids" in missing_item_fields(runs.run_items(demo_engine, run.id))
        at = AppTest.from_file(str(PROJECT_ROOT / "app.py"), default_timeout=120).run()
        at.switch_page("pages/tier1_retrieval.py").run()
        assert not at.exception, [e.value for e in at.exception]
        assert any("relevant_chunk_ids" in w.value for w in at.warning)
    finally:
        with demo_engine.begin() as conn:
            from sqlalchemy import text

            conn.execute(text("DELETE FROM eval.runs WHERE id = :r"), {"r": run.id})
