"""The table of judge metrics: one :class:`JudgeMetric` per metric, read by the ``Judge``, the CLI flags
(``voproshalych-eval judge``) and the Judge-metrics page widgets.

An entry says everything the rest of the code needs: which Sample fields it requires, which prompt it
renders (and with which fields), the JSON schema of the reply, how a parsed reply becomes a score (the
*extractor*), the offline rule (or that there is none), the scale the score is reported on, how the
``strictness`` runs of one model are combined, and the metric's options (name, type, default, bounds,
labels — the CLI flag and the page widget are built from them).

Adding a judge metric = its prompt (``llm/prompts.py``), an entry here, its catalog entry
(``metrics/catalog.py``, key ``avg_<metric>``) and a test. Nothing else changes: the ``Judge`` gets a
method of the same name, the CLI a ``--metric`` choice and flags, the page a widget per option.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from voproshalych_eval.judges.base import Sample, combine
from voproshalych_eval.llm.offline import OFFLINE_LABEL
from voproshalych_eval.llm.prompts import render
from voproshalych_eval.metrics.similarity import response_relevancy_score

__all__ = ["JUDGE_METRICS", "Extracted", "JudgeMetric", "Option", "ScoreScale", "metric_key", "parse_verdict"]


@dataclass(frozen=True)
class Option:
    """One option of a judge metric (CLI flag ``--<name with dashes>``, one page widget)."""

    name: str
    kind: str  # "text" | "int" | "float" | "json" | "list"
    default: Any = None
    required: bool = False
    low: float | None = None
    high: float | None = None
    ru: str = ""
    en: str = ""
    help_ru: str = ""
    help_en: str = ""

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    def label(self, lang: str = "ru") -> str:
        return self.en if lang == "en" else self.ru

    def coerce(self, value: Any, metric: str) -> Any:
        """``value`` converted to the option's type and checked; ``ValueError`` naming the metric and option."""
        where = f"{metric}: option {self.name}"
        if value is None:
            if self.required:
                raise ValueError(f"{where} is required ({self.flag})")
            return None
        try:
            if self.kind == "int":
                if isinstance(value, bool) or float(value) != int(float(value)):
                    raise ValueError
                value = int(float(value))
            elif self.kind == "float":
                value = float(value)
            elif self.kind == "json":
                value = json.loads(value) if isinstance(value, str) else value
                if not isinstance(value, Mapping):
                    raise ValueError
                value = {str(k): str(v) for k, v in value.items()}
            elif self.kind == "list":
                value = [v.strip() for v in value.split(",") if v.strip()] if isinstance(value, str) else list(value)
            elif self.kind == "text":
                value = str(value)
                if self.required and not value.strip():
                    raise ValueError(f"{where} is required ({self.flag})")
        except (TypeError, json.JSONDecodeError) as exc:
            raise ValueError(f"{where}: not a valid {self.kind} value ({value!r})") from exc
        except ValueError as exc:
            raise ValueError(str(exc) if str(exc).startswith(where) else f"{where}: not a valid {self.kind} value "
                             f"({value!r})") from exc
        too_low = self.low is not None and value < self.low
        if self.kind in ("int", "float") and (too_low or (self.high is not None and value > self.high)):
            lo = "−∞" if self.low is None else f"{self.low:g}"
            hi = "∞" if self.high is None else f"{self.high:g}"
            raise ValueError(f"{where} must be within [{lo}, {hi}], got {value}")
        return value


@dataclass(frozen=True)
class ScoreScale:
    """How a metric's score is reported: bounds, a label and whether it is an integer level."""

    low: float
    high: float
    label: str
    integer: bool = False


@dataclass(frozen=True)
class Extracted:
    """A parsed reply turned into a score (on the metric's scale), its explanation and details."""

    score: float
    explanation: str = ""
    details: dict[str, Any] = field(default_factory=dict)


Cfg = Mapping[str, Any]


