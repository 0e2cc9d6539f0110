"""The benchmark tiers as plans (``build_plan(engine, params)``) and what they share: inputs, LLM calls,
text overlap, aggregation. The registry of plans is :mod:`voproshalych_eval.plans`."""
