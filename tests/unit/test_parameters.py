"""The plans' parameter tables: one coercion with errors naming the parameter, defaults and the words and
configuration identity derived from the tables (no hand-written copy left)."""

from __future__ import annotations

import importlib

import pytest

from voproshalych_eval import parameters, plans
from voproshalych_eval.engine import describe, runs
from voproshalych_eval.parameters import Param
from voproshalych_eval.plan_parameters import RUN, TABLES


def test_every_plan_carries_its_table() -> None:
    assert {s.key for s in plans.PLANS} == set(TABLES)
    for s in plans.PLANS:
        assert s.params is TABLES[s.key] and s.params, s.key


@pytest.mark.parametrize("spec", plans.PLANS, ids=lambda s: s.key)
def test_a_plan_module_reads_its_defaults_from_the_table(spec: plans.PlanSpec) -> None:
    module = importlib.import_module(spec.module)
    assert spec.defaults() == module.DEFAULTS


@pytest.mark.parametrize("spec", plans.PLANS, ids=lambda s: s.key)
def test_every_default_passes_its_own_validation(spec: plans.PlanSpec) -> None:
    for p in spec.params:
        assert p.coerce(p.default, spec.key) == p.default, p.name
        assert p.label("ru") and p.label("en"), p.name


def test_coercion_converts_and_names_the_plan_and_parameter() -> None:
    t1 = plans.spec("tier1")
    p = t1.resolve({"k": "7", "cutoffs": "5,1", "use_index": "yes", "retriever": None, "extra": {"kept": 1}})
    assert p["k"] == 7 and p["cutoffs"] == [5, 1] and p["use_index"] is True
    assert p["retriever"] == "vector"  # None is "not given": the default applies
    assert p["extra"] == {"kept": 1}  # what a run recorded about itself passes through on resume
    with pytest.raises(ValueError, match=r"tier1: parameter 'k' must be at least 1, got 0"):
        t1.resolve({"k": 0})
    with pytest.raises(ValueError, match=r"tier1: parameter 'k' must be an integer, got 2.5"):
        t1.resolve({"k": 2.5})
    with pytest.raises(ValueError, match=r"tier1: parameter 'k' must be an integer, got True"):
        t1.resolve({"k": True})
    with pytest.raises(ValueError, match=r"tier1: parameter 'retriever' must be one of vector, fts, hybrid"):
        t1.resolve({"retriever": "bm25"})
    with pytest.raises(ValueError, match=r"tier1: parameter 'cutoffs' must be at least 1, got 0"):
        t1.resolve({"cutoffs": [0, 5]})
    q = plans.spec("tier2")
    assert q.resolve({"judge_quorum": "2"})["judge_quorum"] == 2
    assert q.resolve({"judge_quorum": "any"})["judge_quorum"] == "any"
    with pytest.raises(ValueError, match=r"tier2: parameter 'judge_quorum' must be one of all, majority, any or a "):
        q.resolve({"judge_quorum": "most"})


def test_defaults_are_fresh_copies() -> None:
    a, b = plans.spec("tier1").defaults(), plans.spec("tier1").defaults()
    a["cutoffs"].append(99)
    assert b["cutoffs"] == [1, 3, 5, 10]


def test_one_name_has_one_label_and_one_role_in_every_plan() -> None:
    seen: dict[str, Param] = {}
    for table in [*TABLES.values(), RUN]:
        for p in table:
            first = seen.setdefault(p.name, p)
            assert (p.ru, p.en, p.role) == (first.ru, first.en, first.role), p.name


def test_labels_and_identity_are_derived_from_the_tables() -> None:
    tables = [*TABLES.values(), RUN]
    for table in tables:
        for p in table:
            assert describe.param_label(p.name, "ru") == p.label("ru")
            assert describe.param_label(p.name, "en") == p.label("en")
    assert set(runs.CONFIG_PARAMS) == {p.name for t in tables for p in t if p.role == "config"}
    speed = {p.name for t in tables for p in t if p.role == "speed"}
    assert set(plans.IGNORED_CONFIG) == {"params.dataset", *(f"params.{n}" for n in speed)}
    assert {"params.concurrency", "params.max_failure_share", "params.label"} <= set(plans.IGNORED_CONFIG)
    assert set(describe.CONFIG_ORDER) == {p.name for t in tables for p in t if p.words}


def test_a_runs_words_follow_its_plans_table() -> None:
    run = {"tier": "tier1", "params": {"k": 10, "retriever": "hybrid", "use_index": True, "repeats": 2},
           "models": {"embedder": "e5"}}
    assert describe.config_words(run, "en") == "hybrid search · e5 · k = 10 · HNSW · repeats = 2"


def test_the_literal_choices_equal_their_sources() -> None:
    from voproshalych_eval.bot_api.profiles import CONTEXT_MODES
    from voproshalych_eval.bot_api.spec import PRESETS
    from voproshalych_eval.judges.base import AGGREGATORS, QUORUMS
    from voproshalych_eval.plan_parameters import AGGREGATORS as A
    from voproshalych_eval.plan_parameters import API_PRESETS
    from voproshalych_eval.plan_parameters import CONTEXT_MODES as C
    from voproshalych_eval.plan_parameters import QUORUMS as Q

    assert (A, Q, set(C), set(API_PRESETS)) == (AGGREGATORS, QUORUMS, set(CONTEXT_MODES), set(PRESETS))


def test_a_bad_declaration_is_refused() -> None:
    with pytest.raises(ValueError, match="kind must be one of"):
        Param("x", "integer")
    with pytest.raises(ValueError, match="a choice needs its choices"):
        Param("x", "choice")
    with pytest.raises(ValueError, match="declared twice"):
        plans.PlanSpec("x", "tool", "m", ("x", "x"), "#000", params=(Param("a", "int"), Param("a", "int")))
    with pytest.raises(ValueError, match="labelled"):
        parameters.labels([(Param("a", "int", ru="а", en="a"),), (Param("a", "int", ru="б", en="b"),)])
