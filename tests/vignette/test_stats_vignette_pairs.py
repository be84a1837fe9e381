"""VIGNETTE statistics that respect the image pair: pair-level identity tests, pair bootstrap, null
floors, the authors' variants and Table 3's gender-pooled term polarity (paper Sec. 5-7, App. A.10).

Planted models: left-side preference only (no identity preference) -> the pair-level test holds its
level, the paper's Fisher test rejects; a planted identity preference -> both reject; coin flips ->
the estimate sits on its null floor."""

from __future__ import annotations

import logging
import math

import numpy as np
import pandas as pd
import pytest

from lm_eval_bias.vignette import stats as vg

IDS = [f"id{k}" for k in range(8)]


def decision_table(seed: int, theta=None, left=0.0, pair_sd=0.0, n_activities=12, questions=20) -> pd.DataFrame:
    """Every pair of 8 identities x ``n_activities`` activities, ``questions`` docs per pair, sides random.
    P(left chosen) = 0.5 + left + (theta_L - theta_R) / 2 + u_pair."""
    rng = np.random.default_rng(seed)
    theta = np.zeros(len(IDS)) if theta is None else np.asarray(theta, float)
    rows = []
    pair = 0
    for a in range(n_activities):
        for i in range(len(IDS)):
            for j in range(i + 1, len(IDS)):
                lft, rgt = (i, j) if rng.random() < 0.5 else (j, i)
                p = np.clip(0.5 + left + (theta[lft] - theta[rgt]) / 2 + rng.normal(0, pair_sd), 0, 1)
                for q in range(questions):
                    chose_left = int(rng.random() < p)
                    doc = f"{pair}|{q}"
                    rows.append((doc, str(pair), IDS[lft], f"a{a}", IDS[rgt], chose_left, "race_ethnicity_color"))
                    rows.append((doc, str(pair), IDS[rgt], f"a{a}", IDS[lft], 1 - chose_left, "race_ethnicity_color"))
                pair += 1
    return pd.DataFrame(rows, columns=["doc_id", "pair_id", "identity", "context", "partner", "selected", "dimension"])


def test_swapped_counts_of_a_choice_design_are_the_complement():
    design = vg.pair_design(decision_table(0, n_activities=2, questions=3))
    assert np.array_equal(design.n1.toarray(), design.n0.toarray())
    assert np.array_equal(design.x1.toarray(), (design.n0 - design.x0).toarray())
    resp, opt = vg.observed_counts(design)
    s = pd.Series(vg.identity_rates(design, resp, opt).ravel(), index=design.identities)
    table = decision_table(0, n_activities=2, questions=3)
    pd.testing.assert_series_equal(s.sort_index(), vg.selection_frequency(table).sort_index(), check_names=False)


def test_left_side_preference_only_pair_test_holds_fisher_rejects():
    pair_any, fisher_any, pair_raw = [], [], []
    for seed in range(20):
        tests = vg.identity_pair_tests(decision_table(seed, left=0.4, n_activities=3))
        pair_any.append((tests["p_holm"] < 0.05).any())
        fisher_any.append((tests["p_paper_holm"] < 0.05).any())
        pair_raw.append((tests["p_value"] < 0.05).mean())
    # no identity preference: the answers follow the side; the identities' sides are random
    assert np.mean(pair_any) <= 0.15 and np.mean(pair_raw) <= 0.12
    assert np.mean(fisher_any) >= 0.8


def test_planted_identity_preference_both_tests_reject():
    theta = np.zeros(len(IDS))
    theta[3] = 0.4
    tests = vg.identity_pair_tests(decision_table(1, theta=theta, left=0.1, pair_sd=0.05))
    assert tests.loc["id3", "selection_frequency"] > 60
    assert tests.loc["id3", "p_holm"] < 0.01 and tests.loc["id3", "p_paper_holm"] < 0.01
    assert tests["p_holm"].drop("id3").min() > 0.05 or tests.loc["id3", "p_holm"] == tests["p_holm"].min()


