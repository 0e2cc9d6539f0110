"""Which run a page shows (issue 29): the run just made, else the URL's, else the latest of the plan; "best by"
from the stored aggregates; datasets named name@version · n items · kind."""

from __future__ import annotations

from voproshalych_eval.engine.runs import Run, best_by
from voproshalych_eval.ui.run_view import choose_run, dataset_label


def test_the_run_just_made_wins_then_the_url_then_the_latest() -> None:
    ids = [9, 7, 4]  # newest first
    assert choose_run(ids, just_made=4, url_run=7) == 4
    assert choose_run(ids, url_run=7) == 7
    assert choose_run(ids) == 9
    assert choose_run(ids, just_made=99, url_run=98) == 9  # deleted / another plan's runs are skipped
    assert choose_run([], url_run=3) is None


def _t1(run_id: int, mrr: float | None) -> Run:
    block = {} if mrr is None else {"mrr": {"value": mrr, "n": 20}}
    return Run(id=run_id, tier="tier1", status="done", metrics={"chunk": block, "url": {"mrr": {"value": 0.5}}})


def test_best_by_reads_the_stored_value_and_the_catalog_direction() -> None:
    oldest, best, missing = _t1(1, 0.689), _t1(2, 0.897), _t1(3, None)
    # the walk's defect: the oldest run named "best by MRR" (0.689) beside one scoring 0.897
    assert best_by([missing, oldest, best], "chunk.mrr") is best
    assert best_by([oldest, missing], "chunk.mrr") is oldest  # a run without the value never wins
    assert best_by([_t1(4, float("nan")), oldest], "chunk.mrr") is oldest  # nor one with NaN
    assert best_by([missing], "chunk.mrr") is None
    assert best_by([_t1(5, 0.7), _t1(6, 0.7)], "chunk.mrr").id == 6  # a tie goes to the newest
    lat = [Run(id=i, tier="tier3", status="done", metrics={"n_failed_items": v}) for i, v in ((1, 4), (2, 1))]
    assert best_by(lat, "n_failed_items").id == 2  # lower is better for failures
    assert best_by(lat, "no_such_metric") is None  # no direction: never guessed


def test_dataset_label_names_version_size_and_kind() -> None:
    d = {"name": "demo_golden", "version": 2, "n_items": 1234, "kind": "golden", "content_hash": "abcdef0123"}
    assert dataset_label(d, "en") == "demo_golden@v2 · 1,234 items · golden"
    assert dataset_label(d, "ru").startswith("demo_golden@v2 · 1")
    assert dataset_label(d, "ru").endswith("элемента · золотой")  # 1 234 элемента
    assert dataset_label({**d, "version": None}, "en").startswith("demo_golden@abcdef01 ·")


def test_russian_word_forms_of_counts() -> None:
    one = {"name": "x", "version": 1, "n_items": 1, "kind": "golden"}
    assert "1 элемент ·" in dataset_label(one, "ru") and "1 item ·" in dataset_label(one, "en")
    assert "3 элемента" in dataset_label({**one, "n_items": 3}, "ru")
    assert "11 элементов" in dataset_label({**one, "n_items": 11}, "ru")
    assert "21 элемент ·" in dataset_label({**one, "n_items": 21}, "ru")
