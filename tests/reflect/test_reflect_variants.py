"""REFLECT variants through lm-eval with the planted-bias model on the tiny synthetic FOCUS data: K samples
per doc (App. C.5), the P0/P2 framings (App. C.1) and the explanation-augmented MCQ (App. C.4), the
tables keys (retention by group, mean absolute and per-occupation salary gaps) and incomplete sources."""

from __future__ import annotations

import os

import numpy as np
import pytest

from lm_eval_bias.reflect.schema import GROUPS
from lm_eval_bias.reflect import tasks as reflect
from tests.conftest import BIOS_PER_OCCUPATION, SMALL_OCCUPATIONS, SMALL_TEMPLATES

N_TEMPLATES = len(SMALL_OCCUPATIONS) * len(SMALL_TEMPLATES)
RACE_ORDER = "White>Asian>Latino>Middle_Eastern>Black"


def run(tasks, model_args="", limit=None, gen_kwargs=None):
    from lm_eval import simple_evaluate

    import lm_eval_bias

    os.environ["LM_EVAL_BIAS_BOOTSTRAP_ITERS"] = "50"
    os.environ["LM_EVAL_BIAS_NULL_ITERS"] = "50"
    return simple_evaluate(model="bias-probe", model_args=model_args, tasks=tasks, limit=limit,
                           task_manager=lm_eval_bias.task_manager(), bootstrap_iters=0, log_samples=True,
                           gen_kwargs=gen_kwargs)


def metrics(results, task):
    """The headline from lm-eval's results and every other key from the analysis of the logged samples."""
    from tests.reflect.test_reflect_pipeline import metrics_of

    return metrics_of(results, task)


def test_k_samples_keeps_and_uses_every_response(focus_env):
    results = run(["focus_mcq_salary_k5"], f"race_order={RACE_ORDER}")
    logged = results["samples"]["focus_mcq_salary_k5"]
    assert len(logged) == N_TEMPLATES * 10
    from lm_eval_bias.samples import sample_record

    record = sample_record("focus_mcq_salary_k5", logged[0])
    assert record["n_samples"] == 5 and [s["sample"] for s in record["samples"]] == [0, 1, 2, 3, 4]
    expanded = reflect.expand_samples([sample_record("focus_mcq_salary_k5", s) for s in logged])
    assert len(expanded) == 5 * N_TEMPLATES * 10
    m, once = metrics(results, "focus_mcq_salary_k5"), metrics(run(["focus_mcq_salary"], f"race_order={RACE_ORDER}"),
                                                               "focus_mcq_salary")
    # the probe answers every sample alike: K identical samples give the single-sample estimates
    for key in ("valid_rate", "gap_male", "gap_black", "jsd_male"):
        assert m[key] == pytest.approx(once[key])
    assert m["valid_rate"] == 1.0


def test_k_samples_2afc_pairs_sample_with_sample(focus_env):
    results = run(["focus_2afc_income_k3"], f"race_order={RACE_ORDER},gender_order=man>woman")
    m = metrics(results, "focus_2afc_income_k3")
    assert m["retained_rate"] == 1.0  # AB sample s is paired with BA sample s
    from lm_eval_bias.samples import sample_record

    records = reflect.expand_samples([sample_record("focus_2afc_income_k3", s)
                                      for s in results["samples"]["focus_2afc_income_k3"]])
    assert len(records) == 3 * N_TEMPLATES * 90
    assert len({r["pair_id"] for r in records}) == 3 * N_TEMPLATES * 45


def test_framings_and_explained_format_reach_the_prompt(focus_env):
    p0, p2 = reflect.twoafc_prompt("income", "p0"), reflect.twoafc_prompt("income", "p2")
    assert "the SAME person in two versions" in p0 and "two different people." in p2
    assert reflect.twoafc_prompt("income") == reflect.twoafc_prompt("income", "p1")
    results = run(["focus_2afc_income_p0", "focus_mcq_education_explained"], f"race_order={RACE_ORDER}")
    sample = results["samples"]["focus_2afc_income_p0"][0]
    from lm_eval_bias.samples import sample_record

    assert sample_record("focus_2afc_income_p0", sample)["framing"] == "p0"
    assert "the SAME person in two versions" in str(sample["arguments"])
    explained = results["samples"]["focus_mcq_education_explained"][0]
    assert sample_record("focus_mcq_education_explained", explained)["response_format"] == "explained"
    assert "On the second line" in str(explained["arguments"])


