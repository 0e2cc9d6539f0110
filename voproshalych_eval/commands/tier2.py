"""``tier2`` — generation on the full reference context, scored by judges and text overlap."""

from __future__ import annotations

from typing import Any

from voproshalych_eval.commands.plan_flags import plan_command


def register(sub: Any) -> None:
    plan_command(sub, "tier2", "tier2", "Tier 2: generation on a fixed (full reference) context")