def test_sign_flip_p_is_exact_for_few_pairs():
    # 3 pairs, all the same direction: 2 of 8 sign patterns reach |T| -> p = 0.25
    assert vg._sign_flip_p(np.array([1.0, 1.0, 1.0])) == pytest.approx(0.25)
    assert vg._sign_flip_p(np.array([0.0, 0.0])) == 1.0


def _spread(table, n_boot, n_null, seed=3):
    design = vg.pair_design(table)
    return vg.pair_resampled_summary(design, lambda r, o: vg.spread_by_stratum(design, vg.identity_rates(design, r, o)),
                                     n_boot, n_null, seed, interval="basic", bounds=(0, 100))


def test_coin_flips_spread_sits_on_its_null_floor():
    key = "race_ethnicity_color"
    estimates, floors, p = [], [], []
    for seed in range(8):
        res = _spread(decision_table(seed, left=0.2, pair_sd=0.1, n_activities=3, questions=6), 0, 200, seed)
        estimates.append(res.estimate[key])
        floors.append(res.null[key])
        p.append(res.p_null[key])
    assert np.mean(estimates) > 5  # coin flips: a spread of several points ...
    assert np.mean(estimates) == pytest.approx(np.mean(floors), rel=0.25)  # ... which is the null floor
    assert np.mean(np.array(p) < 0.05) <= 0.25


def test_planted_spread_is_covered_and_beats_its_floor():
    theta = np.linspace(-0.2, 0.2, len(IDS))
    others = (theta.sum() - theta) / (len(theta) - 1)
    truth = np.ptp(50 + 50 * (theta - others))
    res = _spread(decision_table(5, theta=theta, left=0.1, pair_sd=0.05, n_activities=12, questions=6), 300, 300)
    key = "race_ethnicity_color"
    assert res.ci_low[key] <= truth <= res.ci_high[key]
    assert res.p_null[key] < 0.01 and res.estimate[key] > res.null[key] + 10
    assert res.stderr[key] > 0


def test_too_few_pairs_give_nan_interval():
    table = decision_table(0, n_activities=1, questions=4)
    table = table[table["pair_id"] == "0"]
    res = _spread(table, 50, 50)
    assert res.too_few_pairs == ["race_ethnicity_color"]
    assert math.isnan(res.ci_low["race_ethnicity_color"]) and not math.isnan(res.estimate["race_ethnicity_color"])


def test_polarity_cells_match_polarity_and_count_undefined():
    terms = {"friendly": ("Sociability", "high"), "unfriendly": ("Sociability", "low"),
             "honest": ("Morality", "high"), "dishonest": ("Morality", "low")}
    rows = []
    for pair, (a, b) in enumerate([("X", "Y"), ("Y", "Z"), ("X", "Z")]):
        for term, chosen in (("friendly", a), ("unfriendly", b), ("honest", a)):
            for person, other in ((a, b), (b, a)):
                rows.append((f"{pair}{term}", str(pair), person, term, other, int(person == chosen), "age"))
    table = pd.DataFrame(rows, columns=["doc_id", "pair_id", "identity", "context", "partner", "selected", "dimension"])
    design = vg.pair_design(table)
    masks = vg.polarity_masks(design, terms)
    cells = vg.polarity_cells(design, *vg.observed_counts(design), masks)
    expected = vg.polarity(table, terms).reindex(index=design.identities, columns=list(masks))
    np.testing.assert_allclose(cells[0], expected.to_numpy(), equal_nan=True)
    assert vg.undefined_polarity_cells(design, cells) == {"age": 3}  # nobody asked "dishonest": Morality undefined
    mean = vg.mean_abs_polarity_by_stratum(design, cells)["age"][0]
    assert mean == pytest.approx(vg.mean_abs_polarity(vg.polarity(table, terms), {i: "age" for i in "XYZ"})["age"])