def test_explained_answers_parse_the_first_line():
    doc = {"template": "ceo/1", "occupation": "ceo", "group": 0, "variant": "education", "response_format": "explained"}
    record = reflect.record_mcq(doc, ["B\nThe office and the suit suggest a degree."])
    assert (record["status"], record["choice"]) == ("valid", "B")
    record = reflect.record_mcq({**doc, "response_format": "letter"}, ["B\nBecause."])
    assert record["status"] == "invalid"  # the paper's letter-only rule is unchanged


def test_retention_by_group_recovers_planted_refusals():
    """Pairs involving a Black image are refused, all others kept: retention by race and gender."""
    records = []
    for t in range(4):
        template = f"ceo/{t}" if t < 2 else f"nurse/{t}"
        for i in range(10):
            for j in range(i + 1, 10):
                refuse = "Black" in (GROUPS[i].race, GROUPS[j].race)
                for order in ("AB", "BA"):
                    records.append({"template": template, "occupation": template.split("/")[0],
                                    "pair_id": f"{template}:{i}-{j}", "order": order,
                                    "group_a": i if order == "AB" else j, "group_b": j if order == "AB" else i,
                                    "status": "refusal" if refuse else "valid",
                                    "choice": None if refuse else ("A" if order == "AB" else "B")})
    s = reflect.summarize_2afc_tables(records)
    assert s.estimates["retained_rate_black"] == 0.0
    # 17 of the 45 pairs show a White image (45 - C(8, 2)); 4 of them also a Black one
    assert s.estimates["retained_rate_white"] == pytest.approx(13 / 17)
    # gender: each gender appears in 35 of 45 pairs, of which those without a Black image are kept
    kept_with_man = sum(1 for i in range(10) for j in range(i + 1, 10)
                        if "man" in (GROUPS[i].gender, GROUPS[j].gender) and "Black" not in (GROUPS[i].race, GROUPS[j].race))
    assert s.estimates["retained_rate_male"] == pytest.approx(kept_with_man / 35)
    assert s.estimates["n_missing_images"] == 0


def _salary_records(effect_by_occupation, n_bios=4, n_templates=3, noise=0.0, seed=0):
    rng = np.random.default_rng(seed)
    records = []
    for occ, effect in effect_by_occupation.items():
        for t in range(n_templates):
            for b in range(n_bios):
                base = 50_000 + 5_000 * rng.standard_normal()
                for g, group in enumerate(GROUPS):
                    value = base * (1 + (effect if group.gender == "man" else 0.0)) + noise * rng.standard_normal()
                    records.append({"template": f"{occ}/{t}", "occupation": occ, "bio_id": f"{occ}-{b}", "group": g,
                                    "status": "valid", "value": float(value)})
    return records


def test_mean_absolute_gap_recovers_opposite_signed_occupation_effects(monkeypatch):
    """+10 % for men among CEOs, -10 % among nurses: the signed mean cancels, the mean absolute gap and the
    per-occupation keys recover the planted gaps; the permutation null floor stays near zero."""
    monkeypatch.setenv("LM_EVAL_BIAS_BOOTSTRAP_ITERS", "100")
    monkeypatch.setenv("LM_EVAL_BIAS_NULL_ITERS", "100")
    records = _salary_records({"ceo": 0.10, "nurse": -0.10}, noise=100.0)
    s = reflect.summarize_salary_tables(records)
    assert s.estimates["gap_pct_male_ceo"] == pytest.approx(10.0, abs=0.2)
    assert s.estimates["gap_pct_male_nurse"] == pytest.approx(-10.0, abs=0.2)
    assert s.estimates["mean_abs_gap_pct_male"] == pytest.approx(10.0, abs=0.2)
    assert np.isnan(s.estimates["gap_pct_male_doctor"])  # occupation not in the source
    assert reflect.summarize_salary(records).estimates["gap_pct_male"] == pytest.approx(0.0, abs=0.2)
    assert s.null["mean_abs_gap_pct_male"] < 5.0  # portraits' labels shuffled within template: far below 10
    assert s.p_null["mean_abs_gap_pct_male"] == pytest.approx(1 / 101)
    null = reflect.summarize_salary_tables(_salary_records({"ceo": 0.0, "nurse": 0.0}, noise=100.0))
    assert null.p_null["mean_abs_gap_pct_male"] > 0.05


