"""Corpus-level aggregation glue shared by every benchmark's tasks.

lm-eval hands each aggregation function only the per-doc values of its own result key and not the
key's name. Our tasks return one per-doc record under every key, so an aggregation recognises the
task's results by the identity of the record objects, computes the benchmark's summary once
(memoised), and picks its own number from it. :class:`AggregationFamily` generates one module-level
function per result key, named by :func:`aggregation_name` (the YAMLs reference those names).

lm-eval keeps, for every doc and every key a doc returns, a dict entry in the logged sample, a name in
its ``metrics`` list and a slot in the key's value list, ~32 bytes a key and doc: VIGNETTE's 71-205
keys cost 2.3-6.6 kB a doc, more than everything else lm-eval holds (docs/backends.md "VIGNETTE at
scale"). A family built with ``lead_keys=True`` therefore returns a doc's record under its first key
only, except for one *lead* doc per run: the first doc of the task's instances, marked by the task's
filter step :class:`LeadDocFilter`, whose record (a :class:`LeadRecord`) is returned under every key.
lm-eval 0.4.13 documents that a doc may return a subset of the keys (``_compute_task_aggregations``;
``n-samples`` is the largest count of any key) and aggregates the keys in the order they first
appeared, so the first key's aggregation summarises every record, and each other key, handed only the
lead record(s), reads the same memoised summary (:func:`memoised_summary`). A doc evaluated outside a
filtered run (a direct ``process_results`` call, a YAML without the filter) returns every key, and so
does every doc with ``LM_EVAL_BIAS_ALL_KEYS_PER_DOC=1``.
"""

from __future__ import annotations

import logging
import os
from typing import Any, Callable

#: Resampling settings shared by every benchmark's aggregations (lm-eval passes no task config to
#: aggregation functions, so they come from the environment).
BOOTSTRAP_ITERS_ENV = "LM_EVAL_BIAS_BOOTSTRAP_ITERS"
BOOTSTRAP_SEED_ENV = "LM_EVAL_BIAS_BOOTSTRAP_SEED"
NULL_ITERS_ENV = "LM_EVAL_BIAS_NULL_ITERS"
#: ``1``: every doc of a lead-keys family returns every key, as before (lm-eval's W&B sample table,
#: ``--wandb_args`` with ``--log_samples``, reads every metric of every sample)
ALL_KEYS_ENV = "LM_EVAL_BIAS_ALL_KEYS_PER_DOC"

_memo: dict[tuple, Any] = {}
#: memo key -> set of the ids of its records (made when a lead record is looked up in it)
_members: dict[tuple, set[int]] = {}
#: the records of memoised summaries of a few records, kept alive so that their ids are not reused by
#: another run's records while the summary is memoised (larger id tuples do not collide in practice)
_held: dict[tuple, list] = {}
_HOLD_UP_TO = 16


class LeadRecord(dict):
    """The record of a run's lead doc, returned under every result key (a plain ``dict`` otherwise:
    JSON, pickling and the statistics see no difference). Its type survives lm-eval's gathering of
    per-key values across ranks (one pickle per rank keeps a record and its references one object)."""

    __slots__ = ()


def aggregation_name(family: str, key: str) -> str:
    """Module attribute that aggregates result ``key`` of a task family."""
    return f"agg_{family}__{key}"


def memoised_summary(family: str, summarize: Callable[[list], Any], items: list, lead_lookup: bool = False) -> Any:
    """``summarize(items)``, computed once for the record objects of one task.

    ``lead_lookup`` (a lead-keys family's keys other than the first): ``items`` holding a
    :class:`LeadRecord` are (or include) the lead record(s) of a run, and read the latest memoised
    summary of this family whose records include all of them, the first key's, which lm-eval aggregates
    first. If there is none the summary of the whole run cannot be recovered from them, and this raises
    instead of reporting a summary of the lead docs alone."""
    key = (family, tuple(map(id, items)))
    summary = _memo.get(key)
    if summary is not None:
        return summary
    if lead_lookup and any(type(r) is LeadRecord for r in items):
        for memo_key in reversed(list(_memo)):  # the latest first: the first key's summary of this run
            if memo_key[0] != family or len(memo_key[1]) < len(items):
                continue
            members = _members.get(memo_key)
            if members is None:
                members = _members[memo_key] = set(memo_key[1])
            if all(id(r) in members for r in items):
                return _memo[memo_key]
        raise RuntimeError(
            f"{family}: asked for a result key with only the run's lead record(s) ({len(items)}) and no summary of "
            "the whole run to read it from: the family's first key must be aggregated first (lm-eval does this; "
            "see lm_eval_bias.tasks.aggregation)")
    if len(_memo) > 8:
        _memo.clear()
        _members.clear()
        _held.clear()
    summary = _memo[key] = summarize(items)
    if len(items) <= _HOLD_UP_TO:
        _held[key] = list(items)
    return summary


