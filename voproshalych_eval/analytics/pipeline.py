"""The real-user analyses as a plan run by the engine (``real_users``).

:func:`build_plan`: read the filtered log, embed the whole of it (stored vectors where the model matches,
the cached embedder for the rest), retrieve the top-k of every question once, run the requested analyses
(utilization, topics, domain) — each step an item of the run, with its JSON result — and aggregate the
headline metrics (``chunk_coverage``, ``chunk_coverage@1``, ``n_topics``, ``n_questions_used``,
``answered_rate``, ``effective_answered_rate``, …). The bot's answers of every row are classified in the
``log`` step (:mod:`~voproshalych_eval.analytics.answers`: real answers vs declines in disguise) with the
rules frozen in the run's parameters. The in-memory :class:`RealUsersResult` (tables and vectors for the page and the
gap report) is ``plan.outputs["result"]`` once the plan has run.
"""

from __future__ import annotations

import logging
import pickle
import time
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Any

import numpy as np
import pandas as pd
from sqlalchemy import Engine

from voproshalych_eval.analytics import text_ru
from voproshalych_eval.analytics.answer_classifier import ClassifierSettings
from voproshalych_eval.analytics.answer_labels import load_labels
from voproshalych_eval.analytics.answers import AnswerClasses, AnswerRules, classify_answers
from voproshalych_eval.analytics.domain import DomainResult, domain_analysis
from voproshalych_eval.analytics.question_log import (
    PRODUCTION_SOURCE,
    LogEmbeddings,
    LogFilters,
    analysis_embedder_name,
    default_source,
    embed_log,
    imported_sources,
    is_empty_question,
    read_log,
    text_rows,
)
from voproshalych_eval.analytics.topic_memory import TopicMemory
from voproshalych_eval.analytics.topics import TopicResult, topic_coverage
from voproshalych_eval.analytics.utilization import (
    LogRetrieval,
    UtilizationResult,
    retrieve_log,
    utilization_for_log,
)
from voproshalych_eval.bilingual import text as bi
from voproshalych_eval.config import get_settings
from voproshalych_eval.datasets.annotations import confirmed_gaps
from voproshalych_eval.db import snapshots
from voproshalych_eval.db.artifacts import load_artifact, save_artifact
from voproshalych_eval.db.errors import SnapshotError
from voproshalych_eval.embeddings import cached_embedder
from voproshalych_eval.jsonable import jsonable
from voproshalych_eval.plans import Lazy, Plan, spec

log = logging.getLogger(__name__)
ANALYSES = ("utilization", "topics", "domain")
Progress = Callable[[str], None]


@dataclass
class RealUsersResult:
    source: str
    filters: LogFilters
    log: pd.DataFrame
    """Every row of the filtered log (events: sessions and user counts); ``text_log`` = rows with question
    text, which the text analyses (embeddings, retrieval, utilization, topics, terms) use."""
    text_log: pd.DataFrame
    embeddings: LogEmbeddings | None
    retrieval: LogRetrieval | None
    categories: list[str]
    answers: AnswerClasses | None = None
    utilization: UtilizationResult | None = None
    topics: TopicResult | None = None
    domain: DomainResult | None = None
    run_id: int | None = None
    metrics: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    #: real questions a person labelled "not in the knowledge base" (realq datasets): confirmed gaps
    confirmed_gaps: pd.DataFrame | None = None
    #: the knowledge-base snapshot analysed (``Snapshot.to_json()``; its log too for the bot's own log); None when
    #: the run read no knowledge base (an imported log not linked to one)
    snapshot: dict[str, Any] | None = None

    @property
    def n_used(self) -> int:
        return len(self.log)

    @property
    def n_empty_questions(self) -> int:
        return len(self.log) - len(self.text_log)

    @property
    def text_effective_answered(self) -> np.ndarray | None:
        """Whether each row of ``text_log`` got a real answer (the answer classes are per row of ``log``)."""
        if self.answers is None:
            return None
        return self.answers.effective_answered[~self.log["question"].map(is_empty_question).to_numpy(bool)]

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "run_id": self.run_id,
            "snapshot": self.snapshot,
            "source": self.source,
            "filters": self.filters.describe(),
            "n_questions_used": self.n_used,
            "n_empty_questions": self.n_empty_questions,
            "embeddings": self.embeddings.info() if self.embeddings else None,
            "metrics": self.metrics,
            "timings": {k: round(v, 3) for k, v in self.timings.items()},
        }
        if self.utilization is not None:
            out["utilization"] = self.utilization.to_dict()
        if self.topics is not None:
            out["topics"] = self.topics.to_dict()
        if self.domain is not None:
            out["domain"] = self.domain.to_dict()
        if self.answers is not None:
            out["answers"] = {"metrics": self.answers.metrics(), "rules": self.answers.rules.to_dict(),
                              "classifier": self.answers.report.to_dict() if self.answers.report else None,
                              "frequent": self.answers.frequent.to_dict(orient="records")}
        return out


