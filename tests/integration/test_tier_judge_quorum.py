"""A tier's judge quorum is configurable: one of two judge models failing leaves no score under the default
strict majority, and a partial score (counted in ``n_partial``) with ``judge_quorum="any"``."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.scripted_openai import Reply, scripted_openai, scripted_openai_env  # noqa: F401 (fixtures)
from voproshalych_eval.engine import runs
from voproshalych_eval.engine.executor import run_plan


@pytest.mark.parametrize(("quorum", "scored"), [(None, False), ("any", True)])
def test_tier2_judge_quorum(demo_engine: Any, scripted_openai_env: Any, quorum: str | None, scored: bool) -> None:  # noqa: F811
    from voproshalych_eval.tiers.tier2 import build_plan

    scripted_openai_env.script(*[Reply.garbage()] * 200, model="judge-b")  # judge-b never gives a readable reply
    plan = build_plan(demo_engine, {"limit": 2, "judge_models": ["judge-a", "judge-b"], "judge_quorum": quorum})
    run_id, prog = run_plan(demo_engine, plan)
    run = runs.get_run(demo_engine, run_id)
    faith = run.metrics["avg_faithfulness"]
    assert run.params["judge_quorum"] == quorum
    if scored:
        assert faith["n"] == 2 and faith["n_partial"] == 2 and run.metrics["n_partial"] == 2
    else:
        assert faith["value"] is None and faith["failure_kinds"]["no_quorum"] == 2
    assert ("judge_quorum=any" in runs.config_label(run)) is scored  # history lines keep the two apart
