"""``gate --config gate.toml``: the configured runs execute, each check becomes one JUnit test case (read back
with junitparser) whose failure message holds the value, its CI and the threshold; a Markdown summary; exit 0
when every check passes, 1 otherwise; a bad config is a sentence naming the file and field (exit 2)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from junitparser import Failure, JUnitXml

from tests.support.production_qa import ProductionQA
from voproshalych_eval.engine import baselines


def _cli(args: list[str], capsys: Any) -> tuple[int, str, str]:
    from voproshalych_eval.cli import main

    code = main(args)
    out = capsys.readouterr()
    return code, out.out, out.err


def _config(tmp: Path, body: str) -> Path:
    path = tmp / "gate.toml"
    path.write_text(body, encoding="utf-8")
    return path


def test_gate_writes_one_junit_case_per_check(demo_engine: Any, tmp_path: Path, capsys: Any) -> None:
    original = baselines.get_baseline(demo_engine, "tier1", "mrr")
    with ProductionQA() as bot:
        cfg = _config(tmp_path, f"""
junit = "{tmp_path / 'junit.xml'}"
summary = "{tmp_path / 'summary.md'}"

[runs.retrieval]
command = ["tier1", "--retriever", "fts"]

[runs.bot]
command = ["tier3", "--api", "{bot.base_url}", "--api-preset", "voproshalych", "--limit", "6", "--offline"]

[[checks]]
name = "MRR above a floor it reaches"
run = "retrieval"
metric = "chunk.mrr"
min = 0.01

[[checks]]
name = "MRR above a floor it cannot reach"
run = "retrieval"
metric = "chunk.mrr"
min = 0.999

[[checks]]
name = "retrieval within its baselines"
run = "retrieval"
metric = "chunk.mrr"
baselines = true

[[checks]]
name = "bot answers: gate pass rate recorded"
run = "bot"
metric = "gate_pass_rate"
min = 0.0
""")
        try:  # a baseline the run cannot meet, so the baseline check must fail
            baselines.set_baseline(demo_engine, baselines.Baseline("tier1", "mrr", 0.999, 0.001))
            code, out, err = _cli(["gate", "--config", str(cfg)], capsys)
        finally:
            if original is not None:
                baselines.set_baseline(demo_engine, original)
    assert code == 1, err
    xml = JUnitXml.fromfile(str(tmp_path / "junit.xml"))
    cases = {c.name: c for suite in xml for c in suite}
    assert len(cases) == 4
    assert not cases["MRR above a floor it reaches"].result
    failed = cases["MRR above a floor it cannot reach"].result
    assert len(failed) == 1 and isinstance(failed[0], Failure)
    msg = failed[0].message
    assert msg.startswith("chunk.mrr = ") and "95% CI" in msg and "required >= 0.999" in msg and "run #" in msg
    base = cases["retrieval within its baselines"].result
    assert base and "worse than their baseline" in base[0].message and "baseline 0.999" in base[0].message
    assert not cases["bot answers: gate pass rate recorded"].result
    summary = (tmp_path / "summary.md").read_text(encoding="utf-8")
    assert summary.startswith("## ❌ Quality gate failed: 2 of 4 checks") and summary.count("| FAIL |") == 2

    # every check passing: exit 0
    cfg2 = _config(tmp_path, f"""
junit = "{tmp_path / 'junit2.xml'}"
summary = "{tmp_path / 'summary2.md'}"
[runs.retrieval]
command = ["tier1", "--retriever", "fts"]
[[checks]]
name = "MRR above a floor"
run = "retrieval"
metric = "chunk.mrr"
min = 0.01
""")
    code, _, err = _cli(["gate", "--config", str(cfg2)], capsys)
    assert code == 0, err
    assert [c.result for s in JUnitXml.fromfile(str(tmp_path / "junit2.xml")) for c in s] == [[]]


def test_gate_config_errors_name_file_and_field(engine: Any, tmp_path: Path, capsys: Any) -> None:
    cfg = _config(tmp_path, '[runs.a]\ncommand = ["tier1"]\n[[checks]]\nrun = "b"\nmetric = "mrr"\nmin = 0.5\n')
    code, _, err = _cli(["gate", "--config", str(cfg)], capsys)
    assert code == 2 and f"{cfg}: checks[1].run: 'b' is not one of the [runs] (a)" in err
    cfg = _config(tmp_path, '[runs.a]\ncommand = ["tier1"]\n[[checks]]\nrun = "a"\nmetric = "mrr"\nmin = "high"\n')
    code, _, err = _cli(["gate", "--config", str(cfg)], capsys)
    assert code == 2 and "checks[1].min: must be a number, got 'high'" in err
