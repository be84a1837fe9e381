"""Corpus-level aggregation glue shared by every benchmark's tasks.

lm-eval hands each aggregation function only the per-doc values of its own result key and not the
key's name. Our tasks return one per-doc record under every key, so an aggregation recognises the
task's results by the identity of the record objects, computes the benchmark's summary once
(memoised), and picks its own number from it. :class:`AggregationFamily` generates one module-level
function per result key, named by :func:`aggregation_name` (the YAMLs reference those names).
"""

from __future__ import annotations

import os
from typing import Any, Callable

#: Resampling settings shared by every benchmark's aggregations (lm-eval passes no task config to
#: aggregation functions, so they come from the environment).
BOOTSTRAP_ITERS_ENV = "LM_EVAL_BIAS_BOOTSTRAP_ITERS"
BOOTSTRAP_SEED_ENV = "LM_EVAL_BIAS_BOOTSTRAP_SEED"
NULL_ITERS_ENV = "LM_EVAL_BIAS_NULL_ITERS"

_memo: dict[tuple, Any] = {}


def aggregation_name(family: str, key: str) -> str:
    """Module attribute that aggregates result ``key`` of a task family."""
    return f"agg_{family}__{key}"


def memoised_summary(family: str, summarize: Callable[[list], Any], items: list) -> Any:
    """``summarize(items)``, computed once for the record objects of one task."""
    key = (family, tuple(map(id, items)))
    summary = _memo.get(key)
    if summary is None:
        if len(_memo) > 8:
            _memo.clear()
        summary = _memo[key] = summarize(items)
    return summary


class AggregationFamily:
    """The result keys of one task family and how to read each from the family's summary.

    ``keys`` maps result key -> reader(summary) -> float.
    """

    def __init__(self, family: str, summarize: Callable[[list], Any], keys: dict[str, Callable[[Any], float]]):
        self.family = family
        self.summarize = summarize
        self.keys = keys

    def function(self, key: str) -> Callable[[list], float]:
        reader = self.keys[key]

        def aggregate(items: list) -> float:
            return float(reader(memoised_summary(self.family, self.summarize, items)))

        aggregate.__name__ = aggregation_name(self.family, key)
        aggregate.__doc__ = f"Result {key!r} of the {self.family} task family."
        return aggregate

    def install(self, namespace: dict) -> None:
        """Define one aggregation function per key in ``namespace`` (a module's ``globals()``)."""
        for key in self.keys:
            namespace[aggregation_name(self.family, key)] = self.function(key)

    def records_for(self, record: dict) -> dict[str, dict]:
        """``process_results`` return value: the doc's record under every key."""
        return {key: record for key in self.keys}


def _int_env(name: str, default: int) -> int:
    raw = os.environ.get(name, str(default))
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{name} must be an integer, got {raw!r}") from None
    return value


def bootstrap_settings() -> tuple[int, int]:
    """(iterations, seed) of the cluster bootstrap behind every interval (default 1000, 1234; 0 disables)."""
    iters = _int_env(BOOTSTRAP_ITERS_ENV, 1000)
    seed = _int_env(BOOTSTRAP_SEED_ENV, 1234)
    if iters < 0:
        raise ValueError(f"{BOOTSTRAP_ITERS_ENV} must be >= 0, got {iters}")
    return iters, seed


def null_settings() -> tuple[int, int]:
    """(permutations, seed) of the permutation nulls behind null floors and chance tests
    (``LM_EVAL_BIAS_NULL_ITERS``, default 1000; 0 disables; seed shared with the bootstrap)."""
    iters = _int_env(NULL_ITERS_ENV, 1000)
    seed = _int_env(BOOTSTRAP_SEED_ENV, 1234)
    if iters < 0:
        raise ValueError(f"{NULL_ITERS_ENV} must be >= 0, got {iters}")
    return iters, seed


#: Suffixes of keys derived from a metric key ``<metric>``: bootstrap standard error and 95 % interval
#: (``_stderr``, ``_ci_low``, ``_ci_high``), null floor and "more than chance" p-value (``_null``,
#: ``_p_null``), Holm-adjusted p-value (``_holm``), the paper's percentile interval of a plug-in magnitude
#: kept beside the calibrated one (``_ci_low_paper``, ``_ci_high_paper``; REFLECT Pol, Ext, JSD). Only the
#: interval form of ``_paper`` is derived: a ``p_<test>_paper`` key is a variant with a row of its own.
#: Derived keys share the metric's documentation anchor.
DERIVED_SUFFIXES: tuple[str, ...] = ("_stderr", "_ci_low_paper", "_ci_high_paper", "_ci_low", "_ci_high", "_p_null",
                                     "_null", "_holm")


def base_key(key: str) -> str:
    """The metric a derived key belongs to (``polarization_ci_low`` -> ``polarization``)."""
    for suffix in DERIVED_SUFFIXES:
        if key.endswith(suffix) and len(key) > len(suffix):
            return base_key(key[: -len(suffix)])
    return key
