"""Multiplicity adjustment, one home for every family of tests the tasks and the report correct.

The project's policy (docs/statistics.md, "Multiplicity"): Holm within each reported family, nothing
corrected across tasks. The adjustment itself is statsmodels' ``multipletests``; this module only
makes it cheap inside a harness run: statsmodels' Holm branch ends with an explicit ``gc.collect()``
(``statsmodels/stats/multitest.py``), a full collection of every live object. Inside lm-eval's
aggregation step every doc's requests, answers and logged samples are alive, so each call took
~0.3 s at 16k VIGNETTE docs and ~1.5 s at 100k (about 80 % of the VIGNETTE aggregation time).
:func:`adjust` runs ``multipletests`` with that explicit collection turned into a no-op; the
numbers are identical and Python's automatic collector still runs.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence

import numpy as np


@contextlib.contextmanager
def skip_explicit_gc() -> Iterator[None]:
    """Within it ``gc.collect()`` is a no-op (see the module docstring). Nothing is computed
    differently; the collector still runs automatically."""
    import gc

    collect = gc.collect
    gc.collect = lambda *args, **kwargs: 0
    try:
        yield
    finally:
        gc.collect = collect


def adjust(p_values: Sequence[float] | np.ndarray, method: str = "holm") -> np.ndarray:
    """``method``-adjusted p-values of one family (``statsmodels.stats.multitest.multipletests``, any of
    its methods; Holm by default). NaN entries stay NaN and do not count towards the family size."""
    p = np.asarray(p_values, dtype=float)
    out = np.full(p.shape, np.nan)
    ok = np.isfinite(p)
    if ok.any():
        from statsmodels.stats.multitest import multipletests  # here: a family of NaNs needs no statsmodels

        with skip_explicit_gc():
            out[ok] = multipletests(p[ok], method=method)[1]
    return out
