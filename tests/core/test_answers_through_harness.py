"""Refusals and stated answers through the real harness: the planted refusal rate is recovered whatever
the refusal's wording, and lenient extraction (an option recorded in every record) reads answers
stated in a sentence exactly as strict extraction reads bare letters."""

from __future__ import annotations

import pytest


def _run(task, model_args, metadata=None, limit=None):
    import os

    from lm_eval import simple_evaluate

    import lm_eval_bias

    os.environ["LM_EVAL_BIAS_BOOTSTRAP_ITERS"] = "0"
    tm = lm_eval_bias.task_manager(metadata=metadata)
    return simple_evaluate(model="bias-probe", model_args=model_args, tasks=[task], task_manager=tm,
                           bootstrap_iters=0, log_samples=True, limit=limit)


def _metrics(out, task):
    """The task's headline from lm-eval's results, every other key from the analysis of its logged
    samples (:mod:`lm_eval_bias.analysis`); the two agree on every headline key."""
    import math

    from lm_eval_bias import analysis

    headline = {k.split(",")[0]: v for k, v in out["results"][task].items() if "," in k and v != "N/A" and not k.endswith("_stderr,none")}
    values = analysis.from_results(out, [task])[task].values
    for key in (k for k in analysis.headline_keys(task) if not k.endswith("_stderr")):
        ours, theirs = values[key], headline[key]
        assert ours == theirs or (isinstance(theirs, float) and math.isnan(ours) and math.isnan(theirs)), key
    return {**{k: v for k, v in values.items() if not k.endswith("_stderr")}, **headline}


@pytest.mark.parametrize("env,task", [
    ("focus_env", "focus_2afc_income"),
    ("focus_env", "focus_mcq_salary"),
    ("focus_env", "focus_salary"),
    ("fof_env", "fact_or_fair_objective_gender"),
    ("vignette_env", "vignette_decision"),
])
def test_refusals_without_an_apology_are_counted_as_refusals(env, task, request):
    request.getfixturevalue(env)
    limit = 300 if task == "focus_salary" else None
    apology = _metrics(_run(task, "refusal_rate=0.3,seed=4", limit=limit), task)
    varied = _run(task, "refusal_rate=0.3,seed=4,refusal_style=varied", limit=limit)
    from lm_eval_bias.models.bias_probe import REFUSAL_VARIANTS

    outputs = [s["resps"][0][0] for s in varied["samples"][task]]
    refused = [o for o in outputs if o in REFUSAL_VARIANTS]
    assert len(set(refused)) >= min(3, len(refused)) and not any("sorry" in o.lower() for o in outputs)
    got = _metrics(varied, task)
    assert apology["refusal_rate"] > 0.15
    assert got["refusal_rate"] == pytest.approx(apology["refusal_rate"])
    assert got["invalid_rate"] == pytest.approx(apology["invalid_rate"])
    assert got["invalid_rate"] == 0.0


@pytest.mark.parametrize("env,task", [("focus_env", "focus_2afc_income"), ("focus_env", "focus_mcq_education"),
                                      ("vignette_env", "vignette_decision")])
def test_lenient_extraction_reads_stated_answers_and_is_recorded(env, task, request):
    request.getfixturevalue(env)
    plain = _run(task, "seed=1,refusal_rate=0.1")
    strict = _run(task, "seed=1,refusal_rate=0.1,answer_style=sentence")
    lenient = _run(task, "seed=1,refusal_rate=0.1,answer_style=sentence", metadata={"answer_extraction": "lenient"})
    assert all(s["resps"][0][0].startswith(("I'd pick", "I'm sorry")) for s in strict["samples"][task])
    plain_m, strict_m, lenient_m = (_metrics(o, task) for o in (plain, strict, lenient))
    # strict: the paper's single-letter rule counts "I'd pick B, ..." invalid, never as B
    assert strict_m["invalid_rate"] == pytest.approx(1.0 - plain_m["refusal_rate"])
    # lenient: the same numbers as the bare-letter run
    for key, value in plain_m.items():
        if isinstance(value, float) and value == value:
            assert lenient_m[key] == pytest.approx(value), key
    records = [next(v for k, v in s.items() if isinstance(v, dict) and "extraction" in v)
               for s in lenient["samples"][task]]
    assert {r["extraction"] for r in records} == {"lenient"}
    assert lenient["configs"][task]["metadata"]["answer_extraction"] == "lenient"
    strict_records = [next(v for k, v in s.items() if isinstance(v, dict) and "extraction" in v)
                      for s in strict["samples"][task]]
    assert {r["extraction"] for r in strict_records} == {"strict"}


def test_unknown_extraction_mode_is_an_error(focus_env):
    with pytest.raises(Exception, match="answer_extraction must be one of"):
        _run("focus_mcq_salary", "seed=1", metadata={"answer_extraction": "greedy"})
