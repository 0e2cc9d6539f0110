"""Datasets — generate golden sets from the knowledge base, list them, versions / history / diff, export / import,
annotation files, staleness against the knowledge base."""

from __future__ import annotations

import json
from typing import Any

import pandas as pd
import streamlit as st

from voproshalych_eval.datasets import annotations as A
from voproshalych_eval.datasets import store as datasets
from voproshalych_eval.datasets import versions as dv
from voproshalych_eval.datasets.staleness import check_all, check_dataset, source_note, source_text
from voproshalych_eval.db import snapshots
from voproshalych_eval.db.production import inspect_schema, read_chunks
from voproshalych_eval.engine import runs
from voproshalych_eval.field_words import QUESTION_TYPE_WORDS
from voproshalych_eval.generation.gate_review import gate_agreement, run_review
from voproshalych_eval.generation.plan import build_plan
from voproshalych_eval.generation.sampling import QUESTION_TYPES as TYPES
from voproshalych_eval.llm.providers import configured_providers
from voproshalych_eval.ui import auth, jobs, paid_run, run_view, state, tables, uploads, views
from voproshalych_eval.ui.i18n import tr
from voproshalych_eval.ui.run_page import start_confirmed
from voproshalych_eval.ui.widgets import empty_state, json_download, page_header, table_with_download

KEY = "datasets_gen_run_id"
TYPE_LABELS = QUESTION_TYPE_WORDS
GATE_LABELS = {
    "generation": ("не удалось разобрать ответ модели", "no usable reply"),
    "no_template": ("нет подходящего шаблона", "no template applies"),
    "verbatim": ("копирует чанк", "copies the chunk"),
    "support": ("ответ не подтверждён чанком", "answer not supported"),
    "answerable": ("«без ответа», но база отвечает", "'unanswerable' but answered"),
    "near_duplicate_new": ("дубликат в новом наборе", "near-duplicate in the new set"),
    "near_duplicate_existing": ("дубликат существующего набора", "near-duplicate of an existing set"),
    "well_formed": ("не вопрос студента (преамбула модели, просьба об ответе)", "not a student question (preamble, asks for an answer)"),
    "qa_fit": ("ответ не отвечает на вопрос или искажён", "answer does not answer the question, or is garbled"),
}

WARNINGS_RU = {
    "size_below_pages": "Размер {size} меньше числа страниц ({pages}): не каждой странице достанется вопрос.",
    "no_second_chunk": "Слотов «из нескольких чанков», запланированных как фактические: {n} — у страницы один чанк и нет "
                       "связанной страницы (нет сохранённых векторов).",
    "incomplete": "Не сгенерировано слотов: {n}. Продолжите запуск, чтобы сохранить набор.",
    "empty": "Ни один вопрос не прошёл фильтры; набор не сохранён.",
    "pages_uncovered": "Страниц без вопросов: {n}.",
}


def _t(pair: tuple[str, str]) -> str:
    return tr(*pair)


