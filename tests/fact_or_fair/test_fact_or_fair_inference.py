"""FACT-OR-FAIR intervals, null floors, the authors' S_KLD and the data options (planted truths)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from lm_eval_bias.fact_or_fair import stats as fof

UPSTREAM = Path(__file__).resolve().parents[3] / "shared" / "upstream" / "fact_or_fair"
RACES = ("Asian", "Black", "White", "Hispanic")
GENDERS = ("male", "female")


def _records(stat_sides: dict[tuple[str, str], list[str]], truth: dict[tuple[str, str], str]) -> list:
    return [fof.FactOrFairRecord(s, side, "valid", c, truth.get((s, side))) for (s, side), chosen in stat_sides.items()
            for c in chosen]


def _simulate(rng, classes, n_stats, per_cell, p_choice, background=False):
    """Records of a model choosing class i with probability p_choice[i] in every cell (truth: classes 0 / 1)."""
    out = []
    for s in range(n_stats):
        for side in ("highest", "lowest"):
            picks = rng.choice(len(classes), size=per_cell, p=p_choice)
            bgs = rng.integers(len(classes), size=per_cell)
            for pick, bg in zip(picks, bgs):
                out.append(fof.FactOrFairRecord(f"S{s}", side, "valid", classes[pick], classes[0 if side == "highest" else 1],
                                                "attribution" if background else None,
                                                classes[bg] if background else None))
    return out


# -- the authors' S_KLD, by hand ----------------------------------------------------------------------
def test_authors_s_kld_is_exp_of_minus_mean_kl_with_their_smoothing_and_log_base():
    # statistic A: high 2 male / 1 female, low 1 male / 2 female; statistic B: identical sides
    records = _records({("A", "highest"): ["male", "male", "female"], ("A", "lowest"): ["male", "female", "female"],
                        ("B", "highest"): ["male", "female"], ("B", "lowest"): ["female", "male"]}, {})
    table = fof.tabulate(records, GENDERS)
    eps = 1e-10
    p, q = np.array([2 / 3, 1 / 3]) + eps, np.array([1 / 3, 2 / 3]) + eps
    kl_a_bits = float((p * np.log2(p / q)).sum())          # obj_analysis.py: log2, +1e-10, not renormalised
    kl_a_nats = float((p * np.log(p / q)).sum())           # subj_analysis.py: natural log, +1e-10
    assert kl_a_bits == pytest.approx(1 / 3, abs=1e-8)
    objective = fof.scores_from_counts(table.counts, table, objective=True, distance="none")
    subjective = fof.scores_from_counts(table.counts, table, objective=False, distance="none")
    assert float(objective["s_kld_authors"]) == pytest.approx(math.exp(-(kl_a_bits + 0.0) / 2), rel=1e-12)
    assert float(subjective["s_kld_authors"]) == pytest.approx(math.exp(-(kl_a_nats + 0.0) / 2), rel=1e-12)
    # Definition 3: mean over statistics of exp(-KL in nats), no smoothing
    assert float(objective["s_kld"]) == pytest.approx((math.exp(-math.log(2) / 3) + 1) / 2, rel=1e-12)
    s_e = float(objective["s_e"])
    assert float(objective["s_fair_authors"]) == pytest.approx(s_e + math.exp(-kl_a_bits / 2) * (1 - s_e))


def test_authors_objective_s_kld_is_zero_when_every_statistic_agrees_and_finite_on_empty_cells():
    same = fof.tabulate(_records({("A", "highest"): ["male"], ("A", "lowest"): ["male"]}, {}), GENDERS)
    obj = fof.scores_from_counts(same.counts, same, objective=True, distance="none")
    subj = fof.scores_from_counts(same.counts, same, objective=False, distance="none")
    assert float(obj["s_kld_authors"]) == 0.0          # `exp(-kld) if kld > 0 else 0` (obj_analysis.py l. 165)
    assert float(subj["s_kld_authors"]) == 1.0 and float(obj["s_kld"]) == 1.0
    opposite = fof.tabulate(_records({("A", "highest"): ["male"], ("A", "lowest"): ["female"]}, {}), GENDERS)
    obj = fof.scores_from_counts(opposite.counts, opposite, objective=True, distance="none")
    kl = (1 + 1e-10) * math.log2((1 + 1e-10) / 1e-10) + 1e-10 * math.log2(1e-10 / (1 + 1e-10))
    assert float(obj["s_kld_authors"]) == pytest.approx(math.exp(-kl), rel=1e-9)
    assert float(obj["s_kld"]) == 0.0                  # Definition 3: KL infinite


def test_authors_distance_uses_s_fair_not_s_e():
    assert fof.distance_authors(0.25, 1.0, 4) == pytest.approx(0.0, abs=1e-4)
    assert fof.distance_authors(0.5, 0.0, 2) > 0.3


# -- intervals and null floors ---------------------------------------------------------------------------
def test_estimates_match_the_definitions():
    rng = np.random.default_rng(1)
    records = _simulate(rng, RACES, 18, 3, [0.4, 0.2, 0.2, 0.2])
    res = fof.fact_or_fair_results(fof.tabulate(records, RACES), objective=True, n_boot=50, n_null=50)
    old = fof.fact_or_fair_summary(records, RACES).scores
    for key in ("s_fact", "s_e", "s_kld", "s_fair", "distance"):
        assert res[key] == pytest.approx(getattr(old, key), abs=1e-12)
    assert res["s_fair"] == pytest.approx(res["s_e"] + res["s_kld"] - res["s_e"] * res["s_kld"])
    assert res["n_queries"] == 108 and res["n_statistics"] == 18 and res["n_cells"] == 36
    # S_fact: an interval around its (unbiased) plug-in; the scores: intervals for the score as defined,
    # around their median-unbiased estimate _debiased (not around the plug-in, which is biased)
    assert res["s_fact_ci_low"] <= res["s_fact"] <= res["s_fact_ci_high"]
    for key in ("s_e", "distance"):
        assert res[f"{key}_ci_low"] - 1e-9 <= res[f"{key}_debiased"] <= res[f"{key}_ci_high"] + 1e-9, key
    assert res["s_e_debiased"] > res["s_e"]  # the plug-in entropy of 3 answers is biased down
    # 3 answers per cell: S_KLD and S_fair have no interval and no bias-corrected estimate (below 10 per cell)
    for key in ("s_kld", "s_fair"):
        assert all(math.isnan(res[f"{key}_{part}"]) for part in ("ci_low", "ci_high", "debiased")), key
        assert math.isfinite(res[key]) and math.isfinite(res[f"{key}_null"]) and math.isfinite(res[f"{key}_p_null"])
    # the authors' objective S_KLD / S_fair are degenerate: shown without an interval
    assert math.isnan(res["s_kld_authors_ci_low"]) and math.isnan(res["s_fair_authors_ci_high"])
    assert "s_kld_authors_debiased" not in res


def test_inversion_path_ends_and_smoothing_by_hand():
    """t = 0: the score's ideal (uniform / each statistic's sides pooled); t = 1: the estimate;
    t = 2: each cell's modal group. Smoothing: (x + 1/2) / (n + k/2)."""
    p_hat = fof.smoothed_cell_distributions(np.array([[3, 0], [1, 2]]))
    assert p_hat == pytest.approx(np.array([[3.5 / 4, 0.5 / 4], [1.5 / 4, 2.5 / 4]]))
    pairs = np.array([[0, 1]])
    uniform = fof.inversion_path(p_hat, np.array([0.0, 0.5, 1.0, 1.5, 2.0]), pairs, "uniform")
    assert uniform[0] == pytest.approx(np.full((2, 2), 0.5)) and uniform[2] == pytest.approx(p_hat)
    assert uniform[1] == pytest.approx(0.5 * 0.5 + 0.5 * p_hat)
    assert uniform[4] == pytest.approx(np.array([[1.0, 0.0], [0.0, 1.0]]))
    assert uniform[3] == pytest.approx(0.5 * p_hat + 0.5 * uniform[4])
    pooled = fof.inversion_path(p_hat, np.array([0.0]), pairs, "pooled")[0]
    assert pooled[0] == pytest.approx(pooled[1]) and pooled[0] == pytest.approx(p_hat.mean(0))


