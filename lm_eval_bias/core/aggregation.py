"""Corpus-level aggregation glue shared by every benchmark's tasks: the *headline* of a task.

Each task reports a short headline in lm-eval's results (its paper's primary metrics, the valid /
refusal / invalid rates, and the interval bounds and null floors of those primaries); the full analysis
(every per-group, per-variant and test key) is computed from the logged samples by
:mod:`lm_eval_bias.analysis`. A :class:`HeadlineFamily` ties the two together:

- ``process_results`` returns, for *every* doc, the doc's compact record (:class:`RecordCodec`: one short
  JSON string of the fields the summary needs) under *every* headline key, as every other harness task
  does (no doc is special, nothing depends on object identity or key order). A string, because lm-eval's
  consumers of logged samples build typed columns from every metric of every sample: W&B's sample table
  refuses a list of mixed types ("Data row contained incompatible types"), and so do Arrow readers
  (``datasets``);
- lm-eval hands each key's aggregation the list of all docs' values for that key (and not the key's
  name); :class:`HeadlineFamily` generates one module-level aggregation per key
  (:func:`aggregation_name`; the YAMLs reference them), and every one of them reads the same summary:
  ``summarize(decoded records)``, computed once per task run and memoised on the *content* of the values
  (:func:`memoised_summary`), so a second key, a ``--cache_requests`` rerun or a gather of two ranks
  (pickled values) gives the same numbers; the summary runs with Python's cyclic garbage collector
  paused (:func:`paused_garbage_collection`: decoding the records allocates one small container per
  doc, and inside lm-eval, where every doc's requests and samples are alive, each collection that
  this triggers walks all of them — measured, 0.56 of 0.88 s of a 4,320-doc 2AFC aggregation);
- ``keys`` lists every key the benchmark reports (headline and analysis) with the reader that takes it
  from the summary; ``headline`` names the subset lm-eval reports.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
from collections import OrderedDict
from typing import Any, Callable, Iterable, Iterator, Sequence

#: Resampling settings shared by every benchmark's aggregations (lm-eval passes no task config to
#: aggregation functions, so they come from the environment).
BOOTSTRAP_ITERS_ENV = "LM_EVAL_BIAS_BOOTSTRAP_ITERS"
BOOTSTRAP_SEED_ENV = "LM_EVAL_BIAS_BOOTSTRAP_SEED"
NULL_ITERS_ENV = "LM_EVAL_BIAS_NULL_ITERS"

#: memo of the latest summaries: (family, hash of the values) -> (values, summary)
_memo: "OrderedDict[tuple[str, int], tuple[tuple, Any]]" = OrderedDict()
_MEMO_SIZE = 8


def aggregation_name(family: str, key: str) -> str:
    """Module attribute that aggregates result ``key`` of a task family."""
    return f"agg_{family}__{key}"


def freeze(value: Any) -> Any:
    """``value`` with every list turned into a tuple (hashable; JSON writes tuples as lists and
    :meth:`RecordCodec.decode` accepts either)."""
    if isinstance(value, (list, tuple)):
        return tuple(freeze(v) for v in value)
    return value


def _settings() -> tuple[str, ...]:
    """The environment the summaries read (resampling iterations and seed)."""
    return tuple(os.environ.get(name, "") for name in (BOOTSTRAP_ITERS_ENV, BOOTSTRAP_SEED_ENV, NULL_ITERS_ENV))


@contextlib.contextmanager
def paused_garbage_collection() -> Iterator[None]:
    """Python's cyclic garbage collector paused for the block, in the state it was in again afterwards
    (reference counting still frees everything that is not in a cycle). A summary allocates one small
    container per doc; while lm-eval holds every doc's requests, responses and samples, each
    collection those allocations trigger walks all of lm-eval's live objects, which is most of the
    aggregation time of a large task (docs/backends.md, "Performance")."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@contextlib.contextmanager