def _review_block(run_id: int) -> None:
    """What people later rejected of what this run kept, and each gate's agreement with their decisions."""
    rv = run_review(state.engine(), runs.get_run(state.engine(), run_id), runs.item_records(state.engine(), run_id))
    st.markdown("**" + tr("Проверка людьми", "Human review") + "**")
    if rv.get("missing"):
        st.caption(tr(f"Версии {rv['dataset_ref']}, которую сохранил этот запуск, больше нет в хранилище.",
                      f"The version {rv['dataset_ref']} this run stored is no longer in the store."))
        return
    c = st.columns(3)
    c[0].metric(tr("Проверено", "Reviewed"), f"{rv['n_reviewed']} / {rv['n_kept']}")
    c[1].metric(tr("Отклонено на проверке", "Rejected in review"), rv["n_rejected"])
    share = rv["rejected_share"]
    c[2].metric(tr("Доля отклонённых из сохранённых", "Share of kept items rejected"),
                "—" if share is None else f"{100 * share:.0f}%")
    if rv["n_reviewed"]:
        ci = rv["ci"]
        st.caption(tr(f"Из проверенных отклонено {100 * rv['rejected_share_reviewed']:.0f}% (95% ДИ "
                      f"{100 * ci[0]:.0f}–{100 * ci[1]:.0f}%).",
                      f"Of the reviewed items {100 * rv['rejected_share_reviewed']:.0f}% were rejected (95% CI "
                      f"{100 * ci[0]:.0f}–{100 * ci[1]:.0f}%)."))
    else:
        st.caption(tr("Элементы этого набора ещё не проверяли (страница «Разметка наборов»).",
                      "No item of this set has been reviewed yet (the Dataset review page)."))
        return
    if not st.toggle(tr("Согласие фильтров с решениями проверяющих", "The gates' agreement with the reviewers"),
                     key=f"gen_gate_review_{run_id}"):
        return
    rows = []
    for gate, rep in gate_agreement(rv["items"], thresholds=rv["thresholds"], n_resamples=300).items():
        cal = rep.get("calibration") or {}
        held = (cal.get("held_out") or {}).get("kappa") or {}
        kappa = (rep.get("kappa") or {}).get("value")
        rows.append({tr("фильтр", "gate"): _t(GATE_LABELS.get(gate, (gate, gate))), "n": rep["n"],
                     tr("каппа", "kappa"): None if kappa is None else round(kappa, 3),
                     tr("пропущено, но отклонено", "passed but rejected"): rep["confusion"]["matrix"][0][-1]
                     if rep.get("confusion") and rep["confusion"]["labels"][0] == 0 else 0,
                     tr("порог", "threshold"): cal.get("threshold"),
                     tr("откалиброванный порог", "calibrated threshold"): cal.get("calibrated"),
                     tr("каппа на отложенных", "held-out kappa"): None if held.get("value") is None
                     else round(held["value"], 3),
                     tr("принять порог", "adopt"): tr("да", "yes") if cal.get("adopt") else (tr("нет", "no") if cal else "")})
    st.dataframe(pd.DataFrame(rows), hide_index=True)
    st.caption(tr("Каппа Коэна между решением фильтра (пропустить / отбросить) и решением проверяющего (принять / "
                  "отклонить). Порог калибруется по k блокам: каждый элемент решается порогом, подобранным без него.",
                  "Cohen's kappa between the gate's decision (pass / drop) and the reviewer's (accept / reject). The "
                  "threshold is calibrated over k folds: every item is decided by a threshold chosen without it."))


def init_page_state() -> None:
    """The page header."""
    page_header(
        tr("Наборы данных", "Datasets"),
        tr("Эталонные наборы для Tier 1–3: создать из базы знаний, хранить версии, выгружать и загружать.",
           "Golden sets for Tiers 1–3: generate them from the knowledge base, keep versions, export and import."),
        tr(
            "**Создать**: вопросы пишет LLM по чанкам базы знаний (по умолчанию поровну на каждую страницу), каждый "
            "кандидат проходит фильтры: вопрос не копирует чанк, ответ подтверждается чанком (судья), «вопрос без ответа» "
            "не находит ответа в ближайших чанках, почти-дубликаты (косинус ≥ порога) отбрасываются — и внутри нового "
            "набора, и относительно уже сохранённых. Что отброшено каждым фильтром — в отчёте запуска. Без LLM работает "
            "**офлайн-генератор шаблонов**: вопросы механически собраны из предложений чанка, такие элементы помечены и "
            "**не заменяют** набор, созданный LLM.\n\n"
            "**Версии**: каждая правка содержимого создаёт новую версию (хеш содержимого); запуск помнит версию, на которой "
            "шёл (`имя@v2` в CLI). **Актуальность**: если чанки в базе изменились, набор помечается устаревшим и "
            "предлагается новый чанк (та же страница, наибольшее сходство).",
            "**Generate**: an LLM writes questions from knowledge-base chunks (by default evenly over every page); each "
            "candidate passes gates: the question does not copy the chunk, the answer is supported by the chunk (judge), an "
            "'unanswerable' question is not answered by its nearest chunks, near-duplicates (cosine ≥ threshold) are "
            "dropped — within the new set and against stored sets. The run's report says what each gate dropped. Without "
            "an LLM the **offline template generator** works: questions are mechanically built from the chunk's "
            "sentences; such items are marked and are **not a substitute** for an LLM-generated set.\n\n"
            "**Versions**: every content change makes a new version (content hash); a run remembers the version it used "
            "(`name@v2` in the CLI). **Staleness**: when chunks change in the knowledge base the dataset is flagged and "
            "the likely new chunk is suggested (same page, highest similarity).",
        ),
    )