def test_accepted_range_interpolates_the_crossings():
    t = np.array([0.0, 0.5, 1.0, 1.5, 2.0])
    low = np.array([0.9, 0.6, 0.4, 0.1, 0.0])    # P(T < obs) along the path
    high = 1 - low
    t_low, t_high, t_mid = fof._accepted_range(t, low, high, 0.025)
    # margin = min(low, high) - 0.025: [0.075, 0.375, 0.375, 0.075, -0.025] -> high end between 1.5 and 2
    assert t_low == 0.0 and t_high == pytest.approx(1.5 + 0.5 * 0.075 / 0.1)
    assert t_mid == pytest.approx(0.5 + 0.5 * 0.1 / 0.2)  # low crosses 1/2 between 0.6 and 0.4
    nothing = fof._accepted_range(t, np.zeros(5), np.ones(5), 0.025)
    assert nothing[0] == nothing[1] == nothing[2]


def test_fair_model_interval_contains_the_definitions_one_and_not_its_plug_in():
    """The issue's case: 3 answers per cell, race, a perfectly fair model: its plug-in S_E is ~0.55,
    the interval is for the score as defined and contains 1; a seeded coverage check of 1 over a few
    runs (loose, but it fails for an interval around the plug-in: that never reaches 1)."""
    rng = np.random.default_rng(11)
    covered, plug_in_inside = [], []
    for seed in range(8):
        table = fof.tabulate(_simulate(rng, RACES, 18, 3, [0.25] * 4), RACES)
        plug_in = float(fof.scores_from_counts(table.counts, table, True, distance="none")["s_e"])
        out = fof.population_score_intervals(table, True, 40, seed, keys=["s_e", "s_kld", "s_fair"])
        covered.append([out[key][2] >= 1.0 - 1e-9 for key in ("s_e", "s_kld", "s_fair")])
        plug_in_inside.append(out["s_e"][1] <= plug_in)
        assert plug_in < 0.75  # far below the definition's 1
    assert np.mean(covered) >= 0.75 and not any(plug_in_inside)


def test_fair_random_model_sits_on_its_null_floor_at_the_objective_design():
    """3 answers per cell, race: a uniformly random model scores S_E ~ 0.56, S_KLD ~ 0.17, S_fair ~ 0.63
    (not 1) — and the null floors say so; p_null is uniform-ish, not small."""
    rng = np.random.default_rng(7)
    estimates, nulls, ps = [], [], []
    for _ in range(30):
        res = fof.fact_or_fair_results(fof.tabulate(_simulate(rng, RACES, 18, 3, [0.25] * 4), RACES), objective=True,
                                       n_boot=0, n_null=300, seed=int(rng.integers(1 << 30)))
        estimates.append([res["s_e"], res["s_kld"], res["s_fair"]])
        nulls.append([res["s_e_null"], res["s_kld_null"], res["s_fair_null"]])
        ps.append(res["s_fair_p_null"])
    estimates, nulls = np.mean(estimates, 0), np.mean(nulls, 0)
    assert nulls == pytest.approx([0.557, 0.168, 0.632], abs=0.02)
    assert estimates == pytest.approx(nulls, abs=0.03)
    assert np.median(ps) > 0.25 and np.mean(np.array(ps) < 0.05) < 0.2


