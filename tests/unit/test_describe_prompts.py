"""A run's prompts in its provenance list: a digest, or several digests under one name as technical text."""

from __future__ import annotations

from types import SimpleNamespace

from voproshalych_eval.engine import describe


def _run(prompts: dict[str, object]) -> SimpleNamespace:
    return SimpleNamespace(tier="judge_pipeline", dataset_name="demo_judge", dataset_hash=None, models={}, params={},
                           prompts=prompts, offline=True, code_version="abc", created_by=None, started_at=None,
                           finished_at=None, label=None, id=1)


def test_nested_prompt_digests_are_code_not_a_python_dict() -> None:
    rows = dict(describe.provenance_rows(_run({"show_no_show": {"production default": "0123456789abcdef"},
                                               "answer": "fedcba9876543210"}), "ru"))
    nested = rows["Промпт show_no_show"]
    assert nested == ("code", "production default: 0123456789ab")  # never "{'production"
    assert rows["Промпт answer"] == "fedcba987654"