def _render_page() -> None:
    eng = state.engine()
    view = views.tabs("datasets_view", {
        "list": ("Наборы", "Datasets"), "generate": ("Создать", "Generate"), "versions": ("Версии", "Versions"),
        "io": ("Экспорт и импорт", "Export and import"), "stale": ("Актуальность", "Staleness"),
    })
    tab_list, tab_gen, tab_ver, tab_io, tab_stale = (view[n] for n in ("list", "generate", "versions", "io", "stale"))

    heads = datasets.list_datasets(eng, heads_only=True)
    golden_names = [d["name"] for d in heads if d["kind"] == "golden"]
    with tab_list:
        _render_list(heads)
    with tab_gen:
        _render_generate(eng)
    with tab_ver:
        _render_versions(eng, golden_names)
    with tab_io:
        _render_io(eng, golden_names)
    with tab_stale:
        _render_staleness(eng, golden_names, tab_stale)


# ---------------------------------------------------------------- list


def _render_list(heads: list[dict]) -> None:
    if not heads:
        empty_state("Наборов пока нет — загрузите демо или создайте набор.", "No datasets yet — load the demo or generate one.", demo=True)
    else:
        df = pd.DataFrame(heads)[["name", "kind", "version", "n_items", "content_hash", "source", "created_at"]]
        df["content_hash"] = df["content_hash"].str.slice(0, 12)
        df.columns = [tr("имя", "name"), tr("вид", "kind"), tr("версия", "version"), tr("элементов", "items"),
                      tr("хеш", "hash"), tr("источник", "source"), tr("создан", "created")]
        table_with_download(df, "datasets", key="ds_list")


# ---------------------------------------------------------------- generate


def _render_generate(eng: Any) -> None:
    has_llm = bool(configured_providers(state.settings()))
    if not has_llm:
        st.warning(tr(
            "LLM не настроен: доступен только офлайн-генератор шаблонов. Его вопросы механически собраны из предложений "
            "чанков, помечены как офлайн и не заменяют набор, созданный LLM.",
            "No LLM is configured: only the offline template generator is available. Its questions are mechanically "
            "built from the chunks' sentences, marked offline, and are not a substitute for an LLM-generated set.",
        ))
    pages_all, source_types = _kb_pages(eng)
    submitted_params = _render_gen_form(has_llm, pages_all, source_types)
    estimate = None
    if submitted_params is not None and not submitted_params["offline"]:
        slots = round(submitted_params["size"] * (1 + submitted_params["oversample"]))
        # one generation call and one judge-gate call per slot (the gates' judge defaults to the generator)
        estimate = paid_run.estimate(2 * slots)
    start_confirmed(KEY, submitted_params, estimate, build_plan)
    jobs.job_panel(KEY)
    run = run_view.pick_run("dataset_generation", KEY, label=tr("Запуск генерации", "Generation run"))
    if run is None:
        empty_state("Запусков генерации ещё не было.", "No generation runs yet.")
        return
    jobs.run_caption(run)
    m = run.metrics or {}
    if run.offline:
        st.warning(tr("Офлайн-шаблоны: этот набор не заменяет набор, созданный LLM.",
                      "Offline templates: this set is not a substitute for an LLM-generated set."))
    if m:
        _render_gen_metrics(run, m)
    items = jobs.items_frame(run.id)
    if not items.empty:
        with st.expander(tr("Все кандидаты с решениями фильтров", "Every candidate with the gates' decisions")):
            cols = [c for c in ("item_key", "status", "question_type", "question", "answer", "kept", "dropped_by", "error")
                    if c in items.columns]
            table_with_download(items[cols], f"generation_run{run.id}_candidates", key=f"genc{run.id}")


def _kb_pages(eng: Any) -> tuple[list[str], list[str]]:
    """The knowledge base's pages and source types (empty without a chunk table)."""
    pages_all: list[str] = []
    source_types: list[str] = []
    if inspect_schema(eng).has_chunk:
        kb = read_chunks(eng)
        pages_all = sorted(kb["url"].astype(str).unique())
        source_types = sorted({s for s in kb["source_type"].dropna().astype(str)})
    return pages_all, source_types