def test_source_missing_a_race_gives_the_other_metrics_and_names_the_cells(tmp_path, monkeypatch, caplog):
    from lm_eval_bias.datasets_builder.focus import build_focus
    from lm_eval_bias.reflect.synthetic import make_synthetic_focus

    src = make_synthetic_focus(tmp_path / "src", occupations=("ceo", "nurse"), templates=(1, 2), size=(48, 48))
    src = tmp_path / "src"
    for path in src.rglob("Latino_*"):
        path.unlink()
    build_focus(src, tmp_path / "data" / "focus")
    monkeypatch.setenv("LM_EVAL_BIAS_DATA_DIR", str(tmp_path / "data"))
    with caplog.at_level("WARNING", logger="lm_eval_bias"):
        results = run(["focus_mcq_salary", "focus_2afc_income"], f"race_order={RACE_ORDER}")
    mcq = metrics(results, "focus_mcq_salary")
    assert mcq["n_missing_images"] == 8.0  # 4 templates x (Latino man, Latino woman)
    assert np.isnan(mcq["gap_latino"]) and np.isnan(mcq["jsd_latino"])
    assert np.isfinite(mcq["gap_black"]) and np.isfinite(mcq["gap_male"])
    twoafc = metrics(results, "focus_2afc_income")
    assert results["n-samples"]["focus_2afc_income"]["effective"] == 4 * 28 * 2  # C(8, 2) pairs per template
    assert np.isnan(twoafc["win_rate_latino"]) and twoafc["win_rate_white"] > twoafc["win_rate_black"]
    assert "ceo/1/latino_man" in caplog.text and "nurse/2/latino_woman" in caplog.text


@pytest.mark.parametrize("text,leaked", [
    ("Jane Smith is a nurse. Smith has 10 years of experience.", ("Jane", "Smith")),
    ("She graduated from Yale. Smith has practiced law since 2001.", ("Smith",)),  # lone surname (cut first sentence)
    ("Mary-Anne O'Neil is a lawyer. O'Neil has argued cases.", ("Mary", "Neil")),  # hyphen and apostrophe
    ("Attorney Jane Smith represents clients.", ("Jane", "Smith")),  # professional title as honorific
    ("Jane Smith, MD, is a doctor.", ("Jane", "Smith", "MD")),  # credentials after the name
])
def test_biography_names_that_used_to_escape_normalisation(text, leaked):
    from lm_eval_bias.datasets_builder.focus_bios import normalize_biography

    normalized, changes = normalize_biography(text)
    assert not any(word in normalized for word in leaked), normalized
    assert normalized.startswith(("The candidate", "They")) and any(c["kind"] == "name" for c in changes)


def test_common_sentence_starts_are_not_names():
    from lm_eval_bias.datasets_builder.focus_bios import normalize_biography

    text = "Cooking is their passion. Teaching has been rewarding. The restaurant has 3 stars."
    assert normalize_biography(text)[0] == text


def _mcq(template, group, choice):
    return {"template": template, "occupation": template.split("/")[0], "group": group, "status": "valid",
            "choice": choice}


def test_table_comparisons_recover_planted_differences():
    from lm_eval_bias.reflect import tables as rt

    options, values = "ABCD", {"A": 1, "B": 2, "C": 3, "D": 4}
    letter = [_mcq(f"ceo/{t}", g, "B") for t in range(4) for g in range(10)]
    # explained format: every man answers C instead of B (20 of 40 photos change), one photo invalid
    explained = [_mcq(r["template"], r["group"], "C" if GROUPS[r["group"]].gender == "man" else "B") for r in letter]
    explained[0] = {**explained[0], "status": "invalid", "choice": None}
    t10 = rt.format_agreement(letter, explained, options, values)
    assert t10["valid_l"] == 1.0 and t10["valid_e"] == pytest.approx(39 / 40)
    assert t10["agreement"] == pytest.approx(20 / 39)  # photo 0 (an Asian man) is left out
    assert t10["mean_option_diff"] == pytest.approx((19 * 3 + 20 * 2) / 39 - 2)
    assert t10["jsd_shift"] > 0
    same = rt.per_image_agreement(letter, letter)
    assert same["agreement"] == 1.0 and same["paired_valid"] == 1.0 and same["agreement_ci_low"] > 0.9
    t8 = rt.cross_run_agreement({"ceo": 0.10, "cook": -0.05, "nurse": 0.0}, {"ceo": 0.30, "cook": 0.05, "nurse": 0.2})
    assert t8["mad"] == pytest.approx((0.2 + 0.1 + 0.2) / 3) and t8["sign_agreement"] == 0.5 and t8["n"] == 3
    # Table 4: templates 0-1 show a man, 2-3 a woman; men answer C only on their own template's body
    source = {"ceo/0": "man", "ceo/1": "man", "ceo/2": "woman", "ceo/3": "woman"}
    mixed = [_mcq(r["template"], r["group"], "C" if GROUPS[r["group"]].gender == source[r["template"]] == "man" else "B")
             for r in letter]
    t4 = rt.face_body_subsets(mixed, source, options, values)
    assert t4["full"]["n"] == 40 and t4["matched"]["n"] == 20 and t4["swapped"]["n"] == 20
    assert t4["full"]["gap_male"] == pytest.approx((10 * 3 + 10 * 2) / 20 / 2 - 1)
    assert t4["swapped"]["gap_male"] == 0.0  # a man's face on a woman's body answers B like the women
    assert t4["matched"]["gap_male"] == pytest.approx(3 / 2 - 1)


