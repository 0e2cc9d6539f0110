"""AppTest: the run forms of the Judges (both tabs) and UX pages start from the dataset of the run the page shows
(``run_view.default_dataset_index``), not from the newest dataset — a set stored since never moves them (issue 29)."""

from __future__ import annotations

import uuid

from tests.app.test_run_view import _open
from tests.support.plans import run as run_plan
from voproshalych_eval.datasets.store import Dataset, content_hash, get_dataset, store


def _newer_copy(engine, source: str, kind: str, n: int = 2) -> Dataset:  # type: ignore[no-untyped-def]
    """A dataset stored after the runs: the newest of its kind, with no run."""
    recs = [dict(r) for r in get_dataset(engine, source, kind).records[:n]]
    return store(engine, Dataset("fd_new_" + uuid.uuid4().hex[:6], kind, recs, content_hash(recs), source="test"))


def test_the_judges_forms_start_from_their_runs_dataset(demo_engine) -> None:  # type: ignore[no-untyped-def]
    run_plan(demo_engine, "judge", {"dataset": "demo_judge", "limit": 2, "repeats": 2, "offline": True})
    run_plan(demo_engine, "judge_pipeline", {"dataset": "demo_judge", "limit": 2, "offline": True})
    newer = _newer_copy(demo_engine, "demo_judge", "judge")
    at = _open("pages/judges.py", lang="en")
    assert at.selectbox(key="js_ds").options[0] == newer.name  # the newest set is listed first …
    assert at.selectbox(key="js_ds").value == "demo_judge"  # … yet the form is on the shown run's dataset
    assert at.selectbox(key="jp_ds").value == "demo_judge"
    # a link to a run on the newer set starts the stability form there
    on_newer = run_plan(demo_engine, "judge", {"dataset": newer.name, "repeats": 2, "offline": True}).run.id
    run_plan(demo_engine, "judge", {"dataset": "demo_judge", "limit": 1, "repeats": 2, "offline": True})
    assert _open("pages/judges.py", lang="en", run=on_newer).selectbox(key="js_ds").value == newer.name


def test_the_ux_form_starts_from_its_runs_dataset(demo_engine) -> None:  # type: ignore[no-untyped-def]
    run_plan(demo_engine, "ux", {"source": "dialogs", "dataset": "demo_dialogs", "limit": 3, "offline": True})
    newer = _newer_copy(demo_engine, "demo_dialogs", "dialogs")
    at = _open("pages/ux.py", lang="en")
    pick = next(s for s in at.selectbox if s.label == "Dialog dataset")
    assert pick.options[0] == newer.name and pick.value == "demo_dialogs", (pick.options, pick.value)
