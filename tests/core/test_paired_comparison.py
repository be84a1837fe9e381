"""Paired comparison of two models (``lm_eval_bias.core.paired``, ``report.comparison.paired_comparison``)
and the leaderboard's ties: planted models — a real difference is not a tie, two models identical in
distribution are, docs answered by only one model are left out and counted."""

from __future__ import annotations

import math

import numpy as np
import pytest

from lm_eval_bias.core.paired import holm, paired_cluster_bootstrap, paired_difference, tie_groups

TASK = "focus_2afc_income"


# -- the pure statistics --------------------------------------------------------------------------------
def _clustered(n_clusters: int, rate_a: float, rate_b: float, seed: int, per: int = 20, spread: float = 1.0):
    """Per-cluster successes of two models on the same clusters; a shared cluster effect (logit scale)."""
    rng = np.random.default_rng(seed)
    effect = rng.normal(0, spread, n_clusters)
    logit = lambda p: math.log(p / (1 - p))  # noqa: E731
    p_a = 1 / (1 + np.exp(-(logit(rate_a) + effect)))
    p_b = 1 / (1 + np.exp(-(logit(rate_b) + effect)))
    return rng.binomial(per, p_a), rng.binomial(per, p_b), per


def _share(successes, per):
    def values(weights):
        weights = np.atleast_2d(weights)
        return {"share": (weights @ successes) / (weights.sum(axis=1) * per)}
    return values


def test_paired_bootstrap_separates_a_planted_difference_from_a_null():
    strata = [k % 4 for k in range(60)]
    a, b, per = _clustered(60, 0.65, 0.5, seed=1)
    real = paired_cluster_bootstrap(_share(a, per), _share(b, per), strata, 1000, 7, batched=True)["share"]
    assert real.estimate == pytest.approx((a.sum() - b.sum()) / (60 * per))
    assert real.p_value < 0.01 and real.ci_low > 0 and real.significant
    assert real.ci_low < 0.15 < real.ci_high  # the planted difference on the probability scale is about 0.15
    a, b, per = _clustered(60, 0.5, 0.5, seed=2)
    null = paired_cluster_bootstrap(_share(a, per), _share(b, per), strata, 1000, 7, batched=True)["share"]
    assert null.p_value > 0.05 and null.ci_low < 0 < null.ci_high and not null.significant


def test_exchange_test_by_hand():
    """Two clusters, metric = sum of the cluster values: a = (1, 2), b = (0, 0), d = 3. Exchanging the
    clusters of a mask m gives d* = (1 - 2 m_1) 1 + (1 - 2 m_2) 2, so |d*| = 3 (a tie) exactly when both or
    neither are exchanged and |d*| < 3 otherwise: mid-p (default) (1 + #ties) / 2 / (B + 1), counting ties
    (1 + #ties) / (B + 1); batched and one mask at a time agree; a constant metric gets p = 1/2 (mid), 1
    (count), U (random)."""
    from lm_eval_bias.core.paired import exchange_masks, exchange_test

    a, b = np.array([1.0, 2.0]), np.array([0.0, 0.0])

    def difference(mask):
        mask = np.asarray(mask, dtype=float)
        return {"sum": ((1 - mask) * a + mask * b).sum(-1) - (mask * a + (1 - mask) * b).sum(-1)}

    masks = exchange_masks(2, 99, 5)
    extreme = int(np.sum(masks[:, 0] == masks[:, 1]))
    p = exchange_test(difference, 2, 99, 5, ["sum"], batched=True)["sum"]
    assert p == pytest.approx(0.5 * (1 + extreme) / 100) and 0.15 < p < 0.35
    counted = exchange_test(difference, 2, 99, 5, ["sum"], batched=True, ties="count")["sum"]
    assert counted == pytest.approx((1 + extreme) / 100)
    one_by_one = exchange_test(lambda m: {"sum": float(difference(m)["sum"])}, 2, 99, 5, ["sum"])["sum"]
    assert one_by_one == p

    def constant(m):
        return {"c": np.zeros(np.atleast_2d(m).shape[0])}

    assert exchange_test(constant, 2, 99, 5, ["c"], batched=True)["c"] == 0.5
    assert exchange_test(constant, 2, 99, 5, ["c"], batched=True, ties="count")["c"] == 1.0
    assert 0 < exchange_test(constant, 2, 99, 5, ["c"], batched=True, ties="random")["c"] < 1  # U
    with pytest.raises(ValueError, match="ties"):
        exchange_test(constant, 2, 99, 5, ["c"], batched=True, ties="half")
    assert math.isnan(exchange_test(difference, 1, 99, 5, ["sum"], batched=True)["sum"])


