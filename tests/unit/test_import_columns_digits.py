"""Silent changes on import (the audit's cases): a capitalised or misspelled column is reported (with the column
it resembles and ``--ignore-columns``), a bare CR never merges two rows of a one-column CSV, and only ASCII
digits make numbers."""

from __future__ import annotations

import pytest

from voproshalych_eval.datasets.files import FieldError, RecordFileError, as_int, read_file
from voproshalych_eval.datasets.store import load_file


def test_capitalised_columns_are_reported_with_the_option() -> None:
    from voproshalych_eval.datasets.files import check_columns

    with pytest.raises(RecordFileError) as exc:
        check_columns("log.csv", ["id", "question", "Answer", "Score"], ["id", "question", "answer", "score"])
    msg = str(exc.value)
    assert "'Answer' (did you mean 'answer'?)" in msg and "'Score' (did you mean 'score'?)" in msg
    assert "--ignore-columns Answer,Score" in msg
    check_columns("log.csv", ["id", "question", "Answer"], ["id", "question", "answer"], ignore=["Answer"])


def test_misspelled_column_is_a_near_miss() -> None:
    from voproshalych_eval.datasets.files import near_column

    assert near_column("qestion", ["question", "answer"]) == "question"
    assert near_column("ANSWER", ["question", "answer"]) == "answer"
    assert near_column("comment", ["question", "answer"]) is None


def test_golden_dataset_with_a_capitalised_field_is_refused_not_kept_as_an_extra() -> None:
    data = "question,Ground_Truth_Answer,chunk_id\nКогда сессия?,В январе,1\n".encode()
    with pytest.raises(RecordFileError, match="did you mean 'ground_truth_answer'"):
        load_file("g.csv", "golden", data=data)


def test_golden_dataset_extra_columns_are_still_kept() -> None:
    data = "question,ground_truth_answer,chunk_id,team_note\nКогда сессия?,В январе,1,x\n".encode()
    assert load_file("g.csv", "golden", data=data).records[0]["team_note"] == "x"


def test_bare_cr_in_a_one_column_csv_never_merges_rows() -> None:
    data = "question\nКогда сессия?\rГде общежитие?\nКак пересдать?\n".encode()
    try:
        f = read_file("q.csv", data=data)
    except RecordFileError as exc:  # refused, naming where
        assert "carriage return" in exc.message and exc.line == 2
    else:
        assert [r["question"] for r in f.records] == ["Когда сессия?", "Где общежитие?", "Как пересдать?"]


@pytest.mark.parametrize("value", ["٥", "５", "৫", "٣.0", "-٢"])
def test_only_ascii_digits_make_numbers(value: str) -> None:
    with pytest.raises(FieldError, match="must be an integer"):
        as_int(value, "score")


def test_ascii_numbers_still_parse() -> None:
    assert [as_int(v, "score") for v in ("5", " 3 ", "4.0", "-2", "+1")] == [5, 3, 4, -2, 1]