# -- Table 3 and the authors' variants ------------------------------------------------------------------------
SSCM = pd.DataFrame({"dictionary": ["Ability", "Ability", "Morality", "Morality"],
                     "term": ["competent", "incompetent", "honest", "dishonest"],
                     "direction": ["high", "low", "high", "low"],
                     "pair_id": ["high_a1", "low_a1", "high_m1", "low_m1"]})


def test_gender_pooled_term_polarity_pools_man_and_woman():
    rows = []
    # christian man chosen 1 of 2 times for competent, christian woman 0 of 2; both 2 of 2 for incompetent
    for k, (identity, term, selected) in enumerate([
            ("christian man", "competent", 1), ("christian man", "competent", 0),
            ("christian woman", "competent", 0), ("christian woman", "competent", 0),
            ("christian man", "incompetent", 1), ("christian man", "incompetent", 1),
            ("christian woman", "incompetent", 1), ("christian woman", "incompetent", 1),
            ("christian man", "honest", 1), ("christian woman", "dishonest", 0)]):
        partner = "jewish man" if identity.endswith(" man") else "jewish woman"
        rows.append((str(k), identity, term, partner, selected))
        rows.append((str(k), partner, term, identity, 1 - selected))
    table = pd.DataFrame(rows, columns=list(vg.OPTION_COLUMNS))
    out = vg.gender_pooled_term_polarity(table, SSCM)
    assert list(out.columns) == ["competent - incompetent", "honest - dishonest"]
    assert set(out.index) == {"christian person", "jewish person"}
    assert out.loc["christian person", "competent - incompetent"] == pytest.approx(25.0 - 100.0)
    assert out.loc["christian person", "honest - dishonest"] == pytest.approx(100.0 - 0.0)
    assert out.loc["jewish person", "competent - incompetent"] == pytest.approx(75.0 - 0.0)
    mapping = {r.term: (r.dictionary, r.direction, r.pair_id) for r in SSCM.itertuples()}
    pd.testing.assert_frame_equal(vg.gender_pooled_term_polarity(table, mapping), out)
    assert vg.term_pair_dimensions(SSCM) == {"competent - incompetent": "Ability", "honest - dishonest": "Morality"}


def test_gender_neutral_is_the_authors_rule():
    assert vg.gender_neutral("christian man") == "christian person" == vg.gender_neutral("Christian woman".lower())
    assert vg.gender_neutral("filipino man") == "phillipines person person"  # their regexes, in their order
    assert vg.gender_neutral("old woman") == "old person"


ROWS = [  # cooking: X vs Y -> X, X vs Y -> Y, X vs Z -> X ; running: X vs Y -> Y, X vs Y -> Y, X vs Y -> Y
    ("d1", "X", "cooking", "Y", 1), ("d1", "Y", "cooking", "X", 0),
    ("d2", "X", "cooking", "Y", 0), ("d2", "Y", "cooking", "X", 1),
    ("d3", "X", "cooking", "Z", 1), ("d3", "Z", "cooking", "X", 0),
    ("d4", "X", "running", "Y", 0), ("d4", "Y", "running", "X", 1),
    ("d5", "X", "running", "Y", 0), ("d5", "Y", "running", "X", 1),
    ("d6", "X", "running", "Y", 0), ("d6", "Y", "running", "X", 1),
]


def test_authors_selection_frequency_pools_contexts():
    t = pd.DataFrame(ROWS, columns=list(vg.OPTION_COLUMNS))
    authors = vg.selection_frequency_authors(t, pool_genders=False)
    assert authors["X"] == pytest.approx(100 * 2 / 6)  # pooled: 2 chosen of 6 shown
    assert vg.selection_frequency(t)["X"] == pytest.approx((200 / 3 + 0) / 2)  # paper: mean of 66.7 and 0


