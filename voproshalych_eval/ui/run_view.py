"""Which run a page shows, and the run view's state in the URL.

One rule for every run page (:func:`choose_run`): **the run the page just made; otherwise the URL's run
(``?run=42``); otherwise the latest run of the page's plan** — never "the latest run of the newest dataset"
(after generating a set, Tier 1 once said "no run yet" with four runs present). The dataset picker of the
result block defaults to the dataset of that run, names each dataset ``name@version · n items · kind`` and
says how many runs are on other datasets.

The run view in order (:func:`run_section`): the job panel of a run being made → the dataset and run
pickers → the empty state → the caption (verdict first) → a "copy link" action. Pages then draw their cards.

URLs are state: the picked run and dataset, comparisons, filters, the open tab and the language live in
``st.query_params`` (:func:`bind` for a widget, :func:`set_url` for a value); a link opens the same view in a
new session. Selections (points on a map, rows of a table) belong to one run: :func:`scope_to_run` drops
them when another run is shown.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any
from urllib.parse import urlencode

import streamlit as st

from voproshalych_eval.datasets.store import list_datasets
from voproshalych_eval.engine import describe, executor, runs
from voproshalych_eval.metrics.formatting import format_count
from voproshalych_eval.ui import state
from voproshalych_eval.ui.i18n import fmt_count, lang, remember_choice, tr
from voproshalych_eval.ui.url_state import (  # noqa: F401 - pages call them through run_view too
    bind,
    parse_bool,
    parse_optional_int,
    set_url,
    url_int,
    url_ints,
    url_value,
)
from voproshalych_eval.ui.widgets import empty_state

#: dataset kinds in words
KIND_WORDS: dict[str, tuple[str, str]] = {
    "golden": ("золотой", "golden"), "judge": ("для судей", "judge"), "dialogs": ("диалоги", "dialogs"),
    "samples": ("ответы бота", "samples"),
}
RUN_PARAM, DATASET_PARAM = "run", "dataset"
MAX_RUNS = 200


# ------------------------------------------------------------------------------------------- the rule


def choose_run(ids: Sequence[int], *, just_made: int | None = None, url_run: int | None = None) -> int | None:
    """The run a page shows among ``ids`` (its plan's runs, newest first): the one it just made, else the
    URL's, else the latest. A run that is not among ``ids`` is skipped (deleted, another plan's)."""
    for wanted in (just_made, url_run):
        if wanted is not None and wanted in ids:
            return wanted
    return ids[0] if ids else None


# ------------------------------------------------------------------------------------------- the URL


def link() -> str:
    """The address of this view: the page's URL with every state parameter (run, dataset, tab, language…)."""
    query = urlencode({k: st.query_params.get(k) for k in st.query_params})
    base = ""
    try:
        base = str(st.context.url or "").split("?", 1)[0]
    except Exception:  # noqa: BLE001 - outside a browser session (tests) the address is relative
        base = ""
    return f"{base}?{query}" if query else (base or "?")


def copy_link(key: str) -> None:
    """The "copy link" action of a run view: the link in a code box with Streamlit's copy button."""
    # opening it reruns the page: the link is then built from the URL as the previous run left it (a tab or a run
    # picked in that run is written to the URL after this point of the page)
    with st.popover(tr("🔗 Ссылка на этот вид", "🔗 Link to this view"), key=f"{key}_link", on_change="rerun"):
        st.caption(tr("Скопируйте ссылку (кнопка справа): она откроет этот же запуск, вкладку и язык.",
                      "Copy the link (button on the right): it opens this same run, tab and language."))
        st.code(link(), language=None, wrap_lines=True)


# ------------------------------------------------------------------------------------------- selections


def scope_to_run(scope: str, run_id: int | None, keys: Iterable[str], params: Iterable[str] = ()) -> None:
    """Selections belong to one run: when page ``scope`` shows another run than before in this session, forget
    ``keys`` (and the URL ``params`` that hold them). The first view of a session keeps what its link says."""
    marker = f"__shown_run_{scope}"
    if marker in st.session_state and st.session_state[marker] != run_id:
        for k in keys:
            st.session_state.pop(k, None)
        for p in params:
            set_url(p, None)
    st.session_state[marker] = run_id


# ------------------------------------------------------------------------------------------- datasets


