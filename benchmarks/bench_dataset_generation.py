"""Synthetic golden-set generation against a slow scripted LLM endpoint, and what the gates drop on the demo.

1. Throughput: generate N items (``--items``, default 200; ``--quick`` 40) with the scripted generation LLM
   (:mod:`tests.support.scripted_generation`, its own process, every reply delayed by ``--delay`` s, default
   0.2) at the default concurrency, no spare slots, no cache hits (a fresh model name). Printed: wall time,
   LLM calls, and the ratio to the **ideal bound** ``max(calls * delay / concurrency, longest chain of
   sequential calls of one item * delay)`` — what perfect overlap of the waits would give — to a
   **baseline** measured in the same run: the same work at concurrency 1 on a quarter of the items
   (per item), and to a **reference**: the same number of bare ``LLMClient.complete`` calls at the same
   concurrency (the LLM layer's own cost: HTTP, call log, cache), so the generation's own overhead shows.
2. Gates on the demo: the offline template generator over every page (``--gate-items``, default 100) and
   the scripted LLM with injected defects (one in four replies wrong): what each gate dropped.

   Every dataset the benchmark stores is deleted at the end (a leftover would feed later near-duplicate
   checks). The throughput part is repeated ``--repeats`` times (default 3) and the median reported.

    DATABASE_URL=... .venv/bin/python benchmarks/bench_dataset_generation.py [--items 200] [--delay 0.2] [--repeats 3] [--quick]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _server(delay: float, defect_every: int = 0) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.support.scripted_generation", "--delay", str(delay), "--defect-every", str(defect_every)],
        cwd=str(ROOT), stdout=subprocess.PIPE, text=True,
    )
    assert proc.stdout is not None
    return proc, proc.stdout.readline().strip()


def _use(url: str | None) -> None:
    from voproshalych_eval.config import get_settings

    if url:
        os.environ["OPENAI_BASE_URL"], os.environ["OPENAI_API_KEY"] = url, "bench"
    else:
        os.environ.pop("OPENAI_BASE_URL", None)
        os.environ.pop("OPENAI_API_KEY", None)
    get_settings.cache_clear()


def _calls(eng, run_id: int) -> tuple[int, int]:  # type: ignore[no-untyped-def]
    """(LLM HTTP calls of the run, longest sequential chain of one item) from the call log and the items."""
    from sqlalchemy import text

    from voproshalych_eval.engine.runs import item_records

    with eng.connect() as conn:
        # every uncached call the run made: generation, the support judge and the answerability check
        n = conn.execute(text("SELECT count(*) FROM eval.llm_calls WHERE run_id = :r AND NOT cached"),
                         {"r": run_id}).scalar_one()
    chain = 0
    for r in item_records(eng, run_id):
        res = r["result"]
        k = 1 + (1 if "support" in res.get("gates", {}) else 0) + len((res.get("gates", {}).get("answerable") or {}).get("checked") or [])
        chain = max(chain, k)
    return int(n), chain


def _reference(eng, n_calls: int, concurrency: int) -> float:  # type: ignore[no-untyped-def]
    """Seconds for ``n_calls`` distinct (uncached) completions through the LLM client, ``concurrency`` at a time."""
    from concurrent.futures import ThreadPoolExecutor

    from voproshalych_eval.llm.client import default_client

    client = default_client(None, eng)
    assert client is not None
    tag = uuid.uuid4().hex[:6]

    def one(i: int) -> None:
        client.complete([{"role": "user", "content": f"reference call {tag} {i}"}], model="bench-ref", max_tokens=50)

    t0 = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(one, range(n_calls)))
    return time.perf_counter() - t0


def _dropped(m: dict) -> str:
    """The gate counts, the near-duplicates split into within the new set / against existing sets."""
    d = dict(m.get("dropped") or {})
    parts = [f"{k} {v}" for k, v in d.items() if v and not k.startswith("near_duplicate")]
    parts.append(f"near-duplicates {d.get('near_duplicate_new', 0)} new + {d.get('near_duplicate_existing', 0)} existing")
    return ", ".join(parts)


def _stored(m: dict) -> str:
    return (f"stored {m.get('n_items')} of {m.get('size_requested')} requested from {m.get('n_slots')} slots, "
            f"pages {m.get('pages_covered')}/{m.get('pages_total')}")


def _throughput(eng, args, conc: int, names: list[str]) -> dict[str, float]:  # type: ignore[no-untyped-def]
    """One repetition: the baseline (concurrency 1), the default concurrency, and the bare-call reference."""
    from voproshalych_eval.datasets.store import delete_dataset
    from voproshalych_eval.engine.executor import run_plan
    from voproshalych_eval.generation.plan import build_plan

    results = {}
    for label, n, c in (("baseline", max(8, args.items // 4), 1), ("default", args.items, conc)):
        params = {"size": n, "oversample": 0.0, "model": "bench-" + uuid.uuid4().hex[:6], "concurrency": c,
                  "compare_existing": False, "name": f"bench_{label}_" + uuid.uuid4().hex[:4]}
        names.append(params["name"])
        t0 = time.perf_counter()
        plan = build_plan(eng, params)
        rid, prog = run_plan(eng, plan)
        dt = time.perf_counter() - t0
        calls, chain = _calls(eng, rid)
        ideal = max(calls * args.delay / c, chain * args.delay)
        results[label] = (n, dt, calls, ideal)
        delete_dataset(eng, params["name"])  # the gates below compare against the demo's own sets only
        print(f"  {label}: {n} items at concurrency {c}, oversample 0 ({len(plan.items)} slots): {dt:.1f} s, "
              f"{prog.done} done / {prog.failed} failed, {calls} LLM calls ({calls / max(n, 1):.2f}/item), "
              f"ideal bound {ideal:.1f} s -> x{dt / ideal:.2f} of ideal; {_stored(prog.metrics)}; dropped: {_dropped(prog.metrics)}")
    bn, bdt, _, _ = results["baseline"]
    dn, ddt, dcalls, dideal = results["default"]
    ref = _reference(eng, dcalls, conc)
    out = {"seconds": ddt, "calls": dcalls, "ideal": dideal, "x_ideal": ddt / dideal,
           "speedup": (bdt / bn) / (ddt / dn), "reference": ref, "x_reference": ddt / ref}
    print(f"  speed-up vs concurrency 1 (per item): x{out['speedup']:.2f}; reference: {dcalls} bare LLM calls at "
          f"concurrency {conc}: {ref:.1f} s (ideal {dcalls * args.delay / conc:.1f} s); generation took x{out['x_reference']:.2f} of it")
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--items", type=int, default=200)
    ap.add_argument("--delay", type=float, default=0.2)
    ap.add_argument("--gate-items", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=3, help="repetitions of the throughput part; the median is reported")
    ap.add_argument("--quick", action="store_true", help="40 items, 40 gate items, one repetition")
    args = ap.parse_args()
    if args.quick:
        args.items, args.gate_items, args.repeats = 40, 40, 1
    from statistics import median

    from voproshalych_eval.config import get_settings
    from voproshalych_eval.datasets.store import delete_dataset
    from voproshalych_eval.db import get_engine
    from voproshalych_eval.demo import load_demo
    from voproshalych_eval.engine.executor import run_plan
    from voproshalych_eval.generation.plan import DEFAULTS, build_plan

    eng = get_engine(get_settings())
    load_demo(eng)
    from voproshalych_eval.embeddings import cached_embedder

    cached_embedder(get_settings().embedder, eng).encode_queries(["прогрев модели"])  # load the model outside the timing
    names: list[str] = []  # every dataset this benchmark stores, deleted at the end (even on failure)
    try:
        proc, url = _server(args.delay)
        try:
            _use(url)
            conc = int(DEFAULTS["concurrency"])
            reps = []
            for i in range(max(1, args.repeats)):
                print(f"throughput, repetition {i + 1} of {args.repeats}:")
                reps.append(_throughput(eng, args, conc, names))
            med = {k: median(r[k] for r in reps) for k in reps[0]}
            print(f"MEDIAN of {len(reps)}: {args.items} items, {args.delay * 1000:.0f} ms per reply, concurrency {conc}, "
                  f"oversample 0: {med['seconds']:.1f} s for {med['calls']:.0f} LLM calls; ideal bound {med['ideal']:.1f} s "
                  f"(x{med['x_ideal']:.2f}); x{med['speedup']:.2f} per item vs concurrency 1; bare calls "
                  f"{med['reference']:.1f} s (x{med['x_reference']:.2f})")
        finally:
            proc.terminate()
            proc.wait(10)
        # what the gates drop on the demo (the default oversample: spare slots make up for the drops)
        _use(None)
        plan = build_plan(eng, {"size": args.gate_items, "offline": True, "compare_existing": False,
                                "name": "bench_gates_offline_" + uuid.uuid4().hex[:4]})
        names.append(str(plan.dataset_name))
        _, prog = run_plan(eng, plan)
        print(f"gates, offline templates (oversample {DEFAULTS['oversample']}): {_stored(prog.metrics)}; "
              f"dropped: {_dropped(prog.metrics)}")
        proc, url = _server(0.0, defect_every=4)
        try:
            _use(url)
            plan = build_plan(eng, {"size": args.gate_items, "compare_existing": True, "model": "bench-" + uuid.uuid4().hex[:6],
                                    "name": "bench_gates_llm_" + uuid.uuid4().hex[:4]})
            names.append(str(plan.dataset_name))
            _, prog = run_plan(eng, plan)
            print(f"gates, scripted LLM with a defect in ~1 of 4 replies (oversample {DEFAULTS['oversample']}, against "
                  f"the existing sets too): {_stored(prog.metrics)}; dropped: {_dropped(prog.metrics)}")
        finally:
            proc.terminate()
            proc.wait(10)
            _use(None)
    finally:
        for name in names:
            delete_dataset(eng, name)


if __name__ == "__main__":
    main()