@dataclass(frozen=True)
class JudgeMetric:
    """One judge metric. See the module doc; ``prompt=None`` means no LLM (embedding-only).

    ``fields(sample, cfg, judge)`` gives the prompt fields; ``extract(parsed, cfg, ctx)`` turns a parsed reply
    into an :class:`Extracted` (raising ``ValueError``/``KeyError`` = a parse failure; ``ctx`` holds the
    ``judge``, the ``sample`` and what ``prepare(judge, sample, cfg)`` computed once per sample);
    ``offline(heuristic, sample, cfg)`` is the offline rule; ``post(result, cfg, judge)`` adds details;
    ``passes_at`` makes the score itself a verdict (``passed = score >= passes_at``) when no threshold is set;
    ``empty_score(scale)`` is the score of an empty response by rule (the scale's lowest by default);
    ``pick_prompt(sample)`` chooses among ``prompt`` and ``other_prompts`` per sample (``fields`` must match).
    """

    key: str
    ru: str
    en: str
    required: tuple[str, ...]
    prompt: str | None
    schema: str | None
    fields: Callable[[Sample, Cfg, Any], dict[str, Any]] | None
    extract: Callable[[Any, Cfg, Any], Extracted] | None
    offline: Callable[[Any, Sample, Cfg], tuple[float | None, str, dict[str, Any]]] | None
    scale: Callable[[Cfg], ScoreScale]
    options: tuple[Option, ...] = ()
    runs_option: str | None = None
    run_aggregate: str = "average"
    system_prompt: bool = True
    schema_override: Callable[[dict[str, Any], Cfg], dict[str, Any]] | None = None
    check: Callable[[Cfg], None] | None = None
    prepare: Callable[[Any, Sample, Cfg], dict[str, Any]] | None = None
    post: Callable[[Any, Cfg, Any], None] | None = None
    passes_at: float | None = None
    pick_prompt: Callable[[Sample], str] | None = None
    other_prompts: tuple[str, ...] = ()
    empty_score: Callable[[ScoreScale], float] = lambda scale: scale.low
    description_ru: str = ""
    description_en: str = ""

    def label(self, lang: str = "ru") -> str:
        return self.en if lang == "en" else self.ru

    def option(self, name: str) -> Option | None:
        return next((o for o in self.options if o.name == name), None)

    def resolve(self, cfg: Mapping[str, Any]) -> dict[str, Any]:
        """Options with defaults filled in and every value checked; an unknown option is an error."""
        unknown = sorted(set(cfg) - {o.name for o in self.options})
        if unknown:
            known = ", ".join(o.name for o in self.options) or "none"
            raise ValueError(f"{self.key}: unknown option(s) {', '.join(unknown)}; known: {known}")
        out = {o.name: o.coerce(cfg.get(o.name, o.default), self.key) for o in self.options}
        if self.check is not None:
            self.check(out)
        return out


def metric_key(metric: str) -> str:
    """The run-level aggregate key of a judge metric (the methodology's naming style): ``avg_<metric>``."""
    return f"avg_{metric}"


# ------------------------------------------------------------------------------------ shared pieces

_VERDICT_RE = re.compile(r"^\s*[\"'«]?\s*(?:(yes)\.?|no\s*:\s*(\S.*?))\s*[\"'»]?\s*$", re.IGNORECASE | re.DOTALL)


def parse_verdict(text: str | None) -> tuple[bool, str] | None:
    """Strict production verdict: ``Yes`` -> (True, ""), ``No: reason`` -> (False, reason); else None.

    Nothing else is accepted ("yesterday", "No, yes…", a bare "No", prose around the verdict)."""
    if text is None:
        return None
    m = _VERDICT_RE.match(text)
    if not m:
        return None
    if m.group(1):
        return True, ""
    return False, m.group(2).strip()


def contexts_text(contexts: Sequence[str]) -> str:
    if len(contexts) == 1:
        return contexts[0]
    return "\n\n".join(f"[{i + 1}] {c}" for i, c in enumerate(contexts))


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


def _extra(sample: Sample, judge: Any) -> str:
    parts = []
    if sample.retrieved_contexts:
        parts.append(render("extra_context", lang=judge.lang, context=contexts_text(sample.retrieved_contexts)))
    if sample.reference:
        parts.append(render("extra_reference", lang=judge.lang, reference=sample.reference))
    return "".join(parts)


def _threshold(low: float, high: float) -> Option:
    return Option("threshold", "float", None, low=low, high=high, ru="Порог прохождения", en="Pass threshold",
                  help_ru="оценка ≥ порога — «прошёл» (на шкале метрики)",
                  help_en="a score ≥ the threshold passes (on the metric's scale)")


def _score(p: Mapping[str, Any], cfg: Cfg, ctx: Any) -> Extracted:
    return Extracted(float(p["score"]), p.get("explanation", ""), {"raw_score": p["score"]})


