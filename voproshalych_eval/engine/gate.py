"""A quality gate for the bot's own CI: configured checks over runs, a JUnit XML file and a Markdown summary.

``gate.toml`` names the runs (any run command with its flags) and the checks over them::

    junit = "gate-junit.xml"            # default
    summary = "gate-summary.md"         # default

    [runs.retrieval]
    command = ["tier1", "--dataset", "golden_v1"]

    [runs.bot]
    command = ["tier3", "--api", "https://bot.example/qa/", "--api-preset", "voproshalych"]

    [[checks]]
    name = "Tier 3 gate pass rate at least 0.8"
    run = "bot"
    metric = "gate_pass_rate"
    min = 0.8                           # and/or max = …

    [[checks]]
    name = "Retrieval no worse than its baselines"
    run = "retrieval"
    baselines = true                    # every metric of the run that has a baseline (or `metric = …` for one)

A threshold check passes when the metric's value is within ``min``/``max``; a baseline check passes when no
metric is worse than its baseline by more than the baseline's margin (:func:`baselines.classify` is not
``critical``). A check fails — with the value, its 95% CI and the threshold in the message — also when its
run did not finish ``done``, when the metric is missing, or (baseline checks) when the run used the offline
substitutes, which are never compared to baselines. One JUnit test case per check.
"""

from __future__ import annotations

import tomllib
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from voproshalych_eval.engine import baselines, runs
from voproshalych_eval.errors import VoproshalychEvalError
from voproshalych_eval.markdown import table


class GateConfigError(VoproshalychEvalError, ValueError):
    """``gate.toml`` cannot be used; the message names the file and the field."""


@dataclass
class Check:
    name: str
    run: str
    metric: str | None = None
    min: float | None = None
    max: float | None = None
    baselines: bool = False


@dataclass
class GateConfig:
    runs: dict[str, list[str]]
    checks: list[Check]
    junit: str = "gate-junit.xml"
    summary: str = "gate-summary.md"


@dataclass
class CheckResult:
    check: Check
    passed: bool
    message: str
    run_id: int | None = None
    value: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    threshold: str = ""
    details: list[str] = field(default_factory=list)
    time_s: float = 0.0


