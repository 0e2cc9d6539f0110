"""Who made each change: ``eval.audit_log`` (migration 0034) and ``runs.actor``, written by the run registry."""

from __future__ import annotations

import getpass
import uuid
from typing import Any

import pytest

from voproshalych_eval.db import audit
from voproshalych_eval.engine import executor, runs
from voproshalych_eval.plans import Plan


def _plan() -> Plan:
    return Plan(tier="tier1", items=[("a", 1), ("b", 2)], work=lambda x: {"v": x}, finalize=lambda recs: {},
                label=f"audit-{uuid.uuid4().hex[:8]}")


def test_a_run_records_its_actor_and_an_audit_entry(engine: Any) -> None:
    run_id = executor.create_run(engine, _plan(), actor="anna.analyst@example.org", actor_role="analyst")
    run = runs.get_run(engine, run_id)
    assert run is not None and run.actor == "anna.analyst@example.org"
    entry = next(e for e in audit.entries(engine, actor="anna.analyst@example.org", action="run")
                 if e.target == f"run #{run_id}")
    assert entry.role == "analyst" and entry.outcome == "done" and entry.details["tier"] == "tier1"
    assert runs.runs_frame([run])["actor"].tolist() == ["anna.analyst@example.org"]


def test_a_run_without_an_actor_is_the_os_user(engine: Any) -> None:
    run_id = executor.create_run(engine, _plan())
    run = runs.get_run(engine, run_id)
    assert run is not None and run.actor == (getpass.getuser() or "local")


def test_entries_filter_and_keep_secrets_out(engine: Any) -> None:
    who = f"audit-{uuid.uuid4().hex[:8]}@example.org"
    audit.record(engine, actor=who, role="viewer", action="run", target="t1_run_id", outcome="refused")
    audit.record(engine, actor=who, role="admin", action="settings", target="llm prices",
                 details={"op": "save", "api_key": "sk-should-never-be-stored", "nested": {"token": "x", "n": 2}})
    refused = audit.entries(engine, actor=who, outcome="refused")
    assert [(e.action, e.role) for e in refused] == [("run", "viewer")]
    saved = audit.entries(engine, actor=who, action="settings")[0]
    assert saved.details == {"op": "save", "nested": {"n": 2}}
    assert [e.action for e in audit.entries(engine, actor=who)] == ["settings", "run"]  # newest first


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"actor": " "}, "needs an actor"), ({"actor": "a", "outcome": "maybe"}, "outcome must be one of"),
])
def test_bad_entries_are_refused(engine: Any, kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        audit.record(engine, action="run", **kwargs)


def test_a_report_can_mask_personal_data(engine: Any) -> None:
    from voproshalych_eval import reports

    question = "Иванов Иван Иванович спрашивает: пишите на ivanov@utmn.ru или +7 (912) 345-67-89"
    plan = Plan(tier="tier1", items=[("q1", question)], work=lambda q: {"question": q, "answer": "ok"},
                finalize=lambda recs: {}, label=f"mask-{uuid.uuid4().hex[:8]}")
    run_id, _ = executor.run_plan(engine, plan)
    for fmt in ("csv", "json", "md", "html"):
        clear = reports.run_report(engine, run_id, fmt)
        masked = reports.run_report(engine, run_id, fmt, mask_personal_data=True)
        assert "ivanov@utmn.ru" in clear, fmt  # the report carries the question
        assert "ivanov@utmn.ru" not in masked and "345-67-89" not in masked and "Иван Иванович" not in masked, fmt
        assert "[email]" in masked and "[phone]" in masked and "[name]" in masked, fmt


def test_writing_cli_commands_are_audited_by_the_os_user(demo_engine: Any, capsys: pytest.CaptureFixture[str]) -> None:
    from voproshalych_eval.cli import main
    from voproshalych_eval.config import PROJECT_ROOT
    from voproshalych_eval.team import local_actor

    name = f"audit_cli_{uuid.uuid4().hex[:8]}"
    assert main(["dataset", "import", str(PROJECT_ROOT / "data" / "golden_dataset.json"), "--name", name, "--json"]) == 0
    assert main(["dataset", "list", "--json"]) == 0  # reading commands are not recorded
    capsys.readouterr()
    entries = [e for e in audit.entries(demo_engine, actor=local_actor(), limit=50) if e.target == name]
    assert [(e.action, e.details["command"]) for e in entries] == [("dataset", "dataset import")]