def single_threaded_blas() -> Iterator[None]:
    """numpy's BLAS (OpenBLAS, MKL) limited to one thread for the block, its earlier limit restored
    afterwards (``threadpoolctl``). A summary's matrix products (bootstrap weights times per-template
    counts: a few thousand by a few dozen) gain nothing from more threads, while OpenBLAS's idle threads
    spin: on the 2-core machine they doubled the CPU seconds of lm-eval's aggregation step at the same
    wall time (docs/backends.md, "Performance")."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        yield


def memoised_summary(family: str, summarize: Callable[[tuple], Any], items: Sequence) -> Any:
    """``summarize(items)``, computed once for the same *content* of ``items`` (the per-doc compact
    records of one task run): the memo key is the family, the hash of the values and the resampling
    settings (:func:`bootstrap_settings`, :func:`null_settings`), and a hit is taken only when the
    stored values are equal to these, so two equal runs share a summary and nothing depends on which
    objects lm-eval hands over. The last few summaries are kept. The summary is computed with the
    cyclic garbage collector paused (:func:`paused_garbage_collection`) and numpy's BLAS on one thread
    (:func:`single_threaded_blas`)."""
    values = tuple(items)
    try:
        digest = hash(values)
    except TypeError:  # lists inside (values read back from JSON): the same content, frozen
        values = freeze(values)
        digest = hash(values)
    key = (family, digest, _settings())  # the same records under other resampling settings: another summary
    hit = _memo.get(key)
    if hit is not None and hit[0] == values:
        _memo.move_to_end(key)
        return hit[1]
    with paused_garbage_collection(), single_threaded_blas():
        summary = summarize(values)
    _memo[key] = (values, summary)
    while len(_memo) > _MEMO_SIZE:
        _memo.popitem(last=False)
    return summary


class RecordCodec:
    """A per-doc record as one short JSON string (a list) and back: ``fields`` in order, then, with
    ``sample_fields``, the k responses of a doc asked k times (``record["samples"]``, each a dict with
    ``sample`` and ``sample_fields``) as a list of lists, or null for a doc asked once.
    ``mapping_fields`` (dicts, e.g. letter probabilities) are stored as sorted ``[key, value]`` pairs.
    :meth:`decode` gives back a dict with exactly these fields (``samples`` only when there were k) and the
    constant ``defaults`` (fields a summary expects but does not use, e.g. a doc id). ``codes``: field ->
    its known values, stored as their index (another value is stored as itself)."""

    def __init__(self, fields: Sequence[str], sample_fields: Sequence[str] = (), mapping_fields: Iterable[str] = (),
                 defaults: dict[str, Any] | None = None, codes: dict[str, Sequence[str]] | None = None):
        self.fields = tuple(fields)
        self.defaults = dict(defaults or {})
        self.codes = {name: tuple(values) for name, values in (codes or {}).items()}
        self._index = {name: {v: i for i, v in enumerate(values)} for name, values in self.codes.items()}
        self.sample_fields = tuple(sample_fields)
        self.mapping_fields = frozenset(mapping_fields)

    def _pack(self, name: str, value: Any) -> Any:
        index = self._index.get(name)
        if index is not None and isinstance(value, str) and value in index:
            return index[value]
        if name in self.mapping_fields and isinstance(value, dict):
            return tuple(sorted((str(k), freeze(v)) for k, v in value.items()))
        return freeze(value)

    def encode(self, record: dict[str, Any]) -> str:
        values = tuple(self._pack(f, record.get(f)) for f in self.fields)
        if self.sample_fields:
            samples = record.get("samples")
            values += (None if samples is None else tuple(
                (int(s.get("sample", k)), *(freeze(s.get(f)) for f in self.sample_fields))
                for k, s in enumerate(samples)),)
        return json.dumps(values, separators=(",", ":"), ensure_ascii=False, allow_nan=True)

    def decode(self, value: str | Sequence) -> dict[str, Any]:
        if isinstance(value, str):
            value = json.loads(value)
        return self._record(value)

    def decode_many(self, values: Sequence[str | Sequence]) -> list[dict[str, Any]]:
        """:meth:`decode` of each value; JSON strings are parsed together as one JSON array (one parser
        call instead of one per doc), falling back to one parse per value when the joined text is not
        exactly one array of ``len(values)`` records."""
        values = list(values)
        parsed: list | None = None
        if values and all(isinstance(v, str) for v in values):
            try:
                parsed = json.loads("[" + ",".join(values) + "]")
            except ValueError:
                parsed = None
            if parsed is not None and len(parsed) != len(values):
                parsed = None
        if parsed is None:
            return [self.decode(v) for v in values]
        return [self._record(v, parsed_json=True) for v in parsed]

    def _record(self, value: Sequence, parsed_json: bool = False) -> dict[str, Any]:
        """The record of one value; ``parsed_json``: ``value`` was just parsed from JSON (its sequences
        are fresh lists), so a codec without ``codes`` and ``mapping_fields`` takes its fields as they are."""
        n = len(self.fields)
        record = dict(self.defaults)
        if parsed_json and not self.codes and not self.mapping_fields:
            record.update(zip(self.fields, value))
            if self.sample_fields and len(value) > n and value[n] is not None:
                record["samples"] = [{"sample": s[0], **dict(zip(self.sample_fields, s[1:]))} for s in value[n]]
            return record
        for name, v in zip(self.fields, value[:n]):
            if name in self.codes and isinstance(v, int) and not isinstance(v, bool):
                v = self.codes[name][v]
            elif name in self.mapping_fields and v is not None:
                v = {str(k): x for k, x in v}
            elif isinstance(v, (tuple, list)):
                v = list(v)
            record[name] = v
        if self.sample_fields and len(value) > n and value[n] is not None:
            record["samples"] = [{"sample": s[0], **dict(zip(self.sample_fields, s[1:]))} for s in value[n]]
        return record


class HeadlineView:
    """What some headline keys read instead of the family's compact record and summary: their own
    compact record (``codec``) and summary (``summarize``), and, with ``include``, only the records it
    accepts: another doc's value under such a key is the empty string (a value, never null: every doc
    still returns every key). For keys whose statistic depends only on a part of the docs (e.g. one bias
    dimension's spread, computed from that dimension's image pairs), this keeps each doc's samples line
    short: its record under its own part's key, ``""`` under the others."""

    def __init__(self, name: str, codec: "RecordCodec", summarize: Callable[[list], Any],
                 include: Callable[[dict[str, Any]], bool] | None = None):
        self.name, self.codec, self.summarize, self.include = name, codec, summarize, include

    def value(self, record: dict[str, Any]) -> str:
        return self.codec.encode(record) if self.include is None or self.include(record) else ""


