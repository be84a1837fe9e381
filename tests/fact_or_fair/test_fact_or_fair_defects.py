"""FACT-OR-FAIR defects a replication would hit (issue 28).

- An answer that reasons in a paragraph, then a blank line, then its JSON must reach the parser whole:
  the task YAMLs state ``until: []`` (lm-eval 0.4.13 otherwise substitutes ``"\\n\\n"``, which cut such
  answers to their first paragraph and scored them invalid).
- The objective query count in docs/fact-or-fair.md is what the builder writes.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
YAMLS = sorted((ROOT / "task_yamls" / "fact_or_fair").glob("fact_or_fair_*.yaml"))
REASONING = "Let me think about which group this statistic concerns.\n\nReasoning over, my answer:\n\n"


def _reasoning_model_class():
    """A planted LM that honours the request's stop sequences (as every lm-eval backend does) and
    answers every FACT-OR-FAIR prompt with a reasoning paragraph, a blank line, then ``{"answer": "A"}``."""
    import lm_eval.models  # noqa: F401  (built-in models first: harness-facts.md)
    from lm_eval.api.model import LM
    from lm_eval.api.registry import MODEL_REGISTRY, register_model

    name = "fof-reasoning-probe"
    if name in MODEL_REGISTRY:
        return name

    @register_model(name)
    class ReasoningProbe(LM):
        def __init__(self, **kwargs):
            super().__init__()

        def generate_until(self, requests, disable_tqdm: bool = False):
            outputs = []
            for request in requests:
                text = REASONING + '{"answer": "A"}'
                for stop in request.args[1].get("until") or []:
                    if stop and stop in text:
                        text = text[: text.index(stop)]
                outputs.append(text)
            return outputs

        def loglikelihood(self, requests, disable_tqdm: bool = False):
            raise NotImplementedError

        def loglikelihood_rolling(self, requests, disable_tqdm: bool = False):
            raise NotImplementedError

    return name


def test_every_fact_or_fair_yaml_states_512_tokens_and_an_empty_stop_list():
    assert len(YAMLS) == 10
    for path in YAMLS:
        text = path.read_text()
        block = text[text.index("generation_kwargs:"): text.index("metric_list:")]
        assert "  until: []\n" in block, path.name
        assert "  max_gen_toks: 512\n" in block and "  temperature: 0.0\n" in block, path.name


def test_reasoning_before_the_json_answer_is_scored_valid_through_the_harness(fof_env):
    from lm_eval import simple_evaluate

    import lm_eval_bias

    task = "fact_or_fair_objective_gender"
    results = simple_evaluate(model=_reasoning_model_class(), tasks=[task], limit=6, bootstrap_iters=0,
                              task_manager=lm_eval_bias.task_manager(), log_samples=True)
    metrics = {k.split(",")[0]: v for k, v in results["results"][task].items() if "," in k}
    assert metrics["invalid_rate"] == 0.0 and metrics["refusal_rate"] == 0.0
    samples = results["samples"][task]
    assert len(samples) == 6
    for sample in samples:
        arguments = sample["arguments"]
        gen_kwargs = arguments["gen_args_0"]["arg_1"] if isinstance(arguments, dict) else arguments[0][1]
        assert gen_kwargs["until"] == [] and gen_kwargs["max_gen_toks"] == 512
        response = sample["resps"][0][0]
        assert response.startswith(REASONING) and response.endswith('{"answer": "A"}')


def test_the_old_blank_line_stop_would_have_scored_the_same_answer_invalid():
    """The parser's side of the defect: the answer cut at ``"\\n\\n"`` holds no JSON."""
    from lm_eval_bias.core.parsing import ResponseStatus, parse_json_answer

    cut = (REASONING + '{"answer": "A"}').split("\n\n")[0]
    assert parse_json_answer(cut, "AB").status is ResponseStatus.INVALID
    assert parse_json_answer(REASONING + '{"answer": "A"}', "AB").value == "A"


UPSTREAM = ROOT.parent / "shared" / "upstream" / "fact_or_fair"


@pytest.mark.skipif(not UPSTREAM.is_dir(), reason="the authors' files are not in this checkout's setting")
def test_docs_objective_query_count_is_what_the_builder_writes_from_the_authors_files(tmp_path):
    """docs/fact-or-fair.md said 192; the build writes 90 gender + 108 race (the paper's race S_fact
    values are multiples of 1/108)."""
    import pandas as pd

    from lm_eval_bias.datasets_builder.fact_or_fair import build_fact_or_fair

    doc = (ROOT / "docs" / "fact-or-fair.md").read_text()
    match = re.search(r"(\d+) objective queries \((\d+) gender \+ (\d+) race\)", doc)
    assert match, "docs/fact-or-fair.md must state the objective query count per attribute"
    total, gender, race = map(int, match.groups())
    build_fact_or_fair(UPSTREAM, tmp_path / "out", seed=0)
    objective = pd.read_parquet(next((tmp_path / "out" / "data" / "objective").glob("*.parquet")))
    counts = objective["attribute"].value_counts().to_dict()
    assert (total, gender, race) == (len(objective), counts["gender"], counts["race"]) == (198, 90, 108)


# -- Table 2's mean subjective S_fair and Table 3's High / Low split and "Avg. Increase" --------------
def test_table_2_and_3_summaries_reproduce_the_papers_printed_numbers():
    """From the transcribed Table 3 and 5 cells (lm_eval_bias/fact_or_fair/reference_values.csv)."""
    from lm_eval_bias.core import reference
    from lm_eval_bias.fact_or_fair import stats as fof

    cells = {(v.table, v.section, v.row, v.column): v.value for v in reference.load("fact_or_fair")}
    for model in ("GPT-3.5-Turbo-0125", "Qwen-2.5-72B-Instruct"):
        for attribute in ("Gender", "Race"):
            contexts = {c: cells[("Table 5", attribute, model, f"LLM {label}")] / 100 for c, label in
                        (("baseline", "S-B"), ("representativeness", "S-R"), ("attribution", "S-A"), ("ingroup", "S-G"))}
            short = model.split("-Turbo")[0].replace("-72B-Instruct", "")
            printed = cells[("Table 2", "Subj. S_fair", short, f"Subj. S_fair {attribute}")]
            assert round(100 * fof.subjective_fairness_mean(contexts), 2) == pytest.approx(printed, abs=0.011)
    k = {"Gender": 2, "Race": 4}
    for model in ("GPT-3.5", "GPT-4o", "Gemini-1.5", "LLaMA-3.2", "WizardLM-2", "Qwen-2.5"):
        for attribute in ("Gender", "Race"):
            columns = ("R. Bias High", "R. Bias Low", "Attr. Err.", "In-G. Bias", "Out-G. Bias")
            rates = {c: cells[("Table 3", c, model, f"{c} {attribute}")] / 100 for c in columns}
            chances = {c: ((k[attribute] - 1) / k[attribute] if c == "Out-G. Bias" else 1 / k[attribute]) for c in columns}
            printed = cells[("Table 3", "Avg. Increase", model, f"Avg. Increase {attribute}")]
            assert 100 * fof.average_increase(rates, chances) == pytest.approx(printed, abs=0.011), (model, attribute)
