"""Dataset review — one item at a time or a table: accept / reject (with a reason) / edit, relevant chunks picked
with search, notes. Every content change is a new dataset version."""

from __future__ import annotations

import html
from typing import Any

import pandas as pd
import streamlit as st

from voproshalych_eval.datasets import annotations as A
from voproshalych_eval.datasets import store as datasets
from voproshalych_eval.db.production import read_chunks
from voproshalych_eval.field_words import CHECK_WORDS, QUESTION_TYPE_WORDS, REVIEW_STATUS_WORDS
from voproshalych_eval.generation.picker import highlight_span, search_chunks
from voproshalych_eval.ui import auth, run_view, state, tables, views
from voproshalych_eval.ui.i18n import lang, tr
from voproshalych_eval.ui.widgets import empty_state, page_header, table_with_download

STATUS = REVIEW_STATUS_WORDS


def init_page_state() -> None:
    """The page header."""
    page_header(
        tr("Разметка наборов", "Dataset review"),
        tr("Проверка эталонного набора человеком: вопрос, ответ, чанк с выделенным ответом; принять, отклонить, исправить.",
           "Human review of a golden set: question, answer, the chunk with the answer highlighted; accept, reject, edit."),
        tr(
            "«Принять» и заметки — метаданные проверки, содержимое не меняется. Правка вопроса, ответа или релевантных "
            "чанков и отклонение элемента создают **новую версию** набора (отклонённый элемент не удаляется: он хранится с "
            "причиной и его можно вернуть). Релевантные чанки выбираются в подборщике: поиск по векторам и полнотекстовый, "
            "с адресом страницы; ничего не отмечается автоматически. Клавиши: `Alt+A` — принять, `Alt+X` — отклонить (с причиной), `Alt+E` — правка, `Alt+S` — сохранить правку, `Alt+K` — предыдущий, `Alt+J` — следующий; после решения открывается следующий элемент. Клавиша ввода в поле ничего не принимает.",
            "Accepting and notes are review metadata; the content does not change. Editing the question, the answer or the "
            "relevant chunks, and rejecting an item, make a **new version** of the dataset (a rejected item is not deleted: "
            "it is kept with its reason and can be restored). Relevant chunks are chosen in the picker: vector and full-text "
            "search with the page address; nothing is marked automatically. Keys: `Alt+A` — accept, `Alt+X` — reject (with a reason), `Alt+E` — edit, `Alt+S` — save an edit, `Alt+K` — previous, `Alt+J` — next; a decision opens the next item. Enter in a field accepts nothing.",
        ),
    )


def _render_sidebar(names: list[str], name_labels: dict) -> tuple[str, str]:
    """The dataset and the view; both live in the URL."""
    run_view.bind("rv_name", "dataset", valid=names)  # the dataset and the view live in the URL
    name = st.selectbox(tr("Набор", "Dataset"), names, key="rv_name", format_func=name_labels.get)
    run_view.bind("rv_view", "view", valid=("item", "table"))
    view = st.radio(tr("Вид", "View"), ["item", "table"], horizontal=True, key="rv_view",
                    format_func={"item": tr("по одному", "one at a time"), "table": tr("таблица", "table")}.get)
    return name, view


def _render_counts(ds: datasets.Dataset, table: pd.DataFrame) -> None:
    st.caption(f"{ds.name} v{ds.version} · {len(ds)} · {ds.content_hash[:12]}")
    counts = table["status"].value_counts().to_dict()
    c = st.columns(3)
    for col, s in zip(c, ("pending", "accepted", "rejected"), strict=True):
        col.metric(tr(*STATUS[s]), counts.get(s, 0))
    if n_cut := datasets.n_truncated(ds.records):
        st.info(tr(datasets.truncation_note(n_cut, len(ds), "ru"), datasets.truncation_note(n_cut, len(ds), "en")))


def _render_table(ds: datasets.Dataset, table: pd.DataFrame) -> None:
    status_filter = st.multiselect(tr("Статус", "Status"), list(STATUS), default=list(STATUS), format_func={k: tr(*v) for k, v in STATUS.items()}.get,
                                   placeholder=tr("Выберите…", "Choose…"))
    shown = table[table["status"].isin(status_filter)]
    cols = ["id", "status", "question", "ground_truth_answer", "relevant_chunk_ids", "question_type", "is_question_ok",
            "is_answer_ok", "is_chunk_ok", "reason", "notes"]
    table_with_download(shown[cols], f"{ds.name}_v{ds.version}_review", key="rv_tbl")