#: the parameters a person sets and their defaults: the plan's table in ``plan_parameters`` (one line each)
DEFAULTS: dict[str, Any] = spec("real_users").defaults()


def filters_from(value: LogFilters | Mapping[str, Any] | None) -> LogFilters:
    """:class:`LogFilters` from itself or from its :meth:`~LogFilters.describe` dict (a run's parameters)."""
    if isinstance(value, LogFilters):
        return value
    d = dict(value or {})
    scores = d.get("scores")
    return LogFilters(
        start=date.fromisoformat(d["start"]) if d.get("start") else None,
        end=date.fromisoformat(d["end"]) if d.get("end") else None,
        answered=d.get("answered"),
        scores=tuple(scores) if scores is not None else None,
    )


def build_plan(engine: Engine, params: Mapping[str, Any]) -> RealUsersPlan:
    """The real-user analytics plan for ``params`` (see :data:`DEFAULTS`); also used by ``resume``."""
    return RealUsersPlan(engine, params)


class RealUsersPlan(Plan):
    """The real-user analytics run (see :func:`build_plan`'s callers: the CLI, the page, ``resume``).

    Items are the steps: ``log`` (read the filtered log and classify every question), ``embeddings``
    (the whole log: stored vectors where the model matches, the cached embedder for the rest),
    ``retrieval`` (the top-k of every question, once), then the requested analyses (``utilization``,
    ``topics``, ``domain``). The log, vectors and retrieval are computed once per execution by the first
    step that needs them; ``plan.outputs["result"]`` is the :class:`RealUsersResult` for the page and
    the report.

    ``snapshot``: the snapshot of the knowledge base (and of the bot's log) to analyse; default: the
    source's present content, taken when it changed (:func:`voproshalych_eval.db.snapshots.for_run`).
    The run is pinned to it (``snapshot_id``), so a resume reads the same data. An **imported** log reads no
    knowledge base (``snapshot_id`` None) unless it is linked to one explicitly: ``snapshot`` (an id) or
    ``link_kb`` (the knowledge base's present snapshot). Without a knowledge base the domain and topic analyses
    run on the log alone (topics without distances to the KB); chunk utilization says what is missing.
    """

    def __init__(self, engine: Engine, params: Mapping[str, Any]) -> None:
        p = spec("real_users").resolve(params)
        self.engine = engine
        _check_known(p["analyses"])
        self.filters = filters = filters_from(p["filters"])
        self.source, self.snap = source, snap = _source_and_snapshot(engine, p, filters)
        self.analyses = analyses = _analyses(p["analyses"], source, snap)
        self.top_k, self.k_topics = int(p["top_k"]), (int(p["k_topics"]) if p["k_topics"] else None)
        self.k_range = (int(p["k_range"][0]), int(p["k_range"][1]))
        slang = dict(p["slang"]) if p["slang"] is not None else None
        self.normalizer = text_ru.SlangNormalizer(slang) if slang is not None else text_ru.SlangNormalizer()
        rules_in = p["answer_rules"]
        self.rules = rules_in if isinstance(rules_in, AnswerRules) else AnswerRules.from_dict(dict(rules_in or {}))
        if p["answer_labels"] is None:
            self.answer_labels = load_labels(engine)
        else:
            self.answer_labels = {str(k): str(v) for k, v in dict(p["answer_labels"]).items()}
        self.classifier = ClassifierSettings.from_dict(p["answer_classifier"])
        self.k_stability_runs = int(p["k_stability_runs"] or 0)
        if snap is not None:
            self.embedder_name = analysis_embedder_name(engine, p["embedder"], snapshot=snap)
        else:
            self.embedder_name = p["embedder"] or get_settings().embedder
        self.kb_steps = snap is not None and bool({"utilization", "topics"} & set(analyses))
        self.timings: dict[str, float] = {}
        self.log_data = Lazy(self._load_log)
        self.embeddings = Lazy(self._embed)
        self.retrieval = Lazy(self._retrieve)
        steps = ["log", "embeddings"] + (["retrieval"] if self.kb_steps else []) + analyses
        super().__init__(
            tier="real_users",
            items=[(s, s) for s in steps],
            concurrency=1,  # each step needs the previous ones' data; one CPU-heavy step at a time
            params={"analyses": analyses, "source": source, "filters": filters.describe(), "top_k": self.top_k,
                    "k_topics": self.k_topics, "k_range": list(self.k_range), "embedder": self.embedder_name,
                    "pause_minutes": float(p["pause_minutes"]), "near_threshold": float(p["near_threshold"]),
                    "slang": slang, "answer_rules": self.rules.to_dict(), "answer_labels": self.answer_labels,
                    "answer_classifier": self.classifier.to_dict(), "link_kb": bool(p["link_kb"]),
                    "k_stability_runs": self.k_stability_runs, "lang": str(p["lang"]),
                    "snapshot": snap.id if snap is not None else None},
            models={"embedder": self.embedder_name},
            dataset_name=f"question_log:{source}",
            snapshot_id=snap.id if snap is not None else None,
        )

    # -- the data every step shares (computed once per execution by the first step needing it)

    def _timed(self, name: str, fn: Any) -> Any:
        t = time.perf_counter()
        out = fn()
        self.timings[name] = time.perf_counter() - t
        return out

    def _load_log(self) -> tuple[pd.DataFrame, pd.DataFrame, list[str], AnswerClasses]:
        self.say(bi("Читаю журнал вопросов…", "Reading the question log…"))
        df = self._timed("read", lambda: read_log(self.engine, source=self.source, filters=self.filters, snapshot=self.snap))
        if df.empty:
            raise LookupError("No questions match the filters (period, answered, score, source). Widen the filters.")
        tdf, n_empty = text_rows(df)
        if n_empty:
            self.say(bi(f"Строк без текста вопроса: {n_empty} — учтены как события (сессии, пользователи), в "
                        "текстовый анализ не входят.",
                        f"{n_empty} rows have no question text: counted as events (sessions, users), left out of "
                        "text analyses."))
        if tdf.empty and {"utilization", "topics"} & set(self.analyses):
            raise LookupError("No row with question text matches the filters. Widen the filters.")
        categories = self._timed("classify", lambda: text_ru.classify_many(tdf["question"].tolist(), slang=self.normalizer))
        # the answers of every row (the rates are over all rows); the topics take the rows with text
        answers = self._timed("classify_answers", lambda: classify_answers(
            df["answer"].tolist(), df["url"].tolist(), rules=self.rules, labels=self.answer_labels,
            classifier=self.classifier))
        return df, tdf, categories, answers

    def _embed(self) -> LogEmbeddings | None:
        tdf = self.log_data.get()[1]
        if tdf.empty:
            return None
        return self._timed("embed", lambda: embed_log(self.engine, tdf, embedder_name=self.embedder_name,
                                                      progress=self.say, snapshot=self.snap))

    def _retrieve(self) -> LogRetrieval | None:
        if self.snap is None:
            return None
        emb = self.embeddings.get()
        k = self.top_k
        self.say(bi(f"Поиск top-{k} чанков для каждого вопроса…", f"Retrieving the top-{k} chunks of every question…"))
        return self._timed("retrieve", lambda: retrieve_log(self.engine, emb.vectors, k=k, model=emb.model,
                                                            snapshot=self.snap))

    def result(self) -> RealUsersResult:
        """The in-memory result (``outputs["result"]``), made on first use from the log, vectors and retrieval."""
        res = self.outputs.get("result")
        if res is None:
            df, tdf, categories, answers = self.log_data.get()
            res = RealUsersResult(self.source or "", self.filters, df, tdf, self.embeddings.get(),
                                  self.retrieval.get() if self.kb_steps else None, categories,
                                  answers, timings=self.timings,
                                  snapshot=self.snap.to_json() if self.snap is not None else None)
            self.outputs["result"] = res
        return res

    # -- the steps

    def work(self, step: str) -> dict[str, Any]:
        if step == "log":
            return self._log_step()
        if step == "embeddings":
            emb = self.embeddings.get()
            return emb.info() if emb is not None else {"n_used": 0, "note": "no question text"}
        if step == "retrieval":
            ret = self.retrieval.get()
            assert ret is not None  # the step exists only with a knowledge base
            return {"k": ret.k, "model": ret.model, "n_questions": int(ret.chunk_ids.shape[0])}
        res = self.result()
        if step == "utilization":
            self.say(bi("Использование чанков…", "Chunk utilization…"))
            res.utilization = self._timed("utilization", lambda: utilization_for_log(
                self.engine, res.text_log, res.retrieval, snapshot=self.snap))
            return jsonable(res.utilization.to_dict())
        if step == "topics":
            return self._topics_step(res)
        if step == "domain":
            self.say(bi("Анализ домена…", "Domain analysis…"))
            res.domain = self._timed("domain", lambda: domain_analysis(
                res.log, res.embeddings.vectors if res.embeddings else None,
                pause_minutes=float(self.params["pause_minutes"]), near_threshold=float(self.params["near_threshold"]),
                slang=self.normalizer, categories=res.categories, answer_classes=res.answers.classes))
            return jsonable(res.domain.to_dict())
        raise ValueError(f"unknown real-users step {step!r}")

    def _log_step(self) -> dict[str, Any]:
        df, tdf, categories, answers = self.log_data.get()
        am = answers.metrics()
        return {"source": self.source, "filters": self.filters.describe(), "n_questions_used": len(df),
                "n_empty_questions": len(df) - len(tdf),
                # from the answer classes, so raw − effective = the classified declines exactly
                "answered_rate": am["answered_rate"],
                "effective_answered_rate": am["effective_answered_rate"], "n_declined": am["n_declined"],
                "effective_answered_rate_ci": jsonable(am.get("effective_answered_rate_ci")),
                "answer_classifier_accuracy": jsonable(am.get("answer_classifier_accuracy")),
                "n_answer_labels": am["n_answer_labels"],
                "answer_classifier": jsonable(answers.report.to_dict()) if answers.report else None,
                "answer_classes": jsonable(am), "categories": pd.Series(categories).value_counts().to_dict()}

    def _topics_step(self, res: RealUsersResult) -> dict[str, Any]:
        self.say(bi("Темы и пробелы в покрытии…", "Topics and coverage gaps…"))

        model = res.embeddings.model
        res.topics = self._timed("topics", lambda: topic_coverage(
            res.text_log, res.embeddings.vectors, res.retrieval, k_topics=self.k_topics, k_range=self.k_range,
            categories=res.categories, answer_classes=res.answers.classes[
                ~res.log["question"].map(is_empty_question).to_numpy(bool)],
            slang=self.normalizer, embedder=cached_embedder(model, self.engine), k_stability_runs=self.k_stability_runs,
            memory=TopicMemory.load(self.engine, model), lang=str(self.params["lang"])))
        # real questions a person labelled "not in the knowledge base" (realq datasets): confirmed gaps
        res.confirmed_gaps = confirmed_gaps(self.engine)
        return {**jsonable(res.topics.to_dict()), "assignments": topic_assignments(res)}

    def finalize(self, records: list[dict[str, Any]]) -> dict[str, Any]:
        by = {r["item_key"]: r["result"] for r in records if r["status"] == "done"}
        metrics = summary_metrics(by)
        res = self.outputs.get("result")
        if res is not None:
            res.metrics = metrics
            res.run_id = self.run_id
            if self.run_id is not None and is_complete(res, self.analyses):  # reopened from the store, never recomputed
                save_result(self.engine, res)
        return {**metrics, "timings_s": {k: round(v, 3) for k, v in self.timings.items()}}