def test_authors_pair_comp_pools_contexts():
    t = pd.DataFrame(ROWS, columns=list(vg.OPTION_COLUMNS))
    m = vg.pair_comp_authors(t, pool_genders=False)
    # X with Y: 1 chosen of 5 ; X without Y (with Z): 1 of 1 -> (0.2 - 1) x 100
    assert m.loc["X", "Y"] == pytest.approx(-80.0)
    # the paper's: S(X | Y) = mean(cooking 1/2, running 0/3) = 25 ; S(X | not Y) = 100
    assert vg.pair_comp(t, "X", "Y") == pytest.approx(-75.0)
    assert math.isnan(m.loc["Y", "Z"]) and math.isnan(m.loc["X", "X"])


# -- vision vs text -------------------------------------------------------------------------------------------
def test_vision_text_planted_and_null():
    theta = np.zeros(len(IDS))
    theta[2] = 0.4
    vision = decision_table(11, theta=theta, left=0.1, pair_sd=0.05, n_activities=4, questions=6)
    text = decision_table(11, left=0.1, pair_sd=0.05, n_activities=4, questions=6)  # same pairs and sides
    out = vg.vision_text_tests(vision, text)
    assert out.loc["id2", "delta"] > 15
    assert out.loc["id2", "p_holm"] < 0.05 and out.loc["id2", "p_paper_holm"] < 0.05
    null = vg.vision_text_tests(decision_table(12, left=0.3, pair_sd=0.2, n_activities=4, questions=6),
                                decision_table(12, left=0.3, pair_sd=0.2, n_activities=4, questions=6))
    assert (null["p_holm"] > 0.05).all()


# -- through the task summary ---------------------------------------------------------------------------------
def _records(table: pd.DataFrame) -> list[dict]:
    recs = []
    for doc, g in table.groupby("doc_id", sort=False):
        first = g.iloc[0]
        chosen = g.loc[g["selected"] == 1, "identity"]
        recs.append({"doc_id": doc, "pair_id": first["pair_id"], "paradigm": "decision", "left": first["identity"],
                     "right": first["partner"], "context": first["context"], "dimension": first["dimension"],
                     "gender": "male", "parameter": "ability", "direction": "", "status": "valid",
                     "question_type": "identity_choice", "pair_kind": "identity",
                     "chosen_identity": chosen.iloc[0] if len(chosen) else None})
    return recs


def test_task_summary_carries_intervals_floors_and_counts(monkeypatch, caplog):
    from lm_eval_bias.vignette import tasks as vignette

    monkeypatch.setenv("LM_EVAL_BIAS_BOOTSTRAP_ITERS", "200")
    monkeypatch.setenv("LM_EVAL_BIAS_NULL_ITERS", "200")
    theta = np.linspace(-0.4, 0.4, len(IDS))
    records = _records(decision_table(2, theta=theta, left=0.1, n_activities=3, questions=6))
    out = vignette.summarize(records)
    key = "selection_spread_race_ethnicity_color"
    # a max - min magnitude: estimate, null floor and p_null, no interval (docs/vignette.md "Magnitudes")
    assert f"{key}_ci_low" not in out and f"{key}_stderr" not in out
    assert out[f"{key}_p_null"] < 0.01 and out[f"{key}_null"] < out[key]
    assert out["n_pairs"] == 3 * 28 and out["n_identities"] == 8
    assert out["n_identities_significant"] >= 1 and out["n_identities_significant_paper"] >= 1
    # beside the count: the design can reject (each identity in 21 pairs) and its MDE in pp of S
    assert out["n_identities_significant_can_reject"] == 1.0 and 0 < out["n_identities_significant_mde"] < 50
    # the pooled heterogeneity test of the dimension rejects; 200 draws: p = 1 / 201 at best
    assert out[f"p_identity_heterogeneity_{'race_ethnicity_color'}"] == 1 / 201
    assert out["n_dimensions_heterogeneous"] == 1.0 and out["n_dimensions_heterogeneous_can_reject"] == 1.0
    assert set(out) == set(vignette.result_keys("decision"))
    with caplog.at_level(logging.WARNING, logger="lm_eval_bias"):
        one = vignette.summarize(records[:6])  # one image pair
    # one pair: each identity's sign-flip test can reach p = 2 / 2 = 1 at best, so it cannot reject
    assert one["n_identities_significant_can_reject"] == 0.0 and math.isnan(one["n_identities_significant"])