def _position(name: str, keys: list[str]) -> str:
    """The session key of the item shown; a link opens its item, a decision the item that followed."""
    pos_key = f"rv_pos_{name}"
    if pos_key not in st.session_state:  # a link opens its item (``?item=3``)
        st.session_state[pos_key] = run_view.url_int("item") or 1
    if after := st.session_state.pop("rv_advance", None):  # a decision opens the item that followed the decided one
        old_keys, old_idx = after
        following = [k for k in old_keys[old_idx + 1:] if k in keys]
        st.session_state[pos_key] = keys.index(following[0]) + 1 if following else len(keys)
    st.session_state[pos_key] = min(max(1, int(st.session_state[pos_key])), len(keys))
    run_view.set_url("item", st.session_state[pos_key])
    return pos_key


def _move(pos_key: str, n: int, step: int) -> None:
    st.session_state[pos_key] = min(max(1, int(st.session_state[pos_key]) + step), n)


def _render_nav(pos_key: str, keys: list[str]) -> int:
    nav = st.columns([1, 1, 1, 3])
    nav[0].button("← " + tr("Предыдущий", "Previous"), shortcut="Alt+K", key="rv_prev", on_click=_move,
                  args=(pos_key, len(keys), -1), disabled=st.session_state[pos_key] <= 1)
    nav[1].button(tr("Следующий", "Next") + " →", shortcut="Alt+J", key="rv_next", on_click=_move,
                  args=(pos_key, len(keys), 1), disabled=st.session_state[pos_key] >= len(keys))
    nav[2].button(tr("Править", "Edit"), shortcut="Alt+E", key="rv_to_edit", on_click=views.open_view,
                  args=("rv_item_view", "edit"))
    nav[3].number_input(tr("Элемент №", "Item no."), 1, len(keys), key=pos_key)
    return int(st.session_state[pos_key]) - 1


def _render_item_head(row: dict, rec: dict, key: str) -> None:
    status = row["status"]
    st.subheader(f"{key} · {tr(*STATUS.get(status, (status, status)))}")
    if status == "rejected":
        st.error(tr("Отклонён: ", "Rejected: ") + str(row.get("reason") or ""))
    meta = rec.get("generation") or {}
    if meta.get("offline"):
        st.warning(tr("Элемент создан офлайн-шаблоном (не LLM).", "This item was made by the offline template generator (not an LLM)."))
    # data (questions, answers, chunk texts) is shown through st.html, escaped: no Markdown link, image or HTML
    # in it is ever interpreted
    st.html(f"<p><b>{tr('Вопрос', 'Question')}:</b> {html.escape(str(rec.get('question') or ''))}</p>")
    if rec.get("dialog_context"):
        st.html(f"<p style='opacity:0.7'>{tr('Перед этим: ', 'Asked before: ')}"
                f"{html.escape(' / '.join(map(str, rec['dialog_context'])))}</p>")
    st.html(f"<p><b>{tr('Эталонный ответ', 'Reference answer')}:</b> {html.escape(str(rec.get('ground_truth_answer') or '—'))}</p>")
    qtype = rec.get("question_type")
    st.caption(tr("Тип: ", "Type: ") + (tr(*QUESTION_TYPE_WORDS[qtype]) if qtype in QUESTION_TYPE_WORDS else str(qtype or "—")) + " · " + tr("источник: ", "source: ")
               + str(rec.get("question_source") or "—") + " · " + tr("чанки: ", "chunks: ") + str(rec.get("relevant_chunk_ids") or []))


def _render_chunk(rec: dict) -> None:
    chunk_text = str(rec.get("chunk_text") or "")
    if not chunk_text:
        st.info(tr("Без релевантного чанка (вопрос без ответа в базе).", "No relevant chunk (a question the knowledge base does not answer)."))
        return
    span = highlight_span(chunk_text, str(rec.get("ground_truth_answer") or ""))
    if span:
        a, b = span
        body = html.escape(chunk_text[:a]) + "<mark>" + html.escape(chunk_text[a:b]) + "</mark>" + html.escape(chunk_text[b:])
    else:
        body = html.escape(chunk_text)
    page_url = rec.get("confluence_url") or "—"
    with st.expander(tr(f"Чанк {rec.get('chunk_id')} · {page_url}", f"Chunk {rec.get('chunk_id')} · {page_url}"),
                     expanded=True):
        if rec.get("chunk_text_truncated"):
            st.caption(tr("`chunk_text` этого элемента обрезан: показано начало чанка.",
                          "This item's `chunk_text` is cut: the start of the chunk is shown."))
        if not span:
            st.caption(tr("Ответ дословно в чанке не найден.", "The answer was not found verbatim in the chunk."))
        st.html(f"<div style='white-space:pre-wrap'>{body}</div>")