def _source_and_snapshot(engine: Engine, p: Mapping[str, Any], filters: LogFilters) -> tuple[str | None, Any]:
    """The log source to analyse and the knowledge-base snapshot it is paired with (None: the log alone)."""
    source, explicit, link = p["source"], p.get("snapshot"), bool(p["link_kb"])
    snap = None
    if source is None or source == PRODUCTION_SOURCE or explicit is not None or link:
        try:
            snap = snapshots.for_run(engine, explicit)
        except SnapshotError:
            if source == PRODUCTION_SOURCE or explicit is not None or link:
                raise
            snap = None  # no knowledge base: the log alone (an imported one, when there is one)
    if source is None:
        source = (default_source(engine, snapshot=snap) if snap is not None
                  else next(iter(imported_sources(engine)), None))
    if source is None:
        read_log(engine, source=source, filters=filters, snapshot=snap)  # raises the "no question log" sentence
    if source != PRODUCTION_SOURCE and explicit is None and not link:
        snap = None  # an imported log is paired with a knowledge base only when linked explicitly
    return source, snap


def _check_known(requested: Sequence[str] | None) -> None:
    unknown = set(requested or ()) - set(ANALYSES)
    if unknown or (requested is not None and not requested):
        raise ValueError(f"unknown analyses {sorted(unknown)}; choose from {', '.join(ANALYSES)}")