def dataset_label(d: Mapping[str, Any], ui_lang: str) -> str:
    """``name@v2 · 20 items · golden`` (a stored content without a version: its short hash)."""
    version = f"@v{d['version']}" if d.get("version") else (f"@{str(d.get('content_hash'))[:8]}" if d.get("content_hash") else "")

    n = d.get("n_items")
    word = _ru_plural(int(n), "элемент", "элемента", "элементов") if ui_lang == "ru" and n is not None else (
        "item" if n == 1 else "items")
    size = "" if n is None else f" · {format_count(n, ui_lang)} {word}"
    kind = KIND_WORDS.get(str(d.get("kind")), (str(d.get("kind") or ""),) * 2)[0 if ui_lang == "ru" else 1]
    return f"{d.get('name') or '—'}{version}{size}" + (f" · {kind}" if kind else "")


def _ru_plural(n: int, one: str, few: str, many: str) -> str:
    """The Russian word form for ``n`` (1 элемент, 2 элемента, 5 элементов, 21 элемент, 11 элементов)."""
    if n % 10 == 1 and n % 100 != 11:
        return one
    return few if n % 10 in (2, 3, 4) and n % 100 not in (12, 13, 14) else many


def _dataset_labels(run_list: Sequence[runs.Run]) -> dict[int | None, str]:
    ui_lang = lang()
    stored = {int(d["id"]): d for d in list_datasets(state.engine())}
    out: dict[int | None, str] = {}
    for r in run_list:
        if r.dataset_id in out:
            continue
        d = stored.get(int(r.dataset_id)) if r.dataset_id is not None else None
        out[r.dataset_id] = dataset_label(d, ui_lang) if d else (r.dataset_name or tr("без набора", "no dataset"))
    return out


def _default_run(tier: str, url_param: str = RUN_PARAM) -> runs.Run | None:
    all_runs = runs.list_runs(state.engine(), tier=tier, limit=MAX_RUNS)
    chosen = choose_run([r.id for r in all_runs], url_run=url_int(url_param))
    return next((r for r in all_runs if r.id == chosen), None)


def default_dataset_id(tier: str) -> int | None:
    """The dataset a run form should start from: the one of the run the page shows by the rule (the URL's
    run, else the latest run of ``tier``) — not the newest dataset."""
    run = _default_run(tier)
    return run.dataset_id if run is not None else None


def default_dataset_index(tier: str, stored: Sequence[Mapping[str, Any]], *, url_param: str = RUN_PARAM) -> int:
    """The position in ``stored`` (``datasets.store.list_datasets`` rows) of the dataset a run form starts from
    (:func:`default_dataset_id`: the shown run's version, else its name's newest), else 0 — so generating a
    new set never moves the form of a page off the dataset its runs are on. ``url_param``: the URL parameter
    of the page's run (a page with two run views names the second one's)."""
    run = _default_run(tier, url_param)
    if run is None:
        return 0
    for match in (lambda d: d.get("id") == run.dataset_id, lambda d: d.get("name") == run.dataset_name):
        found = next((i for i, d in enumerate(stored) if match(d)), None)
        if found is not None:
            return found
    return 0


# ------------------------------------------------------------------------------------------- the pickers