def _render_gen_form(has_llm: bool, pages_all: list[str], source_types: list[str]) -> dict | None:
    """The generation form; the parameters of a valid submit."""
    with st.form("gen_form", enter_to_submit=False):  # Enter in a field never starts a (paid) generation
        c1, c2, c3 = st.columns(3)
        size = c1.number_input(tr("Сколько вопросов", "Number of questions"), 1, 5000, 50)
        strategy = c2.selectbox(tr("Распределение по страницам", "Sampling over pages"), ["uniform", "proportional"],
                                format_func={"uniform": tr("поровну на страницу", "uniform per page"),
                                             "proportional": tr("пропорционально числу чанков", "proportional to chunks")}.get)
        name = c3.text_input(tr("Имя набора (пусто — по времени)", "Dataset name (empty: by time)"), "")
        st.caption(tr("Доли типов вопросов (0 — тип не нужен)", "Question-type weights (0: not wanted)"))
        wcols = st.columns(len(TYPES))
        weights = {t: wcols[i].number_input(_t(TYPE_LABELS[t]), 0, 10, 1, key=f"gen_w_{t}") for i, t in enumerate(TYPES)}
        gen_lang = st.selectbox(tr("Язык вопросов (промптов)", "Language of the questions (prompts)"), ["ru", "en"],
                                format_func={"ru": tr("русский", "Russian"), "en": tr("английский", "English")}.get, key="gen_lang",
                                help=tr("Не зависит от языка интерфейса.", "Independent of the interface language."))
        pages = st.multiselect(tr("Только страницы (пусто — все)", "Only pages (empty: all)"), pages_all,
                               placeholder=tr("Все страницы", "All pages"))
        stypes = st.multiselect(tr("Только типы источников", "Only source types"), source_types,
                                placeholder=tr("Все типы", "All types")) if source_types else []
        c1, c2, c3, c4 = st.columns(4)
        offline = c1.checkbox(tr("Офлайн (шаблоны, без LLM)", "Offline (templates, no LLM)"), value=not has_llm,
                              disabled=not has_llm)
        temperature = c2.slider(tr("Температура", "Temperature"), 0.0, 1.5, 0.7, 0.1)
        oversample = c3.slider(tr("Запас слотов", "Spare slots"), 0.0, 1.0, 0.2, 0.05,
                               help=tr("Доля дополнительных слотов на случай отбрасывания фильтрами.",
                                       "Extra slots, as a share of the size, to make up for gate drops."))
        concurrency = c4.slider(tr("Параллельно", "Concurrency"), 1, 16, 8)
        submitted = auth.submit("run", st, tr("Создать набор", "Generate"), type="primary")
    types = {t: float(w) for t, w in weights.items() if w > 0}
    submitted_params = None
    if submitted:
        if not types:
            st.error(tr("Дайте хотя бы одному типу вопросов долю больше 0.", "Give at least one question type a weight above 0."))
        else:
            submitted_params = {"size": int(size), "types": types, "strategy": strategy, "pages": pages or None,
                                "source_types": stypes or None, "name": name.strip() or None,
                                "offline": True if offline or not has_llm else None, "temperature": float(temperature),
                                "oversample": float(oversample), "concurrency": int(concurrency), "lang": gen_lang}
    return submitted_params


def _render_gen_metrics(run: runs.Run, m: dict) -> None:
    c = st.columns(4)
    c[0].metric(tr("Элементов", "Items"), f"{m.get('n_items', 0)} / {m.get('size_requested', '—')}")
    c[1].metric(tr("Страниц покрыто", "Pages covered"), f"{m.get('pages_covered', 0)} / {m.get('pages_total', '—')}")
    c[2].metric(tr("Отброшено", "Dropped"), sum((m.get("dropped") or {}).values()))
    c[3].metric(tr("Токены", "Tokens"), m.get("tokens") or 0)
    cost = ((m.get("cost_usd") or {}).get("total") or {}).get("value") if isinstance(m.get("cost_usd"), dict) else None
    if m.get("cost_usd"):
        st.caption(tr("Стоимость: ", "Cost: ") + (f"${cost:.4f}" if cost is not None
                                                  else tr("неизвестна (нет цены модели)", "unknown (no price for the model)")))
    if m.get("dataset_ref"):
        st.success(tr(f"Сохранён набор **{m['dataset_ref']}**.", f"Stored dataset **{m['dataset_ref']}**."))
    for w in m.get("warnings") or []:
        if not isinstance(w, dict):
            w = {"code": None, "message": str(w)}
        ru = WARNINGS_RU.get(w.get("code"), w.get("message", ""))
        st.info(tr(ru.format(**{k: v for k, v in w.items() if k not in ("code", "message")}), w.get("message", "")))
    _render_gen_tables(m)
    json_download(m, f"generation_run{run.id}", key=f"genm{run.id}")
    if m.get("dataset_ref"):
        _review_block(run.id)