def _analyses(requested: Sequence[str] | None, source: str | None, snap: Any) -> list[str]:
    """The analyses to run, in :data:`ANALYSES` order; a clear error when one needs a knowledge base and
    there is none."""
    if requested is None:
        return [a for a in ANALYSES if snap is not None or a != "utilization"]
    analyses = [a for a in ANALYSES if a in set(requested)]
    if "utilization" in analyses and snap is None:
        raise LookupError(
            f"Chunk utilization needs a knowledge base, and the log {source!r} is not linked to one"
            + (" (none is loaded: run `voproshalych-eval demo` or set DATABASE_URL)"
               if source == PRODUCTION_SOURCE else "")
            + ". Link it to a knowledge-base snapshot (--snapshot ID or --link-kb) when they belong together, "
            "or run --analysis domain / topics, which need only the log.")
    return analyses


def topic_assignments(res: RealUsersResult) -> dict[str, Any]:
    """The topic of every log row with question text, stored in the ``topics`` step's result (what the realq
    picker reads from the run): ``log_id`` and ``topic`` (parallel lists), every topic's ``names`` and the
    ``gap_rank`` of the ranked coverage gaps (keys are topic ids as strings)."""
    t = res.topics
    if t is None:
        return {"log_id": [], "topic": [], "names": {}, "gap_rank": {}}
    return {
        "log_id": [int(x) for x in res.text_log["id"]],
        "topic": [int(x) for x in np.asarray(t.labels)],
        "names": {str(int(k)): str(v) for k, v in zip(t.topics["topic"], t.topics["name"], strict=True)},
        "gap_rank": {str(int(r["topic"])): int(r["gap_rank"]) for _, r in t.gaps.iterrows()} if len(t.gaps) else {},
    }


