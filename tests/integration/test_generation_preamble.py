"""A generator that answers with its preamble instead of a question: nothing of it is stored (issue 27 §4)."""

from __future__ import annotations

import json
import threading
import uuid

from tests.support.dataset_cleanup import drop_new_datasets  # noqa: F401 (autouse fixture)
from tests.support.scripted_openai import scripted_openai, scripted_openai_env  # noqa: F401
from voproshalych_eval.cli import main


def test_preamble_questions_are_dropped_by_the_well_formed_gate(demo_engine, scripted_openai_env, capsys) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    srv = scripted_openai_env
    replies = [{"question": "Вот несколько вопросов, которые могут быть заданы студентом:", "answer": "Стипендия."},
               {"question": "Ваш ответ на вопрос о стоимости пересдач?", "answer": "1000 руб."},
               {"question": "Вот вопрос, который может задать студент: Когда выплачивают стипендию?",
                "answer": "До 25 числа.", "first_question": "Вот вопросы:\nЕсть ли стипендия?"}]
    calls: list[int] = []
    lock = threading.Lock()

    def preamble(body: dict) -> str | None:
        system = str((body.get("messages") or [{}])[0].get("content", ""))
        if "эталонный набор" not in system:  # only the generator's prompts; the judges answer as usual
            return None
        with lock:
            calls.append(len(calls))
            n = len(calls)
        return json.dumps(replies[n % len(replies)], ensure_ascii=False)

    srv.responder = preamble
    name = "pre_" + uuid.uuid4().hex[:6]
    rc = main(["dataset", "generate", "--size", "6", "--types", "factual", "--oversample", "1.0", "--name", name,
               "--model", "gen-" + uuid.uuid4().hex[:6], "--no-compare-existing",
               "--pages", "https://wiki.sevgu-demo.ru/display/STUD/Stipendii", "--json"])
    out = json.loads(capsys.readouterr().out)
    from voproshalych_eval.datasets.store import get_dataset

    assert len(calls) % 3 == 0, (len(calls), sorted(out))  # one call per slot: as many of each reply
    # the preamble-only and the answer-request replies are dropped; the preamble before a real question is parsed
    # out (the copies of that question then meet the near-duplicate gate)
    assert out["dropped"]["well_formed"] == 2 * len(calls) // 3, out["dropped"]
    ds = get_dataset(demo_engine, name, "golden")
    assert [r["question"] for r in ds.records] == ["Когда выплачивают стипендию?"]
    assert ds.records[0]["dialog_context"] == ["Есть ли стипендия?"] if ds.records[0].get("dialog_context") else True
    assert rc in (0, 3), out
