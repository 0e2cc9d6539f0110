"""Log analyses need only the log (issue 22 §2): an imported log runs the domain analysis on a home with no
knowledge base and records no snapshot; with a knowledge base loaded it is still not paired with it unless
linked explicitly; chunk utilization says what is missing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from voproshalych_eval.engine import runs

ROWS = [
    ("когда придёт стипендия", "Стипендия перечисляется до 25 числа на карту «Мир»."),
    ("где общага", "Общежитие выдаётся по заявлению в Студгородке."),
    ("привет", "Здравствуйте! Чем могу помочь?"),
    ("как пересдать экзамен", "Ответ не найден."),
    ("расписание", "Расписание публикуется на сайте и в личном кабинете."),
    ("сколько стоит общежитие", "Для бюджетников проживание стоит 1 100 руб. в месяц."),
    ("спасибо", "Рад был помочь! Если появятся ещё вопросы — пишите."),
    ("как восстановить студенческий", "Ответ не найден."),
]


def _log_csv(path: Any) -> Any:
    lines = ["id,question,answer,score,user_id,created_at"]  # a log exported without page URLs
    for i, (q, a) in enumerate(ROWS * 2, start=1):
        lines.append(f'{i},{q},"{a}",,{i % 5},2025-09-0{1 + i % 9}T10:{i:02d}:00+05:00')
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture()
def fresh_home(new_database, monkeypatch, tmp_path) -> Iterator[Any]:  # type: ignore[no-untyped-def]
    """The CLI on a new, empty store: no demo, no DATABASE_URL — no knowledge base anywhere."""
    from voproshalych_eval.config import get_settings
    from voproshalych_eval.db import get_engine

    monkeypatch.setenv("VOPROSHALYCH_EVAL_STORE_URL", new_database())
    monkeypatch.setenv("VOPROSHALYCH_EVAL_HOME", str(tmp_path / "home"))
    get_settings.cache_clear()
    try:
        yield get_engine()
    finally:
        get_settings.cache_clear()


def test_domain_on_a_fresh_home_with_only_an_imported_log(fresh_home, tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    from voproshalych_eval.cli import main

    assert main(["import-questions", str(_log_csv(tmp_path / "exported.csv")), "--source", "exported"]) == 0
    capsys.readouterr()
    assert main(["real-users", "--analysis", "domain", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["source"] == "exported" and out["n_questions_used"] == 2 * len(ROWS)
    assert out["snapshot"] is None  # it read no knowledge base, and says so
    run = runs.get_run(fresh_home, out["run_id"])
    assert run.status == "done" and run.snapshot_id is None and run.params["snapshot"] is None
    assert out["domain"]["metrics"]["n_questions_used"] == 2 * len(ROWS)
    frequent = out["answers"]["frequent"]
    assert frequent and all({"answer", "count", "class"} <= set(r) for r in frequent)
    by_text = {r["answer"]: r for r in frequent}
    assert by_text["Ответ не найден."]["count"] == 4 and by_text["Ответ не найден."]["class"] == "not_found"
    # no URL in the log: real answers given many times stay answers (the old URL rule called them templates)
    assert by_text["Общежитие выдаётся по заявлению в Студгородке."]["class"] == "answer"
    # the human summary says there is no knowledge base and no classifier yet
    assert main(["real-users", "--analysis", "domain"]) == 0
    human = capsys.readouterr().out
    assert "no knowledge base (the log alone)" in human and "patterns only" in human
    # chunk utilization says what is missing instead of failing on something else
    assert main(["real-users", "--analysis", "utilization"]) == 2
    err = capsys.readouterr().err
    assert "needs a knowledge base" in err and "--link-kb" in err
    # `all` runs what the log alone allows (no utilization step)
    assert main(["real-users", "--analysis", "all", "--json", "--k-topics", "2"]) == 0
    out = json.loads(capsys.readouterr().out)
    steps = set(runs.run_items(fresh_home, out["run_id"])["item_key"])
    assert steps == {"log", "embeddings", "topics", "domain"} and out["snapshot"] is None


def test_imported_log_is_paired_with_a_kb_only_when_linked(demo_engine, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from tests.support.plans import real_users as run_real_users
    from voproshalych_eval.analytics import import_file
    from voproshalych_eval.analytics.question_log import delete_source

    import_file(demo_engine, _log_csv(tmp_path / "other_bot.csv"), source="t_other_bot")
    try:
        alone = run_real_users(demo_engine, source="t_other_bot", analyses=["domain"])
        run = runs.get_run(demo_engine, alone.run_id)
        assert alone.snapshot is None and run.snapshot_id is None  # never the demo's snapshot silently
        linked = run_real_users(demo_engine, source="t_other_bot", analyses=["utilization", "domain"], link_kb=True)
        run = runs.get_run(demo_engine, linked.run_id)
        assert run.snapshot_id is not None and linked.snapshot["id"] == run.snapshot_id == run.params["snapshot"]
        assert linked.utilization is not None and run.params["link_kb"] is True
        with pytest.raises(LookupError, match="needs a knowledge base"):
            from voproshalych_eval.analytics import build_plan

            build_plan(demo_engine, {"source": "t_other_bot", "analyses": ["utilization"]})
    finally:
        delete_source(demo_engine, "t_other_bot")
