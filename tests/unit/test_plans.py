"""The plan contract and the plan registry: frozen-config differences, outcomes, one registry for
executor, navigation, CLI and Overview, the one JSON cleaner."""

from __future__ import annotations

import importlib
import json
import math

import numpy as np
import pandas as pd
import pytest

from voproshalych_eval import plans
from voproshalych_eval.config import PROJECT_ROOT
from voproshalych_eval.engine import runs
from voproshalych_eval.jsonable import dumps, jsonable


def _config(**over: object) -> dict:
    base = {
        "tier": "tier2",
        "params": {"dataset": "demo_golden", "limit": 8, "concurrency": 4, "repeats": 1},
        "models": {"generator": "model-a", "judges": ["model-a"]},
        "prompts": {"generation_system": "v1"},
        "providers": [{"name": "default", "host": "127.0.0.1:8000", "models": ["model-a"]}],
        "offline": False,
        "dataset": {"id": 1, "name": "demo_golden", "hash": "ab" * 32},
        "snapshot_id": None,
    }
    base.update(over)
    return base


def test_same_configuration_has_no_differences_and_speed_settings_are_ignored() -> None:
    a = _config()
    b = _config(params={"dataset": 1, "limit": 8, "concurrency": 16, "repeats": 1})  # dataset named by id now
    assert plans.config_differences(a, a) == []
    assert plans.config_differences(a, b) == []


def test_missing_llm_changed_model_prompt_dataset_are_named() -> None:
    a = _config()
    offline = _config(offline=True, providers=[], models={"generator": "extractive-offline", "judges": ["heuristic"]})
    diffs = plans.config_differences(a, offline)
    text = "\n".join(diffs)
    assert "offline: False at start, True now" in text and "LLM" in text
    assert "models.generator: 'model-a' at start, 'extractive-offline' now" in text
    assert "providers: default@127.0.0.1:8000 at start, none now" in text
    other_model = plans.config_differences(a, _config(models={"generator": "model-b", "judges": ["model-a"]}))
    assert other_model == ["models.generator: 'model-a' at start, 'model-b' now"]
    host = plans.config_differences(a, _config(providers=[{"name": "default", "host": "10.0.0.1", "models": ["model-a"]}]))
    assert len(host) == 1 and "10.0.0.1" in host[0]
    prompt = plans.config_differences(a, _config(prompts={"generation_system": "v2"}))
    assert prompt == ["prompts.generation_system: 'v1' at start, 'v2' now"]
    ds = plans.config_differences(a, _config(dataset={"id": 1, "name": "demo_golden", "hash": "cd" * 32}))
    assert len(ds) == 1 and ds[0].startswith("dataset.hash") and "changed" in ds[0]


def test_judge_prompt_versions_are_frozen_and_an_edit_is_named() -> None:
    """The judge prompts a run sends (name -> version hash) go into its frozen configuration; offline judges
    send none. A prompt edited after the run started is named by ``config_differences``."""
    from voproshalych_eval.judges.judge import Judge
    from voproshalych_eval.llm.prompts import prompt_hash
    from voproshalych_eval.tiers.llm_calls import judge_prompts

    online = Judge(object(), models=["model-a"])  # a client is only needed to call, not to name prompts
    frozen = judge_prompts(["faithfulness", "rag_judge"], online)
    assert frozen == {"faithfulness": prompt_hash("faithfulness"), "judge_system": prompt_hash("judge_system"),
                      "rag_judge": prompt_hash("rag_judge")}
    assert judge_prompts(["faithfulness"], Judge(None, offline=True)) == {}
    a = _config(prompts={"generation_system": "v1", **frozen})
    b = _config(prompts={"generation_system": "v1", **frozen, "rag_judge": "0123456789ab"})
    assert plans.config_differences(a, b) == [f"prompts.rag_judge: {frozen['rag_judge']!r} at start, '0123456789ab' now"]


def test_plan_needs_work_and_freezes_its_configuration() -> None:
    with pytest.raises(ValueError, match="work"):
        plans.Plan(tier="tier1", items=[], finalize=lambda r: {})
    p = plans.Plan(tier="tier1", items=[("a", 1)], finalize=lambda r: {}, work_batch=lambda ps: ps, batch_size=0,
                   params={"k": np.int64(10), "ks": (1, 3)}, models={"embedder": "e5-small"}, dataset_id=3,
                   dataset_name="g", dataset_hash="h", snapshot_id=7)
    assert p.batch_size == 1
    cfg = p.config()
    assert cfg["params"] == {"k": 10, "ks": [1, 3]} and cfg["snapshot_id"] == 7
    assert cfg["dataset"] == {"id": 3, "name": "g", "hash": "h"} and cfg["offline"] is False
    json.dumps(cfg)


class _Squares(plans.Plan):
    """A plan written as a class: inputs resolved in ``__init__``, the steps as methods."""

    def __init__(self, n: int) -> None:
        self.prepared = 0
        super().__init__(tier="tier1", items=[(f"k{i}", i) for i in range(n)], params={"n": n})

    def prepare(self) -> None:
        self.prepared += 1

    def work(self, payload: int) -> dict:
        self.say(f"squaring {payload}")
        return {"v": payload * payload}

    def finalize(self, records: list) -> dict:
        return {"sum": sum(r["result"]["v"] for r in records)}