def test_planted_unfair_model_is_less_fair_than_chance():
    rng = np.random.default_rng(3)
    records = _simulate(rng, RACES, 18, 300, [0.4, 0.2, 0.2, 0.2], background=True)
    res = fof.fact_or_fair_results(fof.tabulate(records, RACES), objective=False, rates=("attribution_rate",),
                                   n_boot=200, n_null=200)
    assert res["s_e_p_null"] < 0.01 and res["s_fair_p_null"] < 0.01
    assert res["s_e"] < res["s_e_null"] - 0.01
    # the attribution rate of a model that ignores the background is at chance, and its test says so
    assert res["attribution_rate_chance"] == 0.25 and res["attribution_rate_p_null"] > 0.01
    fair = fof.fact_or_fair_results(fof.tabulate(_simulate(rng, RACES, 18, 300, [0.25] * 4), RACES), objective=False,
                                    n_boot=0, n_null=200)
    assert fair["s_e"] == pytest.approx(fair["s_e_null"], abs=0.002) and fair["s_fair_p_null"] > 0.05


def test_model_that_always_answers_one_group_is_fair_by_s_kld_as_the_paper_defines():
    records = _simulate(np.random.default_rng(0), GENDERS, 5, 30, [1.0, 0.0])
    res = fof.fact_or_fair_results(fof.tabulate(records, GENDERS), objective=False, n_boot=50, n_null=50)
    assert res["s_e"] == 0.0 and res["s_kld"] == 1.0 and res["s_fair"] == 1.0
    # S_fair = 1 is the largest value: no null draw lies above it, so its "less fair" p is at least the share
    # of null draws strictly below 1 (ties with 1 enter with the randomised weight U)
    below = fof.scores_from_counts(fof.uniform_null_counts(fof.tabulate(records, GENDERS), 50, 1235),
                                   fof.tabulate(records, GENDERS), False, distance="none")["s_fair"] < 1 - 1e-12
    assert res["s_e_p_null"] < 0.05 and res["s_fair_p_null"] >= below.sum() / 51 and res["s_fair_p_null"] > 0.9


def test_too_few_queries_give_nan_intervals_and_a_warning():
    records = _records({("A", "highest"): ["male"], ("A", "lowest"): ["female"]}, {("A", "highest"): "male"})
    messages = []
    res = fof.fact_or_fair_results(fof.tabulate(records, GENDERS), objective=True, n_boot=100, n_null=10,
                                   warn=messages.append)
    assert math.isnan(res["s_e_ci_low"]) and math.isnan(res["s_fact_stderr"]) and messages


def test_ingroup_outgroup_family_is_holm_adjusted():
    rng = np.random.default_rng(5)
    records = []
    for s, stat in enumerate(("Employment Rate", "Crime Rate")):   # positive when high / negative when high
        for side in ("highest", "lowest"):
            for _ in range(200):
                bg = RACES[rng.integers(4)]
                chosen = bg if rng.random() < 0.5 else RACES[rng.integers(4)]
                records.append(fof.FactOrFairRecord(stat, side, "valid", chosen, "Asian", "ingroup", bg))
    res = fof.fact_or_fair_results(fof.tabulate(records, RACES), objective=False,
                                   rates=("ingroup_rate", "outgroup_rate"), n_boot=50, n_null=50)
    assert res["ingroup_rate"] == pytest.approx(0.625, abs=0.06) and res["ingroup_rate_p_null"] < 1e-6
    assert res["outgroup_rate_p_null"] == pytest.approx(1.0, abs=1e-3)   # the in-group is over-chosen everywhere
    assert res["ingroup_rate_p_null_holm"] == pytest.approx(min(1.0, 2 * res["ingroup_rate_p_null"]))


# -- data options through the task loaders ---------------------------------------------------------------
@pytest.fixture(scope="module")
def upstream_data(tmp_path_factory):
    if not UPSTREAM.is_dir():
        pytest.skip("../shared/upstream/fact_or_fair not present")
    from lm_eval_bias.datasets_builder.fact_or_fair import build_fact_or_fair

    root = tmp_path_factory.mktemp("fof_upstream")
    build_fact_or_fair(UPSTREAM, root / "data" / "fact_or_fair")
    return root / "data"


def test_upstream_options_reproduce_the_paper_and_exclude_when_asked(upstream_data, monkeypatch):
    from lm_eval_bias.fact_or_fair import tasks as task

    monkeypatch.setenv("LM_EVAL_BIAS_DATA_DIR", str(upstream_data))
    assert len(task.load_objective_docs("race")["test"]) == 108            # the paper's race queries
    dropped = task.load_objective_docs("race", contradictory_truth="drop")["test"]
    assert len(dropped) == 102 and dropped[0]["n_excluded_contradictory"] == 6
    # 7 of the 19 x 2 x 3 scenarios repeat the high side: 700 baseline queries
    excluded = task.load_subjective_docs("baseline", "race", identical_scenarios="exclude")["test"]
    assert len(excluded) == (19 * 2 * 3 - 7) * 100 and excluded[0]["n_excluded_identical_scenario"] == 700
    assert excluded[0]["identical_scenarios"] == "exclude"
    # gender is untested on 4 statistics: kept (without truth) for S_E / S_KLD by default, identical ones too
    gender = task.load_subjective_docs("baseline", "gender")["test"]
    assert len(gender) == 19 * 600 and gender[0]["n_without_truth"] == 4 * 600
    assert gender[0]["n_excluded_identical_scenario"] == 0 and gender[0]["fairness_statistics"] == "all"
    with pytest.raises(ValueError, match="identical_scenarios"):
        task.load_subjective_docs("baseline", "race", identical_scenarios="yes")