def test_exchange_test_holds_its_level_and_detects_a_difference():
    """Seeded: 300 pairs of identical models (40 clusters, a shared cluster effect) reject at 5 % in
    2-9 % of runs (exact in expectation); a planted difference is found."""
    from lm_eval_bias.core.paired import exchange_test

    def exchange(a, b, per):
        def difference(masks):
            masks = np.atleast_2d(masks).astype(float)
            moved = masks @ (b - a).astype(float)
            return {"share": ((a.sum() + moved) - (b.sum() - moved)) / (len(a) * per)}
        return difference

    rejected = []
    for seed in range(300):
        a, b, per = _clustered(40, 0.5, 0.5, seed, per=10)
        rejected.append(exchange_test(exchange(a, b, per), 40, 199, seed, ["share"], batched=True)["share"] < 0.05)
    assert 0.02 <= np.mean(rejected) <= 0.09
    a, b, per = _clustered(40, 0.7, 0.5, 1, per=10)
    assert exchange_test(exchange(a, b, per), 40, 199, 1, ["share"], batched=True)["share"] < 0.01


def test_pairing_is_what_makes_the_test_sensitive():
    """With a large shared cluster effect, resampling the two models independently would drown a real
    difference; the joint resampling keeps it (and batched == one row at a time)."""
    strata = [0] * 40
    a, b, per = _clustered(40, 0.6, 0.5, seed=3, spread=2.0)
    paired = paired_cluster_bootstrap(_share(a, per), _share(b, per), strata, 500, 1, batched=True)["share"]
    rowwise = paired_cluster_bootstrap(lambda w: {k: float(v[0]) for k, v in _share(a, per)(w).items()},
                                       lambda w: {k: float(v[0]) for k, v in _share(b, per)(w).items()}, strata, 500, 1)
    assert rowwise["share"] == paired
    rng = np.random.default_rng(0)
    independent = np.std(rng.choice(a, (500, 40)).sum(1) / (40 * per) - rng.choice(b, (500, 40)).sum(1) / (40 * per))
    assert paired.stderr < 0.5 * independent and paired.significant


def test_too_few_clusters_or_undefined_replicates_give_nan():
    one = paired_difference(0.6, 0.5, np.full(100, 0.6), np.full(100, 0.5), n_clusters=1)
    assert math.isnan(one.p_value) and math.isnan(one.ci_low)
    mostly_nan = paired_difference(0.6, 0.5, np.r_[np.full(80, np.nan), np.full(20, 0.6)], np.full(100, 0.5), 30)
    assert math.isnan(mostly_nan.p_value) and mostly_nan.n_replicates == 20


def test_holm_and_tie_ranks():
    from statsmodels.stats.multitest import multipletests

    p = [0.01, 0.04, np.nan, 0.03]
    adjusted = holm(p)
    assert math.isnan(adjusted[2])
    np.testing.assert_allclose(adjusted[[0, 1, 3]], multipletests([0.01, 0.04, 0.03], method="holm")[1])
    assert tie_groups(["a", "b", "c", "d"], [True, False, True]) == [1, 2, 2, 4]
    assert tie_groups(["a", "b", "c"], [False, False]) == [1, 1, 1]