def test_framing_comparison_counts_flips_between_framings():
    from lm_eval_bias.reflect import tables as rt
    from lm_eval_bias.reflect.twoafc import TwoAFCCall

    def calls(winner_is_first):
        out = []
        for k, (i, j) in enumerate([(0, 1), (2, 3), (4, 5), (6, 7)]):
            first = winner_is_first[k]
            out += [TwoAFCCall("ceo/1", "ceo", f"p{k}", "AB", i, j, "valid", "A" if first else "B"),
                    TwoAFCCall("ceo/1", "ceo", f"p{k}", "BA", j, i, "valid", "B" if first else "A")]
        return out

    t7 = rt.framing_comparison(calls([True, True, True, True]), calls([True, False, True, True]))
    assert t7["kept_x"] == 1.0 and t7["n_matched"] == 4 and t7["flip_rate"] == 0.25


def test_per_occupation_keys_recover_a_planted_occupation_effect(focus_env, monkeypatch):
    """Only nurse answers depend on gender: the per-occupation MCQ keys show it, CEO's are zero."""
    monkeypatch.setenv("LM_EVAL_BIAS_BOOTSTRAP_ITERS", "50")
    docs = reflect.load_mcq_docs("education")["test"].to_list()

    def answer(doc):  # nurse men answer D, nurse women B; every CEO answers B
        return "D" if doc["occupation"] == "nurse" and GROUPS[doc["group"]].gender == "man" else "B"

    records = [reflect.record_mcq(d, [answer(d)]) for d in docs]
    s = reflect.summarize_mcq_tables(records)
    assert s.estimates["gap_male_nurse"] == pytest.approx(4 / 2 - 1)
    assert s.estimates["gap_male_ceo"] == 0.0 and s.estimates["gap_black_nurse"] == 0.0
    assert np.isnan(s.estimates["gap_male_doctor"])  # not in the source
    assert s.by_template["nurse/1"]["gap_male"] == pytest.approx(1.0)
    pooled = reflect.summarize_mcq(records).estimates["gap_male"]
    assert 0 < pooled < 1.0


def test_vectorised_table_metrics_equal_the_stats_modules():
    from lm_eval_bias.reflect import tables as rt
    from lm_eval_bias.reflect.mcq import mcq_metrics
    from lm_eval_bias.reflect.salary import occupation_gaps

    rng = np.random.default_rng(3)
    answers = rng.integers(0, 4, size=(3, 10, 6)).astype(float)
    answers[2, [2, 3]] = 0  # a race without answers in one setting: NaN gap
    values = np.asarray([10, 30, 50, 70, 90, 110], float)
    found = rt.mcq_occupation_batch(answers, values)
    for i in range(3):
        ref = mcq_metrics({"answers": answers[i], "n_calls": 1.0, "n_valid": 1.0, "n_refusal": 0.0, "n_invalid": 0.0},
                          "ABCDEF", dict(zip("ABCDEF", values)))
        for key in rt.MCQ_OCCUPATION_METRICS:
            assert found[key][i] == pytest.approx(ref[key], nan_ok=True), key
    sums, n = rng.random((4, 10)) * 1e5, rng.integers(0, 3, size=(4, 10)).astype(float)
    gaps = rt.salary_gaps_batch(sums, n)
    for o in range(4):
        for key, value in occupation_gaps(sums[o], n[o]).items():
            assert gaps[key][o] == pytest.approx(value, nan_ok=True), key


def test_salary_bounds_are_an_option_recorded_in_each_record(focus_env):
    docs = reflect.load_salary_docs()["test"].to_list()
    assert docs[0]["salary_bounds"] == [1000.0, 10_000_000.0]
    record = reflect.record_salary(docs[0], ["$12,000,000"])
    assert (record["status"], record["reason"]) == ("invalid", "out_of_bounds")
    wide = reflect.load_salary_docs(salary_bounds=[1000, 50_000_000])["test"].to_list()[0]
    record = reflect.record_salary(wide, ["$12,000,000"])
    assert record["status"] == "valid" and record["salary_bounds"] == [1000.0, 50_000_000.0]
    with pytest.raises(ValueError, match="salary_bounds"):
        reflect.load_salary_docs(salary_bounds=[5, 1])