def test_a_plan_written_as_a_class_uses_its_methods_and_keeps_the_contract() -> None:
    p = _Squares(3)
    assert p.work(4) == {"v": 16} and p.work_batch is None and p.prepare is not None
    p.prepare()
    assert p.prepared == 1
    assert p.finalize([{"result": {"v": 1}}, {"result": {"v": 4}}]) == {"sum": 5}
    heard: list[str] = []
    p.listen(heard.append)
    p.work(2)
    assert heard == ["squaring 2"]
    # the same configuration as the same plan given as callables (run identity does not depend on the form)
    q = plans.Plan(tier="tier1", items=[(f"k{i}", i) for i in range(3)], params={"n": 3}, work=lambda x: x,
                   finalize=lambda r: {})
    assert p.config() == q.config() and p.keys() == q.keys()
    assert q.prepare is None and q.work_batch is None  # an old-style plan: steps not given stay None
    # a step given as a callable wins over the method
    r = _Squares.__new__(_Squares)
    plans.Plan.__init__(r, tier="tier1", items=[], work=lambda x: {"given": x})
    assert r.work(1) == {"given": 1} and r.finalize([]) == {"sum": 0}


def test_a_class_plan_without_finalize_or_work_is_refused() -> None:
    class NoWork(plans.Plan):
        def finalize(self, records: list) -> dict:
            return {}

    class NoFinalize(plans.Plan):
        def work(self, payload: int) -> dict:
            return {}

    with pytest.raises(ValueError, match="work"):
        NoWork(tier="tier1", items=[])
    with pytest.raises(ValueError, match="finalize"):
        NoFinalize(tier="tier1", items=[])
    with pytest.raises(ValueError, match="finalize"):
        plans.Plan(tier="tier1", items=[], work=lambda x: x)


@pytest.mark.parametrize(
    ("counts", "cancelled", "share", "expected"),
    [
        ({"done": 10, "failed": 0}, False, 0.1, "done"),
        ({"done": 0, "failed": 5}, False, 0.1, "failed"),
        ({"done": 9, "failed": 1}, False, 0.1, "done"),  # exactly the allowed share
        ({"done": 8, "failed": 2}, False, 0.1, "done_with_failures"),
        ({"done": 8, "failed": 2}, False, 0.5, "done"),
        ({"done": 3, "failed": 0}, True, 0.1, "cancelled"),
        ({"done": 0, "failed": 0}, False, 0.1, "done"),  # an empty plan is trivially done
    ],
)
def test_outcome(counts: dict, cancelled: bool, share: float, expected: str) -> None:
    assert runs.outcome(counts, cancelled=cancelled, max_failure_share=share) == expected


#: plans whose module is being ported onto the engine (removed as each lands)
NOT_YET_PORTED: set[str] = set()


def test_registry_builds_executor_pages_cli_and_overview() -> None:
    from voproshalych_eval.cli import COMMAND_MODULES
    from voproshalych_eval.ui.pages import PAGES

    keys = [s.key for s in plans.PLANS]
    assert len(keys) == len(set(keys))
    page_files = [p.file for p in PAGES]
    assert len(page_files) == len(set(page_files))
    for s in plans.PLANS:
        if s.key not in NOT_YET_PORTED:
            module = importlib.import_module(s.module)
            assert callable(module.build_plan), s.key  # what executor.resume rebuilds a run with
        assert s.page in page_files and (PROJECT_ROOT / s.page).is_file(), s.key
        assert s.command in COMMAND_MODULES, s.key
        importlib.import_module(f"voproshalych_eval.commands.{s.command}")
        assert s.color.startswith("#") and len(s.color) == 7
    assert {s.key for s in plans.overview_specs()} == {s.key for s in plans.PLANS if s.kind != "tool"}
    assert plans.colors()["tier1"] == plans.spec("tier1").color
    with pytest.raises(KeyError, match="known"):
        plans.spec("tier9")
    with pytest.raises(ValueError, match="kind"):
        plans.PlanSpec("x", "widget", "m", ("x", "x"), "#000000")


def test_jsonable_cleans_numpy_pandas_and_missing_values() -> None:
    ts = pd.Timestamp("2024-05-01T10:00:00", tz="UTC")
    obj = {
        "i": np.int32(3), "f": np.float32(0.5), "nan": float("nan"), "npnan": np.float64("nan"), "inf": math.inf,
        "b": np.bool_(True), "arr": np.arange(3), "t": (1, 2), "ts": ts, "nat": pd.NaT, "na": pd.NA,
        "frame": pd.DataFrame({"a": [1, 2]}), "nested": {"x": [np.float64(1.5), None]},
    }
    out = jsonable(obj)
    assert out == {
        "i": 3, "f": 0.5, "nan": None, "npnan": None, "inf": None, "b": True, "arr": [0, 1, 2], "t": [1, 2],
        "ts": "2024-05-01T10:00:00+00:00", "nat": None, "na": None, "frame": [{"a": 1}, {"a": 2}],
        "nested": {"x": [1.5, None]},
    }
    assert json.loads(dumps(obj)) == out
    with pytest.raises(TypeError, match="not JSON serialisable"):
        jsonable(object())