def _render_restore(eng: Any, ds: datasets.Dataset, key: str) -> None:
    if auth.button("label", st, tr("Вернуть в набор", "Restore to the dataset"), key=f"rv_restore_{key}"):
        with state.user_errors("Не удалось вернуть", "Could not restore"), \
                auth.audited("label", f"{ds.name}/{key}", {"op": "restore"}):
            A.restore(eng, ds, key)
            st.rerun()


def _render_decision(eng: Any, ds: datasets.Dataset, key: str, rev: Any, keys: list[str], idx: int) -> None:
    # no form: Enter in a field only commits its text; an item is accepted or rejected by its button or its key
    cc = st.columns(3)
    checks = {}
    for col_, check in zip(cc, A.CHECKS, strict=True):
        stored = getattr(rev, check, None) if rev else None
        checks[check] = col_.checkbox(tr(*CHECK_WORDS[check]), value=True if stored is None else bool(stored),
                                      key=f"rv_{check}_{key}")
    notes = st.text_area(tr("Заметки", "Notes"), value=(rev.notes if rev and rev.notes else ""), key=f"rv_notes_{key}")
    reason = st.text_input(tr("Причина отклонения", "Reason for rejection"), key=f"rv_reason_{key}")
    b = st.columns(3)
    do_accept = auth.button("label", b[0], tr("Принять", "Accept"), type="primary", shortcut="Alt+A", key=f"rv_accept_{key}")
    do_reject = auth.button("label", b[1], tr("Отклонить", "Reject"), shortcut="Alt+X", key=f"rv_reject_{key}")
    do_notes = auth.button("label", b[2], tr("Сохранить заметки", "Save notes"), key=f"rv_save_notes_{key}")
    if do_accept:
        with state.user_errors("Не удалось принять", "Could not accept"), \
                auth.audited("label", f"{ds.name}/{key}", {"op": "accept"}):
            A.accept(eng, ds, key, notes=notes, checks=checks)
            st.session_state["rv_advance"] = (keys, idx)
            st.rerun()
    if do_reject:
        if not reason.strip():
            st.error(tr("Укажите причину отклонения.", "Give a reason for the rejection."))
        else:
            with state.user_errors("Не удалось отклонить", "Could not reject"), \
                    auth.audited("label", f"{ds.name}/{key}", {"op": "reject"}):
                A.reject(eng, ds, key, reason, notes=notes, checks=checks)
                st.session_state["rv_advance"] = (keys, idx)
                st.rerun()
    if do_notes:
        with auth.audited("label", f"{ds.name}/{key}", {"op": "notes"}):
            A.set_notes(eng, ds, key, notes)
        st.toast(tr("Заметки сохранены", "Notes saved"))


def _render_edit(eng: Any, ds: datasets.Dataset, key: str, rec: dict) -> None:
    q = st.text_area(tr("Вопрос", "Question"), value=str(rec.get("question") or ""), key=f"rv_edit_q_{key}")
    ans = st.text_area(tr("Эталонный ответ", "Reference answer"), value=str(rec.get("ground_truth_answer") or ""),
                       key=f"rv_edit_a_{key}")
    if auth.button("dataset", st, tr("Сохранить (новая версия)", "Save (new version)"), shortcut="Alt+S",
                   key=f"rv_edit_save_{key}"):
        with state.user_errors("Правка не сохранена", "The edit was not saved"), \
                auth.audited("dataset", f"{ds.name}/{key}", {"op": "edit"}):
            new = A.edit(eng, ds, key, question=q, answer=ans)
            if new.version != ds.version:
                st.toast(tr(f"Версия v{new.version}", f"Version v{new.version}"))
            st.rerun()