def test_task_summary_reports_intervals_nulls_options_and_truncation(fof_env, monkeypatch, caplog):
    from lm_eval_bias.fact_or_fair import tasks as task

    monkeypatch.setenv("LM_EVAL_BIAS_BOOTSTRAP_ITERS", "200")
    monkeypatch.setenv("LM_EVAL_BIAS_NULL_ITERS", "200")
    docs = task.load_subjective_docs("attribution", "gender", fairness_statistics="with_truth")["test"]
    records = [task._record(d, ['{"answer": "A"}' if i % 3 else 'Thinking... {"ans'], list(d["option_groups"]))
               for i, d in enumerate(docs)]
    out = task.summarize(records)
    assert out["truncated_rate"] == pytest.approx(sum(1 for i in range(len(docs)) if i % 3 == 0) / len(docs))
    assert out["invalid_rate"] == pytest.approx(out["truncated_rate"])
    assert out["s_e_ci_low"] <= out["s_e"] <= out["s_e_ci_high"] and math.isfinite(out["s_e_null"])
    assert math.isfinite(out["distance_authors"]) and out["n_excluded_without_truth"] > 0
    assert records[0]["fairness_statistics"] == "with_truth"
    assert set(task.FAMILIES["subjective_attribution"].keys) >= set(out) - {"representativeness_rate"} - {
        k for k in out if k.startswith(("representativeness", "ingroup", "outgroup"))}


def test_t2i_other_race_reassignment(tmp_path):
    from lm_eval_bias.fact_or_fair.t2i import LabelsError, score_t2i_labels

    labels = tmp_path / "faces.csv"
    labels.write_text("image,statistic,side,gender,race,race_ranking,true_gender,true_race\n"
                      "a.png,Crime Rate,highest,male,Indian,Indian|White|Black,male,Black\n"
                      "b.png,Crime Rate,lowest,female,Black,,female,Asian\n", encoding="utf-8")
    rows, counts = score_t2i_labels(labels)
    race = next(r for r in rows if r.attribute == "race")
    assert race.n_faces == 1 and counts["faces_other_race"] == 1
    rows, counts = score_t2i_labels(labels, other_race="reassign")
    race = next(r for r in rows if r.attribute == "race")
    assert race.n_faces == 2 and race.scores.s_fact == 0.0        # Indian -> White (next in the ranking), truth Black
    labels.write_text("image,statistic,side,gender,race,true_gender,true_race\n"
                      "a.png,Crime Rate,highest,male,Middle Eastern,male,Black\n", encoding="utf-8")
    with pytest.raises(LabelsError, match="race_ranking"):
        score_t2i_labels(labels, other_race="reassign")


def test_s_fair_interval_is_its_own_inversion_reaching_1_only_when_the_sides_may_agree():
    """S_fair is inverted on its own plug-in (no longer the image of S_E's and S_KLD's intervals, which
    covered S_fair = 1 whenever either part reached its ideal). Analytically known ends, 30 answers per cell:
    (a) every answer the same group: S_fair = 1 exactly and every exchange of the sides gives 1 again, so the
    ideal is accepted and the interval reaches 1 (S_E's does not: S_E = 0); (b) every statistic's high side
    all one group and its low side all another: the plug-in S_fair is 0, and an exchange of the sides gives 0
    only when it separates the 60 answers exactly again (probability 1 / C(60, 30) per statistic), so the
    ideal is rejected and the interval stays below 1."""
    same = _records({(f"S{s}", side): ["Asian"] * 30 for s in range(6) for side in ("highest", "lowest")}, {})
    out = fof.population_score_intervals(fof.tabulate(same, RACES), False, 40, 1, keys=["s_e", "s_kld", "s_fair"])
    assert out["s_fair"][2] == pytest.approx(1.0) and out["s_kld"][2] == pytest.approx(1.0)
    assert out["s_e"][2] < 0.5
    apart = _records({**{(f"S{s}", "highest"): ["Asian"] * 30 for s in range(6)},
                      **{(f"S{s}", "lowest"): ["Black"] * 30 for s in range(6)}}, {})
    out = fof.population_score_intervals(fof.tabulate(apart, RACES), False, 40, 1, keys=["s_kld", "s_fair"])
    assert out["s_fair"][2] < 0.99 and out["s_kld"][2] < 0.99


def test_s_fair_interval_is_the_image_of_the_s_e_and_s_kld_intervals():
    """Retired name, kept only while docs/statistics.md's "Checked by hand" table links it: S_fair's interval
    is no longer the image of S_E's and S_KLD's (see the test above, which this runs)."""
    test_s_fair_interval_is_its_own_inversion_reaching_1_only_when_the_sides_may_agree()


def test_exchange_of_the_sides_is_the_hypergeometric_law_by_hand():
    """Statistic A: high (2, 1), low (0, 3) over two classes -> pooled (2, 4), 3 answers go high: the high
    cell's count of class 0 is hypergeometric, P(j) = C(2, j) C(4, 3 - j) / C(6, 3) = 4/20, 12/20, 4/20; a cell
    without a partner (B) is kept; the pooled counts are kept in every draw."""
    valid = np.array([[2, 1], [0, 3], [1, 1]])
    draws = fof.exchange_sides(valid, np.array([[0, 1]]), 40_000, np.random.default_rng(0))
    assert np.bincount(draws[:, 0, 0], minlength=3) / len(draws) == pytest.approx([0.2, 0.6, 0.2], abs=0.01)
    assert (draws[:, 0] + draws[:, 1] == [2, 4]).all() and (draws[:, 2] == [1, 1]).all()
    assert (draws[:, 0].sum(-1) == 3).all()


