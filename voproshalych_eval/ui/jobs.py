"""Background runs in the app: start, watch (live counts, progress, ETA, tokens, cancel), reattach, resume.

The job itself lives in :mod:`voproshalych_eval.engine.executor`'s process-wide registry, keyed by run id;
``st.session_state`` keeps only the run id. A widget rerun or a reopened tab therefore finds the job
again (:func:`job_panel`), and a run whose process died shows up as "interrupted — resume".
Also the shared results widgets of the LLM-tier pages: run picker, item filters, drill-down.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pandas as pd
import streamlit as st

from voproshalych_eval.datasets.staleness import run_warning, warning_text
from voproshalych_eval.engine import describe, executor, job_queue, runs
from voproshalych_eval.llm.prices import format_cost
from voproshalych_eval.reports import jury_notes
from voproshalych_eval.ui import auth, state, trace_view, untrusted, url_state
from voproshalych_eval.ui.i18n import fmt, fmt_count, fmt_seconds, lang, metric_label, show, tr
from voproshalych_eval.ui.verdicts import run_verdict
from voproshalych_eval.ui.widgets import offline_badge

log = logging.getLogger(__name__)
POLL_SECONDS = 1.0

def state_label(s: str) -> str:
    ru, en = runs.STATE_LABELS.get(s, (s, s))
    return tr(ru, en)


def mixed_warning(run: runs.Run) -> None:
    """The mark of a run resumed across a configuration change (its results mix settings)."""
    if run.mixed:
        st.warning("⚠️ " + tr(
            f"Запуск #{run.id} смешанный: продолжен при другой конфигурации ({run.mixed_reason}). "
            "Его числа не соответствуют одной конфигурации.",
            f"Run #{run.id} is mixed: resumed under another configuration ({run.mixed_reason}). "
            "Its numbers do not belong to one configuration.",
        ))


def building_key(state_key: str) -> str:
    """Where the job started under ``state_key`` is remembered while it builds its plan (before its run exists)."""
    return f"{state_key}__building"


def start(build_plan: Callable[[], executor.Plan], state_key: str) -> str | None:
    """Start a background job that builds the plan (in its own thread: snapshots, model loads) and puts its
    run on the job queue, where the workers execute it (``job_queue.start_queued``: a worker thread of this
    process by default, none with ``VOPROSHALYCH_EVAL_NO_WORKER=1``); returns the job's key.
    ``st.session_state[state_key]`` gets the run id once the run exists (:func:`run_id_of`, :func:`job_panel`);
    a build error is shown by :func:`job_panel`.

    Every run the app starts goes through here: a user whose role may not start runs is refused (and the
    refusal audited) even when the call comes without a button; the run records who started it."""
    ident = auth.require("run", target=state_key)
    with state.user_errors("Не удалось запустить", "Could not start the run"):
        job = job_queue.start_queued(state.engine(), build_plan, actor=ident.name, actor_role=ident.role)
        st.session_state.pop(state_key, None)  # the previous run's view goes away while the new one is prepared
        st.session_state[building_key(state_key)] = job.key
        return job.key
    return None


def run_id_of(state_key: str) -> int | None:
    """The run remembered under ``state_key``: a job started here gets its run id once its plan is built."""
    key = st.session_state.get(building_key(state_key))
    job = executor.get_job(key) if key else None
    if job is not None and job.run_id is not None:
        st.session_state[state_key] = job.run_id
        st.session_state[f"pick_{state_key}"] = job.run_id  # the run picker shows the new run …
        st.session_state.pop(f"pickds_{state_key}", None)  # … on its own dataset (ui.run_view.pick_run)
        del st.session_state[building_key(state_key)]
    run_id = st.session_state.get(state_key)
    return int(run_id) if run_id is not None else None


def _building_view(state_key: str) -> bool:
    """The job started under ``state_key`` while its plan is built (True), or why it never got a run."""
    key = st.session_state.get(building_key(state_key))
    job = executor.get_job(key) if key else None
    if job is None or job.run_id is not None:
        return False
    if job.alive and job.error is None:
        @st.fragment(run_every=POLL_SECONDS)
        def _wait() -> None:
            j = executor.get_job(key)
            if j is None or not j.building:
                st.rerun()
            with st.status(tr("Подготовка запуска…", "Preparing the run…"), state="running"):
                st.caption(tr("Загружаются данные и модели; запуск появится, когда план будет готов.",
                              "Loading the data and models; the run appears once its plan is ready."))
                if auth.can("run") and st.button(tr("Отменить", "Cancel"), key=f"cancel_build_{key}"):
                    auth.require("run", key)
                    j.cancel()

        _wait()
        return True
    if job.run_id is not None:  # built meanwhile: the next rerun shows the run
        return False
    del st.session_state[building_key(state_key)]
    if job.nothing_to_run:
        st.warning(tr("Нет элементов для оценки.", "Nothing to evaluate."))
    elif job.error:
        st.error(tr("Не удалось запустить: ", "Could not start the run: ") + job.error)
    return False


def _progress_view(job: executor.Job) -> None:
    p = job.progress
    total = max(p.total, 1)
    label = tr(
        f"Запуск {p.run_id}: {p.finished} из {p.total} (ошибок {p.failed})",
        f"Run {p.run_id}: {p.finished} of {p.total} (failed {p.failed})",
    )
    with st.status(label, state="running" if job.alive else ("error" if p.status == "failed" else "complete"), expanded=True):
        st.progress(min(p.finished / total, 1.0))
        cols = st.columns(5)
        cols[0].metric(tr("Готово", "Done"), fmt_count(p.done))
        cols[1].metric(tr("Ошибки", "Failed"), fmt_count(p.failed))
        cols[2].metric(tr("Осталось", "ETA"), fmt_seconds(p.eta_s))
        cols[3].metric(tr("Токены", "Tokens"), fmt_count(p.tokens))
        cols[4].metric(tr("Стоимость", "Cost"), format_cost(p.cost_usd, lang()) if p.llm else "—")
        if p.llm:
            st.caption(" · ".join(
                f"{m}: {u['prompt_tokens']}+{u['completion_tokens']} " + tr("ток.", "tok.") + f", {format_cost(u['cost_usd'], lang())}"
                for m, u in p.llm.items()))
        if p.retries and p.retries.get("retried"):
            retried = ", ".join(f"{k} {n}" for k, n in p.retries["retried"].items())
            st.caption(tr("Повторные запросы к LLM: ", "LLM requests retried: ") + retried + " · "
                       + tr("спасено повтором: ", "recovered by a retry: ")
                       + fmt_count(sum((p.retries.get("recovered") or {}).values())))
        if p.message:
            st.caption(show(p.message))
        if p.last_error:
            st.caption(tr("Последняя ошибка: ", "Last error: ") + str(p.last_error)[:300])
        if job.alive and auth.can("run") and st.button(tr("Отменить", "Cancel"), key=f"cancel_{p.run_id}"):
            auth.require("run", f"run #{p.run_id}")
            auth.record("run", f"run #{p.run_id}", {"cancel": True})
            job.cancel()
            st.toast(tr("Отмена: новые элементы не запускаются", "Cancelling: no new item starts"))


class StepBar:
    """A progress bar for work done on the script thread in steps (a UMAP projection): "step 1 of 3", the
    step's own counts ("epoch 120 of 500") and, once a step reports counts, its ETA from the rate so far.

    Called as ``bar(step, n_steps, message, done, total)`` (:data:`voproshalych_eval.tiers.projection.StepProgress`);
    ``message`` may be a :class:`voproshalych_eval.bilingual.Text`."""

    def __init__(self, label: str) -> None:
        self.bar = st.progress(0.0, text=label)
        self.step = 0
        self.counted_from: tuple[float, int] | None = None  # (time, units) of the step's first count

    def __call__(self, step: int, n_steps: int, message: str, done: int = 0, total: int = 0) -> None:
        now = time.perf_counter()
        if step != self.step:
            self.step, self.counted_from = step, None
        if total and self.counted_from is None:
            self.counted_from = (now, done)
        n_steps = max(int(n_steps), 1)
        within = min(done / total, 1.0) if total else 0.0
        line = tr(f"Шаг {step} из {n_steps}: ", f"Step {step} of {n_steps}: ") + show(message)
        if total:
            line += " — " + tr(f"{fmt_count(done)} из {fmt_count(total)}", f"{fmt_count(done)} of {fmt_count(total)}")
            started, first = self.counted_from or (now, done)
            if first < done < total:
                eta = (now - started) / (done - first) * (total - done)
                line += " · " + tr("осталось ≈ ", "ETA ≈ ") + fmt_seconds(eta)
        self.bar.progress(min((step - 1 + within) / n_steps, 1.0), text=line)

    def finish(self, label: str) -> None:
        self.bar.progress(1.0, text=label)


def job_panel(state_key: str) -> None:
    """Show the job of the run remembered under ``state_key`` (or its plan being built); refreshes itself
    while it runs."""
    run_id = run_id_of(state_key)
    if _building_view(state_key):
        return
    job = executor.get_job(run_id)
    if job is None:
        return
    if not job.alive:
        if job.error:
            st.error(tr("Запуск завершился с ошибкой: ", "The run failed: ") + job.error)
        return

    @st.fragment(run_every=POLL_SECONDS)
    def _live() -> None:
        j = executor.get_job(run_id)
        if j is None:
            return
        _progress_view(j)
        if not j.alive:
            st.rerun()

    _live()


def resume_button(run_id: int, state_key: str) -> None:
    """"Resume" (missing and failed items only). A refusal (the configuration changed) is shown with what
    differs; "resume anyway" then mixes settings and marks the run mixed."""
    if not auth.can("run"):
        return
    eng = state.engine()
    refused_key = f"resume_refused_{run_id}"
    if st.button(tr("Продолжить (только недостающие)", "Resume (missing items only)"), key=f"resume_{run_id}"):
        auth.require("run", f"run #{run_id}")
        auth.record("run", f"run #{run_id}", {"resume": True})
        st.session_state.pop(refused_key, None)
        try:
            executor.resume_background(eng, run_id)
        except executor.ResumeRefused as exc:
            st.session_state[refused_key] = str(exc)
        except executor.AlreadyRunning as exc:
            st.error(str(exc))
        else:
            st.session_state[state_key] = run_id
            st.rerun()
    refused = st.session_state.get(refused_key)
    if refused:
        st.error(tr("Продолжение отклонено — конфигурация изменилась:\n\n", "Resume refused — the configuration changed:\n\n")
                 + refused)
        if st.button(tr("Всё равно продолжить (запуск станет смешанным)", "Resume anyway (the run becomes mixed)"),
                     key=f"resume_force_{run_id}"):
            auth.require("run", f"run #{run_id}")
            auth.record("run", f"run #{run_id}", {"resume": True, "mixed": True})
            with state.user_errors("Не удалось продолжить", "Could not resume"):
                executor.resume_background(eng, run_id, force=True)
                st.session_state.pop(refused_key, None)
                st.session_state[state_key] = run_id
                st.rerun()


def run_caption(run: runs.Run) -> None:
    """Lead the run's view with its verdict against the baselines (offline runs: "offline — not compared"),
    then what was run, in words: configuration, dataset, models, code version."""
    run_verdict(run)
    if run.offline:
        offline_badge()
    models = ", ".join(describe.models_words(run, lang()))
    st.caption(" · ".join(x for x in (
        describe.config_words(run, lang()), run.dataset_name or "—", models,
        f"{tr('код', 'code')} {run.code_version or '—'}", f"#{run.id}") if x))
    stale_dataset_warning(run)
    jury_warnings(run)


def jury_warnings(run: runs.Run) -> None:
    """A visible warning naming each judge model that failed most of its calls, and the undecided ties."""
    for note in jury_notes(dict(run.metrics or {}), lang=lang()):
        st.warning("⚠️ " + note)


def stale_dataset_warning(run: runs.Run) -> None:
    """A visible warning when the run's dataset version references chunks that changed in its snapshot."""
    try:
        warn = run_warning(state.engine(), run)
    except Exception:  # noqa: BLE001 - a failed check must not hide the run
        log.exception("staleness check failed for run %s", run.id)
        return
    if warn:
        st.warning("⚠️ " + tr(warning_text(warn, "ru"), warning_text(warn, "en")))