def _score15_norm(p: Mapping[str, Any], cfg: Cfg, ctx: Any) -> Extracted:
    return Extracted((float(p["score"]) - 1.0) / 4.0, p.get("explanation", ""), {"raw_score": p["score"]})


def _fixed(low: float, high: float, label: str, integer: bool = False) -> Callable[[Cfg], ScoreScale]:
    s = ScoreScale(low, high, label, integer)
    return lambda cfg: s


def _offline_score(name: str, *fields: str, to15: bool = False) -> Callable[[Any, Sample, Cfg], Any]:
    def rule(h: Any, s: Sample, cfg: Cfg) -> tuple[float | None, str, dict[str, Any]]:
        args = []
        for f in fields:
            v = getattr(s, f)
            args.append(v if v is not None or f == "reference" else "")
        r = getattr(h, name)(*args)
        score = r.score if r.score is None or not to15 else 1.0 + 4.0 * r.score
        return score, r.explanation, dict(r.details)

    return rule


# ------------------------------------------------------------------------------------ RAG judge of the bot team's QA method


def _rag_extract(p: Mapping[str, Any], cfg: Cfg, ctx: Any) -> Extracted:
    ac, gr = float(p["answer_correctness"]), float(p["groundedness"])
    msg = p.get("error_message") or ""
    return Extracted(min(ac, gr), msg, {"answer_correctness": ac, "groundedness": gr, "error_message": msg})


def _rag_post(res: Any, cfg: Cfg, judge: Any) -> None:
    per = res.details.get("per_model", {})
    if per:
        how = judge.aggregate if judge.aggregate != "consensus" else "average"
        for key in ("answer_correctness", "groundedness"):
            res.details[key] = combine([d[0][key] for d in per.values() if d], how, quorum="any").score
        res.details["error_message"] = "; ".join(d[0]["error_message"] for d in per.values() if d and d[0]["error_message"])
    res.details["verdict"] = None if res.passed is None else ("PASS" if res.passed else "FAIL")


def _criteria_post(res: Any, cfg: Cfg, judge: Any) -> None:
    res.details["clamped"] = sum(1 for dets in res.details.get("per_model", {}).values() for d in dets if d.get("clamped"))


def _rag_offline(h: Any, s: Sample, cfg: Cfg) -> tuple[float | None, str, dict[str, Any]]:
    g = h.faithfulness(s.response or "", s.retrieved_contexts)
    c = h.answer_relevance(s.user_input, s.response or "")
    score = None if g.score is None or c.score is None else min(g.score, c.score)
    thr = cfg.get("threshold")
    det = {"answer_correctness": c.score, "groundedness": g.score,
           "error_message": "" if score is not None and thr is not None and score >= thr else g.explanation}
    return score, f"{c.explanation}; {g.explanation}", det


# ------------------------------------------------------------------------------------ Ragas general-purpose metrics


def _aspect_extract(p: Mapping[str, Any], cfg: Cfg, ctx: Any) -> Extracted:
    return Extracted(1.0 if p["verdict"] else 0.0, p.get("reason", ""), {"verdict": bool(p["verdict"])})


def _criteria_check(cfg: Cfg) -> None:
    if cfg["max_score"] <= cfg["min_score"]:
        raise ValueError("simple_criteria_score: max_score must be greater than min_score")


def _criteria_extract(p: Mapping[str, Any], cfg: Cfg, ctx: Any) -> Extracted:
    """Ragas general-purpose metrics: the raw score is CLAMPED to [min, max] (and the clamp recorded), then normalised."""
    lo, hi = float(cfg["min_score"]), float(cfg["max_score"])
    raw = float(p["score"])
    clamped = min(hi, max(lo, raw))
    return Extracted((clamped - lo) / (hi - lo), p.get("reason", ""), {"raw_score": raw, "clamped": clamped != raw})


def _criteria_schema(schema: dict[str, Any], cfg: Cfg) -> dict[str, Any]:
    # no bounds in the schema: an out-of-range answer is clamped (seed), not a parse failure
    return {**schema, "properties": {"score": {"type": "number"}, "reason": {"type": "string"}}}


def rubric_levels(rubrics: Mapping[str, str]) -> list[tuple[int, str]]:
    """``score<N>_description`` keys as sorted ``(N, description)``; at least two distinct levels."""
    levels: dict[int, str] = {}
    for k, v in rubrics.items():
        digits = re.sub(r"\D", "", k)
        if not digits:
            raise ValueError(f"rubrics_score: rubric key {k!r} has no level number (use score1_description, …)")
        if int(digits) in levels:
            raise ValueError(f"rubrics_score: level {int(digits)} appears twice")
        levels[int(digits)] = v
    if len(levels) < 2:
        raise ValueError("rubrics_score: rubrics need at least two levels (score1_description, score2_description, …)")
    return sorted(levels.items())