def _render_gen_tables(m: dict) -> None:
    col1, col2 = st.columns(2)
    with col1:
        st.markdown("**" + tr("По типам", "By type") + "**")
        bt = pd.DataFrame([{tr("тип", "type"): _t(TYPE_LABELS.get(k, (k, k))), tr("получено", "kept"): v,
                            tr("запрошено", "requested"): (m.get("requested_by_type") or {}).get(k)}
                           for k, v in (m.get("by_type") or {}).items()])
        st.dataframe(bt, hide_index=True)
    with col2:
        st.markdown("**" + tr("Что отбросили фильтры", "What the gates dropped") + "**")
        dr = pd.DataFrame([{tr("фильтр", "gate"): _t(GATE_LABELS.get(k, (k, k))), tr("отброшено", "dropped"): v}
                           for k, v in (m.get("dropped") or {}).items()])
        st.dataframe(dr, hide_index=True)


# ---------------------------------------------------------------- versions


def _render_versions(eng: Any, golden_names: list[str]) -> None:
    if not golden_names:
        empty_state("Нет эталонных наборов.", "No golden datasets.")
        return
    vname = st.selectbox(tr("Набор", "Dataset"), golden_names, key="ver_name")
    hist = dv.history_frame(eng, vname)
    tables.show(hist, f"{vname}_history", key="ver_hist")
    versions = hist["version"].tolist() if len(hist) else []
    if len(versions) < 2:
        st.caption(tr("У набора одна версия.", "The dataset has one version."))
        return
    _render_version_diff(eng, vname, versions)


def _render_version_diff(eng: Any, vname: str, versions: list) -> None:
    c1, c2 = st.columns(2)
    va = c1.selectbox(tr("Версия A", "Version A"), versions, index=1, key="ver_a")
    vb = c2.selectbox(tr("Версия B", "Version B"), versions, index=0, key="ver_b")
    diff = dv.diff_versions(eng, vname, int(va), int(vb))
    st.caption(tr(f"Добавлено {len(diff.added)}, удалено {len(diff.removed)}, изменено {len(diff.changed)}",
                  f"Added {len(diff.added)}, removed {len(diff.removed)}, changed {len(diff.changed)}"))
    table_with_download(dv.diff_frame(diff), f"{vname}_v{va}_v{vb}_diff", key="ver_diff")
    with st.form("revert_form", enter_to_submit=False):
        vr = st.selectbox(tr("Вернуть содержимое версии", "Restore the content of version"), versions[1:], key="ver_rev")
        if auth.submit("dataset", st, tr("Вернуть (новой версией)", "Restore (as a new version)")):
            with state.user_errors("Не удалось вернуть версию", "Could not restore the version"), \
                    auth.audited("dataset", vname, {"op": "revert", "to_version": int(vr)}):
                new = dv.revert(eng, vname, int(vr))
                st.success(tr(f"Версия v{new.version} = содержимое v{vr}.", f"Version v{new.version} = content of v{vr}."))


# ---------------------------------------------------------------- export / import


def _render_io(eng: Any, golden_names: list[str]) -> None:
    if golden_names:
        _render_export(eng, golden_names)
    _render_annotation_import(eng)
    _render_dataset_import(eng)


