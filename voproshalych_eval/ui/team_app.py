"""The Streamlit main script of ``serve --team``: runs ``app.py`` from a folder that has no ``pages/``.

Streamlit treats a ``pages/`` folder next to the main script as the old directory-based navigation until
some session has called ``st.navigation``: on a fresh server, the first request for a page's URL
(``/tier1_retrieval``) would run that page's script directly, without ``app.py`` and so without its sign-in
gate. Started from here, the app has no such folder next to its main script: every request runs ``app.py``
first (sign-in, then ``st.navigation`` over the page files by their absolute paths).
"""

import runpy

from voproshalych_eval.config import PROJECT_ROOT

runpy.run_path(str(PROJECT_ROOT / "app.py"), run_name="__main__")
