"""Tier orchestration: each tier is a function from inputs + settings to a recorded run."""

from voproshalych_eval.tiers.catalog import TIERS, TierInfo

__all__ = ["TIERS", "TierInfo"]
