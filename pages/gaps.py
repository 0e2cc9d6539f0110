"""Coverage gaps a team works on: status, diagnosis, a draft, and its effect before publishing (what-if)."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from voproshalych_eval.analytics import gaps
from voproshalych_eval.engine import runs
from voproshalych_eval.gap_sync import create_picked, sync
from voproshalych_eval.generation import gap_drafts
from voproshalych_eval.tiers import gap_diagnosis, sandbox, whatif
from voproshalych_eval.ui import auth, jobs, state, untrusted, uploads
from voproshalych_eval.ui.i18n import fmt, metric_label, tr, tr_pair
from voproshalych_eval.ui.widgets import empty_state, offline_badge, page_header

WHATIF_KEY = "gaps_whatif_run_id"


def init_page_state() -> None:
    """The page header."""
    page_header(
        tr("Пробелы в покрытии", "Coverage gaps"),
        tr("От пробела к статье, эффект которой виден до публикации.",
           "From a gap to an article whose effect you see before publishing."),
        tr("Пробел — тема реальных вопросов из анализа «Реальные пользователи» (её узнают в следующих анализах по "
           "центроиду). **Диагноз** говорит, почему это пробел: нет в базе, ответ есть, но поиск не находит его "
           "первым, бот отказал, не по теме. **Черновик** — план статьи с заполнителями вместо фактов; проверка "
           "отмечает числа и имена, которых нет ни в базе, ни в вопросах. **Что если** — поиск Tier 1 до и после "
           "правки базы в песочнице: hit@k на уровне страниц (k = 1 как в продакшене), 0–1, больше — лучше.",
           "A gap is a topic of real questions from the Real users analysis (recognised in later analyses by its "
           "centroid). The **diagnosis** says why it is a gap: missing from the knowledge base, answer exists but is "
           "not retrieved first, the bot declined, out of scope. The **draft** is an article outline with "
           "placeholders instead of facts; the check flags numbers and names found neither in the knowledge base "
           "nor in the questions. **What if** is Tier 1 retrieval before and after a knowledge-base edit in a "
           "sandbox: page-level hit@k (k = 1 as production), 0–1, higher is better."),
    )


def _pct(v: object) -> str:
    return "—" if v is None or (isinstance(v, float) and pd.isna(v)) else f"{100 * float(v):.0f}%"


def _status(s: str) -> str:
    return tr_pair(gaps.STATUS_NAMES.get(s, (s, s)))


def _level_label(key: str) -> str:
    """A what-if report key (``url_hit_rate@1``, ``chunk_mrr``) in words, from the metric catalog."""
    level, _, rest = key.partition("_")
    return metric_label(f"{level}.{rest}")


def _tier3_view(t3: dict | None) -> None:  # type: ignore[type-arg]
    """Answered / declined / judged before -> after of the Tier 3 part, or why it did not run."""
    if not t3:
        return
    st.markdown(tr("**Tier 3: ответы бота до и после**", "**Tier 3: the bot's answers before and after**"))
    if t3.get("skipped"):
        st.caption(tr("Не запускался: ", "Not run: ") + {
            "no LLM configured": tr("LLM не настроена", "no LLM configured"),
            "no gap questions": tr("нет вопросов пробела", "no gap questions"),
            "off": tr("выключен", "switched off")}.get(t3["skipped"], t3["skipped"]))
        return
    if t3.get("offline"):
        offline_badge()
        st.caption(tr_pair(("офлайн: экстрактивный генератор без LLM, отказов не бывает, судьи нет",
                            "offline: extractive generator without an LLM, never declines, no judge")))
    keys = ["n_answered", "n_declined", "n_error", "answered_rate"] + (["n_judged", "n_passed", "pass_rate"]
                                                                      if t3.get("judged") else [])
    rows = [{"metric": metric_label(k), "before": fmt(k, (t3.get("before") or {}).get(k)),
             "after": fmt(k, (t3.get("after") or {}).get(k))} for k in keys]
    st.caption(tr(f"Вопросов: {t3.get('n_sampled')} из {t3.get('n_gap_questions')} (выборка), контекст — "
                  f"первые {t3.get('top_k')} чанка", f"Questions: {t3.get('n_sampled')} of {t3.get('n_gap_questions')} "
                  f"(sample), context: the first {t3.get('top_k')} chunk(s)"))
    st.dataframe(pd.DataFrame(rows).rename(columns=_cols()), hide_index=True, key="gaps_whatif_tier3")
    for t in t3.get("paired_tests") or []:
        name = tr("с ответом", "answered") if t["metric"] == "answered" else tr("ответ и PASS", "answered and PASS")
        p = "—" if t.get("p_value") is None else f"{t['p_value']:.3g}"
        st.caption(tr(f"Парный тест ({name}): разница {t['mean_diff']:+.3f}, p = {p}",
                      f"Paired test ({name}): difference {t['mean_diff']:+.3f}, p = {p}"))



def _cols() -> dict[str, str]:
    return {"metric": tr("Метрика", "Metric"), "before": tr("до", "before"), "after": tr("после", "after"),
         "id": "#", "question": tr("Вопрос", "Question"), "rank_before": tr("Ранг страницы до", "Page rank before"),
         "rank_after": tr("Ранг страницы после", "Page rank after"), "top1_after": tr("Топ-1 после", "Top-1 after")}


def _whatif_view() -> None:
    engine = state.engine()
    jobs.job_panel(WHATIF_KEY)
    run_id = jobs.run_id_of(WHATIF_KEY)
    run = runs.get_run(engine, run_id) if run_id else None
    if run is None or run.status not in ("done", "done_with_failures"):
        return
    rep = whatif.report(runs.item_records(engine, run.id), run.metrics or {},
                        sandbox={"id": run.snapshot_id, "parent_id": (run.params or {}).get("parent")})
    rows = [{"metric": _level_label(k), "before": rep["before"]["metrics"].get(k), "after": v}
            for k, v in rep["after"]["metrics"].items() if k.startswith("url_") and "@" in k or k == "url_mrr"]
    st.markdown(tr(f"**Песочница #{run.snapshot_id}** от снимка #{rep['sandbox']['parent_id']} · вопросов: "
                   f"{rep['before']['n']}", f"**Sandbox #{run.snapshot_id}** of snapshot #{rep['sandbox']['parent_id']}"
                   f" · questions: {rep['before']['n']}"))
    st.dataframe(pd.DataFrame(rows).rename(columns=_cols()), hide_index=True, key="gaps_whatif_metrics")
    st.dataframe(pd.DataFrame(rep["per_question"])[["id", "question", "rank_before", "rank_after", "top1_after"]]
                 .rename(columns=_cols()), hide_index=True, key="gaps_whatif_items")
    _tier3_view(rep.get("tier3"))
    if rep["regression"]:
        st.caption(tr(f"Регрессия: топ-1 сменился у {len(rep['regression']['top1_changed'])} вопросов",
                      f"Regression: top-1 changed for {len(rep['regression']['top1_changed'])} question(s)"))


def _render_page() -> None:
    with state.user_errors("Не удалось открыть пробелы", "Could not open the gaps"):
        engine = state.engine()
        with st.spinner(tr("Сверяю пробелы с анализами…", "Syncing the gaps with the analyses…")):
            sync(engine)
        all_gaps = gaps.list_gaps(engine)
        if not all_gaps:
            empty_state("Пробелов пока нет: запустите анализ на странице «Реальные пользователи».",
                        "No gaps yet: run the analysis on the Real users page.", page="pages/real_users.py",
                        page_label=("Реальные пользователи", "Real users"))
        else:
            _render_gaps(engine, all_gaps)
        with st.expander(tr("Новый пробел из выбранных вопросов", "A new gap from hand-picked questions")):
            _render_pick_gap(engine)
        with st.expander(tr("Что если изменить страницу базы знаний", "What if I replace / remove a knowledge-base page")):
            _render_kb_whatif(engine, all_gaps)


def _gaps_table(all_gaps: list) -> pd.DataFrame:
    table = pd.DataFrame([g.row() for g in all_gaps])
    table["status"] = table["status"].map(_status)
    for c in ("answered_rate", "effective_answered_rate"):
        table[c] = table[c].map(_pct)
    table["owner"] = table["owner"].fillna("—")
    table["category"] = table["category"].map(
        lambda c: tr_pair(gap_diagnosis.CATEGORY_NAMES[c]) if c in gap_diagnosis.CATEGORY_NAMES else "—")
    return table


def _render_gaps(engine: Any, all_gaps: list) -> None:
    table = _gaps_table(all_gaps)
    headers = {"id": "#", "name": tr("Тема", "Topic"), "n_questions": tr("Вопросов", "Questions"),
               "answered_rate": tr("С ответом", "Answered"),
               "effective_answered_rate": tr("Реальных ответов", "Effective answers"),
               "category": tr("Диагноз", "Diagnosis"), "status": tr("Статус", "Status"),
               "owner": tr("Ответственный", "Owner")}
    st.dataframe(table[list(headers)].rename(columns=headers), hide_index=True, key="gaps_table")
    ids = [g.id for g in all_gaps]
    gid = st.selectbox(tr("Пробел", "Gap"), ids, key="gaps_pick",
                       format_func=lambda i: f"#{i} " + next(g.name for g in all_gaps if g.id == i))
    gap = gaps.get_gap(engine, gid)
    t_status, t_diag, t_draft, t_whatif = st.tabs([tr("Статус", "Status"), tr("Диагноз", "Diagnosis"),
                                                   tr("Черновик", "Draft"), tr("Что если", "What if")])
    with t_status:
        _render_status(engine, gid, gap)
        _render_history(engine, gid)
    with t_diag:
        _render_diagnosis(engine, gid)
    with t_draft:
        _render_draft(engine, gid)
    with t_whatif:
        _whatif_view()


def _render_status(engine: Any, gid: int, gap: Any) -> None:
    c1, c2 = st.columns(2)
    labels = [_status(x) for x in gaps.STATUSES]
    new_label = c1.selectbox(tr("Статус", "Status"), labels, index=gaps.STATUSES.index(gap.status),
                             key="gaps_status")
    new = gaps.STATUSES[labels.index(new_label)]
    owner = c2.text_input(tr("Ответственный", "Owner"), value=gap.owner or "", key="gaps_owner")
    note = st.text_input(tr("Заметка (для «отклонён» — причина)", "Note (for 'dismissed': the reason)"),
                         value=gap.note or "", key="gaps_note")
    if auth.button("label", st, tr("Сохранить статус", "Save status"), key="gaps_status_save"):
        auth.require("label", f"gap #{gid}")
        try:
            gaps.set_status(engine, gid, new, note=note or None, owner=owner or None)
            auth.record("label", f"gap #{gid}", {"op": "gap_status", "status": new})
            st.success(tr("Сохранено", "Saved"))
        except ValueError as exc:
            st.error(str(exc))


def _render_history(engine: Any, gid: int) -> None:
    hist = pd.DataFrame(gaps.history(engine, gid))
    hist_cols = {"run_id": tr("Анализ", "Analysis run"), "run_at": tr("Когда", "When"),
                 "n_questions": tr("Вопросов", "Questions"), "answered_rate": tr("С ответом", "Answered"),
                 "effective_answered_rate": tr("Реальных ответов", "Effective answers"),
                 "thumbs_down": tr("Дизлайков", "Thumbs down"), "gap_rank": tr("Место среди пробелов", "Gap rank")}
    if not hist.empty:
        for c in ("answered_rate", "effective_answered_rate"):
            hist[c] = hist[c].map(_pct)
        hist = hist[[c for c in hist_cols if c in hist]].rename(columns=hist_cols)
    st.dataframe(hist, hide_index=True, key="gaps_history")
    rc = gaps.recheck(engine, gid)
    if rc:
        st.metric(tr("Реальные ответы: до → после", "Effective answered: before → after"),
                  f"{_pct(rc['effective_before'])} → {_pct(rc['effective_after'])}",
                  help=f"n = {rc['n_before']} / {rc['n_after']}; {rc['verdict']}")


def _render_diagnosis(engine: Any, gid: int) -> None:
    sample = st.number_input(tr("Вопросов в выборке (не больше)", "Questions to sample (at most)"), 1, 200, 20,
                             key="gaps_sample")
    if auth.button("label", st, tr("Диагностировать", "Diagnose"), key="gaps_diagnose"):
        auth.require("label", f"gap #{gid}")
        with st.spinner(tr("Диагностика…", "Diagnosing…")):
            res = gap_diagnosis.diagnose(engine, gid, sample=int(sample))
            gaps.save_diagnosis(engine, gid, res)
    diag = gaps.latest_diagnosis(engine, gid)
    if not diag:
        return
    if diag["method"] == "heuristic":
        offline_badge()
    st.caption(tr(f"Выборка: {diag['n_sampled']} из {diag['n_questions']} вопросов",
                  f"Sample: {diag['n_sampled']} of {diag['n_questions']} questions"))
    cols = st.columns(len(gap_diagnosis.CATEGORIES))
    for col, cat in zip(cols, gap_diagnosis.CATEGORIES, strict=True):
        col.metric(tr_pair(gap_diagnosis.CATEGORY_NAMES[cat]), diag["counts"].get(cat, 0))
    if diag.get("category"):
        st.info(tr("Что нужно: ", "Fix needed: ") + tr_pair(gap_diagnosis.FIXES[diag["category"]]))
    items = pd.DataFrame(diag["items"])
    keep = [c for c in ("question", "category", "chunk_id", "production_rank", "chunk_text") if c in items]
    st.dataframe(items[keep], hide_index=True, key="gaps_diag_items")


def _render_draft(engine: Any, gid: int) -> None:
    if auth.button("label", st, tr("Составить план статьи", "Draft an outline"), key="gaps_draft_make"):
        with st.spinner(tr("Пишу план…", "Drafting…")), \
                auth.audited("label", f"gap #{gid}", {"op": "gap_draft_outline"}):
            gap_drafts.draft_outline(engine, gid)
    upload = st.file_uploader(tr("Загрузить черновик (Markdown/текст)", "Upload a draft (Markdown/text)"),
                              type=["md", "txt"], key="gaps_draft_upload")
    if upload is not None and auth.button("label", st, tr("Сохранить загруженный", "Keep the upload"),
                                          key="gaps_draft_up"):
        with state.user_errors("Черновик не сохранён", "The draft was not saved"), \
                auth.audited("label", f"gap #{gid}", {"op": "gap_draft_upload"}):
            _, draft_data = uploads.read(upload)
            gap_drafts.save_edit(engine, gid, draft_data.decode("utf-8"), source="upload")
    versions = gaps.drafts(engine, gid)
    if not versions:
        st.caption(tr("Черновика пока нет.", "No draft yet."))
        return
    d = versions[0]
    if d["source"] == "template":
        offline_badge("офлайн-шаблоном", "offline template")
    st.caption(tr(f"Версия {d['version']} ({d['source']})", f"Version {d['version']} ({d['source']})"))
    body = st.text_area(tr("Черновик", "Draft"), value=d["body"], height=320, key=f"gaps_draft_body_{gid}_{d['version']}")
    if auth.button("label", st, tr("Сохранить как новую версию", "Save as a new version"),
                   key="gaps_draft_save"):
        with auth.audited("label", f"gap #{gid}", {"op": "gap_draft_edit"}):
            gap_drafts.save_edit(engine, gid, body)
            st.rerun()
    for f in (d["checks"] or {}).get("flags", []):
        st.warning(tr(f"Строка {f['line']}: «{untrusted.md(f['text'])}» нет ни в базе знаний, ни в вопросах",
                      f"Line {f['line']}: '{untrusted.md(f['text'])}' is neither in the knowledge base nor in the questions"))
    c1, c2 = st.columns(2)
    c1.download_button("⬇ Markdown", body.encode("utf-8"), f"gap-{gid}.md", key="gaps_dl_md")
    c2.download_button("⬇ Confluence XHTML", gap_drafts.to_confluence(body).encode("utf-8"),
                       f"gap-{gid}.xhtml", key="gaps_dl_xhtml")
    _render_simulate(engine, gid, body)


def _render_simulate(engine: Any, gid: int, body: str) -> None:
    """The what-if of this draft: a sandbox with the draft added, Tier 1 (and Tier 3) before and after."""
    reg = st.text_input(tr("Регрессионный набор", "Regression dataset"), value="demo_golden",
                        key="gaps_regression")
    t3_sample = st.number_input(
        tr("Tier 3: вопросов в выборке (не больше)", "Tier 3: questions to sample (at most)"), 1, 500, 20,
        key="gaps_tier3_sample",
        help=tr("Ответы бота до и после правки (генерация и судья) — только когда настроена LLM; каждый "
                "вопрос стоит двух генераций и до двух вызовов судьи.",
                "The bot's answers before and after the edit (generation and judge) — only when an LLM is "
                "configured; each question costs two generations and up to two judge calls."))
    if auth.button("run", st, tr("Смоделировать этот черновик", "Simulate this draft"),
                   key="gaps_simulate"):
        text, url = body, f"draft://gap-{gid}"

        def build(text: str = text, url: str = url, reg: str = reg, gid: int = gid,  # type: ignore[no-untyped-def]
                  n3: int = int(t3_sample)):
            snap, _ = sandbox.create(engine, [sandbox.Edit("add", url, text, f"gap {gid} draft")])
            return whatif.build_plan(engine, {"sandbox": snap.id, "gaps": [gid], "regression": reg or None,
                                              "tier3_sample": n3})

        jobs.start(build, WHATIF_KEY)


def _render_pick_gap(engine: Any) -> None:
    st.caption(tr("По строке на вопрос: номер строки журнала или текст вопроса, как он записан (регистр, ё и "
                  "пробелы не важны). Повторы того же вопроса в следующих журналах попадут в пробел.",
                  "One question per line: a log row id or the question's text as logged (case, ё and spaces do "
                  "not matter). The same question asked again in later logs joins the gap."))
    picked = st.text_area(tr("Вопросы", "Questions"), key="gaps_pick_questions", height=120)
    pick_name = st.text_input(tr("Название (необязательно)", "Name (optional)"), key="gaps_pick_name")
    if auth.button("label", st, tr("Создать пробел", "Create the gap"), key="gaps_pick_create"):
        lines = [x for x in picked.splitlines() if x.strip()]
        with state.user_errors("Пробел не создан", "The gap was not created"), \
                auth.audited("label", "gaps", {"op": "gap_create", "n": len(lines)}):
            new_gap = create_picked(engine, gaps.refs_from_args(lines), name=pick_name or None)
            st.success(tr(f"Создан пробел #{new_gap.id}: {new_gap.name}", f"Created gap #{new_gap.id}: {new_gap.name}"))


def _render_kb_whatif(engine: Any, all_gaps: list) -> None:
    kb = sandbox.kb_pages(engine)
    url = st.selectbox(tr("Страница", "Page"), [p["url"] for p in kb], key="gaps_kb_page")
    actions = {tr("удалить", "remove"): "remove", tr("заменить", "replace"): "replace"}
    action = actions[st.radio(tr("Правка", "Edit"), list(actions), horizontal=True, key="gaps_kb_action")]
    new_text = ""
    if action == "replace" and url:
        new_text = st.text_area(tr("Новый текст страницы", "The page's new text"),
                                value=sandbox.page_text(engine, url), height=200, key=f"gaps_kb_text_{url}")
    ds = st.text_input(tr("Набор вопросов", "Questions (golden dataset)"), value="demo_golden", key="gaps_kb_ds")
    if auth.button("run", st, tr("Смоделировать", "Simulate"), key="gaps_kb_run") and url:
        edit = sandbox.Edit(action, url, new_text if action == "replace" else None, "app")

        def build_kb(edit: sandbox.Edit = edit, ds: str = ds):  # type: ignore[no-untyped-def]
            snap, _ = sandbox.create(engine, [edit])
            return whatif.build_plan(engine, {"sandbox": snap.id, "datasets": [ds], "regression": ds})

        jobs.start(build_kb, WHATIF_KEY)
    _whatif_view() if not all_gaps else None


init_page_state()
_render_page()
