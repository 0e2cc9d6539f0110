"""Plans: what a run does (the contract between a plan module and the engine) and which plans exist.

The contract
------------
A plan module (``tiers/tier1.py``, ``analytics/pipeline.py``, ``commands``-free) exposes
``build_plan(engine, params) -> Plan``. A :class:`Plan` lists its items ``(item_key, payload)`` and how
to process them — ``work(payload)`` for one item, or ``work_batch(payloads)`` for a batch of up to
``batch_size`` items (vectorised work such as batched retrieval; each item of a batch is still recorded
on its own) — plus ``finalize(records)`` turning *all* recorded items of the run into its aggregates.
``prepare()`` runs once per execution before the first item (an index build, a model load).
``executor`` runs plans; plan modules never touch the run tables.

A plan is written as a small subclass of :class:`Plan`: ``__init__(engine, params)`` resolves the inputs
(``spec(key).resolve(params)``, the dataset, the snapshot, the models) and passes the configuration to
``super().__init__(tier=..., items=..., params=..., ...)``; the steps are its methods (``prepare``,
``work`` or ``work_batch``, ``finalize``), sharing the inputs through ``self``. ``build_plan`` stays the
module's one-line entry (``return Tier1Plan(engine, params)``) that the registry and ``resume`` call.
A plan may still pass the steps as callables (``Plan(tier=..., items=..., work=fn, finalize=fn)``); the
form changes nothing of the run's identity (:meth:`Plan.config`), its resume or its outputs.

A plan also carries everything that decides its results — models, prompts, provider endpoints, the
offline flag, the dataset (id + content hash), the knowledge-base snapshot, the parameters. The engine
freezes that :meth:`Plan.config` at start; a resume rebuilds the plan from the stored parameters and
refuses when the rebuilt configuration differs (:func:`config_differences`).

The registry
------------
:data:`PLANS` holds one :class:`PlanSpec` per plan (the tiers, real-user analytics, judge metrics,
tools): its key, plan module, page, colour, CLI command, key metrics and titles. The executor's module
table, the app's navigation (``ui/pages``), the CLI command list and the Overview are built from it.
Adding a tier = its module + its page + its CLI command module + its parameter table (``plan_parameters``)
+ one entry here (+ tests). A plan's parameters: :attr:`PlanSpec.params` (see :mod:`parameters`).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from voproshalych_eval import parameters
from voproshalych_eval.jsonable import dumps
from voproshalych_eval.parameters import Param
from voproshalych_eval.plan_parameters import RUN, TABLES

# ------------------------------------------------------------------------------------------ contract


@dataclass
class ItemResult:
    """Outcome of one item: its JSON-serialisable result, status and the tokens it spent."""

    result: dict[str, Any]
    status: str = "done"
    error: str | None = None
    tokens: int = 0


WorkResult = ItemResult | Mapping[str, Any]
#: the records ``finalize`` receives: ``{"item_key", "status", "error", "result"}`` per recorded item
ItemRecord = dict[str, Any]


#: the steps of a plan: given as callables to :class:`Plan`, or written as methods of a subclass
STEPS = ("prepare", "work", "work_batch", "finalize")


@dataclass
class Plan:
    """What a run does: items (key, payload), the work per item or per batch, and the aggregation.

    The steps (:data:`STEPS`) are either callables given to the constructor, or methods of a subclass that
    resolves its inputs in ``__init__`` and hands the rest to ``super().__init__(tier=..., items=..., ...)``::

        class Tier9Plan(Plan):
            def __init__(self, engine, params):
                p = spec("tier9").resolve(params)
                self.engine = engine
                super().__init__(tier="tier9", items=[...], params=p, models={...})

            def work(self, payload): ...
            def finalize(self, records): ...

    A step given as a callable wins over the method; a step neither given nor defined is ``None`` (the
    executor asks ``plan.work_batch is not None``, ``plan.prepare is not None``).
    """

    tier: str
    items: list[tuple[str, Any]]
    finalize: Callable[[list[ItemRecord]], dict[str, Any]] = None  # type: ignore[assignment]  # checked below
    work: Callable[[Any], WorkResult] | None = None
    #: ``work_batch(payloads) -> results`` in the same order (a list, or an iterator yielding each result as
    #: it is ready); an exception fails every item of the batch not yet yielded
    work_batch: Callable[[list[Any]], Iterable[WorkResult]] | None = None
    batch_size: int = 1
    prepare: Callable[[], None] | None = None
    concurrency: int = 4
    params: dict[str, Any] = field(default_factory=dict)
    models: dict[str, Any] = field(default_factory=dict)
    prompts: dict[str, Any] = field(default_factory=dict)
    #: LLM endpoints the plan calls: ``[{"name", "host", "models"}]`` (never a key)
    providers: list[dict[str, Any]] = field(default_factory=list)
    dataset_id: int | None = None
    dataset_name: str | None = None
    dataset_hash: str | None = None
    #: the knowledge-base snapshot the plan reads (filled by the snapshot layer)
    snapshot_id: int | None = None
    offline: bool = False
    label: str | None = None
    #: failed share above which a finished run is ``done_with_failures`` (None: the configured default)
    max_failure_share: float | None = None
    #: in-memory artefacts for the caller that executed the plan (a page's figures, the CLI's report)
    outputs: dict[str, Any] = field(default_factory=dict)
    #: the run being executed (set by the engine before ``prepare``; for call logs)
    run_id: int | None = None
    _listener: Callable[[str], None] | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        for step in STEPS:  # a step not given: the subclass's method (the class attribute), else None
            if self.__dict__.get(step, False) is None:
                del self.__dict__[step]
        if self.finalize is None:
            raise ValueError(f"plan {self.tier!r} needs finalize")
        if self.work is None and self.work_batch is None:
            raise ValueError(f"plan {self.tier!r} needs work or work_batch")
        self.batch_size = max(1, int(self.batch_size or 1))

    def keys(self) -> list[str]:
        return [k for k, _ in self.items]

    def say(self, message: str) -> None:
        """A progress message from inside the work ("embedding 5,000 questions…"), shown with the counts."""
        if self._listener is not None:
            self._listener(message)

    def listen(self, listener: Callable[[str], None] | None) -> None:
        self._listener = listener

    def config(self) -> dict[str, Any]:
        """The configuration this plan's results depend on (frozen at the start of a run)."""
        return plain({
            "tier": self.tier,
            "params": self.params,
            "models": self.models,
            "prompts": self.prompts,
            "providers": self.providers,
            "offline": bool(self.offline),
            "dataset": {"id": self.dataset_id, "name": self.dataset_name, "hash": self.dataset_hash},
            "snapshot_id": self.snapshot_id,
        })


