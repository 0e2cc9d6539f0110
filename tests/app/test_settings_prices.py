"""AppTest: the Settings page's price editor edits, saves, reads back, and refuses a bad value."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import text
from streamlit.testing.v1 import AppTest

from voproshalych_eval.config import PROJECT_ROOT
from voproshalych_eval.llm import prices

APP = str(PROJECT_ROOT / "app.py")
MODEL = "gpt-4o-mini"


def _open(lang: str = "en") -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.session_state["ui_language"] = lang
    at.run()
    at.switch_page("pages/settings.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _save(at: AppTest, edited_rows: dict[int, dict[str, Any]]) -> AppTest:
    """Edit cells of the price editor (its edit state, as the browser sends it) and press "Save prices"."""
    editor = at.data_editor(key="prices_editor")
    assert editor.editing_mode == "dynamic"
    at.session_state["prices_editor"] = {"edited_rows": edited_rows, "added_rows": [], "deleted_rows": []}
    next(b for b in at.button if b.label == "Save prices").click().run()
    assert not at.exception, [e.value for e in at.exception]
    return at


@pytest.fixture
def price_rows(engine: Any) -> Iterator[None]:
    """The stored price table is put back exactly (values and sources) after the test."""
    with engine.connect() as conn:
        before = conn.execute(text("SELECT model, input_per_1m, output_per_1m, source FROM eval.llm_prices")).all()
    yield
    with engine.begin() as conn:
        conn.execute(text("DELETE FROM eval.llm_prices"))
        for m, i, o, s in before:
            conn.execute(text("INSERT INTO eval.llm_prices(model, input_per_1m, output_per_1m, source) "
                              "VALUES (:m, :i, :o, :s)"), {"m": m, "i": i, "o": o, "s": s})


def test_price_editor_saves_an_edit_and_refuses_a_bad_value(engine: Any, price_rows: None) -> None:
    at = _open()
    table = at.data_editor(key="prices_editor").value
    row = int(table.index[table["model"] == MODEL][0])
    assert table.loc[row, "input_per_1m"] == pytest.approx(prices.DEFAULT_PRICES[MODEL][0])

    _save(at, {row: {"input_per_1m": 0.2, "output_per_1m": 0.8}})
    assert any("Saved: 1 changed, 0 deleted" in s.value for s in at.success)
    stored = prices.stored_prices(engine)[MODEL]
    assert (stored.input_per_1m, stored.output_per_1m, stored.source) == (0.2, 0.8, "edited")
    at = _open()  # a fresh session reads the stored value back into the editor
    table = at.data_editor(key="prices_editor").value
    assert table.loc[row, "input_per_1m"] == pytest.approx(0.2) and table.loc[row, "source"] == "edited"

    # a negative price is refused with the row and field named, and nothing is written
    _save(at, {row: {"input_per_1m": -1.0}, 0: {"output_per_1m": 99.0}})
    errors = " ".join(e.value for e in at.error)
    assert "Could not save the prices" in errors and f"({MODEL}), field input_per_1m: must be >= 0" in errors
    assert not at.success
    after = prices.stored_prices(engine)
    assert after[MODEL].input_per_1m == 0.2
    first = str(table.loc[0, "model"])
    assert after[first].output_per_1m == pytest.approx(float(table.loc[0, "output_per_1m"]))