def _chunk_pick_frame(eng: Any, ids: list[int], current: list[int], hits: pd.DataFrame) -> pd.DataFrame:
    """The picker's rows: the item's relevant chunks and the search hits, with their pages and ranks."""
    kb = read_chunks(eng, ids=ids).set_index("id")
    rank = {int(r.chunk_id): r for r in hits.itertuples(index=False)}
    return pd.DataFrame([{
        "relevant": i in current, "chunk_id": i, "page": str(kb.loc[i, "url"]) if i in kb.index else "—",
        "vector_rank": getattr(rank.get(i), "vector_rank", None), "fts_rank": getattr(rank.get(i), "fts_rank", None),
        "text": (str(kb.loc[i, "text"])[:300] + "…") if i in kb.index else tr("нет в базе знаний", "not in the knowledge base"),
    } for i in ids])


def _render_chunks(eng: Any, ds: datasets.Dataset, key: str, rec: dict) -> None:
    current = [int(x) for x in rec.get("relevant_chunk_ids") or []]
    query = st.text_input(tr("Поиск чанков (слова или вопрос)", "Search chunks (words or the question)"),
                          value=str(rec.get("question") or ""), key=f"rv_q_{key}")
    hits = search_chunks(eng, query, k=10) if query.strip() else pd.DataFrame(columns=["chunk_id", "url", "text"])
    ids = list(dict.fromkeys(current + [int(i) for i in hits["chunk_id"]]))
    if not ids:
        return
    pick = _chunk_pick_frame(eng, ids, current, hits)
    edited = st.data_editor(pick, hide_index=True, key=f"rv_pick_{key}", disabled=["chunk_id", "page", "vector_rank", "fts_rank", "text"],
                            column_config={**{c: st.column_config.Column(tables.header(c)) for c in pick.columns},
                                           "relevant": st.column_config.CheckboxColumn(tr("релевантен", "relevant"))})
    chosen = [int(r["chunk_id"]) for _, r in edited.iterrows() if r["relevant"]]
    st.caption(tr("Порядок: первый отмеченный станет `chunk_id`.", "Order: the first checked becomes `chunk_id`."))
    if auth.button("dataset", st, tr("Сохранить релевантные чанки (новая версия)", "Save relevant chunks (new version)"), key=f"rv_save_chunks_{key}"):
        with state.user_errors("Чанки не сохранены", "The chunks were not saved"), \
                auth.audited("dataset", f"{ds.name}/{key}", {"op": "relevant_chunks"}):
            A.edit(eng, ds, key, relevant_chunk_ids=chosen)
            st.rerun()


def _render_page() -> None:
    eng = state.engine()
    heads = datasets.list_datasets(eng, "golden", heads_only=True)
    names = [d["name"] for d in heads]
    name_labels = {d["name"]: run_view.dataset_label(d, lang()) for d in heads}  # name@version · n items · kind
    if not names:
        empty_state("Нет эталонных наборов — загрузите демо или создайте набор на странице «Наборы данных».",
                    "No golden datasets — load the demo or generate one on the Datasets page.", demo=True, page="pages/datasets.py")
        st.stop()
    with st.sidebar:
        name, view = _render_sidebar(names, name_labels)
    ds = datasets.get_dataset(eng, name, "golden")
    table = A.review_table(eng, ds)
    _render_counts(ds, table)
    if view == "table":
        _render_table(ds, table)
        st.stop()
    keys = table["id"].tolist()
    pos_key = _position(name, keys)
    idx = _render_nav(pos_key, keys)
    row = table.iloc[idx].to_dict()
    key = str(row["id"])
    rev = A.reviews(eng, ds.name).get(key)
    rec = ds.records[ds.keys().index(key)] if key in list(ds.keys()) else (rev.item if rev and rev.item else {})
    _render_item_head(row, rec, key)
    _render_chunk(rec)
    if row["status"] == "rejected":
        _render_restore(eng, ds, key)
        st.stop()
    item_view = views.tabs("rv_item_view", {"decision": ("Решение", "Decision"), "edit": ("Правка", "Edit"),
                                       "chunks": ("Релевантные чанки", "Relevant chunks")})
    with item_view["decision"]:
        _render_decision(eng, ds, key, rev, keys, idx)
    with item_view["edit"]:
        _render_edit(eng, ds, key, rec)
    with item_view["chunks"]:
        _render_chunks(eng, ds, key, rec)


init_page_state()
_render_page()
