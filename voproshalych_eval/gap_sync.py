"""Keep the coverage gaps (:mod:`voproshalych_eval.analytics.gaps`) in step with the real-users runs.

:func:`sync` records, for every finished real-users run with topics not yet seen, the numbers of the gaps
its topics match (creating gaps for its unmatched top-ranked topics) — oldest run first, so a gap's
history follows the analyses in order. It reads the runs through the run registry (:mod:`voproshalych_eval.engine.runs`,
one layer above the analytics), which is why it is not in ``analytics``.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Engine

from voproshalych_eval.analytics import gaps
from voproshalych_eval.engine import runs


def topics_of(engine: Engine, run: runs.Run) -> gaps.RunTopics | None:
    """The run's topics step as :class:`~voproshalych_eval.analytics.gaps.RunTopics` (None without one)."""
    step = next((r for r in runs.item_records(engine, run.id) if r["item_key"] == "topics" and r["status"] == "done"),
                None)
    if step is None:
        return None
    return gaps.RunTopics(run.id, run.started_at, run.snapshot_id, dict(run.params or {}), dict(step["result"] or {}))


def sync(engine: Engine, *, run_id: int | None = None) -> list[dict[str, Any]]:
    """Record the gaps of every real-users run not yet recorded (or of ``run_id``); returns what each did."""
    done = gaps.synced_run_ids(engine)
    if run_id is not None:
        todo = [runs.get_run(engine, run_id)]
    else:
        todo = [r for r in runs.list_runs(engine, tier="real_users", status=("done", "done_with_failures"))
                if r.id not in done]
    out = []
    for run in sorted((r for r in todo if r is not None), key=lambda r: r.id):
        rt = topics_of(engine, run)
        if rt is not None:
            out.append(gaps.record_numbers(engine, rt))
    return out


def latest_analysis(engine: Engine) -> gaps.RunTopics:
    """The latest finished real-users run (whose log hand-picked questions are taken from)."""
    done = runs.list_runs(engine, tier="real_users", status=("done", "done_with_failures"))
    if not done:
        raise LookupError("There is no real-users analysis yet: run `voproshalych-eval real-users` (or the Real users "
                          "page) first; a hand-picked gap takes its questions from the analysed log.")
    run = max(done, key=lambda r: r.id)
    return gaps.RunTopics(run.id, run.started_at, run.snapshot_id, dict(run.params or {}), {})


def create_picked(engine: Engine, refs: list[tuple[str, int | str]], *, name: str | None = None,
                  owner: str | None = None) -> gaps.Gap:
    """A gap of hand-picked questions of the latest analysis (after syncing the runs, so no run is skipped)."""
    sync(engine)
    return gaps.create_picked(engine, latest_analysis(engine), refs, name=name, owner=owner)