class Lazy:
    """A value computed once, on first use, by whichever worker thread needs it first."""

    def __init__(self, fn: Callable[[], Any]) -> None:
        self._fn = fn
        self._lock = threading.Lock()
        self._done = False
        self._value: Any = None

    def get(self) -> Any:
        with self._lock:
            if not self._done:
                self._value = self._fn()
                self._done = True
            return self._value

    @property
    def ready(self) -> bool:
        return self._done


def plain(value: Any) -> Any:
    """``value`` as plain JSON types (tuples -> lists, numbers stay numbers); see :mod:`jsonable`."""
    return json.loads(dumps(value))


#: configuration entries that do not change results (how fast, how labelled: the ``speed`` parameters of every
#: plan's table) or that are compared elsewhere (``params.dataset`` is how the user named the dataset; its
#: identity is ``dataset.id/hash``)
IGNORED_CONFIG = ("params.dataset", *(f"params.{n}" for n in parameters.union([*TABLES.values(), RUN],
                                                                              parameters.speed_names)))
_HINTS = {
    "offline": "an LLM run can only be finished by an LLM: configure the provider it used",
    "providers": "the LLM endpoints differ (provider name or base-URL host)",
    "dataset.hash": "the stored dataset changed since the run started",
    "snapshot_id": "the knowledge-base snapshot differs",
}