def items_frame(run_id: int) -> pd.DataFrame:
    return runs.run_items(state.engine(), run_id)


def filter_items(
    df: pd.DataFrame,
    *,
    key: str,
    score_cols: Sequence[str] = (),
    disagreement: Callable[[pd.Series], float | None] | None = None,
) -> pd.DataFrame:
    """Filters: only failed, a score below a threshold, judges disagreeing by more than a margin."""
    if df.empty:
        return df
    cols = st.columns(3)
    url_state.bind(f"{key}_failed", "failed", parse=url_state.parse_bool)  # the filters live in the URL
    only_failed = cols[0].checkbox(tr("Только сбои", "Failed only"), key=f"{key}_failed")
    out = df
    if only_failed:
        mask = out["status"] != "done"
        for c in score_cols:
            if c in out.columns:
                mask |= out[c].isna()
        out = out[mask]
    present = [c for c in score_cols if c in df.columns]
    if present:
        names = {c: metric_label(c) for c in present}  # resolved now: format_func runs later too
        url_state.bind(f"{key}_lowcol", "low", valid=["—", *present])
        col = cols[1].selectbox(tr("Низкая оценка по", "Low score on"), ["—", *present], key=f"{key}_lowcol",
                                format_func=lambda c: names.get(c, c))
        if col != "—":
            thr = cols[1].slider(tr("ниже", "below"), 0.0, 1.0, 0.5, 0.05, key=f"{key}_lowthr")
            out = out[pd.to_numeric(out[col], errors="coerce") < thr]
    if disagreement is not None:
        margin = cols[2].slider(tr("Расхождение судей >", "Judge disagreement >"), 0.0, 1.0, 0.0, 0.05, key=f"{key}_dis")
        if margin > 0:
            out = out[out.apply(lambda r: (disagreement(r) or 0.0) > margin, axis=1)]
    return out