class HeadlineFamily:
    """The result keys of one task family, its headline and how each is read from the summary.

    ``summarize(records) -> summary``; ``keys`` maps every key the benchmark reports (headline and
    analysis) -> reader(summary) -> float; ``headline``: the keys lm-eval reports (default: all);
    ``codec``: the compact per-doc value (:class:`RecordCodec`), decoded into the records handed to
    ``summarize``. ``headline_summarize`` (optional): a cheaper summary computing the headline keys only
    (same functions, same seeds: the same numbers as ``summarize`` for those keys). ``views``
    (optional): headline key -> the :class:`HeadlineView` it reads instead."""

    def __init__(self, family: str, summarize: Callable[[list], Any], keys: dict[str, Callable[[Any], float]],
                 headline: Sequence[str] | None = None, codec: RecordCodec | None = None,
                 headline_summarize: Callable[[list], Any] | None = None,
                 views: dict[str, HeadlineView] | None = None):
        self.family = family
        self.summarize = summarize
        self.keys = keys
        self.headline = tuple(keys) if headline is None else tuple(headline)
        unknown = [k for k in self.headline if k not in keys]
        if unknown:
            raise ValueError(f"{family}: headline keys {unknown} are not keys of the family")
        self.codec = codec
        self.headline_summarize = headline_summarize or summarize
        self.views = dict(views or {})

    # -- per doc ---------------------------------------------------------------------------------------
    def compact(self, record: dict[str, Any]) -> Any:
        """The doc's value under each headline key (the compact record, or the record itself without a codec)."""
        return self.codec.encode(record) if self.codec is not None else record

    def records_for(self, record: dict[str, Any]) -> dict[str, Any]:
        """``process_results`` return value: the doc's compact record under every headline key (its
        view's value under a key with a :class:`HeadlineView`)."""
        value = self.compact(record) if len(self.views) < len(self.headline) else None
        by_view: dict[str, str] = {}
        out = {}
        for key in self.headline:
            view = self.views.get(key)
            if view is None:
                out[key] = value
            else:
                if view.name not in by_view:
                    by_view[view.name] = view.value(record)
                out[key] = by_view[view.name]
        return out

    def decode(self, values: Iterable[Any]) -> list[dict[str, Any]]:
        """Records from per-doc values (compact tuples or lists read back from JSON, or records)."""
        if self.codec is None:
            return [dict(v) for v in values]
        values = list(values)
        if not any(isinstance(v, dict) for v in values):
            return self.codec.decode_many(values)
        return [v if isinstance(v, dict) else self.codec.decode(v) for v in values]

    # -- aggregation -----------------------------------------------------------------------------------
    def headline_summary(self, items: Sequence) -> Any:
        """The headline summary of one task run's per-doc values, computed once per content."""
        return memoised_summary(self.family, lambda values: self.headline_summarize(self.decode(values)), items)

    def view_summary(self, view: HeadlineView, items: Sequence) -> Any:
        """The summary of a :class:`HeadlineView` over the docs it includes (values other than ``""``)."""
        kept = [v for v in items if v != ""]
        return memoised_summary(f"{self.family}/{view.name}",
                                lambda values: view.summarize([view.codec.decode(v) for v in values]), kept)

    def function(self, key: str) -> Callable[[list], float]:
        reader = self.keys[key]
        view = self.views.get(key)

        def aggregate(items: list) -> float:
            summary = self.headline_summary(items) if view is None else self.view_summary(view, items)
            return float(reader(summary))

        aggregate.__name__ = aggregation_name(self.family, key)
        aggregate.__doc__ = f"Result {key!r} of the {self.family} task family."
        return aggregate

    def install(self, namespace: dict) -> None:
        """Define one aggregation function per headline key in ``namespace`` (a module's ``globals()``)."""
        for key in self.headline:
            namespace[aggregation_name(self.family, key)] = self.function(key)

    def values(self, records: list[dict[str, Any]], summary: Any = None) -> dict[str, float]:
        """Every key of the family from full records (the analysis: :mod:`lm_eval_bias.analysis`)."""
        summary = self.summarize(records) if summary is None else summary
        return {key: float(reader(summary)) for key, reader in self.keys.items()}


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


@contextlib.contextmanager
def environment(values: dict[str, str | None]) -> Iterator[None]:
    """The process environment with ``values`` set (None: unset), as it was again afterwards: how the
    report, the analysis and leaderboard checks run the aggregations under given resampling settings."""
    saved = {name: os.environ.get(name) for name in values}
    try:
        for name, value in values.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = str(value)
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
