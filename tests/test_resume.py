"""A run killed mid-way and restarted with lm-eval's request cache re-queries nothing it had answered
and gives the results of an uninterrupted run (bias-probe counts its calls and can crash on purpose)."""

from __future__ import annotations

import pytest


def _run(model_args, cache):
    from lm_eval import simple_evaluate

    import lm_eval_bias

    return simple_evaluate(model="bias-probe", model_args=model_args, tasks=["focus_2afc_income"],
                           task_manager=lm_eval_bias.task_manager(), use_cache=cache, bootstrap_iters=0)


def test_killed_run_resumes_from_the_cache(focus_env, tmp_path):
    base = "refusal_rate=0.1,position_bias=0.2,seed=2"
    uninterrupted = _run(base, None)
    n_docs = uninterrupted["n-samples"]["focus_2afc_income"]["effective"]

    log = tmp_path / "calls.jsonl"
    cache = str(tmp_path / "cache" / "probe")
    with pytest.raises(RuntimeError, match="simulated crash"):
        _run(f"{base},call_log={log},fail_after=100", cache)
    assert len(log.read_text().splitlines()) == 100

    resumed = _run(f"{base},call_log={log}", cache)
    calls = len(log.read_text().splitlines())
    assert calls == n_docs  # 100 before the crash + only the remaining ones after it
    assert resumed["results"] == uninterrupted["results"]