def per_model_spread(judges_col: str = "judges") -> Callable[[pd.Series], float | None]:
    """Largest max−min spread of per-model scores over the judge metrics of an item."""

    def spread(row: pd.Series) -> float | None:
        judged = row.get(judges_col)
        if not isinstance(judged, Mapping):
            return None
        best = 0.0
        for res in judged.values():
            pm = [v for v in ((res or {}).get("per_model") or {}).values() if isinstance(v, int | float)]
            if len(pm) >= 2:
                best = max(best, max(pm) - min(pm))
        return best

    return spread


def judge_reply_view(name: str, res: Mapping[str, Any] | None) -> None:
    """One judge metric of one item: score, verdict, explanation, per-model scores, raw replies, failures."""
    if not res:
        return
    score = res.get("score")
    head = f"**{metric_label(name)}**: " + ("—" if score is None else fmt(name, score))
    if res.get("passed") is not None:
        head += " · " + ("PASS" if res["passed"] else "FAIL")
    if res.get("offline"):
        head += " · " + tr("офлайн-эвристика", "offline heuristic")
    st.markdown(head)
    if res.get("explanation"):
        untrusted.text(res["explanation"])
    if res.get("per_model"):
        st.caption(tr("По моделям: ", "Per model: ") + untrusted.md(", ".join(
            f"{m}: {fmt(name, v) if isinstance(v, int | float) else v}" for m, v in res["per_model"].items())))
    if res.get("failures"):
        fails = res["failures"]
        shown = "; ".join(f"{k}: {v}" for k, v in fails.items()) if isinstance(fails, Mapping) else (
            "; ".join(str(f) for f in fails) if isinstance(fails, list | tuple) else str(fails))
        st.error(tr("Сбои: ", "Failures: ") + untrusted.md(shown[:1500]))
    for i, raw in enumerate(res.get("raw_replies") or []):
        st.code(str(raw)[:4000], language=None)
        if i >= 4:
            break


