"""Question-log imports report unknown columns instead of dropping them, and refuse non-ASCII digits."""

from __future__ import annotations

import pytest

from voproshalych_eval.analytics import import_file
from voproshalych_eval.analytics.question_log import QuestionLogImportError

LOG = "id,question,Answer,Score\n1,Когда сессия?,В январе,5\n2,Где общежитие?,На Мельникайте,4\n"


def test_capitalised_columns_are_reported_and_nothing_is_imported(demo_engine) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(QuestionLogImportError) as exc:
        import_file(demo_engine, "log.csv", source="t_caps", data=LOG.encode())
    msg = str(exc.value)
    assert "'Answer' (did you mean 'answer'?)" in msg and "--ignore-columns Answer,Score" in msg
    rep = import_file(demo_engine, "log.csv", source="t_caps", data=LOG.encode(), ignore_columns=["Answer", "Score"])
    assert rep.n_imported == 2


def test_an_arabic_digit_score_is_refused(demo_engine) -> None:  # type: ignore[no-untyped-def]
    data = "id,question,score\n1,Когда сессия?,\u0665\n".encode()
    with pytest.raises(QuestionLogImportError) as exc:
        import_file(demo_engine, "log.csv", source="t_digits", data=data)
    assert (exc.value.row, exc.value.field) == (2, "score")
