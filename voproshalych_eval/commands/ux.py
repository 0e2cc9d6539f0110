"""``ux`` — cache hit rate, context preservation, multi-turn consistency (log sessions or dialogs)."""

from __future__ import annotations

from typing import Any

from voproshalych_eval.commands.plan_flags import plan_command


def register(sub: Any) -> None:
    plan_command(sub, "ux", "ux", "Tier UX: similar-question cache, context preservation, multi-turn consistency")
