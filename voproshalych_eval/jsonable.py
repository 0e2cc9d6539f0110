"""The one JSON cleaner: numpy, pandas and dataclass values as plain JSON types.

Everything that goes into the store's ``jsonb`` columns, a ``--json`` output or a JSON download passes
through :func:`jsonable` (or :func:`dumps`): numpy scalars become Python numbers, ``NaN`` / ``±inf`` /
``NaT`` / ``pd.NA`` become ``None``, arrays and tuples become lists, timestamps ISO strings, objects with
``to_dict()`` their dict.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from datetime import date, datetime
from typing import Any


def _missing(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, float):
        return math.isnan(value) or math.isinf(value)
    try:
        import pandas as pd  # heavy: defers pandas

        return value is pd.NaT or value is pd.NA
    except ImportError:  # pragma: no cover - pandas is a dependency
        return False


def scalar(value: Any, *, keep_datetimes: bool = False) -> Any:
    """One value as a JSON scalar when it is a numpy/pandas scalar or a missing value; else unchanged.

    ``keep_datetimes`` leaves timestamps as ``datetime`` objects (rows still compared in time)."""
    if _missing(value):
        return None
    import numpy as np  # heavy: defers numpy

    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        v = float(value)
        return None if math.isnan(v) or math.isinf(v) else v
    if isinstance(value, datetime | date) and not keep_datetimes:
        return value.isoformat()
    return value


def jsonable(value: Any) -> Any:
    """``value`` with every nested part converted to plain JSON types (see the module docstring)."""
    value = scalar(value)
    if value is None or isinstance(value, str | bool | int | float):
        return value
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    import numpy as np  # heavy: defers numpy

    if isinstance(value, np.ndarray):
        return [jsonable(v) for v in value.tolist()]
    if isinstance(value, list | tuple | set | frozenset):
        return [jsonable(v) for v in value]
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        try:
            return jsonable(to_dict(orient="records")) if _is_frame(value) else jsonable(to_dict())
        except TypeError:
            return jsonable(to_dict())
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def _is_frame(value: Any) -> bool:
    try:
        import pandas as pd  # heavy: defers pandas

        return isinstance(value, pd.DataFrame)
    except ImportError:  # pragma: no cover
        return False


def dumps(value: Any, **kwargs: Any) -> str:
    """``json.dumps`` of :func:`jsonable(value) <jsonable>` (UTF-8 text kept, ``NaN`` never written)."""
    kwargs.setdefault("ensure_ascii", False)
    return json.dumps(jsonable(value), allow_nan=False, **kwargs)
