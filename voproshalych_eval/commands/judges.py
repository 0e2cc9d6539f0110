"""``judge-stability`` and ``judge-pipeline`` — the two judge tiers."""

from __future__ import annotations

from typing import Any

from voproshalych_eval.commands.plan_flags import plan_command


def register(sub: Any) -> None:
    plan_command(sub, "judge", "judge-stability", "Tier Judge: re-judge each item R times (cache off)")
    plan_command(sub, "judge_pipeline", "judge-pipeline", "Tier Judge Pipeline: show/no-show judge vs human labels")
