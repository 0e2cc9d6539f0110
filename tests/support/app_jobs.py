"""The job a page started (``ui.jobs.start``): found while it still builds its plan, before its run exists."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from voproshalych_eval.engine import executor
from voproshalych_eval.ui.jobs import building_key


def started_job(at: AppTest, state_key: str) -> executor.Job:
    """The job started under ``state_key``: by its key while the plan is built, else by its run id."""
    key = building_key(state_key)
    job = executor.get_job(at.session_state[key] if key in at.session_state else at.session_state[state_key])
    assert job is not None, f"no job started under {state_key!r}"
    return job
