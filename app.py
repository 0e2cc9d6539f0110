"""voproshalych_eval — Streamlit entry point: navigation over the file pages and the common sidebar."""

from __future__ import annotations

import streamlit as st

from voproshalych_eval.config import PROJECT_ROOT
from voproshalych_eval.redaction import configure_logging
from voproshalych_eval.ui.auth import sign_in_gate, signed_out_page
from voproshalych_eval.ui.i18n import LANG_KEY, LANGUAGES, lang, reassert_choices, tr
from voproshalych_eval.ui.pages import existing_pages
from voproshalych_eval.ui.sidebar import render_sidebar

configure_logging(fmt="%(asctime)s %(levelname)s %(name)s: %(message)s")  # one redacting handler, idempotent
st.set_page_config(page_title="Вопрошалыч · eval", page_icon=":material/analytics:", layout="wide")

lang()  # initialise the language before anything is drawn
with st.sidebar:
    st.radio(
        "Язык / Language",
        options=list(LANGUAGES),
        format_func=LANGUAGES.get,
        key=LANG_KEY,
        horizontal=True,
        on_change=reassert_choices,  # choices keep their values, not their old language's labels
    )
if st.query_params.get("lang") != lang():
    st.query_params["lang"] = lang()  # the language lives in the URL: a reload or a shared link keeps it

if not sign_in_gate():  # team mode: nothing but the sign-in screen until signed in with a role
    # one hidden page, so that no page of pages/ is listed or reachable by its URL before sign-in
    st.navigation([st.Page(signed_out_page, title=tr("Вход", "Sign in"), url_path="sign-in", default=True)],
                  position="hidden")
    st.stop()

sections: dict[str, list[st.Page]] = {}
for spec in existing_pages():
    title = tr(*spec.title)
    sections.setdefault(tr(*spec.section), []).append(
        st.Page(str(PROJECT_ROOT / spec.file), title=title, icon=spec.icon,  # absolute: serve --team's main script
                url_path=spec.file.removeprefix("pages/").removesuffix(".py"))
    )

page = st.navigation(sections)
render_sidebar()
page.run()
