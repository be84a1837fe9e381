"""The lead-keys mechanism of ``lm_eval_bias.tasks.aggregation``: a family's docs return their record
under its first key only, except each run's lead doc (every key); every key's aggregation still reads
the summary of all records, in lm-eval's order of aggregation, across ranks gathered by pickling, and
refuses to report a summary of the lead docs alone."""

from __future__ import annotations

import pickle
from collections import defaultdict

import pytest

from lm_eval_bias.tasks import aggregation
from lm_eval_bias.tasks.aggregation import AggregationFamily, LeadDocFilter, LeadRecord


def _summarize(records):
    return {"n": len(records), "total": sum(r["x"] for r in records), "first": records[0]["x"] if records else None}


def _family(name="toy"):
    return AggregationFamily(name, _summarize, {"n": lambda s: s["n"], "total": lambda s: s["total"],
                                                "first": lambda s: s["first"]}, lead_keys=True)


def _run(family, docs, order=None):
    """What lm-eval does for one task: the filter pipeline over the instances' docs, then
    ``process_results`` per doc in ``order`` (default: the instances' order), values appended per key."""
    resps = [[f"answer {d['doc_id']}"] for d in docs]
    assert list(LeadDocFilter().apply(resps, docs)) == resps  # responses pass through unchanged
    raw = defaultdict(list)
    logged = []
    for doc in (order or docs):
        metrics = family.records_for({"doc_id": doc["doc_id"], "x": doc["x"]}, doc)
        logged.append(list(metrics))
        for key, value in metrics.items():
            raw[(key, "none")].append(value)
    return raw, logged


def _aggregate(family, raw):
    """lm-eval 0.4.13's ``_compute_task_aggregations``: keys in first-appearance order."""
    functions = {key: family.function(key) for key in family.keys}
    return {key: functions[key](items) for (key, _), items in raw.items()}


def _docs(xs, prefix="d"):
    return [{"doc_id": f"{prefix}{k}", "x": x} for k, x in enumerate(xs)]


def test_one_lead_per_run_and_every_key_from_all_records():
    family = _family()
    docs = _docs([3, 1, 4, 1, 5, 9, 2, 6])
    raw, logged = _run(family, docs)
    assert logged[0] == ["n", "total", "first"] and all(keys == ["n"] for keys in logged[1:])
    assert len(raw[("n", "none")]) == 8 and len(raw[("total", "none")]) == 1
    assert type(raw[("total", "none")][0]) is LeadRecord and aggregation._run is None
    assert _aggregate(family, raw) == {"n": 8, "total": 31, "first": 3}


def test_two_runs_with_the_same_doc_ids_each_get_a_lead():
    family = _family("toy_twice")
    first, _ = _run(family, _docs([1, 2, 3]))
    second, _ = _run(family, _docs([10, 20, 30, 40]))
    assert _aggregate(family, first) == {"n": 3, "total": 6, "first": 1}
    assert _aggregate(family, second) == {"n": 4, "total": 100, "first": 10}


def test_processing_order_differs_from_the_instances():
    family = _family("toy_order")
    docs = _docs([5, 6, 7, 8])
    raw, logged = _run(family, docs, order=[docs[2], docs[0], docs[3], docs[1]])
    assert [len(k) for k in logged] == [1, 3, 1, 1]  # the instances' first doc leads
    assert _aggregate(family, raw) == {"n": 4, "total": 26, "first": 7}


def test_ranks_gathered_by_pickling_keep_the_lead_records():
    """lm-eval with several ranks: each rank's per-key values are pickled together and chained on rank 0."""
    family = _family("toy_ranks")
    ranks = [_run(family, _docs([1, 2, 3], "a"))[0], _run(family, _docs([4, 5], "b"))[0]]
    gathered = [pickle.loads(pickle.dumps(dict(r))) for r in ranks]
    raw = {key: [v for r in gathered for v in r[key]] for key in gathered[0]}
    assert len(raw[("total", "none")]) == 2 and all(type(v) is LeadRecord for v in raw[("total", "none")])
    assert _aggregate(family, raw) == {"n": 5, "total": 15, "first": 1}


def test_a_one_doc_run_and_calls_outside_a_run():
    family = _family("toy_one")
    raw, logged = _run(family, _docs([42]))
    assert logged == [["n", "total", "first"]] and _aggregate(family, raw) == {"n": 1, "total": 42, "first": 42}
    out = family.records_for({"doc_id": "x", "x": 1}, {"doc_id": "x", "x": 1})  # no filtered run open
    assert list(out) == ["n", "total", "first"] and type(out["total"]) is dict
    plain = [{"doc_id": f"p{k}", "x": k} for k in range(3)]
    assert family.function("total")(plain) == 3  # direct calls summarise what they are given


def test_lead_records_without_the_runs_summary_are_refused():
    family = _family("toy_refused")
    raw, _ = _run(family, _docs([1, 2, 3, 4]))
    aggregation._memo.clear()
    with pytest.raises(RuntimeError, match="lead record"):
        family.function("total")(raw[("total", "none")])


def test_lm_evals_uneven_count_warning_is_dropped_for_lead_tasks_only():
    import logging

    family = _family("toy_warn")
    _run(family, _docs([1, 2]))
    notice = aggregation._UnevenCountsNotice()

    def record(message):
        return logging.LogRecord("lm_eval.evaluator_utils", logging.WARNING, __file__, 1, message, None, None)

    text = "Metrics were not scored on the same number of documents (n,none=2, total,none=1)."
    assert not notice.filter(record(f"[toy_warn] {text}"))
    assert notice.filter(record(f"[other_task] {text}"))
    assert notice.filter(record("[toy_warn] something else"))


def test_docs_are_known_by_identity_not_by_id():
    """Duplicate doc ids still give one lead; docs that are not the objects the filter saw (a task
    without shared docs: each walk over a dataset decodes fresh dicts) return every key, plain records."""
    family = _family("toy_identity")
    docs = [{"doc_id": "same", "x": x} for x in (1, 2, 3)]
    raw, logged = _run(family, docs)
    assert [len(k) for k in logged] == [3, 1, 1] and _aggregate(family, raw) == {"n": 3, "total": 6, "first": 1}

    LeadDocFilter().apply([["a"], ["b"]], _docs([1, 2]))
    copies = _docs([1, 2])  # equal dicts, other objects
    outs = [family.records_for({"doc_id": d["doc_id"], "x": d["x"]}, d) for d in copies]
    assert all(list(o) == ["n", "total", "first"] and type(o["total"]) is dict for o in outs)
    aggregation.mark_lead_run([])  # no run open afterwards
    assert aggregation._run is None


def test_every_key_on_every_doc_when_asked(monkeypatch):
    """``LM_EVAL_BIAS_ALL_KEYS_PER_DOC=1`` (for consumers that read every metric of every sample, such as
    lm-eval's W&B sample table): the old behaviour, same numbers."""
    monkeypatch.setenv(aggregation.ALL_KEYS_ENV, "1")
    family = _family("toy_all")
    raw, logged = _run(family, _docs([2, 7, 1]))
    assert all(keys == ["n", "total", "first"] for keys in logged)
    assert all(type(v) is dict for v in raw[("total", "none")]) and len(raw[("total", "none")]) == 3
    assert _aggregate(family, raw) == {"n": 3, "total": 10, "first": 2}
