"""Every plan's CLI flags, form widgets and configuration keys come from its parameter table and agree with it;
adding a parameter is one line in the table (the flag, the widget, the label and the configuration key follow)."""

from __future__ import annotations

import argparse
from dataclasses import replace
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from voproshalych_eval import parameters, plans
from voproshalych_eval.cli import build_parser
from voproshalych_eval.commands.plan_flags import add_plan_flags, plan_params
from voproshalych_eval.parameters import Param

#: the CLI command of each plan (the whatif sandbox is run from the gaps commands, with no table flags)
COMMANDS: dict[str, tuple[str, ...]] = {
    "tier0": ("tier0",), "tier1": ("tier1",), "tier2": ("tier2",), "tier3": ("tier3",), "judge": ("judge-stability",),
    "judge_pipeline": ("judge-pipeline",), "judge_metrics": ("judge",), "ux": ("ux",), "real_users": ("real-users",),
    "dataset_generation": ("dataset", "generate"),
}
#: commands whose flags are read back by ``plan_params`` (every one)
BUILT = set(COMMANDS)
#: flags naming a FILE whose content is the parameter (the command reads it): particular, not a duplicate
FILE_FLAGS = {("real_users", "slang"), ("real_users", "answer_rules")}


def _subparser(path: tuple[str, ...]) -> argparse.ArgumentParser:
    parser: Any = build_parser()
    for name in path:
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = sub.choices[name]
    return parser


def _sample(p: Param) -> tuple[list[str], Any]:
    """Command-line words setting ``p`` and the value the plan should then get."""
    flag = p.cli_flag
    assert flag is not None
    if p.kind == "bool":
        return [flag], p.default is not True
    if p.kind == "choice":
        value = p.choices[-1]
        return [flag, str(value)], value
    if p.kind in ("int", "float"):
        low = p.low if p.low is not None else 0
        value: Any = int(low) + 1 if p.kind == "int" else (low + (p.high if p.high is not None else low + 1)) / 2
        return [flag, str(value)], value
    if p.kind == "ints":
        return [flag, "2,7"], [2, 7]
    if p.kind == "quorum":
        return [flag, "2"], 2
    if p.kind == "json":
        return [flag, '{"a": 1}'], {"a": 1}
    if p.repeat:
        return [flag, "a", flag, "b"], ["a", "b"]
    if p.kind == "strs":
        return [flag, "a,b"], ["a", "b"]
    return [flag, "x"], "x"


@pytest.mark.parametrize("key", sorted(COMMANDS))
def test_the_cli_flags_are_the_table(key: str) -> None:
    spec = plans.spec(key)
    parser = _subparser(COMMANDS[key])
    by_flag = {s: a for a in parser._actions for s in a.option_strings}
    flagged = [p for p in spec.params if p.cli_flag]
    assert flagged, key
    for p in flagged:
        action = by_flag.get(p.cli_flag)
        assert action is not None, f"{key}: {p.cli_flag} missing"
        assert action.dest == p.dest, p.name
        if key in BUILT:  # the table is the only default and the only list of choices
            assert action.default in (None, False), p.name
            assert list(action.choices or []) == list(p.choices if p.kind == "choice" else []), p.name
    if key in BUILT:  # no hand-written flag sets a parameter under another name
        mine = {id(by_flag[p.cli_flag]) for p in flagged}
        names = {p.name for p in spec.params if p.given}
        for action in parser._actions:
            if id(action) not in mine and (key, action.dest) not in FILE_FLAGS:
                assert action.dest not in names, action.option_strings


@pytest.mark.parametrize("key", sorted(BUILT))
def test_every_flag_reaches_the_plan_as_its_parameter(key: str) -> None:
    spec = plans.spec(key)
    path = COMMANDS[key]
    required = {"dataset_generation": ["--size", "5"], "judge_metrics": ["--metric", "faithfulness", "--input", "x.json"]
                }.get(key, [])
    for p in (p for p in spec.params if p.cli_flag):
        words, expected = _sample(p)
        args = build_parser().parse_args([*path, *required, *words])
        assert spec.resolve(plan_params(key, args))[p.name] == expected, p.name
    args = build_parser().parse_args([*path, *required])  # nothing given: the table's defaults
    given = {k: v for k, v in plan_params(key, args).items() if v is not None}
    assert given == {"dataset_generation": {"size": 5}, "judge_metrics": {"metric": "faithfulness"}}.get(key, {})


