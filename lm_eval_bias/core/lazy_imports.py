"""scipy names that the statistics modules use, imported on first use rather than when the module loads.

Loading a task imports its statistics modules (``lm_eval_bias.reflect.tasks`` reads their key lists),
and a module-level ``from scipy.spatial.distance import ...`` or ``from scipy import stats`` there
costs every run — ``lm-eval-bias run --model bias-probe --tasks focus_2afc_income --limit 8`` included —
about 0.3 s CPU each (``scipy.spatial``, ``scipy.stats``; docs/backends.md, "Performance"), before any
statistic is computed. The names below are the same scipy objects, reached on first use:

- :func:`jensenshannon`: ``scipy.spatial.distance.jensenshannon`` (same arguments, same result);
- :data:`scipy_stats`: ``scipy.stats`` as a :class:`LazyModule` (``scipy_stats.spearmanr(...)``).
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any


class LazyModule:
    """Stands for the module ``name``: the first attribute read imports it (``importlib.import_module``),
    every read returns the module's attribute. Nothing is put into ``sys.modules`` until then."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._module: ModuleType | None = None

    def __getattr__(self, attribute: str) -> Any:
        if attribute.startswith("__"):  # copy/pickle/inspect probing: not the module's
            raise AttributeError(attribute)
        if self._module is None:
            self._module = importlib.import_module(self._name)
        return getattr(self._module, attribute)

    def __repr__(self) -> str:
        return f"<LazyModule {self._name!r} ({'imported' if self._module is not None else 'not imported yet'})>"


#: ``scipy.stats``, imported on first attribute read
scipy_stats = LazyModule("scipy.stats")


def jensenshannon(p: Any, q: Any, base: float | None = None, *, axis: int = 0, keepdims: bool = False) -> Any:
    """``scipy.spatial.distance.jensenshannon(p, q, base, axis=axis, keepdims=keepdims)``: the Jensen-Shannon
    *distance* (the square root of the divergence) of probability vectors along ``axis``, with logarithms
    in ``base`` (natural when None). scipy.spatial is imported on the first call."""
    from scipy.spatial.distance import jensenshannon as scipy_jensenshannon

    return scipy_jensenshannon(p, q, base, axis=axis, keepdims=keepdims)