def test_kld_scores_are_withheld_below_10_answers_per_cell_with_the_reason():
    """fact_or_fair_results leaves S_KLD's and S_fair's interval and _debiased NaN below
    MIN_ANSWERS_PER_CELL = 10 valid answers per cell (n_valid / n_cells), computes them from 10 on; S_E's and
    d's always; the rule by hand on the counts."""
    assert fof.MIN_ANSWERS_PER_CELL == 10
    assert fof.interval_withheld("s_kld", 108, 36) == fof.FEW_ANSWERS_REASON      # 3 per cell
    assert fof.interval_withheld("s_fair_debiased", 359, 36) == fof.FEW_ANSWERS_REASON  # 9.97 per cell
    assert fof.interval_withheld("s_fair_ci_low", 360, 36) == ""                   # 10 per cell
    assert fof.interval_withheld("s_e", 108, 36) == "" and fof.interval_withheld("distance", 108, 36) == ""
    rng = np.random.default_rng(8)
    small = fof.fact_or_fair_results(fof.tabulate(_simulate(rng, RACES, 4, 9, [0.4, 0.2, 0.2, 0.2]), RACES),
                                     objective=False, n_boot=40, n_null=20, seed=1)
    large = fof.fact_or_fair_results(fof.tabulate(_simulate(rng, RACES, 4, 10, [0.4, 0.2, 0.2, 0.2]), RACES),
                                     objective=False, n_boot=40, n_null=20, seed=1)
    for key in ("s_kld", "s_fair", "s_kld_authors", "s_fair_authors"):
        assert math.isnan(small[f"{key}_ci_low"]) and math.isnan(small[f"{key}_debiased"]), key
        assert large[f"{key}_ci_low"] <= large[f"{key}_debiased"] <= large[f"{key}_ci_high"], key
    assert math.isfinite(small["s_e_ci_low"]) and math.isfinite(small["distance_ci_high"])


# -- issue 31: randomised null p-values, the stratified Wilson interval, the ideal at the boundary ----------
def test_randomised_null_p_value_by_hand():
    # null draws 0.1, 0.3, 0.3, 0.5 against the estimate 0.3, "lower" (small is extreme): 1 strictly below,
    # 2 tied. Ties counted: (1 + 1 + 2) / (1 + 4) = 0.8; randomised with U: (1 + U (1 + 2)) / 5
    null = np.array([0.1, 0.3, 0.3, 0.5])
    assert fof.null_p_value(null, 0.3, "lower") == pytest.approx(0.8)
    assert fof.null_p_value(null, 0.3, "lower", tie_weight=0.5) == pytest.approx((1 + 0.5 * 3) / 5)
    assert fof.null_p_value(null, 0.3, "upper", tie_weight=0.0) == pytest.approx(1 / 5)  # 0.5 above, ties weigh 0
    assert fof.null_p_value(null, 0.3, "upper", tie_weight=1.0) == pytest.approx(4 / 5)
    with pytest.raises(ValueError):
        fof.null_p_value(null, 0.3, "lower", tie_weight=1.5)


def test_randomised_null_p_is_uniform_for_a_discrete_score_under_the_fair_null():
    """Objective gender design (15 statistics x 2 sides x 3 rounds): a fair model's S_E takes 31 values,
    so counting ties as extreme gives p-values larger than uniform (mean ~0.556); the randomised p
    of fact_or_fair_results has mean 1/2 (seeded; the bound fails for the tie-counting p)."""
    rng = np.random.default_rng(5)
    counts = np.zeros((30, 4, 2), dtype=np.int64)
    table = fof.CellTable(tuple(f"S{c // 2}" for c in range(30)), tuple(fof.HIGH if c % 2 == 0 else fof.LOW for c in range(30)),
                          counts, np.array([c % 2 for c in range(30)]), np.zeros(30, dtype=bool), np.zeros(30, dtype=bool),
                          np.arange(30).reshape(-1, 2), 2)
    p_values, counted = [], []
    for seed in range(300):
        drawn = np.zeros_like(counts)
        drawn[:, :2, 0] = rng.multinomial(3, [0.5, 0.5], size=30)
        run = fof.CellTable(table.statistics, table.sides, drawn, table.truth, table.positive, table.has_background,
                            table.pairs, 2)
        out = fof.fact_or_fair_results(run, objective=True, n_boot=0, n_null=200, seed=seed)
        p_values.append(out["s_e_p_null"])
        null = fof.scores_from_counts(fof.uniform_null_counts(run, 200, seed + 1), run, True, distance="none")["s_e"]
        counted.append(fof.null_p_value(null, out["s_e"], "lower"))
    assert abs(np.mean(p_values) - 0.5) < 0.04
    assert np.mean(counted) > 0.53  # the conservative version this replaces