def test_answer_rates_treat_whole_pairs_as_clusters_within_dimension():
    """A pair whose docs are all refused is one cluster: the interval of the valid share is wider than if
    its docs were independent, contains the estimate and stays in [0, 1]; the jackknife SE and the
    logit-t interval by hand; no interval below MIN_PAIRS_FOR_INTERVAL pairs."""
    from scipy.special import expit, logit
    from scipy.stats import t as student_t

    from lm_eval_bias.vignette.stats import MIN_PAIRS_FOR_INTERVAL, pair_clustered_rate_intervals

    pair_ids = [f"p{p}" for p in range(40) for _ in range(10)]
    strata = ["age" if p < 20 else "religion" for p in range(40) for _ in range(10)]
    hits = np.asarray([p % 4 != 0 for p in range(40) for _ in range(10)])  # every 4th pair fully refused
    out = pair_clustered_rate_intervals(pair_ids, strata, hits, n_boot=2000, seed=1)
    assert out["estimate"] == 0.75 and out["n_pairs"] == 40
    # equal pairs (10 docs) and 20 per stratum, 5 refused in each: the stratified jackknife of the share is
    # the stratified SE of a mean, sqrt(sum_h (1/2)^2 s_h^2 / 20), s_h^2 = 20/19 * 0.75 * 0.25
    se = math.sqrt(2 * 0.25 * (20 / 19 * 0.75 * 0.25) / 20)
    assert out["stderr"] == pytest.approx(se, rel=1e-12)  # 0.070, far above the 0.022 of 400 independent docs
    q = student_t.ppf(0.975, 40 - 2)
    assert out["ci_low"] == pytest.approx(expit(logit(0.75) - q * se / (0.75 * 0.25)))
    assert out["ci_high"] == pytest.approx(expit(logit(0.75) + q * se / (0.75 * 0.25)))
    assert 0.0 <= out["ci_low"] < 0.75 < out["ci_high"] <= 1.0
    one_pair = pair_clustered_rate_intervals(["a"] * 5, ["age"] * 5, np.ones(5, bool), n_boot=100, seed=1)
    assert one_pair["estimate"] == 1.0 and np.isnan(one_pair["ci_low"])  # one pair: no interval
    k = MIN_PAIRS_FOR_INTERVAL
    few = pair_clustered_rate_intervals([f"p{i}" for i in range(k - 1)], ["age"] * (k - 1), np.ones(k - 1), 100, 1)
    assert np.isnan(few["ci_low"]) and few["n_pairs"] == k - 1
    # every doc valid over k pairs (two docs each) in k dimensions (single-pair strata pooled into one):
    # t-Wilson over the pairs, [k / (k + t_{k-1}^2), 1]
    twice = [f"p{i}" for i in range(k) for _ in range(2)]
    pooled = pair_clustered_rate_intervals(twice, [f"d{i}" for i in range(k) for _ in range(2)], np.ones(2 * k), 100, 1)
    q2 = student_t.ppf(0.975, k - 1) ** 2
    assert pooled["ci_high"] == 1.0 and pooled["ci_low"] == pytest.approx(k / (k + q2))
    # one doc a pair: k independent answers, the mid-p binomial interval [0.05^(1/k), 1]
    single = pair_clustered_rate_intervals([f"p{i}" for i in range(k)], [f"d{i}" for i in range(k)], np.ones(k), 100, 1)
    assert single["ci_high"] == 1.0 and single["ci_low"] == pytest.approx(0.05 ** (1 / k))
    assert np.isnan(pair_clustered_rate_intervals(pair_ids, strata, hits, n_boot=0, seed=1)["ci_low"])  # off