def _form_script(key: str, prefix: str, custom_names: list[str]) -> None:
    from voproshalych_eval.ui import param_form

    values = param_form.render(key, prefix, custom={n: (lambda p, k: None) for n in custom_names}, advanced=False)
    import streamlit as st

    st.session_state["__values"] = values.values
    st.session_state["__errors"] = values.errors


def _widgets(at: AppTest) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kind in ("number_input", "checkbox", "selectbox", "text_input"):
        for w in getattr(at, kind):
            out[w.key] = (kind, w)
    return out


@pytest.mark.parametrize("key", sorted(plans.SPECS))
def test_the_form_widgets_are_the_table(key: str) -> None:
    from voproshalych_eval.ui.param_form import widget_key

    spec = plans.spec(key)
    custom = sorted({p.widget for p in spec.params if p.widget})
    at = AppTest.from_function(_form_script, args=(key, "x", custom), default_timeout=60).run()
    assert not at.exception, at.exception
    widgets = _widgets(at)
    expected = {widget_key("x", p): p for p in spec.params if p.on_form and not p.widget}
    assert set(widgets) == set(expected), key
    kinds = {"int": "number_input", "float": "number_input", "bool": "checkbox", "choice": "selectbox",
             "quorum": "selectbox"}
    for wkey, p in expected.items():
        kind, w = widgets[wkey]
        assert kind == kinds.get(p.kind, "text_input"), p.name
        if kind == "number_input":
            assert w.value == p.default, p.name
            if p.low is not None:
                assert w.min == p.low, p.name
            if p.high is not None:
                assert w.max == p.high, p.name
        if kind == "selectbox":
            assert len(w.options) == len(p.choices) + (p.default is None or p.kind == "quorum"), p.name
    values = at.session_state["__values"]
    assert not at.session_state["__errors"]
    for p in expected.values():  # untouched widgets give the table's defaults
        assert values[p.name] == p.default, p.name


def test_tier1_cutoffs_are_settable_on_the_form() -> None:
    at = AppTest.from_function(_form_script, args=("tier1", "t1", ["dataset", "embedder"]), default_timeout=60).run()
    at.text_input(key="t1_cutoffs").set_value("2, 20").run()
    assert at.session_state["__values"]["cutoffs"] == [2, 20]
    at.text_input(key="t1_cutoffs").set_value("0, 5").run()
    assert "cutoffs" in at.session_state["__errors"] and "cutoffs" not in at.session_state["__values"]
    assert at.error, "a refused value is shown under the form"


def test_adding_a_parameter_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """One Param line in a plan's table gives its CLI flag, its form widget, its label and its configuration key."""
    new = Param("top_p", "float", None, "top-p", "top-p", "доля вероятностной массы", "nucleus sampling mass",
                low=0.0, high=1.0, role="config")
    base = plans.spec("tier2")
    extended = replace(base, params=(*base.params, new))  # <- the one line
    monkeypatch.setitem(plans.SPECS, "tier2", extended)

    parser = argparse.ArgumentParser()
    add_plan_flags(parser, "tier2")
    args = parser.parse_args(["--top-p", "0.9"])
    assert plan_params("tier2", args)["top_p"] == 0.9 and extended.resolve({})["top_p"] is None
    with pytest.raises(ValueError, match=r"tier2: parameter 'top_p' must be at most 1"):
        extended.resolve({"top_p": 2})
    assert "top_p" in parameters.config_names(extended.params)
    assert parameters.labels([extended.params])["top_p"] == ("top-p", "top-p")

    at = AppTest.from_function(_form_script, args=("tier2", "t2", ["dataset", "embedder", "generator_model",
                                                                   "judge_models", "offline"]),
                               default_timeout=60).run()
    widget = at.number_input(key="t2_top_p")
    assert (widget.min, widget.max) == (0.0, 1.0)
    widget.set_value(0.5).run()
    assert at.session_state["__values"]["top_p"] == 0.5
