"""``tier0``: embedding-space geometry of chunks, questions, golden questions or both (or any ``.npy`` matrix)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from voproshalych_eval.commands.output import emit, engine, exit_code, progress
from voproshalych_eval.commands.plan_flags import add_plan_flags, plan_params
from voproshalych_eval.commands.resume import add_outcome_flags, execute_plan
from voproshalych_eval.engine import runs
from voproshalych_eval.plans import spec as plan_spec


def register(sub: Any) -> None:
    p = sub.add_parser(
        "tier0",
        help="Tier 0: embedding-space metrics (nn distance, density, spread, effective dimensionality, pairwise)",
        description=(
            "Computes the methodology's twelve Tier 0 metrics (+ mean pairwise cosine, variance shares, near-duplicate "
            "pairs, top outliers) and records a tier0 run. With --vectors FILE.npy the metrics are computed on "
            "that matrix (rows are vectors) without touching the database."
        ),
    )
    add_plan_flags(p, "tier0")
    p.add_argument("--vectors", type=Path, default=None, help="a .npy float matrix; no database access")
    add_outcome_flags(p)
    p.set_defaults(func=cmd_tier0)


def _human(res: dict[str, Any]) -> str:
    # heavy: keeps tiers.tier0 out of --help (+8 ms)
    from voproshalych_eval.tiers.tier0 import DISTANCE_METRICS, EUCLIDEAN_ALWAYS

    lines = [
        f"source: {res['source']}  model: {res.get('model')}  n = {res['n']}  distance: {res['distance_metric']}"
        f"  k = {res.get('k')}" + ("  (ESTIMATED from samples)" if res.get("estimated") else "")
    ]
    lines += [f"  note: {n}" for n in res.get("notes", [])]
    for key, v in res["metrics"].items():
        unit = (f" [{res['distance_metric']}]" if key in DISTANCE_METRICS
                else " [euclidean]" if key in EUCLIDEAN_ALWAYS else "")
        shown = f"{v:.6f}" if isinstance(v, float) else str(v)
        lines.append(f"{key:34s} {shown}{unit}")
    if res.get("outliers"):
        lines.append("top outliers (mean distance to k NN):")
        for o in res["outliers"]:
            lines.append(f"  {o['score']:.4f}  {o['point_id']}  {' '.join(str(o['text']).split())[:90]}")
    if res.get("run_id") is not None:
        lines.append(f"run_id: {res['run_id']}")
    return "\n".join(lines)


def cmd_tier0(args: Any) -> int:
    from voproshalych_eval.tiers import tier0  # heavy: keeps tiers.tier0 out of --help (+8 ms)

    if args.vectors is not None:
        try:
            X = np.load(args.vectors, allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise tier0.Tier0Error(f"Cannot read {args.vectors} as a .npy float matrix: {exc}") from exc
        if X.ndim != 2 or not np.issubdtype(X.dtype, np.number):
            raise tier0.Tier0Error(f"{args.vectors} must hold a 2-D numeric matrix (rows are vectors), got {X.shape} {X.dtype}.")
        vs = tier0.vector_set_from_array(X, model=f"file:{args.vectors.name}")
        progress(f"{vs.X.shape[0]} vectors of dimension {vs.X.shape[1]} from {args.vectors}")
        p = plan_spec("tier0").resolve(plan_params("tier0", args))
        res = tier0.analyse(vs, k=p["k"], metric=p["metric"], top_outliers=p["top_outliers"], n_clusters=None)
        out = tier0.json_result(res)
        out["file"] = str(args.vectors)
        emit(out, args.json, _human(out))
        return 0
    eng = engine()
    plan = tier0.build_plan(eng, plan_params("tier0", args))
    run_id, prog = execute_plan(plan, args)
    res = tier0.result(runs.get_run(eng, run_id), runs.item_records(eng, run_id), plan.outputs)
    out = {"status": prog.status, **tier0.json_result(res)}
    emit(out, args.json, _human(out))
    return exit_code(prog.status)
