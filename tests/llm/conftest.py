import sys
from pathlib import Path

_ROOT = str(Path(__file__).resolve().parents[2])
if _ROOT not in sys.path:  # make ``tests.support`` importable (tests/ is not a package)
    sys.path.insert(0, _ROOT)

from tests.support.scripted_openai import scripted_openai, scripted_openai_env  # noqa: E402,F401 (fixtures)