# -- on logged records, through the task's own aggregation ---------------------------------------------------
def twoafc_records(p_man: float, seed: int, templates: int = 12, occupations: int = 3) -> list[dict]:
    """2AFC records of a model that picks the man with probability ``p_man`` (template effects shared)."""
    rng = np.random.default_rng(seed)
    template_shift = np.random.default_rng(99).normal(0, 0.08, templates)  # the same templates for every model
    out = []
    for t in range(templates):
        occupation, template = f"occ{t % occupations}", f"occ{t % occupations}/t{t}"
        p = float(np.clip(p_man + template_shift[t], 0, 1))
        for man in range(0, 10, 2):
            for woman in range(1, 10, 2):
                for order in ("AB", "BA"):
                    man_is_a = order == "AB"
                    pick_man = rng.random() < p
                    out.append({"template": template, "occupation": occupation, "pair_id": f"{template}:{man}-{woman}",
                                "order": order, "group_a": man if man_is_a else woman,
                                "group_b": woman if man_is_a else man, "status": "valid",
                                "choice": "A" if pick_man == man_is_a else "B", "reason": "", "extraction": "strict"})
    return out


@pytest.fixture
def quiet(monkeypatch):
    """Point estimates only in the tasks' aggregations; 60 paired replicates."""
    monkeypatch.setenv("LM_EVAL_BIAS_BOOTSTRAP_ITERS", "0")
    monkeypatch.setenv("LM_EVAL_BIAS_NULL_ITERS", "0")
    monkeypatch.setenv("LM_EVAL_BIAS_REPORT_BOOTSTRAP_ITERS", "60")


def test_paired_comparison_on_records(quiet):
    from lm_eval_bias.report.comparison import paired_comparison

    biased, fair, fair_too = twoafc_records(0.85, 1), twoafc_records(0.5, 2), twoafc_records(0.5, 3)
    real = paired_comparison(TASK, biased, fair, ["male_win_rate"], "biased", "fair")
    diff = real.differences["male_win_rate"]
    assert real.n_shared == len(biased) and real.n_only_a == real.n_only_b == 0 and real.n_clusters == 12
    assert diff.estimate > 0.25 and diff.ci_low > 0 and diff.p_value < 0.05
    assert "templates resampled within occupation" in real.method
    same = paired_comparison(TASK, fair, fair_too, ["male_win_rate"])
    assert same.differences["male_win_rate"].p_value > 0.05
    assert same.differences["male_win_rate"].ci_low < 0 < same.differences["male_win_rate"].ci_high
    # docs answered by one model only: left out and counted; the rest is compared doc by doc
    cut = [r for r in fair if not r["template"].endswith(("/t0", "/t1"))]
    extra = dict(biased[0], template="occ0/t99", pair_id="occ0/t99:0-1")
    partial = paired_comparison(TASK, biased + [extra], cut, ["male_win_rate"])
    assert partial.n_shared == len(cut) and partial.n_only_a == len(biased) + 1 - len(cut) and partial.n_only_b == 0
    assert partial.n_clusters == 10 and partial.differences["male_win_rate"].p_value < 0.05
    assert paired_comparison(TASK, biased, None, ["male_win_rate"]).reason == "no logged samples for both models"


def test_leaderboard_marks_ties(quiet):
    from lm_eval_bias import samples
    from lm_eval_bias.report.leaderboard import comparisons_table, leaderboard, rankings
    from lm_eval_bias.report.runs import ModelRun, TaskRun

    def model(label, records):
        return ModelRun(label, {TASK: TaskRun(TASK, samples.result_values(TASK, records), records, len(records), [])})

    models = [model("fair", twoafc_records(0.5, 2)), model("biased", twoafc_records(0.85, 1)),
              model("fair too", twoafc_records(0.5, 3))]
    ranks = rankings(models)
    male = ranks[f"{TASK}:male_win_rate"]
    assert male.order[0] == "biased" and male.ranks["biased"] == 1
    assert male.ranks["fair"] == male.ranks["fair too"] == 2  # identical in distribution: a tie
    first, second = male.steps
    assert not first.tie and first.p_holm < 0.05 and first.ci_low > 0 and second.tie
    assert first.n_shared == len(models[0].tasks[TASK].records)
    # retained_rate has a direction (higher is better): every valid 2AFC answer of this design is retained
    board = leaderboard(models, ranks)
    assert board.loc["biased", f"{TASK}:male_win_rate:rank"] == 1.0
    table = comparisons_table(ranks)
    assert set(table["key"]) >= {"male_win_rate"} and table["p_holm"].dropna().between(0, 1).all()
    # Pol and Ext are magnitudes shown without an interval of their plug-in: their differences are tested by
    # exchanging the two models' answers template by template, with no interval (a difference of plug-ins
    # targets the difference of their expectations)
    for key in ("polarization", "extreme_cell_rate"):
        steps = ranks[f"{TASK}:{key}"].steps
        assert steps and all(math.isnan(s.ci_low) and math.isnan(s.ci_high) for s in steps), key
        assert all(math.isfinite(s.p) and "no interval of the difference" in s.note and "exchange test" in s.note
                   for s in steps), key
    pol = ranks[f"{TASK}:polarization"]
    assert pol.order[-1] == "biased"  # lower Pol is better
    fair_pair, to_biased = pol.steps
    assert fair_pair.tie and not to_biased.tie and to_biased.p <= 1 / 61  # of 60 exchanges none is as far apart
    assert all(math.isfinite(s.ci_low) and "no interval" not in s.note for s in male.steps)


