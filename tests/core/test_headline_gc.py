"""Summaries run with Python's cyclic garbage collector paused (``aggregation.paused_garbage_collection``),
and the collector is in its earlier state afterwards, also after an error; decoding many compact
values at once gives the records of one-by-one decoding."""

from __future__ import annotations

import gc
import json

import pytest

from lm_eval_bias.core import aggregation
from lm_eval_bias.core.aggregation import HeadlineFamily, RecordCodec


@pytest.fixture(autouse=True)
def _collector_back_on():
    aggregation._memo.clear()
    yield
    gc.enable()


def _family(seen: list) -> HeadlineFamily:
    def summarize(records):
        seen.append(gc.isenabled())
        if any(r["x"] < 0 for r in records):
            raise ValueError("negative x")
        return {"total": sum(r["x"] for r in records)}

    return HeadlineFamily("gc_toy", summarize, {"total": lambda s: s["total"]}, codec=RecordCodec(("x",)))


def test_the_summary_runs_with_the_collector_paused_and_it_is_back_on_afterwards():
    seen: list = []
    family = _family(seen)
    values = [family.records_for({"x": x})["total"] for x in (1, 2, 3)]
    assert gc.isenabled()
    assert family.function("total")(values) == 6.0
    assert seen == [False] and gc.isenabled()


def test_the_collector_is_back_on_after_a_failing_summary_and_stays_off_if_it_was_off():
    seen: list = []
    family = _family(seen)
    with pytest.raises(ValueError, match="negative x"):
        family.function("total")([family.records_for({"x": -1})["total"]])
    assert gc.isenabled()
    gc.disable()
    assert family.function("total")([family.records_for({"x": 4})["total"]]) == 4.0
    assert seen == [False, False] and not gc.isenabled()


CODEC = RecordCodec(("template", "group", "probs", "status"), sample_fields=("status",), mapping_fields=("probs",),
                    codes={"status": ("valid", "refusal")}, defaults={"doc_id": None})
PLAIN = RecordCodec(("template", "group", "cells", "status"), sample_fields=("status",))


@pytest.mark.parametrize("codec", [CODEC, PLAIN], ids=["codes-and-mappings", "plain"])
def test_decoding_many_values_at_once_equals_decoding_each(codec):
    records = [
        {"template": "t/0", "group": 3, "probs": {"B": 0.25, "A": 0.75}, "cells": [1, 2], "status": "valid"},
        {"template": "t/1", "group": 0, "probs": None, "cells": [], "status": "other"},
        {"template": "t/1", "group": 1, "probs": {"A": float("nan")}, "cells": None, "status": None,
         "samples": [{"sample": 0, "status": "valid"}, {"sample": 1, "status": "refusal"}]},
    ]
    values = [codec.encode(r) for r in records]
    one_by_one = [codec.decode(v) for v in values]
    many = codec.decode_many(values)
    assert json.dumps(many, sort_keys=True) == json.dumps(one_by_one, sort_keys=True)  # NaN == NaN as text
    assert many[2]["samples"] == [{"sample": 0, "status": "valid"}, {"sample": 1, "status": "refusal"}]
    assert many[0]["template"] == "t/0" and many[0]["group"] == 3
    # lists read back from JSON, and tuples (memoised values), decode the same
    for read_back in ([json.loads(v) for v in values], [aggregation.freeze(json.loads(v)) for v in values]):
        assert json.dumps(codec.decode_many(read_back), sort_keys=True) == json.dumps(one_by_one, sort_keys=True)


def test_decoding_many_falls_back_to_one_by_one_when_the_joined_text_is_not_one_record_per_value():
    codec = RecordCodec(("x",))
    # joined blindly, "[1],[2]" would give two records for one value; it is no single record: an error
    with pytest.raises(ValueError, match="Extra data"):
        codec.decode_many(['[1],[2]', '[3]'])
    assert codec.decode_many(['[5]', '[6]']) == [{"x": 5}, {"x": 6}]


def _blas_threads() -> list[int]:
    from threadpoolctl import threadpool_info

    return [pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"]


def test_the_summary_runs_with_numpy_blas_on_one_thread_and_the_limit_is_restored():
    import numpy as np

    np.ones((4, 4)) @ np.ones((4, 4))  # numpy's BLAS is loaded
    before = _blas_threads()
    assert before, "numpy's BLAS library is not visible to threadpoolctl"
    seen: list = []

    def summarize(records):
        seen.append(_blas_threads())
        return {"total": sum(r["x"] for r in records)}

    family = HeadlineFamily("blas_toy", summarize, {"total": lambda s: s["total"]}, codec=RecordCodec(("x",)))
    assert family.function("total")([family.records_for({"x": x})["total"] for x in (1, 2)]) == 3.0
    assert seen == [[1] * len(before)]
    assert _blas_threads() == before