def load_config(path: str | Path) -> GateConfig:
    """Read and check ``gate.toml``; :class:`GateConfigError` names the file and the field."""
    path = Path(path)
    where = str(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise GateConfigError(f"{where}: no such file") from None
    except tomllib.TOMLDecodeError as exc:
        raise GateConfigError(f"{where}: not valid TOML ({exc})") from None
    run_table = data.get("runs")
    if not isinstance(run_table, Mapping) or not run_table:
        raise GateConfigError(f"{where}: [runs.NAME] tables with a `command` are required")
    commands: dict[str, list[str]] = {}
    for name, spec in run_table.items():
        cmd = spec.get("command") if isinstance(spec, Mapping) else None
        if not isinstance(cmd, list) or not cmd or not all(isinstance(c, str) for c in cmd):
            raise GateConfigError(f"{where}: runs.{name}.command must be a list of strings (a run command and flags)")
        commands[name] = list(cmd)
    raw_checks = data.get("checks")
    if not isinstance(raw_checks, list) or not raw_checks:
        raise GateConfigError(f"{where}: at least one [[checks]] table is required")
    checks = []
    for i, c in enumerate(raw_checks, start=1):
        at = f"{where}: checks[{i}]"
        if not isinstance(c, Mapping):
            raise GateConfigError(f"{at}: must be a table")
        unknown = set(c) - {"name", "run", "metric", "min", "max", "baselines"}
        if unknown:
            raise GateConfigError(f"{at}: unknown field(s) {', '.join(sorted(unknown))}")
        if c.get("run") not in commands:
            raise GateConfigError(f"{at}.run: {c.get('run')!r} is not one of the [runs] ({', '.join(commands)})")
        for bound in ("min", "max"):
            if bound in c and (isinstance(c[bound], bool) or not isinstance(c[bound], int | float)):
                raise GateConfigError(f"{at}.{bound}: must be a number, got {c[bound]!r}")
        check = Check(name=str(c.get("name") or f"check {i}"), run=c["run"], metric=c.get("metric"),
                      min=c.get("min"), max=c.get("max"), baselines=bool(c.get("baselines", False)))
        if not check.baselines and (check.metric is None or (check.min is None and check.max is None)):
            raise GateConfigError(f"{at}: give `metric` with `min` and/or `max`, or `baselines = true`")
        checks.append(check)
    return GateConfig(runs=commands, checks=checks, junit=str(data.get("junit", "gate-junit.xml")),
                      summary=str(data.get("summary", "gate-summary.md")))


def _num(v: Any) -> str:
    return "—" if v is None else (f"{v:.4g}" if isinstance(v, float) else str(v))


def _value_text(agg: Mapping[str, Any]) -> str:
    ci = (f" (95% CI {_num(agg.get('ci_low'))}–{_num(agg.get('ci_high'))})" if agg.get("ci_low") is not None
          else "")
    return f"{_num(agg.get('value'))}{ci}" + (f", n={agg['n']}" if agg.get("n") is not None else "")


def evaluate(check: Check, run: runs.Run | None, baseline_table: Sequence[baselines.Baseline],
             *, run_error: str | None = None) -> CheckResult:
    """The outcome of one check over its run (None: the run could not start; ``run_error`` says why)."""
    if run is None:
        return CheckResult(check, False, f"run {check.run!r} did not start: {run_error or 'unknown error'}")
    if run.status != "done":
        return CheckResult(check, False, f"run #{run.id} ({check.run}) ended {run.status}: {run.error or ''}".strip(),
                           run_id=run.id)
    metrics = run.metrics or {}
    if check.baselines:
        if run.offline:
            return CheckResult(check, False, f"run #{run.id} used the offline substitutes: they are never "
                               "compared to baselines (configure the LLM)", run_id=run.id, threshold="baselines")
        keys = [check.metric] if check.metric else list(runs.flatten_metrics(metrics))
        worse, compared = [], 0
        for key in keys:
            agg = baselines.lookup_metric(metrics, key)
            b = baselines.find_baseline(list(baseline_table), run.tier, key)
            if agg is None or b is None:
                continue
            compared += 1
            if baselines.classify(agg.get("value"), b) == "critical":
                sign = "-" if b.direction == "higher" else "+"
                worse.append(f"{key} = {_value_text(agg)}; baseline {b.value:g}, allowed {b.value:g} {sign} "
                             f"{b.attention_margin:g} ({'higher' if b.direction == 'higher' else 'lower'} is better)")
        if check.metric and compared == 0:
            return CheckResult(check, False, f"{check.metric}: no value or no baseline in run #{run.id}",
                               run_id=run.id, threshold="baseline")
        if worse:
            return CheckResult(check, False, f"{len(worse)} of {compared} metrics of run #{run.id} are worse than "
                               "their baseline by more than its margin: " + "; ".join(worse), run_id=run.id,
                               threshold="baseline − margin", details=worse)
        return CheckResult(check, True, f"{compared} metrics of run #{run.id} within their baselines' margins",
                           run_id=run.id, threshold="baseline − margin")
    assert check.metric is not None
    agg = baselines.lookup_metric(metrics, check.metric)
    bounds = " and ".join(x for x in (f">= {check.min:g}" if check.min is not None else "",
                                      f"<= {check.max:g}" if check.max is not None else "") if x)
    if agg is None or agg.get("value") is None:
        return CheckResult(check, False, f"{check.metric}: no value in run #{run.id}", run_id=run.id, threshold=bounds)
    v = float(agg["value"])
    ok = (check.min is None or v >= check.min) and (check.max is None or v <= check.max)
    return CheckResult(check, ok, f"{check.metric} = {_value_text(agg)}; required {bounds} (run #{run.id})",
                       run_id=run.id, value=v, ci_low=agg.get("ci_low"), ci_high=agg.get("ci_high"), threshold=bounds)


def junit_xml(results: Sequence[CheckResult], *, suite: str = "voproshalych-eval gate") -> str:
    """One ``<testcase>`` per check; a failed check has a ``<failure>`` whose message holds value, CI and
    threshold."""
    failures = sum(not r.passed for r in results)
    root = ET.Element("testsuites", name=suite, tests=str(len(results)), failures=str(failures), errors="0")
    ts = ET.SubElement(root, "testsuite", name=suite, tests=str(len(results)), failures=str(failures), errors="0",
                       skipped="0", time=f"{sum(r.time_s for r in results):.3f}")
    for r in results:
        tc = ET.SubElement(ts, "testcase", classname=f"gate.{r.check.run}", name=r.check.name, time=f"{r.time_s:.3f}")
        if not r.passed:
            fail = ET.SubElement(tc, "failure", message=r.message, type="GateCheckFailed")
            fail.text = "\n".join([r.message, *r.details])
        else:
            out = ET.SubElement(tc, "system-out")
            out.text = r.message
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def markdown_summary(results: Sequence[CheckResult], *, link: str | None = None) -> str:
    """A Markdown summary for the CI job's page: the verdict, then one row per check."""
    failed = [r for r in results if not r.passed]
    head = (f"## ❌ Quality gate failed: {len(failed)} of {len(results)} checks" if failed
            else f"## ✅ Quality gate passed: {len(results)} checks")
    rows = [{"check": r.check.name, "run": f"#{r.run_id}" if r.run_id else r.check.run,
             "value": "—" if r.value is None else f"{r.value:.4g}",
             "95% CI": "—" if r.ci_low is None else f"{r.ci_low:.4g}–{r.ci_high:.4g}",
             "threshold": r.threshold or "—", "result": "PASS" if r.passed else "FAIL", "details": r.message}
            for r in results]
    body = table(rows, ["check", "run", "value", "95% CI", "threshold", "result", "details"], width=400)
    return "\n\n".join(x for x in (head, body, f"Runs: {link}" if link else "") if x) + "\n"