#: columns of a run's item table that are the item's bookkeeping, not its result (``runs.run_items``)
_ITEM_META = ("item_key", "status", "error", "created_at")


def drilldown(df: pd.DataFrame, *, key: str, render: Callable[[Mapping[str, Any]], None], trace: bool = True) -> None:
    """Pick one item of ``df`` and show it in full with ``render``; then (``trace``) its trace: the stored
    result as a collapsible tree of its steps with latency, tokens and cost (``ui.trace_view``)."""
    if df.empty:
        return
    keys = df["item_key"].astype(str).tolist()
    url_state.bind(f"{key}_item", "item", valid=keys)  # the item open in the drill-down lives in the URL
    chosen = st.selectbox(tr("Элемент", "Item"), keys, key=f"{key}_item")
    row = df[df["item_key"].astype(str) == chosen].iloc[0].to_dict()
    if row.get("status") != "done":
        st.error(tr("Элемент не выполнен: ", "Item failed: ") + untrusted.md(row.get("error")))
    render(row)
    if trace:
        result = {k: v for k, v in row.items()
                  if k not in _ITEM_META and v is not None and not (isinstance(v, float) and v != v)}
        if result:
            st.markdown(tr("**Трасса элемента** — шаги с задержкой, токенами и стоимостью",
                           "**Item trace** — the steps with latency, tokens and cost"))
            trace_view.render(result, key=f"{key}_trace_{chosen}")


def flat_table(df: pd.DataFrame, columns: Sequence[str]) -> pd.DataFrame:
    """The scalar columns worth a table (nested results are in the drill-down and the JSON download)."""
    keep = [c for c in ("item_key", "status", *columns, "error") if c in df.columns]
    return df[keep]
