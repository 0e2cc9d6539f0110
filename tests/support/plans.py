"""Run a plan through the engine in the foreground and read it back (what the CLI does, without printing)."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from voproshalych_eval.engine import executor, runs
from voproshalych_eval.plans import Plan, spec


@dataclass
class Ran:
    run: runs.Run
    records: list[dict[str, Any]]
    progress: executor.Progress
    plan: Plan


def run(engine: Any, key: str, params: dict[str, Any]) -> Ran:
    """Build plan ``key`` (a registry key) with ``params`` (``label`` names the run), execute it."""
    params = dict(params)
    label = params.pop("label", None)
    plan = importlib.import_module(spec(key).module).build_plan(engine, params)
    plan.label = label
    run_id, prog = executor.run_plan(engine, plan)
    return Ran(runs.get_run(engine, run_id), runs.item_records(engine, run_id), prog, plan)


def tier1(engine: Any, dataset: Any, **params: Any) -> Any:
    """A Tier 1 run on ``dataset`` (a stored ``Dataset``, a name or a file) as a ``Tier1Result``."""
    from voproshalych_eval.tiers.tier1 import Tier1Result

    ref = dataset.id if getattr(dataset, "id", None) is not None else dataset
    from voproshalych_eval.db import snapshots

    ran = run(engine, "tier1", {"dataset": ref, **params})
    snap = snapshots.get(engine, ran.run.snapshot_id) if ran.run.snapshot_id else None
    return Tier1Result.from_run(ran.run, ran.records, snap)


def tier0(engine: Any, **params: Any) -> dict[str, Any]:
    """A recorded Tier 0 run as ``tier0.result`` (with the in-memory vector set and kNN)."""
    from voproshalych_eval.tiers import tier0 as t0

    ran = run(engine, "tier0", params)
    assert ran.progress.status == "done", ran.run.error
    return t0.result(ran.run, ran.records, ran.plan.outputs)


def real_users(engine: Any, **params: Any) -> Any:
    """A recorded real-users run as its in-memory ``RealUsersResult`` (with ``run_id``)."""
    ran = run(engine, "real_users", params)
    assert ran.progress.status == "done", ran.run.error
    return ran.plan.outputs["result"]