def rebuild_result(engine: Engine, run: Any, *, progress: Callable[[int, int, str], None] | None = None
                   ) -> RealUsersResult:
    """The in-memory :class:`RealUsersResult` of a recorded run (tables and vectors for the page), recomputed
    from the run's frozen parameters on its pinned snapshot — nothing is recorded, no new run starts.

    ``progress(step, n_steps, step_key)`` before each step (``log``, ``embeddings``, …). The run's stored
    metrics and id are kept; names remembered since the run (topic memory) apply to the topics."""
    params = dict(run.params or {})
    if getattr(run, "snapshot_id", None) is not None:
        params["snapshot"] = run.snapshot_id
    plan = build_plan(engine, params)
    keys = plan.keys()
    for i, key in enumerate(keys, 1):
        if progress is not None:
            progress(i, len(keys), key)
        plan.work(key)  # type: ignore[misc]
    res: RealUsersResult | None = plan.outputs.get("result")
    if res is None:
        raise LookupError(f"run {run.id} has no analysis to show (steps: {', '.join(keys)})")
    res.run_id = run.id
    res.metrics = dict(run.metrics or {})
    return res


#: the stored tables, topics and vectors of an analysis (``eval.run_artifacts``)
RESULT_ARTIFACT = "real_users_result"
RESULT_FORMAT = "pickle5+zlib:RealUsersResult"