def _rubrics_check(cfg: Cfg) -> None:
    rubric_levels(cfg["rubrics"])


def _rubrics_scale(cfg: Cfg) -> ScoreScale:
    levels = rubric_levels(cfg["rubrics"])
    lo, hi = levels[0][0], levels[-1][0]
    return ScoreScale(float(lo), float(hi), f"{lo}–{hi} (rubric level)", integer=True)


def _rubrics_fields(s: Sample, cfg: Cfg, judge: Any) -> dict[str, Any]:
    text = "\n".join(f"Score {n}: {d}" for n, d in rubric_levels(cfg["rubrics"]))
    return {"rubrics": text, "question": s.user_input, "answer": s.response, "extra": _extra(s, judge)}


def _rubrics_schema(schema: dict[str, Any], cfg: Cfg) -> dict[str, Any]:
    levels = [n for n, _ in rubric_levels(cfg["rubrics"])]
    score = {"type": "integer", "minimum": levels[0], "maximum": levels[-1]}
    return {**schema, "properties": {"score": score, "reason": {"type": "string"}}}


def _rubrics_extract(p: Mapping[str, Any], cfg: Cfg, ctx: Any) -> Extracted:
    """Ragas general-purpose metrics: the integer level of the chosen rubric (not normalised)."""
    level = int(p["score"])
    if level not in {n for n, _ in rubric_levels(cfg["rubrics"])}:
        raise ValueError(f"level {level} is not one of the rubric's levels")
    return Extracted(float(level), p.get("reason", ""), {"level": level})


# ------------------------------------------------------------------------------------ Ragas Response Relevancy


def _relevancy_prepare(judge: Any, s: Sample, cfg: Cfg) -> dict[str, Any]:
    return {"question_vec": judge.encode_queries([s.user_input])[0]}


def _relevancy_extract(p: Mapping[str, Any], cfg: Cfg, ctx: Mapping[str, Any]) -> Extracted:
    judge = ctx["judge"]
    qs = [q for q in p["questions"] if isinstance(q, str) and q.strip()]
    if not qs:
        raise ValueError("no generated questions")
    score, cos = response_relevancy_score(ctx["question_vec"], judge.encode_queries(qs),
                                          noncommittal=bool(p["noncommittal"]))
    if p["noncommittal"]:
        expl = judge.t("уклончивый ответ — 0", "noncommittal answer — 0")
    else:
        expl = judge.t(f"средний косинус {score:.3f}", f"mean cosine {score:.3f}")
    return Extracted(score, expl, {"questions": qs, "cosines": cos, "noncommittal": bool(p["noncommittal"])})


# ------------------------------------------------------------------------------------ production show/no-show


def _has_context(s: Sample) -> bool:
    return any((c or "").strip() for c in s.retrieved_contexts)


def _verdict_prompt(s: Sample) -> str:
    """Production judges an answer reused from the similar-question cache without a context."""
    return "show_no_show" if _has_context(s) else "show_no_show_no_context"


def _verdict_fields(s: Sample, cfg: Cfg, judge: Any) -> dict[str, Any]:
    if _has_context(s):
        return _qca(s, cfg, judge)
    return _qa(s, cfg, judge)


def _verdict_extract(text: str, cfg: Cfg, ctx: Any) -> Extracted:
    v = parse_verdict(text)
    if v is None:
        raise ValueError("reply is neither 'Yes' nor 'No: reason'")
    return Extracted(1.0 if v[0] else 0.0, v[1], {"verdict": "Yes" if v[0] else "No", "reason": v[1],
                                                  "with_context": _has_context(ctx["sample"])})


def _verdict_offline(h: Any, s: Sample, cfg: Cfg) -> tuple[float | None, str, dict[str, Any]]:
    text = h.show_no_show(s.user_input, contexts_text(s.retrieved_contexts) if _has_context(s) else "", s.response or "")
    v = parse_verdict(text)
    if v is None:
        return None, f"[{OFFLINE_LABEL}] {text}", {"with_context": _has_context(s)}
    return 1.0 if v[0] else 0.0, f"[{OFFLINE_LABEL}] {text}", {"verdict": "Yes" if v[0] else "No", "reason": v[1],
                                                               "with_context": _has_context(s)}


