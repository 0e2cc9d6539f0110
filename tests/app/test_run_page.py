"""AppTest: the start of a run page (ui.run_page.submitted_params) — what a submitted LLM run form starts."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest


def _script() -> None:
    import streamlit as st

    from voproshalych_eval.ui.run_page import submitted_params

    case = st.session_state["case"]
    calls = st.session_state.setdefault("estimated", [])
    params, estimate = submitted_params(
        case["submitted"], case["offline"], case["llm_ok"],
        params=lambda use_offline: {"dataset": "demo_golden", "offline": use_offline},
        estimate=lambda p: calls.append(p) or "estimate")
    st.session_state["result"] = (params, estimate)


@pytest.mark.parametrize(("case", "expected", "estimated"), [
    ({"submitted": False, "offline": False, "llm_ok": True}, (None, None), 0),
    ({"submitted": True, "offline": True, "llm_ok": False},
     ({"dataset": "demo_golden", "offline": True}, None), 0),  # offline: free, never estimated
    ({"submitted": True, "offline": False, "llm_ok": True},
     ({"dataset": "demo_golden", "offline": False}, "estimate"), 1),  # a paid run: its estimate to confirm
])
def test_submitted_params(case: dict, expected: tuple, estimated: int) -> None:
    at = AppTest.from_function(_script)
    at.session_state["case"] = case
    at.session_state["ui_language"] = "en"
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state["result"] == expected
    assert len(at.session_state["estimated"]) == estimated
    assert not at.error, [e.value for e in at.error]