def _flatten(d: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(d, Mapping):
        out: dict[str, Any] = {}
        for k, v in d.items():
            out.update(_flatten(v, f"{prefix}{k}."))
        return out or ({prefix[:-1]: {}} if prefix else {})
    return {prefix[:-1]: d}


def config_differences(
    frozen: Mapping[str, Any], current: Mapping[str, Any], *, ignore: Sequence[str] = IGNORED_CONFIG
) -> list[str]:
    """What differs between a run's frozen configuration and the one rebuilt now, one sentence each.

    Entries are compared after flattening (``models.generator``, ``dataset.hash`` …); ``providers`` is
    compared as a whole. Empty when the current configuration reproduces the run.
    """
    a, b = plain(dict(frozen)), plain(dict(current))
    out: list[str] = []
    if (a.get("providers") or []) != (b.get("providers") or []):
        out.append(f"providers: {_describe_providers(a.get('providers'))} at start, {_describe_providers(b.get('providers'))} now "
                   f"({_HINTS['providers']})")
    fa = {k: v for k, v in _flatten({k: v for k, v in a.items() if k != "providers"}).items()}
    fb = {k: v for k, v in _flatten({k: v for k, v in b.items() if k != "providers"}).items()}
    for key in sorted(set(fa) | set(fb)):
        if any(key == i or key.startswith(i + ".") for i in ignore):
            continue
        if fa.get(key) != fb.get(key):
            hint = next((h for k, h in _HINTS.items() if key == k), None)
            out.append(f"{key}: {fa.get(key)!r} at start, {fb.get(key)!r} now" + (f" ({hint})" if hint else ""))
    return out


def _describe_providers(providers: Any) -> str:
    if not providers:
        return "none"
    return ", ".join(f"{p.get('name')}@{p.get('host')}" for p in providers if isinstance(p, Mapping))


# ------------------------------------------------------------------------------------------ registry

KINDS = ("tier", "analytics", "tool")


@dataclass(frozen=True)
class PlanSpec:
    """One plan of the registry.

    ``kind``: ``tier`` (a benchmark tier), ``analytics`` (real-user analytics) or ``tool`` (judge metrics,
    dataset generation: recorded runs that are not quality tiers). ``module`` exposes
    ``build_plan(engine, params)``. ``page`` is the Streamlit file showing it (several plans may share one),
    ``section`` its navigation section (``quality``, ``users``, ``data``, ``runs``), ``command`` the module of
    ``voproshalych_eval.commands`` registering its CLI subcommand(s).
    """

    key: str
    kind: str
    module: str
    title: tuple[str, str]
    color: str
    key_metrics: tuple[str, ...] = ()
    page: str | None = None
    page_title: tuple[str, str] | None = None
    section: str = "quality"
    icon: str = ":material/analytics:"
    command: str | None = None
    #: the plan's parameter table (``plan_parameters``): defaults, validation, CLI flags, form, identity
    params: tuple[Param, ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"plan {self.key}: kind must be one of {KINDS}")
        names = [p.name for p in self.params]
        if len(names) != len(set(names)):
            raise ValueError(f"plan {self.key}: a parameter is declared twice in its table")

    def param(self, name: str) -> Param:
        """The declaration of parameter ``name``; ``KeyError`` naming the plan's parameters otherwise."""
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(f"plan {self.key} has no parameter {name!r}; known: {', '.join(p.name for p in self.params)}")

    def defaults(self) -> dict[str, Any]:
        """``{name: default}`` of the parameters a person sets (a fresh copy)."""
        return parameters.defaults(self.params)

    def resolve(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """The defaults overlaid with the given values (``None`` = not given), each coerced and checked:
        ``ValueError`` naming the plan and the parameter (:func:`parameters.resolve`)."""
        return parameters.resolve(self.params, params, self.key)


PLANS: tuple[PlanSpec, ...] = (
    PlanSpec("tier0", "tier", "voproshalych_eval.tiers.tier0", ("Tier 0 · Эмбеддинги", "Tier 0 · Embeddings"),
             "#636EFA", ("effective_dimensionality", "avg_nn_distance"), "pages/tier0_embeddings.py",
             ("Пространство эмбеддингов", "Embedding space"), "quality", ":material/scatter_plot:", "tier0", params=TABLES["tier0"]),
    PlanSpec("tier1", "tier", "voproshalych_eval.tiers.tier1", ("Tier 1 · Поиск", "Tier 1 · Retrieval"),
             "#00A67E", ("hit_rate@5", "mrr", "ndcg@10"), "pages/tier1_retrieval.py",
             ("Поиск", "Retrieval"), "quality", ":material/search:", "tier1", params=TABLES["tier1"]),
    PlanSpec("tier2", "tier", "voproshalych_eval.tiers.tier2", ("Tier 2 · Генерация", "Tier 2 · Generation"),
             "#EF553B", ("avg_faithfulness", "avg_answer_relevance", "avg_rougeL_f"), "pages/tier2_generation.py",
             ("Генерация", "Generation"), "quality", ":material/edit_note:", "tier2", params=TABLES["tier2"]),
    PlanSpec("tier3", "tier", "voproshalych_eval.tiers.tier3", ("Tier 3 · Сквозная", "Tier 3 · End to end"),
             "#AB63FA", ("avg_e2e_score", "pass_rate", "avg_semantic_similarity"), "pages/tier3_end_to_end.py",
             ("Сквозная оценка", "End to end"), "quality", ":material/route:", "tier3", params=TABLES["tier3"]),
    PlanSpec("judge", "tier", "voproshalych_eval.tiers.judge_stability", ("Судья · стабильность", "Judge · stability"),
             "#FFA15A", ("consistency_score", "error_rate"), "pages/judges.py",
             ("Судьи", "Judges"), "quality", ":material/gavel:", "judges", params=TABLES["judge"]),
    PlanSpec("judge_pipeline", "tier", "voproshalych_eval.tiers.judge_pipeline",
             ("Судья · показ/непоказ", "Judge · show/no-show"), "#FF6692", ("f1_score", "accuracy"), "pages/judges.py",
             ("Судьи", "Judges"), "quality", ":material/gavel:", "judges", params=TABLES["judge_pipeline"]),
    PlanSpec("judge_metrics", "tool", "voproshalych_eval.tiers.judge_metrics", ("Метрики судей", "Judge metrics"),
             "#FECB52", (), "pages/judge_metrics.py", ("Метрики судей", "Judge metrics"), "quality",
             ":material/rule:", "judge", params=TABLES["judge_metrics"]),
    PlanSpec("ux", "tier", "voproshalych_eval.tiers.ux", ("UX", "UX"), "#19D3F3",
             ("cache_hit_rate", "context_preservation"), "pages/ux.py", ("UX", "UX"), "quality", ":material/forum:", "ux", params=TABLES["ux"]),
    PlanSpec("real_users", "analytics", "voproshalych_eval.analytics.pipeline", ("Реальные пользователи", "Real users"),
             "#B6E880", ("chunk_coverage", "n_topics"), "pages/real_users.py", ("Реальные пользователи", "Real users"),
             "users", ":material/groups:", "real_users", params=TABLES["real_users"]),
    PlanSpec("dataset_generation", "tool", "voproshalych_eval.generation.plan",
             ("Генерация набора данных", "Dataset generation"), "#8C564B", (), "pages/datasets.py",
             ("Наборы данных", "Datasets"), "data", ":material/dataset:", "dataset", params=TABLES["dataset_generation"]),
    PlanSpec("whatif", "tool", "voproshalych_eval.tiers.whatif", ("Что если · песочница", "What if · sandbox"),
             "#2CA02C", (), "pages/gaps.py", ("Пробелы в покрытии", "Coverage gaps"), "users", ":material/science:", "gaps", params=TABLES["whatif"]),
    PlanSpec("judge_agreement", "tool", "voproshalych_eval.tiers.judge_agreement",
             ("Согласие судьи с людьми", "Judge agreement"), "#17BECF", (), "pages/judge_agreement.py",
             ("Согласие судей с людьми", "Judge agreement"), "quality", ":material/handshake:", "labels", params=TABLES["judge_agreement"]),
)

SPECS: dict[str, PlanSpec] = {s.key: s for s in PLANS}
#: the quality tiers and analytics shown on the Overview (tools are not scored against baselines there)
OVERVIEW_KINDS = ("tier", "analytics")


def spec(key: str) -> PlanSpec:
    """The spec of plan ``key`` (a run's ``tier``); ``KeyError`` naming the known keys otherwise."""
    try:
        return SPECS[key]
    except KeyError:
        raise KeyError(f"unknown plan {key!r}; known: {', '.join(SPECS)}") from None


def overview_specs() -> list[PlanSpec]:
    return [s for s in PLANS if s.kind in OVERVIEW_KINDS]


def colors() -> dict[str, str]:
    """Plan key -> its colour in every chart."""
    return {s.key: s.color for s in PLANS}


def commands() -> list[str]:
    """The CLI command modules of the registered plans, in registry order, without repeats."""
    return list(dict.fromkeys(s.command for s in PLANS if s.command))
