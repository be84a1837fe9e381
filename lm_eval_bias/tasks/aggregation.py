"""Corpus-level aggregation glue shared by every benchmark's tasks.

lm-eval hands each aggregation function only the per-doc values of its own result key and not the
key's name. Our tasks return one per-doc record under every key, so an aggregation recognises the
task's results by the identity of the record objects, computes the benchmark's summary once
(memoised), and picks its own number from it. :class:`AggregationFamily` generates one module-level
function per result key, named by :func:`aggregation_name` (the YAMLs reference those names).
"""

from __future__ import annotations

from typing import Any, Callable

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
