"""Shards keep units whole, cover every doc once, and their merged samples give the unsharded metrics."""

from __future__ import annotations

import json
import math

import pytest

from lm_eval_bias import samples
from lm_eval_bias.core.sharding import parse_shard, select_shard


def _run(task, model_args, shard=None):
    import os

    from lm_eval import simple_evaluate

    import lm_eval_bias

    os.environ["LM_EVAL_BIAS_BOOTSTRAP_ITERS"] = "100"
    tm = lm_eval_bias.task_manager(metadata={"shard": shard} if shard else None)
    return simple_evaluate(model="bias-probe", model_args=model_args, tasks=[task], task_manager=tm,
                           bootstrap_iters=0, log_samples=True)


def _write_samples(results, task, path):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(s, default=str) + "\n" for s in results["samples"][task]))


def test_parse_and_select():
    assert parse_shard("1/3") == (1, 3) and parse_shard(None) is None
    with pytest.raises(ValueError):
        parse_shard("3/3")
    docs = [{"u": u, "k": k} for u in "abcde" for k in (0, 1)]
    shards = [select_shard(docs, f"{i}/2", lambda d: d["u"]) for i in range(2)]
    assert [d["u"] for d in shards[0]] == ["a", "a", "c", "c", "e", "e"]
    assert sorted(map(str, shards[0] + shards[1])) == sorted(map(str, docs))


@pytest.mark.parametrize("task", ["focus_2afc_income", "focus_salary"])
def test_merged_shards_equal_the_unsharded_run(focus_env, tmp_path, task):
    args = "refusal_rate=0.2,position_bias=0.3,salary_noise=2000,seed=4"
    full = _run(task, args)
    from lm_eval_bias import analysis

    full_metrics = analysis.from_results(full, [task])[task].values  # every key of the unsharded run
    reported = {k.split(",")[0]: v for k, v in full["results"][task].items() if "," in k and v != "N/A"}
    assert all(full_metrics[k] == pytest.approx(v, nan_ok=True) for k, v in reported.items())  # its headline
    seen = []
    for i in range(3):
        part = _run(task, args, shard=f"{i}/3")
        docs = [s["doc"] for s in part["samples"][task]]
        seen += [d["doc_id"] for d in docs]
        if task == "focus_2afc_income":  # pairs never split
            pairs = {}
            for d in docs:
                pairs.setdefault(d["pair_id"], set()).add(d["order"])
            assert all(orders == {"AB", "BA"} for orders in pairs.values())
        _write_samples(part, task, tmp_path / f"shard{i}" / f"samples_{task}_x.jsonl")
    assert sorted(seen) == sorted(s["doc"]["doc_id"] for s in full["samples"][task])
    merged = samples.summarize(task, samples.load_records(tmp_path, task))
    for key, value in merged.estimates.items():
        assert value == pytest.approx(full_metrics[key], nan_ok=True, rel=1e-9, abs=1e-12), key
    for key, value in merged.stderr.items():
        if key == "n_defined_cells":  # a count, reported without a bootstrap error
            continue
        assert value == pytest.approx(full_metrics[f"{key}_stderr"], nan_ok=True, rel=1e-9, abs=1e-12), key
    if task == "focus_salary":
        for key, value in merged.tests.items():
            assert value == pytest.approx(full_metrics[key], rel=1e-6), key