def _render_export(eng: Any, golden_names: list[str]) -> None:
    ename = st.selectbox(tr("Набор", "Dataset"), golden_names, key="io_name")
    ds = datasets.get_dataset(eng, ename, "golden")
    st.caption(f"{ds.name} v{ds.version} · {len(ds)} · {ds.content_hash[:12]}")
    if n_cut := datasets.n_truncated(ds.records):
        st.info(tr(datasets.truncation_note(n_cut, len(ds), "ru"), datasets.truncation_note(n_cut, len(ds), "en")))
    c1, c2, c3, c4 = st.columns(4)
    c1.download_button("⬇ JSON", auth.export_bytes(json.dumps(ds.records, ensure_ascii=False, indent=1)),
                       f"{ds.name}_v{ds.version}.json", "application/json", key="io_json")
    c2.download_button("⬇ CSV", auth.export_bytes(datasets.export_csv(ds.records)), f"{ds.name}_v{ds.version}.csv", "text/csv", key="io_csv")
    c3.download_button(tr("⬇ Разметка CSV", "⬇ Annotation CSV"), auth.export_bytes(A.export_annotations(eng, ds.name, "csv")),
                       f"{ds.name}_v{ds.version}_annotation.csv", "text/csv", key="io_ann_csv")
    c4.download_button(tr("⬇ Разметка JSON", "⬇ Annotation JSON"), auth.export_bytes(A.export_annotations(eng, ds.name, "json")),
                       f"{ds.name}_v{ds.version}_annotation.json", "application/json", key="io_ann_json")
    st.caption(tr(
        "Файл разметки: колонки `is_question_ok`, `is_answer_ok`, `is_chunk_ok` (1/0), `notes`, `reason`; можно править "
        "`question`, `ground_truth_answer`, `relevant_chunk_ids`. Загрузка применяет всё одной новой версией.",
        "Annotation file: columns `is_question_ok`, `is_answer_ok`, `is_chunk_ok` (1/0), `notes`, `reason`; "
        "`question`, `ground_truth_answer`, `relevant_chunk_ids` may be edited. Importing applies it all as one new version.",
    ))


def _render_annotation_import(eng: Any) -> None:
    st.subheader(tr("Загрузить файл разметки", "Import an annotation file"))
    up = st.file_uploader(tr("CSV или JSON", "CSV or JSON"), type=["csv", "json"], key="io_ann_up")
    skip_bad = st.checkbox(tr("Применить хорошие строки, плохие перечислить", "Apply the good rows, list the bad ones"), key="io_skip")
    merge = st.checkbox(tr("Файл от старой версии: применить только изменённые в нём ячейки (трёхстороннее слияние)",
                           "A file from an older version: apply only the cells changed in it (three-way merge)"), key="io_merge")
    if up is not None and auth.button("label", st, tr("Применить разметку", "Apply the annotations"), key="io_apply"):
        auth.require("label", "uploaded file")
        try:
            up_name, up_data = uploads.read(up)
            rep = A.import_annotations(eng, up_name, data=up_data, skip_bad_rows=skip_bad, merge=merge)
            auth.record("label", rep.dataset, {"op": "import_annotations", "version": rep.version_after,
                                               "rows": rep.n_applied})
            st.success(tr(
                f"{rep.dataset}: v{rep.version_before} → v{rep.version_after}; применено строк {rep.n_applied} из {rep.n_rows}; "
                f"правок {len(rep.edited)}, отклонено {len(rep.rejected)}, возвращено {len(rep.restored)}, принято {len(rep.accepted)}.",
                f"{rep.dataset}: v{rep.version_before} → v{rep.version_after}; {rep.n_applied} of {rep.n_rows} rows applied; "
                f"edited {len(rep.edited)}, rejected {len(rep.rejected)}, restored {len(rep.restored)}, accepted {len(rep.accepted)}.",
            ))
            if rep.errors:
                tables.show(pd.DataFrame(rep.errors), "annotation_errors", key="io_ann_errors")
        except A.AnnotationImportError as exc:
            st.error(tr("Файл не применён: ", "The file was not applied: ") + str(exc))
            tables.show(pd.DataFrame(exc.errors), "annotation_errors", key="io_ann_errors")
        except Exception as exc:  # noqa: BLE001 - shown as a sentence
            st.error(str(exc))