def pick_run(tier: str | Sequence[str], state_key: str, *, label: str | None = None,
             url_param: str = RUN_PARAM) -> runs.Run | None:
    """Pick the run to show by the rule (:func:`choose_run`), with a dataset picker when the plan's runs span
    several datasets, "N runs on other datasets", the run's state, Resume and the mixed mark."""
    from voproshalych_eval.ui import jobs  # heavy: defers procrastinate (via ui.jobs)

    eng = state.engine()
    all_runs = runs.list_runs(eng, tier=tier, limit=MAX_RUNS)
    if not all_runs:
        return None
    pick_key, ds_key = f"pick_{state_key}", f"pickds_{state_key}"
    remember_choice(pick_key)
    remember_choice(ds_key)
    by_id = {r.id: r for r in all_runs}
    ds_param = DATASET_PARAM if url_param == RUN_PARAM else f"{url_param}_{DATASET_PARAM}"
    url_run = url_int(url_param)
    just_made = st.session_state.get(pick_key)  # the job of a run made here puts it there (jobs.run_id_of)
    ruled = choose_run(list(by_id), just_made=just_made if just_made in by_id else None, url_run=url_run)
    datasets = list(dict.fromkeys(r.dataset_id for r in all_runs))
    if st.session_state.get(ds_key, "?") not in datasets:
        st.session_state.pop(ds_key, None)
    if ds_key not in st.session_state:  # the dataset of the run by the rule; a link naming only a dataset opens it
        url_ds = url_int(ds_param)
        linked_ds = url_ds if url_ds in datasets and just_made not in by_id and url_run not in by_id else None
        st.session_state[ds_key] = linked_ds if linked_ds is not None else (
            by_id[ruled].dataset_id if ruled is not None else datasets[0])
    if len(datasets) > 1:
        labels = _dataset_labels(all_runs)  # resolved now: format_func runs later too
        st.selectbox(tr("Набор данных", "Dataset"), datasets, key=ds_key, format_func=labels.get,
                     on_change=st.session_state.pop, args=(pick_key, None))
    dataset = st.session_state[ds_key]
    shown = [r for r in all_runs if r.dataset_id == dataset]
    ids = [r.id for r in shown]
    if pick_key in st.session_state and st.session_state[pick_key] not in ids:
        del st.session_state[pick_key]
    if pick_key not in st.session_state:
        st.session_state[pick_key] = choose_run(ids, url_run=url_run)
    ui_lang = lang()  # resolved now: format_func runs later too
    options = {r.id: describe.run_option(r, ui_lang) + (" · " + tr("смешанный", "mixed") if r.mixed else "")
               for r in shown}
    chosen = int(st.selectbox(label or tr("Запуск", "Run"), ids, format_func=options.get, key=pick_key))
    others = len(all_runs) - len(shown)
    run_state = executor.run_state(eng, chosen)
    st.caption(tr("Состояние: ", "State: ") + jobs.state_label(run_state)
               + (tr(f" · ещё {fmt_count(others)} {_ru_plural(others, 'запуск', 'запуска', 'запусков')} на других наборах",
                     f" · {fmt_count(others)} more run{'' if others == 1 else 's'} on other datasets") if others else ""))
    set_url(url_param, chosen)
    set_url(ds_param, dataset if len(datasets) > 1 else None)
    run = runs.get_run(eng, chosen)
    if run is None:
        return None
    job = executor.get_job(run.id)
    jobs.mixed_warning(run)
    if not (job is not None and job.alive) and run_state in ("interrupted", "cancelled", "failed", "done_with_failures"):
        counts = runs.count_items(eng, run.id)
        st.warning(tr(
            f"Запуск #{run.id} {jobs.state_label(run_state)}: записано {counts['done']} из {run.n_items_total}, "
            f"ошибок {counts['failed']}.",
            f"Run #{run.id} is {jobs.state_label(run_state)}: {counts['done']} of {run.n_items_total} recorded, "
            f"{counts['failed']} failed."))
        jobs.resume_button(run.id, state_key)
    return run


def run_section(tier: str | Sequence[str], state_key: str, *, label: str | None = None,
                empty: tuple[str, str] | None = None, demo: bool = False, caption: bool = True,
                stop_while_running: bool = True, url_param: str = RUN_PARAM) -> runs.Run | None:
    """The run view of a page, in order: the job panel of a run being made → the run picked by the rule →
    the empty state (``empty = (ru, en)``; the page stops) → while the run is made, nothing more (its
    progress is above; the page stops) → the caption with the verdict first → "copy link"."""
    from voproshalych_eval.ui import jobs  # heavy: defers procrastinate (via ui.jobs)

    jobs.job_panel(state_key)
    run = pick_run(tier, state_key, label=label or tr("Показан запуск", "Showing run"), url_param=url_param)
    if run is None:
        if empty is not None:
            empty_state(*empty, demo=demo)
            st.stop()
        return None
    copy_link(f"rv_{state_key}")
    if stop_while_running and executor.job_alive(run.id) and run.status not in runs.FINISHED:
        # the progress panel above shows it; the page reruns when it ends. A run the store already has finished
        # is shown at once, while its job still winds down (a stop here would leave the previous run's
        # results on screen until the panel's next rerun)
        st.stop()
    if caption:
        jobs.run_caption(run)
    return run