def _qca(s: Sample, cfg: Cfg, judge: Any) -> dict[str, Any]:
    return {"question": s.user_input, "context": contexts_text(s.retrieved_contexts), "answer": s.response}


def _qa(s: Sample, cfg: Cfg, judge: Any) -> dict[str, Any]:
    return {"question": s.user_input, "answer": s.response}


def _qar(s: Sample, cfg: Cfg, judge: Any) -> dict[str, Any]:
    return {"question": s.user_input, "answer": s.response, "reference": s.reference}


_STRICTNESS = Option("strictness", "int", 1, low=1, high=5, ru="Число прогонов (strictness)", en="Runs (strictness)",
                     help_ru="сколько раз спросить каждую модель", help_en="how many times each model is asked")
_DEFINITION = Option("definition", "text", None, required=True, ru="Критерий", en="Criterion",
                     help_ru="критерий в свободной форме", help_en="a free-form criterion")

JUDGE_METRICS: dict[str, JudgeMetric] = {m.key: m for m in (
    JudgeMetric(
        "faithfulness", "Фактичность", "Faithfulness", ("response", "retrieved_contexts"), "faithfulness",
        "faithfulness", _qca, _score, _offline_score("faithfulness", "response", "retrieved_contexts"),
        _fixed(0, 1, "0–1"), (_threshold(0, 1),),
        description_ru="доля ответа, подтверждённая контекстом (0–1)",
        description_en="share of the response supported by the retrieved contexts (0–1)"),
    JudgeMetric(
        "answer_relevance", "Релевантность ответа", "Answer relevance", ("response",), "answer_relevance",
        "answer_relevance", _qa, _score, _offline_score("answer_relevance", "user_input", "response"),
        _fixed(0, 1, "0–1"), (_threshold(0, 1),),
        description_ru="насколько прямо и полно ответ отвечает на вопрос (0–1)",
        description_en="how directly and fully the response addresses the question (0–1)"),
    JudgeMetric(
        "answer_correctness", "Корректность ответа", "Answer correctness", ("response", "reference"),
        "answer_correctness", "answer_correctness", _qar, _score,
        _offline_score("answer_correctness", "response", "reference", to15=True),
        _fixed(1, 5, "1–5", integer=True), (_threshold(1, 5),),
        description_ru="корректность относительно эталона на шкале методики оценки 1–5",
        description_en="correctness against the reference on the methodology's 1–5 scale"),
    JudgeMetric(
        "e2e_score", "E2E-оценка", "E2E score", ("response", "reference"), "e2e", "e2e", _qar, _score15_norm,
        _offline_score("e2e", "user_input", "response", "reference", "retrieved_contexts"),
        _fixed(0, 1, "1–5 → 0–1"), (_threshold(0, 1),),
        description_ru="сквозная оценка 1–5, нормированная (s−1)/4", description_en="end-to-end 1–5, normalised (s−1)/4"),
    JudgeMetric(
        "rag_judge", "RAG-судья (тест RAG + LLM)", "RAG judge (RAG + LLM test)", ("response", "retrieved_contexts"), "rag_judge",
        "rag_judge", _qca, _rag_extract, _rag_offline, _fixed(0, 1, "0–1"),
        (Option("threshold", "float", 0.5, low=0, high=1, ru="Порог PASS", en="PASS threshold",
                help_ru="PASS, когда min(корректность, обоснованность) ≥ порога",
                help_en="PASS when min(correctness, groundedness) ≥ the threshold"),),
        system_prompt=False, post=_rag_post,
        description_ru="min(корректность, обоснованность) по чанкам; PASS/FAIL по порогу",
        description_en="min(correctness, groundedness) on the chunks; PASS/FAIL at the threshold"),
    JudgeMetric(
        "aspect_critic", "AspectCritic", "AspectCritic", ("response",), "aspect_critic", "aspect_critic",
        lambda s, cfg, j: {"definition": cfg["definition"], "question": s.user_input, "answer": s.response,
                           "extra": _extra(s, j)},
        _aspect_extract, None, _fixed(0, 1, "binary (0/1)"), (_DEFINITION, _STRICTNESS),
        runs_option="strictness", run_aggregate="majority_voting",
        description_ru="бинарный вердикт по критерию; большинство из strictness голосов",
        description_en="binary verdict on a criterion; majority of strictness votes"),
    JudgeMetric(
        "simple_criteria_score", "SimpleCriteriaScore", "SimpleCriteriaScore", ("response",), "simple_criteria",
        "simple_criteria",
        lambda s, cfg, j: {"definition": cfg["definition"], "min_score": _num(cfg["min_score"]),
                           "max_score": _num(cfg["max_score"]), "question": s.user_input, "answer": s.response,
                           "extra": _extra(s, j)},
        _criteria_extract, None,
        lambda cfg: ScoreScale(0.0, 1.0, f"{_num(cfg['min_score'])}–{_num(cfg['max_score'])} → 0–1"),
        (_DEFINITION,
         Option("min_score", "float", 0.0, ru="Минимум шкалы", en="Scale minimum"),
         Option("max_score", "float", 5.0, ru="Максимум шкалы", en="Scale maximum"),
         _STRICTNESS),
        runs_option="strictness", run_aggregate="median_mean", schema_override=_criteria_schema, check=_criteria_check,
        post=_criteria_post,
        description_ru="оценка в [min, max] (вне диапазона — ограничивается), (s − min)/(max − min); медиана прогонов "
                       "(при чётном числе — среднее двух средних)",
        description_en="a score in [min, max] (clamped when outside), (s − min)/(max − min); median of the runs "
                       "(an even count: the mean of the two middle values)"),
    JudgeMetric(
        "rubrics_score", "RubricsScore", "RubricsScore", ("response",), "rubrics", "rubrics", _rubrics_fields,
        _rubrics_extract, None, _rubrics_scale,
        (Option("rubrics", "json", None, required=True, ru="Рубрики (JSON)", en="Rubrics (JSON)",
                help_ru='{"score1_description": "…", …, "score5_description": "…"}',
                help_en='{"score1_description": "…", …, "score5_description": "…"}'),),
        schema_override=_rubrics_schema, check=_rubrics_check,
        description_ru="целый уровень выбранной рубрики", description_en="the integer level of the chosen rubric"),
    JudgeMetric(
        "response_relevancy", "Релевантность по обратным вопросам", "Response relevancy", ("response",), "response_relevancy",
        "response_relevancy",
        lambda s, cfg, j: {"answer": s.response, "n_questions": cfg["n_questions"]},
        _relevancy_extract, _offline_score("response_relevancy", "user_input", "response"), _fixed(0, 1, "0–1"),
        (Option("n_questions", "int", 3, low=1, high=10, ru="Сколько вопросов генерировать",
                en="Questions to generate"),),
        prepare=_relevancy_prepare,
        description_ru="средний косинус вопроса и вопросов, сгенерированных из ответа (метрика Response Relevancy)",
        description_en="mean cosine of the question and questions generated from the answer (the Response Relevancy metric)"),
    JudgeMetric(
        "semantic_similarity", "Семантическое сходство", "Semantic similarity", ("response", "reference"), None, None,
        None, None, None,
        lambda cfg: ScoreScale(-1.0, 1.0, "cosine (−1…1)") if cfg.get("threshold") is None
        else ScoreScale(0.0, 1.0, "binary (cosine ≥ threshold)"),
        (_threshold(-1, 1),
         Option("embedders", "list", None, ru="Модели эмбеддингов", en="Embedding models",
                help_ru="несколько моделей эмбеддингов (поле models метрики Semantic Similarity); сводятся агрегатором судьи",
                help_en="several embedding models (the Semantic Similarity metric's models); combined by the judge's aggregator")),
        empty_score=lambda scale: 0.0,  # an empty answer shares no meaning: orthogonal (0), not "opposite" (−1)
        description_ru="косинус эмбеддингов ответа и эталона по одной или нескольким моделям (метрика Semantic Similarity)",
        description_en="embedding cosine of response and reference over one or several models (the Semantic Similarity metric)"),
    JudgeMetric(
        # an empty context is legitimate here: production judges cached answers without one
        "show_no_show", "Показ/непоказ", "Show / no-show", ("response",), "show_no_show", None,
        _verdict_fields, _verdict_extract, _verdict_offline, _fixed(0, 1, "binary (Yes=1 / No=0)"), system_prompt=False,
        passes_at=0.5, pick_prompt=_verdict_prompt, other_prompts=("show_no_show_no_context",),
        description_ru="production-судья: «Yes» (показать) или «No: причина»",
        description_en="the production judge: 'Yes' (show) or 'No: reason'"),
)}