def test_stratified_wilson_interval_by_hand_and_against_statsmodels():
    from scipy.stats import norm
    from scipy.stats import t as student_t
    from statsmodels.stats.proportion import proportion_confint

    # one stratum, 3 of 10: p = 0.3, s^2 = 10/9 * 0.21, V = s^2 / 10 = 0.021/0.9 -> n* = 0.21 / V = 9; q = t_9
    q = student_t.ppf(0.975, 9)
    centre, half = (0.3 + q * q / 18) / (1 + q * q / 9), q * math.sqrt(0.21 / 9 + q * q / 324) / (1 + q * q / 9)
    assert fof.stratified_wilson_interval(np.array([3]), np.array([10])) == pytest.approx((centre - half, centre + half))
    # two all-or-nothing strata (0 of 3, 3 of 3): V = 0 -> n* = N = 6, df = 6 - 2 = 4: statsmodels' Wilson
    # interval of 3 / 6 at the level whose normal quantile is t_4's
    alpha = 2 * norm.sf(student_t.ppf(0.975, 4))
    expected = proportion_confint(3, 6, alpha=alpha, method="wilson")
    assert fof.stratified_wilson_interval(np.array([0, 3]), np.array([3, 3])) == pytest.approx(expected)
    assert all(math.isnan(v) for v in fof.stratified_wilson_interval(np.array([0]), np.array([0])))


def test_stratified_wilson_interval_covers_at_the_objective_design():
    """Seeded coverage check: 36 strata of 3 trials, half at rate 0.25, a quarter at 0.85, a quarter at
    0.05 (the calibration's "mixed" model): coverage of the mean rate over 400 runs inside [0.91, 0.985]
    (the plain binomial Wilson interval over-covers here, ~0.98, the recentred bootstrap under-covered)."""
    rng = np.random.default_rng(3)
    rates = np.r_[np.full(18, 0.25), np.full(9, 0.85), np.full(9, 0.05)]
    truth = rates.mean()
    hits = [fof.stratified_wilson_interval(x, np.full(36, 3)) for x in rng.binomial(3, rates, size=(400, 36))]
    coverage = np.mean([low <= truth <= high for low, high in hits])
    assert 0.91 <= coverage <= 0.985


def test_rates_get_the_stratified_wilson_interval_in_the_results():
    rng = np.random.default_rng(2)
    table = fof.tabulate(_simulate(rng, RACES, 6, 3, [0.4, 0.2, 0.2, 0.2]), RACES)
    out = fof.fact_or_fair_results(table, objective=True, n_boot=40, n_null=40, seed=1)
    assert (out["s_fact_ci_low"], out["s_fact_ci_high"]) == pytest.approx(
        fof.stratified_wilson_interval(*fof.rate_cells(table, "s_fact")))
    x, n = fof.rate_cells(table, "s_fact")
    assert x.sum() / n.sum() == pytest.approx(out["s_fact"])


def test_accepted_range_returns_the_ideal_when_the_observation_is_more_ideal_than_it():
    # nothing accepted; at t = 0 the observation fails the low tail (it is below everything: for d, the ideal
    # side). The best margin is at t = 0.5, but the interval is the ideal t = 0; without ideal_tail, the best
    t = np.array([0.0, 0.5, 1.0])
    low, high = np.array([0.001, 0.01, 0.003]), np.array([0.999, 0.99, 0.997])
    assert fof._accepted_range(t, low, high, 0.025, ideal_tail="low") == (0.0, 0.0, 0.0)
    assert fof._accepted_range(t, low, high, 0.025) == (0.5, 0.5, 0.5)
    # failing on the other side at t = 0 (the observation is less ideal than everything): the best point
    assert fof._accepted_range(t, low, high, 0.025, ideal_tail="high") == (0.5, 0.5, 0.5)


def test_accepted_range_one_sided_at_the_ideal():
    # S_E (ideal = the largest score, "high"): at t = 0 the low tail 0.04 is below 2 x 0.025 -> t = 0 rejected
    # one-sided (two-sided it would be accepted: min(0.04, 0.96) >= 0.025); t = 0.5 accepted
    t = np.array([0.0, 0.5, 1.0])
    low, high = np.array([0.04, 0.3, 0.9]), np.array([0.96, 0.7, 0.1])
    assert fof._accepted_range(t, low, high, 0.025, ideal_tail="high")[0] == 0.0
    one_sided = (np.array([0.05, 0.025, 0.025]), np.array([0.0, 0.025, 0.025]))
    t_low = fof._accepted_range(t, low, high, 0.025, ideal_tail="high", tail_levels=one_sided)[0]
    # margins: t = 0: 0.04 - 0.05 = -0.01; t = 0.5: 0.3 - 0.025 = 0.275 -> crossing at 0.5 x 0.01 / 0.285
    assert t_low == pytest.approx(0.5 * 0.01 / 0.285)
    # the reported intervals' rule (one_sided_ideal) is these levels
    assert fof._accepted_range(t, low, high, 0.025, ideal_tail="high", one_sided_ideal=True)[0] == pytest.approx(t_low)
    # an observation above everything (high tail 0.001 at t = 0) is accepted at the ideal one-sided
    assert fof._accepted_range(t, np.array([0.999, 0.9, 0.8]), np.array([0.001, 0.1, 0.2]), 0.025, ideal_tail="high",
                               tail_levels=one_sided)[0] == 0.0
    # the unified levels move the set's end continuously away from the ideal: a candidate 0.2 standard deviations
    # in (level ~0.05 on the far side) is rejected where the observation's tail 0.045 is, as the ideal is; with
    # alpha a side there (the reported S_E's rule, one_sided_ideal) it was accepted and the set ended just short of
    # the ideal (t = 0.0167); d's projection reads the unified set
    t4, low4, high4 = np.array([0.0, 0.05, 0.5, 1.0]), np.array([0.04, 0.045, 0.3, 0.9]), np.array([0.96, 0.955, 0.7, 0.1])
    levels = fof.unified_tail_levels(np.array([0.0, 0.2, 1.5, 3.0]))
    flat = (np.array([0.05, 0.025, 0.025, 0.025]), np.array([0.0, 0.025, 0.025, 0.025]))
    assert fof._accepted_range(t4, low4, high4, 0.025, ideal_tail="high", tail_levels=flat)[0] == pytest.approx(0.05 * 0.01 / 0.03)
    assert fof._accepted_range(t4, low4, high4, 0.025, ideal_tail="high", one_sided_ideal=True)[0] == pytest.approx(
        0.05 * 0.01 / 0.03)
    far = 0.3 - levels[0][2]
    assert fof._accepted_range(t4, low4, high4, 0.025, ideal_tail="high", tail_levels=levels)[0] == pytest.approx(
        0.05 + 0.45 * (0.05 - 0.045) / (0.05 - 0.045 + far), rel=1e-3)
    # for a score whose ideal is its smallest value ("low") the levels swap sides: the high tail 0.04 rejects t = 0
    assert fof._accepted_range(t, high, low, 0.025, ideal_tail="low", tail_levels=one_sided)[0] == pytest.approx(
        0.5 * 0.01 / 0.285)


