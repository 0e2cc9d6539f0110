"""``gate --config gate.toml`` — run the configured checks (for the bot's CI): JUnit XML + Markdown, exit 0/1."""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import time
from pathlib import Path
from typing import Any

from voproshalych_eval.commands.output import add_json_flag, emit, engine, progress
from voproshalych_eval.engine.alerts import on_gate


def register(sub: Any) -> None:
    p = sub.add_parser(
        "gate", help="a quality gate for CI: configured runs and checks -> JUnit XML + Markdown; exit 0 / 1",
        description="Runs each [runs.NAME] command of the config once (in the foreground), then evaluates every "
                    "[[checks]] table: a metric within min/max (e.g. Tier 3's gate_pass_rate >= 0.8), or no metric "
                    "worse than its baseline by more than its margin. Writes one JUnit test case per check and a "
                    "Markdown summary (docs/GATE.md has GitHub Actions and GitLab CI examples).")
    p.add_argument("--config", required=True, help="gate.toml")
    p.add_argument("--junit", default=None, help="JUnit XML path (default: the config's `junit`, gate-junit.xml)")
    p.add_argument("--summary", default=None, help="Markdown path (default: the config's `summary`, gate-summary.md)")
    add_json_flag(p)
    p.set_defaults(func=cmd_gate)


def _run(command: list[str]) -> tuple[int | None, str | None, float]:
    """Run one command in the foreground with ``--json``; returns (run id, error, seconds)."""
    main = importlib.import_module("voproshalych_eval.cli").main  # at call time, as the CLI loads its commands
    out, err = io.StringIO(), io.StringIO()
    t0 = time.perf_counter()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([*command, "--json"])
    dt = time.perf_counter() - t0
    try:
        run_id = int(json.loads(out.getvalue())["run_id"])
    except (ValueError, KeyError, TypeError):
        return None, f"{' '.join(command)} exited {code}: {err.getvalue().strip()[-800:]}", dt
    return run_id, None, dt


def cmd_gate(args: Any) -> int:
    from voproshalych_eval.engine import baselines, gate, runs  # heavy: keeps gate out of --help (+5 ms)

    cfg = gate.load_config(args.config)
    eng = engine()
    table = baselines.list_baselines(eng)
    done: dict[str, tuple[Any, str | None, float]] = {}
    for name, command in cfg.runs.items():
        if not any(c.run == name for c in cfg.checks):
            continue
        progress(f"gate: run {name}: {' '.join(command)}")
        run_id, error, dt = _run(command)
        done[name] = (runs.get_run(eng, run_id) if run_id is not None else None, error, dt)
    results = []
    for check in cfg.checks:
        run, error, dt = done[check.run]
        r = gate.evaluate(check, run, table, run_error=error)
        r.time_s = dt
        results.append(r)
        progress(f"gate: {'PASS' if r.passed else 'FAIL'} {check.name}: {r.message}")
    junit, summary = Path(args.junit or cfg.junit), Path(args.summary or cfg.summary)
    junit.write_text(gate.junit_xml(results), encoding="utf-8")
    md = gate.markdown_summary(results)
    summary.write_text(md, encoding="utf-8")
    passed = all(r.passed for r in results)
    on_gate(eng, Path(args.config).stem, passed, [r.message for r in results if not r.passed] or ["every check passed"])
    emit({"passed": passed, "junit": str(junit), "summary": str(summary),
          "checks": [{"name": r.check.name, "run": r.check.run, "run_id": r.run_id, "passed": r.passed,
                      "message": r.message, "value": r.value, "ci_low": r.ci_low, "ci_high": r.ci_high,
                      "threshold": r.threshold} for r in results]}, args.json, md)
    return 0 if passed else 1