def _render_dataset_import(eng: Any) -> None:
    st.subheader(tr("Загрузить набор данных", "Import a dataset"))
    up2 = st.file_uploader(tr("Эталонный набор (JSON, JSONL, CSV)", "Golden set (JSON, JSONL, CSV)"), type=["json", "jsonl", "csv"],
                           key="io_ds_up")
    iname = st.text_input(tr("Имя (пусто — имя файла)", "Name (empty: the file name)"), key="io_ds_name")
    if up2 is not None and auth.button("dataset", st, tr("Сохранить набор", "Store the dataset"), key="io_store"):
        with state.user_errors("Набор не сохранён", "The dataset was not stored"):
            up2_name, up2_data = uploads.read(up2)
            nm = iname.strip() or up2_name.rsplit(".", 1)[0]
            with auth.audited("dataset", nm, {"op": "import"}):
                stored = datasets.store_file(eng, up2_name, "golden", name=nm, data=up2_data)
            st.success(tr(f"Сохранён {stored.name} v{stored.version} ({len(stored)} элементов).",
                          f"Stored {stored.name} v{stored.version} ({len(stored)} items)."))
            if n_cut := datasets.n_truncated(stored.records):
                st.info(tr(datasets.truncation_note(n_cut, len(stored), "ru"), datasets.truncation_note(n_cut, len(stored), "en")))


# ---------------------------------------------------------------- staleness


def _render_staleness(eng: Any, golden_names: list[str], tab_stale: Any) -> None:
    st.caption(tr(
        "Набор устаревает, когда чанки, на которые он ссылается, удалены, изменены или перенесены на другую страницу.",
        "A dataset is stale when chunks it references were deleted, changed or moved to another page.",
    ))
    if tab_stale.open is not False:  # the source check reads the whole source: only in the open view
        _render_source_note(eng)
    if golden_names and st.button(tr("Проверить все наборы", "Check every dataset"), key="stale_all"):
        rows = [r.summary() for r in check_all(eng)]
        st.session_state["stale_summary"] = rows
    if st.session_state.get("stale_summary"):
        sdf = pd.DataFrame(st.session_state["stale_summary"])
        sdf["by_kind"] = sdf["by_kind"].map(lambda d: ", ".join(f"{k} {v}" for k, v in d.items() if v))
        tables.show(sdf, "staleness", key="stale_summary_tbl")
    if golden_names:
        _render_stale_details(eng, golden_names)


def _render_source_note(eng: Any) -> None:
    note = source_note(eng)
    if not note:
        return
    st.warning(tr(source_text(note, "ru"), source_text(note, "en")))
    if auth.button("dataset", st, tr("Сделать снимок базы знаний", "Take a knowledge-base snapshot"), key="stale_refresh"):
        auth.require("dataset", "snapshot")
        with st.spinner(tr("Снимаю базу знаний…", "Taking a snapshot…")):
            snap = snapshots.take(eng)
        auth.record("dataset", f"snapshot #{snap.id}", {"op": "snapshot"})
        st.session_state.pop("stale_summary", None)
        st.success(tr(f"Снимок #{snap.id} сделан; проверьте наборы снова.",
                      f"Snapshot #{snap.id} taken; check the datasets again."))


def _render_stale_details(eng: Any, golden_names: list[str]) -> None:
    sname = st.selectbox(tr("Подробно для набора", "Details for"), golden_names, key="stale_name")
    if st.button(tr("Проверить и предложить чанки", "Check and suggest chunks"), key="stale_one"):
        with st.spinner(tr("Сравниваю с базой знаний…", "Comparing with the knowledge base…")):
            rep = check_dataset(eng, sname)
        if not rep.stale:
            st.success(tr("Набор актуален.", "The dataset is up to date."))
        else:
            st.warning(tr(f"Устарело элементов: {len(rep.affected)} из {rep.n_items}.",
                          f"Stale items: {len(rep.affected)} of {rep.n_items}."))
            rows = [{"item_key": a.item_key, "question": a.question,
                     "problems": "; ".join(f"{p['kind']} {p.get('chunk_id') or p.get('old_url')}" for p in a.problems),
                     "suggested_chunk": (a.suggestion or {}).get("chunk_id"),
                     "similarity": (a.suggestion or {}).get("similarity")} for a in rep.affected]
            table_with_download(pd.DataFrame(rows), f"{sname}_stale", key="stale_tbl")
            st.caption(tr("Исправить: страница «Разметка наборов» → выбрать чанк в подборщике (новая версия).",
                          "To fix: the 'Dataset review' page → pick the chunk in the picker (a new version)."))


init_page_state()
_render_page()