# -- the lead doc of a run -----------------------------------------------------------------------------
class _LeadRun:
    """The docs of one task's instances, in order, as the filter saw them: the first is the lead. Docs
    are known by identity: the lead-keys tasks hand lm-eval one dict per doc for all its walks over the
    split (``process_docs``, e.g. ``vignette.shared_docs``); a doc ``process_results`` gets that is not
    one of these objects returns every key (:func:`lead_role`), so nothing depends on doc ids being
    unique. The run holds the docs, so their ids are not reused while it is open."""

    def __init__(self, docs: list[dict]) -> None:
        self.docs = docs
        self.lead = id(docs[0])
        self.pending = set(map(id, docs))


_run: _LeadRun | None = None


def mark_lead_run(docs: list[dict]) -> None:
    """Start a run: ``docs`` are the docs of a task's instances in lm-eval's order (every doc whose
    results lm-eval will process). lm-eval applies a task's filters and then processes that task's docs
    before the next task's filters, so one run is open at a time."""
    global _run
    _run = _LeadRun(list(docs)) if docs else None


def lead_role(doc: dict) -> str:
    """Which keys ``doc``'s record goes under: ``"lead"`` (every key: the lead doc of the open run),
    ``"first"`` (the first key only: another doc of the open run) or ``"all"`` (every key: a doc that is
    not one of the open run's, evaluated outside a filtered run). Each doc of the run is taken once; the
    run closes with its last doc."""
    global _run
    run = _run
    if run is None:
        return "all"
    key = id(doc)
    if key not in run.pending:
        return "all"
    run.pending.discard(key)
    if not run.pending:
        _run = None
    return "lead" if key == run.lead else "first"


#: task families that returned a lead record in this process (their tasks are named as the family)
_lead_families: set[str] = set()


class _UnevenCountsNotice(logging.Filter):
    """Drops lm-eval's warning that a task's keys "were not scored on the same number of documents" for
    lead-keys tasks: there every key summarises all of the run's docs (the other keys read the first
    key's summary), so the task's one sample count is every key's, which is what the warning doubts."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if "Metrics were not scored on the same number of documents" not in message:
            return True
        return not any(message.startswith(f"[{name}] ") for name in _lead_families)


logging.getLogger("lm_eval.evaluator_utils").addFilter(_UnevenCountsNotice())


try:  # the filter step is harness glue; the rest of this module works without lm-eval
    from lm_eval.api.filter import Filter as _Filter
except ImportError:  # pragma: no cover - lm-eval is a dependency
    _Filter = object


class LeadDocFilter(_Filter):
    """Filter step of the lead-keys tasks (after ``take_first``, in the pipeline named ``none`` so result
    keys keep their ``<key>,none`` names): passes the responses through unchanged and marks the first
    doc of the task's instances as the run's lead (:func:`mark_lead_run`)."""

    def __init__(self, **kwargs) -> None:
        pass

    def apply(self, resps, docs):
        mark_lead_run(docs)
        return resps


class AggregationFamily:
    """The result keys of one task family and how to read each from the family's summary.

    ``keys`` maps result key -> reader(summary) -> float.
    """

    def __init__(self, family: str, summarize: Callable[[list], Any], keys: dict[str, Callable[[Any], float]],
                 lead_keys: bool = False):
        self.family = family
        self.summarize = summarize
        self.keys = keys
        self.lead_keys = lead_keys
        self._first = next(iter(keys))

    def function(self, key: str) -> Callable[[list], float]:
        reader = self.keys[key]

        lead_lookup = self.lead_keys and key != self._first

        def aggregate(items: list) -> float:
            return float(reader(memoised_summary(self.family, self.summarize, items, lead_lookup)))

        aggregate.__name__ = aggregation_name(self.family, key)
        aggregate.__doc__ = f"Result {key!r} of the {self.family} task family."
        return aggregate

    def install(self, namespace: dict) -> None:
        """Define one aggregation function per key in ``namespace`` (a module's ``globals()``)."""
        for key in self.keys:
            namespace[aggregation_name(self.family, key)] = self.function(key)

    def records_for(self, record: dict, doc: dict | None = None) -> dict[str, dict]:
        """``process_results`` return value: the doc's record under every key; for a ``lead_keys``
        family given the ``doc``, under the first key only unless the doc is its run's lead
        (:func:`lead_role`; module docstring)."""
        if self.lead_keys and doc is not None and os.environ.get(ALL_KEYS_ENV, "0") != "1":
            role = lead_role(doc)
            if role == "first":
                return {self._first: record}
            if role == "lead":
                record = LeadRecord(record)
                _lead_families.add(self.family)
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