def is_complete(res: RealUsersResult, analyses: Sequence[str]) -> bool:
    """Whether ``res`` holds every analysis of its run (a resumed run's result may lack the earlier steps')."""
    return all(getattr(res, a, None) is not None for a in analyses if a in ANALYSES)


def save_result(engine: Engine, res: RealUsersResult) -> bool:
    """Keep the analysis's in-memory result (tables, topics, vectors) beside its run, so that reopening it after
    a restart reads it in well under 2 s instead of recomputing it (minutes). Never fails the caller."""

    if res.run_id is None:
        return False
    try:
        data = zlib.compress(pickle.dumps(res, protocol=5), 1)
        save_artifact(engine, int(res.run_id), RESULT_ARTIFACT, data, fmt=RESULT_FORMAT)
    except Exception:  # noqa: BLE001 - a stored copy is a convenience: without it the page offers a recompute
        log.warning("could not store the result of real-users run %s", res.run_id, exc_info=True)
        return False
    return True


def load_result(engine: Engine, run: Any) -> RealUsersResult | None:
    """The stored result of ``run`` (:func:`save_result`), or None when none is stored or it cannot be read by
    this code (another format, a changed class): the page then offers to recompute it.

    Only this store's own artefacts are unpickled — written by the app itself, never uploaded."""

    stored = load_artifact(engine, int(run.id), RESULT_ARTIFACT)
    if stored is None or stored["format"] != RESULT_FORMAT:
        return None
    try:
        res = pickle.loads(zlib.decompress(stored["data"]))  # noqa: S301 - the app's own store, see above
    except Exception:  # noqa: BLE001
        log.warning("the stored result of real-users run %s cannot be read; recompute it", run.id, exc_info=True)
        return None
    if not isinstance(res, RealUsersResult) or any(f not in vars(res) for f in RealUsersResult.__dataclass_fields__):
        return None
    res.run_id = run.id
    res.metrics = dict(run.metrics or {})
    return res


def summary_metrics(steps: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """The run's headline metrics from its steps' results (``log``, ``embeddings``, ``utilization``,
    ``topics``, ``domain``)."""
    log_step, emb = steps.get("log") or {}, steps.get("embeddings") or {}
    m: dict[str, Any] = {"n_questions_used": log_step.get("n_questions_used"),
                         "n_empty_questions": log_step.get("n_empty_questions"),
                         "answered_rate": log_step.get("answered_rate")}
    if "effective_answered_rate" in log_step:
        m["effective_answered_rate"] = log_step.get("effective_answered_rate")
        m["n_declined"] = log_step.get("n_declined")
    for k in ("effective_answered_rate_ci", "answer_classifier_accuracy"):
        if log_step.get(k) is not None:
            m[k] = log_step[k]
    if "n_answer_labels" in log_step:
        m["n_answer_labels"] = log_step["n_answer_labels"]
    if emb and "n_stored" in emb:
        m["n_stored_embeddings"] = emb.get("n_stored")
        m["n_embedded"] = emb.get("n_embedded")
    util = (steps.get("utilization") or {}).get("metrics")
    if util is not None:
        for k in ("chunk_coverage", "chunk_coverage@1", "page_coverage", "page_coverage@1", "n_never_retrieved",
                  "top10pct_chunk_share", "mean_top1_similarity"):
            m[k] = util.get(k)
    topics = steps.get("topics")
    if topics is not None:
        m["n_topics"] = topics["metrics"].get("n_topics")
        m["best_silhouette"] = topics["metrics"].get("best_silhouette")
        for k in ("seed_ari_mean", "n_emerging_topics", "n_growing_topics", "n_emerging_terms"):
            m[k] = topics["metrics"].get(k)
        if topics.get("gaps"):
            m["top_gap"] = str(topics["gaps"][0]["name"])
    dom = (steps.get("domain") or {}).get("metrics")
    if dom is not None:
        for k in ("unique_users", "questions_per_user_mean", "n_sessions", "turns_per_session_mean", "slang_share",
                  "exact_repeat_share", "near_duplicate_share", "share_greeting", "share_thanks", "share_off_topic",
                  "share_jailbreak"):
            m[k] = dom.get(k)
    return jsonable(m)