def test_paired_t_interval_and_p_by_hand():
    # d_hat = 0.1, replicate deviations -0.2 .. 0.25 (step 0.05, twice): SE = SD(dev); 40 clusters, no strata:
    # df = 39, interval 0.1 -/+ t_39 SE, p = 2 P(T_39 >= 0.1 / SE); with 4 clusters in 2 strata the deviations
    # are rescaled by sqrt(4 / 2) and df = 4 - 2 = 2
    from scipy.stats import t as student_t

    dev = np.tile(np.round(np.arange(-0.2, 0.2501, 0.05), 10), 2)
    se = np.std(dev, ddof=1)
    plain = paired_difference(0.6, 0.5, 0.6 + dev, np.full(20, 0.5), n_clusters=40)
    q = student_t.ppf(0.975, 39)
    assert (plain.ci_low, plain.ci_high) == pytest.approx((0.1 - q * se, 0.1 + q * se))
    assert plain.p_value == pytest.approx(2 * student_t.sf(0.1 / se, 39)) and plain.stderr == pytest.approx(se)
    rescaled = paired_difference(0.6, 0.5, 0.6 + dev, np.full(20, 0.5), n_clusters=4, n_strata=2)
    se2, q2 = math.sqrt(2) * se, student_t.ppf(0.975, 2)
    assert (rescaled.ci_low, rescaled.ci_high) == pytest.approx((0.1 - q2 * se2, 0.1 + q2 * se2))
    assert rescaled.p_value == pytest.approx(2 * student_t.sf(0.1 / se2, 2))
    flat = paired_difference(0.5, 0.5, np.full(20, 0.5), np.full(20, 0.5), n_clusters=40)  # SE 0: point interval
    assert flat.ci_low == flat.ci_high == 0.0 and flat.p_value == 1.0
    with pytest.raises(ValueError):
        paired_difference(0.6, 0.5, 0.6 + dev, np.full(20, 0.5), n_clusters=40, method="basic")


def test_paired_t_interval_covers_a_planted_difference():
    """Seeded coverage check of the default interval: 40 clusters in 4 strata, a shared cluster effect;
    the difference of the two models' expected shares over 120 runs is covered in [0.88, 0.99] of them."""
    rng = np.random.default_rng(8)
    effect_sd, per, n = 1.0, 20, 40
    strata = [c % 4 for c in range(n)]
    draws = rng.normal(0, effect_sd, 200_000)
    truth = float(np.mean(1 / (1 + np.exp(-(0.4 + draws))) - 1 / (1 + np.exp(-draws))))
    covered = []
    for seed in range(120):
        a, b, _ = _clustered(n, 1 / (1 + math.exp(-0.4)), 0.5, seed, per=per, spread=effect_sd)
        diff = paired_cluster_bootstrap(_share(a, per), _share(b, per), strata, 200, seed, batched=True)["share"]
        covered.append(diff.ci_low <= truth <= diff.ci_high)
    assert 0.88 <= np.mean(covered) <= 0.99
