"""Scoring REFLECT's letter tasks by probability (beyond the paper; docs/probability-scoring.md).

- the new stats functions on hand-computed cases;
- the planted ``bias-probe`` through the harness: the ``*_logprob`` tasks recover the planted letter
  probabilities, swap-averaged preferences and win rates (expected values derived here from the
  probe's utilities, independently of lm_eval_bias.stats);
- records carry ``method: logprob`` and are never merged with generated ones; the report label says
  ``[logprob]``;
- the tiny random-weight LLaVA through ``hf-multimodal-logprobs``: end to end with and without a chat
  template, and each log-likelihood equal to a direct transformers forward pass computed here.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from lm_eval_bias.reflect.schema import GROUP_PAIRS, GROUPS, RACES
from lm_eval_bias.reflect import mcq
from lm_eval_bias.reflect import twoafc
from tests.conftest import SMALL_OCCUPATIONS, SMALL_TEMPLATES
from tests.reflect.test_reflect_pipeline import metrics_of

N_TEMPLATES = len(SMALL_OCCUPATIONS) * len(SMALL_TEMPLATES)


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


def _jsd(p, q) -> float:
    """JSD in bits, written out (not scipy)."""
    p, q = np.asarray(p, float) / np.sum(p), np.asarray(q, float) / np.sum(q)
    m = (p + q) / 2

    def kl(a, b):
        return float(sum(x * math.log2(x / y) for x, y in zip(a, b) if x > 0))

    return 0.5 * kl(p, m) + 0.5 * kl(q, m)


# -- stats: hand-computed cases ---------------------------------------------------------------------
def test_letter_probabilities_and_mass():
    lls = [math.log(0.2), math.log(0.6)]
    assert twoafc.normalised_letter_probabilities(lls) == pytest.approx([0.25, 0.75], abs=1e-15)
    assert twoafc.letter_mass(lls) == pytest.approx(0.8, abs=1e-15)
    # stable far from 0 and with a letter of probability zero
    assert twoafc.normalised_letter_probabilities([-1000.0, -1000.0 + math.log(3)]) == pytest.approx([0.25, 0.75])
    assert twoafc.normalised_letter_probabilities([-math.inf, -2.0]) == pytest.approx([0.0, 1.0])
    with pytest.raises(ValueError):
        twoafc.normalised_letter_probabilities([-math.inf, -math.inf])
    with pytest.raises(ValueError):
        twoafc.normalised_letter_probabilities([math.nan, 0.0])


def test_swap_averaged_preference_and_consistency():
    # AB: P(A) = 0.8 (i shown as A); BA: P(A) = 0.4, so P(B | i shown as B) = 0.6
    assert twoafc.swap_averaged_preference(0.8, 0.4) == pytest.approx(0.7)
    assert twoafc.expected_swap_consistency(0.8, 0.4) == pytest.approx(0.8 * 0.6 + 0.2 * 0.4)
    # a pure position bias (always P(A) = 0.9) gives no preference and is mostly swap-inconsistent
    assert twoafc.swap_averaged_preference(0.9, 0.9) == pytest.approx(0.5)
    assert twoafc.expected_swap_consistency(0.9, 0.9) == pytest.approx(0.18)
    np.testing.assert_allclose(twoafc.swap_averaged_preference(np.array([1.0, 0.0]), np.array([0.0, 1.0])), [1.0, 0.0])


def _score(pair, order, a, b, p_a, mass=float("nan"), template="t/1"):
    return twoafc.TwoAFCScore(template, template.split("/")[0], pair, order, a, b, p_a, mass)


def test_twoafc_logprob_summary_hand_case():
    # groups 0 = Asian man, 1 = Asian woman, 2 = Black man
    scores = [
        _score("p01", "AB", 0, 1, 0.8, 0.9), _score("p01", "BA", 1, 0, 0.4, 0.7),  # pref_0 = 0.7, cons 0.56
        _score("p02", "AB", 0, 2, 0.3, 0.5), _score("p02", "BA", 2, 0, 0.5, 0.9),  # pref_0 = 0.4, cons 0.5
        _score("p12", "AB", 1, 2, 0.6),  # incomplete: in first_position_rate only; no letter mass
    ]
    s = twoafc.twoafc_logprob_summary(scores, n_boot=0)
    e = s.estimates
    assert e["first_position_rate"] == pytest.approx((0.8 + 0.4 + 0.3 + 0.5 + 0.6) / 5)
    assert e["retained_rate"] == pytest.approx((0.56 + 0.5) / 2)
    assert e["swap_inconsistent_rate"] == pytest.approx(1 - (0.56 + 0.5) / 2)
    assert e["male_win_rate"] == pytest.approx(0.7)  # the one mixed-gender comparison: man 0 vs woman 1
    assert e["win_rate_asian"] == pytest.approx(0.4)  # the one cross-race comparison: Asian 0 vs Black 2
    assert e["win_rate_black"] == pytest.approx(0.6)
    assert math.isnan(e["win_rate_white"])
    assert e["polarization"] == pytest.approx((0.2 + 0.1) / 2)
    assert e["extreme_cell_rate"] == 0.0
    assert e["n_defined_cells"] == 2.0
    assert e["letter_mass"] == pytest.approx((0.9 + 0.7 + 0.5 + 0.9) / 4)
    assert s.win_matrix[0, 1] == pytest.approx(0.7) and s.win_matrix[1, 0] == pytest.approx(0.3)
    assert s.win_matrix[0, 2] == pytest.approx(0.4) and math.isnan(s.win_matrix[1, 2])
    assert s.wins[0, 1] == pytest.approx(0.7) and s.wins[2, 0] == pytest.approx(0.6)


def test_twoafc_logprob_extreme_cells_and_bootstrap():
    scores = []
    for t in ("a/1", "a/2", "b/1"):
        scores += [_score("p01", "AB", 0, 1, 0.97, template=t), _score("p01", "BA", 1, 0, 0.01, template=t)]
    table = twoafc.twoafc_logprob_count_table(scores)
    assert table.templates == ["a/1", "a/2", "b/1"] and table.strata == ["a", "a", "b"]
    s = twoafc.twoafc_logprob_summary(scores, n_boot=50, seed=1)
    assert s.estimates["male_win_rate"] == pytest.approx(0.98)
    assert s.estimates["extreme_cell_rate"] == 1.0
    # occupation b has a single template: nothing to resample there, so no error (NaN + a warning), never 0
    assert math.isnan(s.stderr["male_win_rate"])


def test_twoafc_score_from_record_requires_logprob_method():
    record = {"template": "t/1", "occupation": "t", "pair_id": "p", "order": "AB", "group_a": 0, "group_b": 1,
              "method": "logprob", "probs": {"A": 0.25, "B": 0.75}, "letter_mass": 0.5}
    score = twoafc.TwoAFCScore.from_dict(record)
    assert score.p_a == 0.25 and score.letter_mass == 0.5
    with pytest.raises(ValueError, match="not a probability-scored record"):
        twoafc.TwoAFCScore.from_dict({**record, "method": "generate"})
    with pytest.raises(KeyError):  # a logprob record is not a generation call either
        twoafc.TwoAFCCall.from_dict(record)


MCQ_PHOTOS = {  # group index -> option distribution over A-D (education codes 1-4)
    0: [0.5, 0.5, 0.0, 0.0],     # Asian man, mean 1.5
    1: [0.0, 0.0, 0.5, 0.5],     # Asian woman, mean 3.5
    8: [0.25, 0.25, 0.25, 0.25],  # White man, mean 2.5
    9: [1.0, 0.0, 0.0, 0.0],     # White woman, mean 1
}


def test_mean_probability_distributions_hand_case():
    groups = list(MCQ_PHOTOS)
    d = mcq.mean_probability_distributions(np.asarray([MCQ_PHOTOS[g] for g in groups]), groups)
    np.testing.assert_allclose(d["male"], [0.375, 0.375, 0.125, 0.125])
    np.testing.assert_allclose(d["female"], [0.5, 0.0, 0.25, 0.25])
    np.testing.assert_allclose(d["asian"], [0.25, 0.25, 0.25, 0.25])
    np.testing.assert_allclose(d["white"], [0.625, 0.125, 0.125, 0.125])
    np.testing.assert_allclose(d["overall"], [0.4375, 0.1875, 0.1875, 0.1875])
    assert np.isnan(d["black"]).all()


def test_mcq_logprob_summary_hand_case():
    scores = [mcq.MCQScore("t/1", "t", g, tuple(p), 0.5) for g, p in MCQ_PHOTOS.items()]
    s = mcq.mcq_logprob_summary(scores, "ABCD", mcq.EDUCATION_CODES, n_boot=0)
    e = s.estimates
    assert e["gap_male"] == pytest.approx((2.0 - 2.25) / 2.25)  # mu_male 2.0, mu_female 2.25
    assert e["gap_asian"] == pytest.approx((2.5 - 1.75) / 1.75)  # mu_asian 2.5, mu_white 1.75
    assert math.isnan(e["gap_black"])
    overall = [0.4375, 0.1875, 0.1875, 0.1875]
    assert e["jsd_female"] == pytest.approx(_jsd([0.5, 0.0, 0.25, 0.25], overall))
    assert e["jsd_white"] == pytest.approx(_jsd([0.625, 0.125, 0.125, 0.125], overall))
    assert e["letter_mass"] == pytest.approx(0.5)
    assert "valid_rate" not in e and "refusal_rate" not in e
    np.testing.assert_allclose(s.distributions["female"], [0.5, 0.0, 0.25, 0.25])
    with pytest.raises(ValueError):
        mcq.MCQScore("t/1", "t", 0, (0.5, 0.6), 1.0)  # not a distribution


# -- the planted probe through the harness ------------------------------------------------------------
PLANTED = {"position_logit": 0.7, "logit_temperature": 2.0, "letter_mass": 0.8}
PLANTED_ARGS = ",".join(f"{k}={v}" for k, v in PLANTED.items())


def _evaluate(model, model_args, tasks, limit=None, apply_chat_template=False, metadata=None, bootstrap_iters=20):
    import os

    from lm_eval import simple_evaluate

    import lm_eval_bias

    os.environ["LM_EVAL_BIAS_BOOTSTRAP_ITERS"] = str(bootstrap_iters)
    return simple_evaluate(model=model, model_args=model_args, tasks=tasks, limit=limit,
                           apply_chat_template=apply_chat_template, bootstrap_iters=0, log_samples=True,
                           task_manager=lm_eval_bias.task_manager(metadata=metadata))


@pytest.fixture(scope="module")
def probe_run(small_focus_data):
    import os

    old = os.environ.get("LM_EVAL_BIAS_DATA_DIR")
    os.environ["LM_EVAL_BIAS_DATA_DIR"] = str(small_focus_data)
    try:
        yield _evaluate("bias-probe", PLANTED_ARGS, ["focus_2afc_income_logprob", "focus_mcq_salary_logprob"])
    finally:
        if old is None:
            os.environ.pop("LM_EVAL_BIAS_DATA_DIR", None)
        else:
            os.environ["LM_EVAL_BIAS_DATA_DIR"] = old


def _utilities():
    from lm_eval_bias.models.bias_probe import BiasProbeLM

    probe = BiasProbeLM()
    return probe.utilities, probe.utility_rank


def test_probe_2afc_logprob_records_carry_planted_probabilities(probe_run):
    u, _ = _utilities()
    T, b, mass = PLANTED["logit_temperature"], PLANTED["position_logit"], PLANTED["letter_mass"]
    from lm_eval_bias.samples import sample_record

    samples = probe_run["samples"]["focus_2afc_income_logprob"]
    assert len(samples) == N_TEMPLATES * 90
    for sample in samples:
        record = sample_record("focus_2afc_income_logprob", sample)
        assert record["method"] == "logprob"
        assert [args[1] for args in sample["arguments"]] == [" A", " B"]  # lm-eval's delimiter, no chat template
        expected_a = _sigmoid((u[record["group_a"]] - u[record["group_b"]]) / T + b)
        assert record["probs"]["A"] == pytest.approx(expected_a, abs=1e-12)
        assert record["probs"]["A"] + record["probs"]["B"] == pytest.approx(1.0, abs=1e-12)
        assert record["letter_mass"] == pytest.approx(mass, abs=1e-12)
        assert record["logprobs"]["A"] == pytest.approx(math.log(mass * expected_a), abs=1e-12)


def test_probe_2afc_logprob_recovers_planted_win_rates(probe_run):
    u, _ = _utilities()
    T, b = PLANTED["logit_temperature"], PLANTED["position_logit"]

    def pref(i, j):  # swap-averaged preference of i over j, from the planted logits
        d = (u[i] - u[j]) / T
        return (_sigmoid(d + b) + _sigmoid(d - b)) / 2

    cells = {(i, j): pref(i, j) for i, j in GROUP_PAIRS}
    mixed = [(i, j) for i, j in GROUP_PAIRS if GROUPS[i].gender != GROUPS[j].gender]
    male = np.mean([pref(i, j) if GROUPS[i].gender == "man" else pref(j, i) for i, j in mixed])
    m = metrics_of(probe_run, "focus_2afc_income_logprob")
    assert m["male_win_rate"] == pytest.approx(male, abs=1e-12)
    for race in RACES:
        cross = [pref(i, j) for i in range(10) for j in range(10) if GROUPS[i].race == race and GROUPS[j].race != race]
        assert m[f"win_rate_{race.lower()}"] == pytest.approx(np.mean(cross), abs=1e-12)
    assert m["polarization"] == pytest.approx(np.mean([abs(v - 0.5) for v in cells.values()]), abs=1e-12)
    assert m["extreme_cell_rate"] == pytest.approx(np.mean([v < 0.1 or v > 0.9 for v in cells.values()]), abs=1e-12)
    first = np.mean([(_sigmoid((u[i] - u[j]) / T + b) + _sigmoid((u[j] - u[i]) / T + b)) / 2 for i, j in GROUP_PAIRS])
    assert m["first_position_rate"] == pytest.approx(first, abs=1e-12)
    consistency = np.mean([
        _sigmoid((u[i] - u[j]) / T + b) * (1 - _sigmoid((u[j] - u[i]) / T + b))
        + (1 - _sigmoid((u[i] - u[j]) / T + b)) * _sigmoid((u[j] - u[i]) / T + b) for i, j in GROUP_PAIRS])
    assert m["retained_rate"] == pytest.approx(consistency, abs=1e-12)
    assert m["swap_inconsistent_rate"] == pytest.approx(1 - consistency, abs=1e-12)
    assert m["letter_mass"] == pytest.approx(PLANTED["letter_mass"], abs=1e-12)
    assert m["n_defined_cells"] == 45
    assert m["male_win_rate_stderr"] == pytest.approx(0.0, abs=1e-9)  # every template plants the same
    assert "refusal_rate" not in m and "invalid_rate" not in m


def test_probe_mcq_logprob_recovers_planted_distributions(probe_run):
    _, rank = _utilities()
    T = PLANTED["logit_temperature"]
    options = "ABCDEF"
    values = np.asarray([10_000, 30_000, 50_000, 70_000, 90_000, 110_000], float)

    def planted(g):
        x = rank[g] / 9 * (len(options) - 1)
        z = np.asarray([-((o - x) ** 2) / T for o in range(len(options))])
        return np.exp(z - z.max()) / np.exp(z - z.max()).sum()

    samples = probe_run["samples"]["focus_mcq_salary_logprob"]
    assert len(samples) == N_TEMPLATES * 10
    from lm_eval_bias.samples import sample_record

    for sample in samples:
        record = sample_record("focus_mcq_salary_logprob", sample)
        assert record["method"] == "logprob"
        np.testing.assert_allclose([record["probs"][o] for o in options], planted(record["group"]), atol=1e-12)
    dist = {"male": np.mean([planted(g) for g in range(10) if GROUPS[g].gender == "man"], axis=0),
            "female": np.mean([planted(g) for g in range(10) if GROUPS[g].gender == "woman"], axis=0)}
    for race in RACES:
        dist[race.lower()] = np.mean([planted(g) for g in range(10) if GROUPS[g].race == race], axis=0)
    overall = np.mean([planted(g) for g in range(10)], axis=0)
    m = metrics_of(probe_run, "focus_mcq_salary_logprob")
    for key, p in dist.items():
        assert m[f"jsd_{key}"] == pytest.approx(_jsd(p, overall), abs=1e-12)
    mu = {k: float(p @ values) for k, p in dist.items()}
    assert m["gap_male"] == pytest.approx((mu["male"] - mu["female"]) / mu["female"], abs=1e-12)
    for race in ("asian", "black", "latino", "middle_eastern"):
        assert m[f"gap_{race}"] == pytest.approx((mu[race] - mu["white"]) / mu["white"], abs=1e-12)
    assert m["letter_mass"] == pytest.approx(PLANTED["letter_mass"], abs=1e-12)


def test_probe_rejects_bad_logprob_args():
    from lm_eval_bias.models.bias_probe import BiasProbeLM

    with pytest.raises(ValueError, match="logit_temperature"):
        BiasProbeLM(logit_temperature=0)
    with pytest.raises(ValueError, match="letter_mass"):
        BiasProbeLM(letter_mass=1.5)
    with pytest.raises(ValueError, match="did you mean 'letter_mass'"):
        BiasProbeLM(leter_mass=0.5)
    assert {"logit_temperature", "position_logit", "letter_mass"} <= set(BiasProbeLM.argument_names())


def test_letter_prefix_and_choices():
    from lm_eval_bias.reflect import tasks as reflect

    assert reflect.doc_to_choice_letters({"pair_id": "p"}) == ["A", "B"]
    assert reflect.doc_to_choice_letters({"variant": "education", "letter_prefix": " "}) == [" A", " B", " C", " D"]
    with pytest.raises(ValueError, match="letter_prefix"):
        reflect._with_letter_prefix({}, "x")


def test_letter_prefix_metadata_reaches_the_continuations(focus_env):
    results = _evaluate("bias-probe", "", ["focus_2afc_income_logprob"], limit=2, metadata={"letter_prefix": "\n"})
    sample = results["samples"]["focus_2afc_income_logprob"][0]
    assert [args[1] for args in sample["arguments"]] == [" \nA", " \nB"]
    from lm_eval_bias.samples import sample_record

    assert sample_record("focus_2afc_income_logprob", sample)["letter_prefix"] == "\n"


# -- records: never merged with generated ones; labelled [logprob] --------------------------------------
def _write_run(folder, task, records, stamp):
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / f"samples_{task}_{stamp}.jsonl", "w", encoding="utf-8") as f:
        for k, record in enumerate(records):
            f.write(json.dumps({"doc_id": k, "doc": {"doc_id": f"d{k}-{stamp}"}, "retained_rate": record}) + "\n")


def test_samples_refuse_to_merge_generated_and_logprob_records(tmp_path, probe_run):
    from lm_eval_bias import samples

    logprob = [samples.sample_record("focus_2afc_income_logprob", s) for s in probe_run["samples"]["focus_2afc_income_logprob"][:4]]
    generated = [{k: v for k, v in r.items() if k not in ("method", "probs", "logprobs", "letter_mass", "greedy")}
                 | {"status": "valid", "choice": "A", "reason": None, "extraction": "strict"} for r in logprob]
    task = "focus_2afc_income_logprob"
    _write_run(tmp_path, task, generated, "a")
    _write_run(tmp_path, task, logprob, "b")
    with pytest.raises(ValueError, match="different scoring methods"):
        samples.read_records([tmp_path / f"samples_{task}_a.jsonl", tmp_path / f"samples_{task}_b.jsonl"], task)
    records = samples.read_records([tmp_path / f"samples_{task}_b.jsonl"], task)
    values = samples.result_values(task, records)
    assert set(values) == set(samples.aggregation_family(task).keys)
    assert samples.summarize(task, records).win_matrix.shape == (10, 10)


def test_model_label_marks_logprob_runs():
    from lm_eval_bias import samples

    base = {"config": {"model": "hf-multimodal-logprobs", "model_args": "pretrained=m"}}
    assert samples.model_label({**base, "configs": {"focus_2afc_income_logprob": {"task": "focus_2afc_income_logprob"}}}) \
        == "m [logprob]"
    assert samples.model_label({**base, "configs": {"focus_2afc_income": {"task": "focus_2afc_income"}}}) == "m"


def test_logprob_tasks_are_listed_with_their_image_counts():
    import lm_eval_bias
    from lm_eval_bias.guard import images_per_task

    names = {f"focus_2afc_{s}_logprob" for s in ("income", "education", "safety")} | {
        "focus_mcq_salary_logprob", "focus_mcq_education_logprob"}
    tm = lm_eval_bias.task_manager()
    assert names <= set(tm.all_subtasks) and "focus_logprob" in tm.all_groups
    counts = images_per_task()
    assert all(counts[n] == (2 if "2afc" in n else 1) for n in names) and counts["focus_logprob"] == 2


# -- the tiny LLaVA through hf-multimodal-logprobs ------------------------------------------------------
LIMIT = 4


@pytest.fixture(scope="module")
def tiny_llava(tmp_path_factory):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from lm_eval_bias.testing.tiny_vlm import build_tiny_llava

    return build_tiny_llava(tmp_path_factory.mktemp("tiny_llava_logprob"), seed=0)


@pytest.fixture(scope="module")
def direct(tiny_llava):
    import torch
    import transformers

    processor = transformers.AutoProcessor.from_pretrained(tiny_llava)
    model = transformers.AutoModelForImageTextToText.from_pretrained(tiny_llava).eval()

    def loglikelihood(context: str, continuation: str, images: list | None) -> float:
        """Plain transformers: log p(continuation | context, images) from one forward pass over the whole text."""
        kwargs = {"images": images} if images else {}
        whole = processor(text=context + continuation, return_tensors="pt", **kwargs)
        n_ctx = processor(text=context, return_tensors="pt", **kwargs)["input_ids"].shape[1]
        with torch.no_grad():
            logits = model(**whole).logits[0].float()
        logprobs = torch.log_softmax(logits, dim=-1)
        ids = whole["input_ids"][0]
        return float(sum(logprobs[p - 1, ids[p]] for p in range(n_ctx, ids.shape[0])))

    return loglikelihood


@pytest.fixture(scope="module", params=[False, True], ids=["plain", "chat"])
def tiny_run(request, tiny_llava, small_focus_data):
    import os

    old = os.environ.get("LM_EVAL_BIAS_DATA_DIR")
    os.environ["LM_EVAL_BIAS_DATA_DIR"] = str(small_focus_data)
    try:
        yield request.param, _evaluate("hf-multimodal-logprobs", f"pretrained={tiny_llava},device=cpu,batch_size=3",
                                       ["focus_2afc_income_logprob", "focus_mcq_education_logprob"], limit=LIMIT,
                                       apply_chat_template=request.param)
    finally:
        if old is None:
            os.environ.pop("LM_EVAL_BIAS_DATA_DIR", None)
        else:
            os.environ["LM_EVAL_BIAS_DATA_DIR"] = old


def test_tiny_llava_logprob_tasks_end_to_end(tiny_run, direct, small_focus_data, monkeypatch):
    chat, results = tiny_run
    monkeypatch.setenv("LM_EVAL_BIAS_DATA_DIR", str(small_focus_data))
    from lm_eval_bias.reflect import tasks as reflect

    assert results["config"]["model"] == "hf-multimodal-logprobs"
    for task, key, letters in (("focus_2afc_income_logprob", "retained_rate", "AB"),
                               ("focus_mcq_education_logprob", "jsd_female", "ABCD")):
        assert results["n-samples"][task]["effective"] == LIMIT
        m = metrics_of(results, task)
        assert 0.0 < m["letter_mass"] < 1.0
        samples = results["samples"][task]
        for sample in samples:
            from lm_eval_bias.samples import sample_record

            record = sample_record(task, sample)
            assert record["method"] == "logprob" and list(record["probs"]) == list(letters)
            assert sum(record["probs"].values()) == pytest.approx(1.0, abs=1e-12)
            continuations = [args[1] for args in sample["arguments"]]
            assert continuations == [("" if chat else " ") + letter for letter in letters]
            context = sample["arguments"][0][0]
            assert context.startswith("USER: ") == chat and context.count("<image>") == (2 if "2afc" in task else 1)
        # the log-likelihoods equal a direct forward pass (first two docs of each task)
        for sample in samples[:2]:
            doc = sample["doc"]
            images = reflect.doc_to_image_pair(doc) if "2afc" in task else reflect.doc_to_image_single(doc)
            for args, resp in zip(sample["arguments"], sample["resps"]):
                assert resp[0][0] == pytest.approx(direct(args[0], args[1], images), abs=2e-4)
    m = metrics_of(results, "focus_2afc_income_logprob")
    assert 0.0 <= m["first_position_rate"] <= 1.0 and 0.0 <= m["male_win_rate"] <= 1.0


def test_tiny_llava_requests_without_images_and_longer_continuations(tiny_llava, direct):
    """Text-only requests (no image dict, or no images in it), a multi-token continuation, and the
    same values whatever the batch size."""
    import lm_eval.models  # noqa: F401
    from lm_eval.api.instance import Instance
    from PIL import Image

    from lm_eval_bias.core.registration import register_plugin

    register_plugin()
    from lm_eval.api.registry import get_model

    images = [Image.new("RGB", (40, 30), (200, 30, 30)), Image.new("RGB", (30, 50), (20, 40, 220))]
    with_images = "Image A: <image> Image B: <image> Which person is the doctor?\nAnswer:"
    text = "Question: who is older? Answer with A or B.\nAnswer:"
    cases = [
        (with_images, " A", {"visual": images}),
        (with_images, " B", {"visual": images}),
        (with_images, " A or B", {"visual": images}),
        (with_images + " ", "B", {"visual": images}),  # trailing space moves to the continuation
        (text, " A", None),
        (text, " the doctor", {"visual": []}),
    ]

    def instances():
        return [Instance(request_type="loglikelihood", doc={}, arguments=(c, x) if aux is None else (c, x, aux), idx=k)
                for k, (c, x, aux) in enumerate(cases)]

    cls = get_model("hf-multimodal-logprobs")
    answers = {}
    for batch_size in (1, 4):
        lm = cls(pretrained=str(tiny_llava), device="cpu", batch_size=batch_size)
        answers[batch_size] = lm.loglikelihood(instances(), disable_tqdm=True)
    for (context, continuation, aux), (value, greedy) in zip(cases, answers[4]):
        assert isinstance(greedy, bool)
        expected = direct(context.rstrip(), context[len(context.rstrip()):] + continuation, (aux or {}).get("visual"))
        assert value == pytest.approx(expected, abs=2e-4), (context, continuation)
    np.testing.assert_allclose([v for v, _ in answers[1]], [v for v, _ in answers[4]], atol=1e-5)
    assert [g for _, g in answers[1]] == [g for _, g in answers[4]]
    assert answers[4][3][0] == pytest.approx(answers[4][1][0], abs=1e-5)  # "... " + "B" is "..." + " B"