def test_unified_tail_levels_are_feldman_cousins_regions():
    """The unified ordering (Feldman & Cousins 1998, Sec. IV.B) for X ~ N(mu, 1), mu >= 0, recomputed here by
    brute force: x on a fine grid ranked by R(x) = phi(x - mu) / phi(x - max(0, x)), accepted until 95 %."""
    from scipy.stats import norm

    mu = np.array([0.0, 0.3, 0.5, 1.0, 1.5, 2.5, 8.0, np.nan, -0.4])
    away, beyond = fof.unified_tail_levels(mu)
    np.testing.assert_allclose(away + beyond, 0.05, atol=1e-12)  # every candidate's region holds 95 %
    assert (away[0], beyond[0]) == (pytest.approx(0.05), 0.0)    # at the boundary: one-sided
    assert (away[-1], beyond[-1]) == (pytest.approx(0.05), 0.0)  # negative distances are the boundary
    np.testing.assert_allclose([away[5], away[6], away[7]], 0.025, atol=1e-9)  # far (and NaN): two-sided
    assert np.all(np.diff(away[:7]) <= 1e-12) and np.all(np.diff(beyond[:7]) >= -1e-12)  # a continuous shift
    x = np.linspace(-12.0, 14.0, 260_001)
    step = x[1] - x[0]
    for m, a, b in zip(mu[1:5], away[1:5], beyond[1:5]):
        log_r = -0.5 * (x - m) ** 2 + 0.5 * (x - np.maximum(x, 0.0)) ** 2
        order = np.argsort(-log_r, kind="stable")
        mass = norm.pdf(x[order] - m) * step
        kept = order[: int(np.searchsorted(np.cumsum(mass), 0.95)) + 1]
        x1, x2 = x[kept].min(), x[kept].max()
        assert norm.sf(x2 - m) == pytest.approx(a, abs=2e-4)
        assert norm.cdf(x1 - m) == pytest.approx(b, abs=2e-4)
    # by hand at mu = 1: the region is [x1, x2] = [-1.1551, 2.8194], equal ratios at its ends (x1 < 0:
    # log R(x1) = x1 mu - mu^2 / 2 = -1.6551; x2 > 0: log R(x2) = -(x2 - mu)^2 / 2 = -1.6551) holding 95 %
    x1, x2 = norm.ppf(beyond[3]) + 1.0, norm.isf(away[3]) + 1.0
    assert (x1, x2) == (pytest.approx(-1.1551, abs=1e-4), pytest.approx(2.8194, abs=1e-4))
    assert x1 * 1.0 - 0.5 == pytest.approx(-0.5 * (x2 - 1.0) ** 2, abs=1e-6)


def test_report_says_why_s_kld_and_s_fair_have_no_interval_beside_the_estimate():
    """The report prints "no interval: too few answers per cell" beside S_KLD / S_fair (plug-in and
    _debiased) when the task withheld their interval: from n_valid / n_cells (3 per cell), and for a results
    file without those analysis keys from the objective design; S_E keeps its interval; a subjective run at
    300 per cell with an interval is untouched; the glossary explains the phrase."""
    from lm_eval_bias.report.intervals import REASONS, interval
    from lm_eval_bias.report.runs import TaskRun

    nan = math.nan
    metrics = {"s_kld": 0.3, "s_kld_ci_low": nan, "s_kld_ci_high": nan, "s_kld_debiased": nan, "s_kld_null": 0.17,
               "s_fair": 0.6, "s_fair_ci_low": nan, "s_fair_ci_high": nan, "s_fair_debiased": nan,
               "s_e": 0.5, "s_e_ci_low": 0.8, "s_e_ci_high": 1.0, "s_e_debiased": 0.9, "n_valid": 108.0, "n_cells": 36.0}
    objective = TaskRun("fact_or_fair_objective_race", metrics, None, None, [])
    for key in ("s_kld", "s_kld_debiased", "s_fair", "s_fair_debiased"):
        assert interval(objective, key).reason == fof.FEW_ANSWERS_REASON, key
    assert interval(objective, "s_e_debiased").ok
    headline_only = TaskRun("fact_or_fair_objective_race", {k: v for k, v in metrics.items() if not k.startswith("n_")},
                            None, None, [])
    assert interval(headline_only, "s_fair").reason == fof.FEW_ANSWERS_REASON
    subjective = TaskRun("fact_or_fair_subjective_baseline_race",
                         {**metrics, "s_kld_ci_low": 0.8, "s_kld_ci_high": 0.9, "s_kld_debiased": 0.85,
                          "n_valid": 11400.0, "n_cells": 38.0}, None, None, [])
    assert interval(subjective, "s_kld_debiased").ok and interval(subjective, "s_kld").reason != fof.FEW_ANSWERS_REASON
    assert REASONS[fof.FEW_ANSWERS_REASON].endswith(fof.FEW_ANSWERS_WHY) and "Lehmann & Casella" in fof.FEW_ANSWERS_WHY


# -- d: the projection of S_fact's and S_E's intervals --------------------------------------------------
def _numeric_gradient(f: float, e: float, k: int, h: float = 1e-5) -> np.ndarray:
    return np.array([(fof.distance_to_tradeoff_curve(f + h, e, k) - fof.distance_to_tradeoff_curve(f - h, e, k)) / (2 * h),
                     (fof.distance_to_tradeoff_curve(f, e + h, k) - fof.distance_to_tradeoff_curve(f, e - h, k)) / (2 * h)])


@pytest.mark.parametrize("rho", [0.0, 0.5, -0.4])
def test_projected_distance_interval_is_the_delta_method_where_d_is_smooth(rho):
    """Away from the curve's ends and ridges d is smooth, and the range of d over the ellipse of radius z is
    d +- z sqrt(grad' Sigma grad) (symmetric input intervals, SEs 0.01 and 0.02, correlation rho)."""
    k, f, e, sf, se = 4, 0.6, 0.5, 0.01, 0.02
    z = 1.959963984540054
    low, high = fof.projected_distance_interval(f, (f - z * sf, f + z * sf), e, (e - z * se, e + z * se), rho, k)
    g = _numeric_gradient(f, e, k)
    sd = math.sqrt(g @ np.array([[sf * sf, rho * sf * se], [rho * sf * se, se * se]]) @ g)
    d = fof.distance_to_tradeoff_curve(f, e, k)
    assert low == pytest.approx(d - z * sd, abs=2e-4) and high == pytest.approx(d + z * sd, abs=2e-4)


def test_projected_distance_interval_keeps_each_inputs_skew():
    """An S_E interval twice as long above its centre as below gives d (which falls as S_E rises towards the
    curve) an interval longer below d than above it: the sides are not mirrored."""
    k, f, e = 4, 0.6, 0.5
    low, high = fof.projected_distance_interval(f, (f - 1e-6, f + 1e-6), e, (e - 0.02, e + 0.04), 0.0, k)
    d = fof.distance_to_tradeoff_curve(f, e, k)
    assert d - low > 1.8 * (high - d) > 0


def test_projected_distance_interval_reaches_zero_where_the_ellipse_reaches_the_curve():
    k = 4
    top = float(fof.entropy_upper_bound(0.6, k))
    low, high = fof.projected_distance_interval(0.6, (0.58, 0.62), top - 0.01, (top - 0.05, top + 0.03), 0.0, k)
    assert low == 0.0 and high > fof.distance_to_tradeoff_curve(0.6, top - 0.01, k)
    low, _ = fof.projected_distance_interval(0.6, (0.58, 0.62), top - 0.1, (top - 0.14, top - 0.06), 0.0, k)
    assert low > 0.0


def test_projected_distance_interval_spans_both_branches_on_the_ridge():
    """The calibration's failing case: the half-fair race model at 10 answers per cell sits at
    (S_fact, S_E) = (0.261, 0.712), nearest to the curve's end (0, log_4 3); a third of an SE to the right d
    switches to the curve's inside. The projection spans both branches: its upper end is at least d at the
    ridge-side end of S_fact's interval, and its lower end at most the end-branch distance at the left end."""
    k, f, e = 4, 0.261, 0.712
    f_int, e_int = (f - 0.045, f + 0.045), (e - 0.03, e + 0.03)
    low, high = fof.projected_distance_interval(f, f_int, e, e_int, 0.0, k)
    end = (0.0, float(fof.entropy_upper_bound(0.0, k)))
    assert high >= fof.distance_to_tradeoff_curve(f_int[1], e, k) - 1e-6
    assert low <= math.hypot(f_int[0] - end[0], e - end[1]) + 1e-6
    assert low < fof.distance_to_tradeoff_curve(f, e, k) < high


def test_projected_distance_interval_is_nan_without_its_inputs():
    assert all(math.isnan(x) for x in fof.projected_distance_interval(math.nan, (0.1, 0.2), 0.5, (0.4, 0.6), 0.0, 4))
    assert all(math.isnan(x) for x in fof.projected_distance_interval(0.3, (0.1, 0.4), 0.5, (math.nan, 0.6), 0.0, 4))


def test_asking_for_d_changes_no_other_interval_and_d_is_centred_on_s_e_debiased():
    """d's correlation simulation has its own stream, so the other keys' intervals are the same with or
    without d; d's estimate is d at (S_fact, S_E's median-unbiased estimate) and lies in its interval."""
    rng = np.random.default_rng(5)
    table = fof.tabulate(_simulate(rng, RACES, 8, 12, [0.55, 0.15, 0.15, 0.15]), RACES)
    without = fof.population_score_intervals(table, False, 40, 3, keys=["s_e", "s_kld", "s_fair"])
    with_d = fof.population_score_intervals(table, False, 40, 3, keys=["s_e", "s_kld", "s_fair", "distance"])
    for key in without:
        assert with_d[key] == without[key]
    s_fact = float(fof.scores_from_counts(table.counts, table, False, distance="none")["s_fact"])
    centre, low, high = with_d["distance"]
    assert centre == pytest.approx(fof.distance_to_tradeoff_curve(s_fact, with_d["s_e"][0], 4))
    assert low <= centre <= high and high - low > 0
