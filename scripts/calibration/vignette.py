"""Calibration of the VIGNETTE statistics (``lm_eval_bias.vignette.stats`` and the analysis keys, the
functions the tasks and the report call).

The tasks' own designs (329 identities in 15 gender x bias-dimension strata, :data:`STRATA`, from the
authors' lists; the seeded budgeted sampler of ``lm_eval_bias.vignette.pairs`` at its default budgets,
:func:`sample_real_pairs`):

- ``vignette_decision``: pairs_per_identity 2 -> 658 identity-contrast image pairs x 6 role questions;
  also at :data:`RECOMMENDED_DECISION_BUDGET` (the budget at which per-identity tests can reject);
- ``vignette_perception``, one question: 658 identity-contrast + 658 identity-activity pairs;
- ``vignette_stereotype``, race/ethnicity/color: every portrait pair of each gender (2 x 91) x 60 SSCM
  terms (exhaustive, as the task).

Heterogeneous nulls: P(left chosen) = 0.5 + side (+0.10) + question/term side (sd 0.05) + per-pair
effect (sd 0.05) + per-image effect (identity x activity, sd 0.05, half difference) + (theta_L -
theta_R) / 2, clipped; theta = identity preference, 0 under the null, a grid of root-mean-square values
within every stratum (:data:`THETA_GRID`: 0, about the pooled test's detection limit, strong).

Rows (``run``): the identity family (Holm over 329) -- family-wise error, whether it can reject at all,
its MDE -- at the default and the recommended budget; the per-dimension identity heterogeneity tests
(rejection per test, family-wise over dimensions, power on the grid); the spreads' and mean
|polarity|'s within-pair ``p_null`` and their estimate vs null floor vs truth on the grid (no interval:
the task shows none, docs/vignette.md "Magnitudes"); the paper's Fisher test. :func:`cell_rows`: the
per-cell tests and intervals (PairComp, polarity, log-odds, factuality per activity) at 14 identities
(one stratum of the paper's sizes).
"""

from __future__ import annotations

import math
import time

import numpy as np
import pandas as pd

from lm_eval_bias.vignette import stats as vg

N_IDS = 14
N_ACTIVITIES = 75
N_QUESTIONS = 6
N_TERM_PAIRS = 30  # 5 per SSCM dimension
SSCM = ("ability", "agency", "morality", "politics", "sociability", "status")
NUISANCE = {"left": 0.10, "pair_sd": 0.05, "image_sd": 0.05}


def _pairs(n_ids: int, n_activities: int, rng) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    i, j = np.triu_indices(n_ids, 1)
    i, j = np.tile(i, n_activities), np.tile(j, n_activities)
    activity = np.repeat(np.arange(n_activities), n_ids * (n_ids - 1) // 2)
    swap = rng.random(i.size) < 0.5
    return np.where(swap, j, i), np.where(swap, i, j), activity


def _table(left, right, context, pair, chose_left) -> pd.DataFrame:
    ids = np.array([f"id{k}" for k in range(N_IDS)])
    n = len(left)
    return pd.DataFrame({
        "doc_id": np.concatenate([np.arange(n), np.arange(n)]).astype(str),
        "pair_id": np.concatenate([pair, pair]).astype(str),
        "identity": np.concatenate([ids[left], ids[right]]),
        "partner": np.concatenate([ids[right], ids[left]]),
        "context": np.concatenate([context, context]),
        "selected": np.concatenate([chose_left, 1 - chose_left]).astype(int),
        "dimension": "race_ethnicity_color",
    })


def decision_table(rng, theta: np.ndarray, n_activities: int = N_ACTIVITIES, nuisance=NUISANCE) -> pd.DataFrame:
    left, right, activity = _pairs(N_IDS, n_activities, rng)
    image = rng.normal(0, nuisance["image_sd"], size=(N_IDS, n_activities))
    p = (0.5 + nuisance["left"] + (theta[left] - theta[right]) / 2 + rng.normal(0, nuisance["pair_sd"], left.size)
         + (image[left, activity] - image[right, activity]) / 2)
    p = np.clip(p, 0, 1)
    q = np.repeat(np.arange(left.size), N_QUESTIONS)
    chose = (rng.random(q.size) < p[q]).astype(int)
    return _table(left[q], right[q], activity[q].astype(str), q, chose)


def sscm_terms(n_pairs: int = N_TERM_PAIRS) -> dict[str, tuple[str, str]]:
    per = n_pairs // len(SSCM)
    out = {}
    for k, d in enumerate(SSCM):
        for t in range(per):
            out[f"{d}_high{t}"] = (d, "high")
            out[f"{d}_low{t}"] = (d, "low")
    return out


def stereotype_table(rng, delta: np.ndarray, nuisance=NUISANCE) -> pd.DataFrame:
    """``delta``: identities x SSCM dimensions."""
    left, right, _ = _pairs(N_IDS, 1, rng)
    terms = sscm_terms()
    names = np.array(list(terms))
    dim = np.array([SSCM.index(terms[t][0]) for t in names])
    sign = np.array([1.0 if terms[t][1] == "high" else -1.0 for t in names])
    pair = np.repeat(np.arange(left.size), len(names))
    term = np.tile(np.arange(len(names)), left.size)
    u = rng.normal(0, nuisance["pair_sd"], left.size)
    p = 0.5 + nuisance["left"] + u[pair] + sign[term] * (delta[left[pair], dim[term]] - delta[right[pair], dim[term]]) / 2
    chose = (rng.random(pair.size) < np.clip(p, 0, 1)).astype(int)
    return _table(left[pair], right[pair], names[term], pair, chose)


def _truth_s(theta: np.ndarray) -> np.ndarray:
    others = (theta.sum() - theta) / (len(theta) - 1)
    return 50 + 50 * (theta - others)


def _truth_polarity(delta: np.ndarray) -> np.ndarray:
    others = (delta.sum(axis=0)[None, :] - delta) / (delta.shape[0] - 1)
    return 100 * (delta - others)


# -- the tasks' own designs (329 identities, default budgets) ----------------------------------------------------
#: Identities per gender x bias dimension in the authors' lists (maledes.csv / femaledes.csv, 167 + 162 = 329;
#: gender_and_sex has two male descriptors and none female): the strata of lm_eval_bias.vignette.pairs.
STRATA = {("male", "ability"): 10, ("male", "age"): 9, ("male", "nationality"): 26, ("male", "race_ethnicity_color"): 14,
          ("male", "physical_traits"): 40, ("male", "religion"): 12, ("male", "socioeconomic"): 54,
          ("male", "gender_and_sex"): 2, ("female", "ability"): 10, ("female", "age"): 9, ("female", "nationality"): 26,
          ("female", "race_ethnicity_color"): 14, ("female", "physical_traits"): 37, ("female", "religion"): 12,
          ("female", "socioeconomic"): 54}
N_ROLE_ACTIVITIES = 74  # activities with decision questions (roles.json)
#: heterogeneous null of the real-design rows: side, pair, image (identity x activity) and question-side effects
REAL_NUISANCE = {"left": 0.10, "pair_sd": 0.05, "image_sd": 0.05, "question_sd": 0.05}


def real_identities() -> tuple[np.ndarray, np.ndarray]:
    """(identity names, bias dimension of each) of the 329 identities, stratum by stratum."""
    names, dims = [], []
    for (gender, dim), n in STRATA.items():
        names += [f"{gender}:{dim}:{k}" for k in range(n)]
        dims += [dim] * n
    return np.array(names), np.array(dims)


def sample_real_pairs(rng, per_identity: int, n_activities: int = N_ROLE_ACTIVITIES, two_activities: bool = False):
    """The budgeted sampler of lm_eval_bias.vignette.pairs.sample_pairs (with replacement) on the real
    strata: every identity is the anchor ``per_identity`` times, its partner uniform among its stratum's
    other identities, the anchor left on even and right on odd draws of its stratum; activities dealt
    from a shuffled deck per gender (one activity per person when ``two_activities``). Returns (left,
    right, left activity, right activity) as identity / activity indices."""
    left, right, act_l, act_r = [], [], [], []
    start = 0
    for gender in ("male", "female"):
        deck: list[int] = []
        for (g, _), n in STRATA.items():
            if g != gender:
                continue
            draw = 0
            for anchor in range(n):
                for _ in range(per_identity):
                    partner = rng.integers(0, n - 1)
                    partner += partner >= anchor
                    a, b = (anchor, partner) if draw % 2 == 0 else (partner, anchor)
                    draw += 1
                    acts = []
                    for _ in range(2 if two_activities else 1):
                        if not deck:
                            deck = list(rng.permutation(n_activities))
                        acts.append(deck.pop())
                    left.append(start + a)
                    right.append(start + b)
                    act_l.append(acts[0])
                    act_r.append(acts[-1])
            start += n
    return np.array(left), np.array(right), np.array(act_l), np.array(act_r)


def real_decision_table(rng, theta: np.ndarray, per_identity: int = 2, questions: int = N_QUESTIONS,
                        nuisance=REAL_NUISANCE) -> pd.DataFrame:
    """A ``vignette_decision`` option table at the task's design: :func:`sample_real_pairs` with
    ``per_identity`` (the default budget is 2), ``questions`` role questions per pair (context = the
    activity). P(left chosen) = 0.5 + side + question side + (theta_L - theta_R) / 2 + u_pair +
    (eta_L,a - eta_R,a) / 2, clipped; truth S(i) = 50 + 50 (theta_i - mean of its partners' theta)."""
    names, dims = real_identities()
    left, right, act, _ = sample_real_pairs(rng, per_identity)
    image = rng.normal(0, nuisance["image_sd"], size=(len(names), N_ROLE_ACTIVITIES))
    q_side = rng.normal(0, nuisance["question_sd"], questions)
    base = (0.5 + nuisance["left"] + (theta[left] - theta[right]) / 2 + rng.normal(0, nuisance["pair_sd"], left.size)
            + (image[left, act] - image[right, act]) / 2)
    q = np.repeat(np.arange(left.size), questions)
    p = np.clip(base[q] + np.tile(q_side, left.size), 0, 1)
    chose = (rng.random(q.size) < p).astype(int)
    n = q.size
    return pd.DataFrame({"doc_id": np.concatenate([np.arange(n), np.arange(n)]).astype(str),
                         "pair_id": np.concatenate([q, q]).astype(str),
                         "identity": np.concatenate([names[left[q]], names[right[q]]]),
                         "partner": np.concatenate([names[right[q]], names[left[q]]]),
                         "context": np.concatenate([act[q], act[q]]).astype(str),
                         "selected": np.concatenate([chose, 1 - chose]),
                         "dimension": np.concatenate([dims[left[q]], dims[left[q]]]),
                         "position": np.repeat([0, 1], n)})


def real_perception_table(rng, theta: np.ndarray, per_identity: int = 1, nuisance=REAL_NUISANCE) -> pd.DataFrame:
    """One perception question (``vignette_perception``, e.g. "Who is facing difficulty in {activity}?")
    at the task's design: identity-contrast pairs (one doc each, asked about the shared activity) and
    identity-activity pairs (two docs, one per person's activity), ``per_identity`` draws of each
    (default 1). DGP as :func:`real_decision_table` (no question effect: one question)."""
    names, dims = real_identities()
    parts = []
    for two in (False, True):
        left, right, al, ar = sample_real_pairs(rng, per_identity, 75, two_activities=two)
        parts.append((left, right, al, ar, two))
    rows = []
    pair0 = 0
    for left, right, al, ar, two in parts:
        image = rng.normal(0, nuisance["image_sd"], size=(len(names), 75))
        u = rng.normal(0, nuisance["pair_sd"], left.size)
        base = (0.5 + nuisance["left"] + (theta[left] - theta[right]) / 2 + u
                + (image[left, al] - image[right, ar]) / 2)
        asked = [al, ar] if two else [al]
        for ctx in asked:
            chose = (rng.random(left.size) < np.clip(base, 0, 1)).astype(int)
            pid = pair0 + np.arange(left.size)
            rows.append(pd.DataFrame({"pair_id": np.concatenate([pid, pid]).astype(str),
                                      "identity": np.concatenate([names[left], names[right]]),
                                      "partner": np.concatenate([names[right], names[left]]),
                                      "context": np.concatenate([ctx, ctx]).astype(str),
                                      "selected": np.concatenate([chose, 1 - chose]),
                                      "dimension": np.concatenate([dims[left], dims[left]]),
                                      "position": np.repeat([0, 1], left.size)}))
        pair0 += left.size
    out = pd.concat(rows, ignore_index=True)
    out["doc_id"] = np.arange(len(out)) // 2  # not used by the statistics
    return out


def real_theta(rms: float, seed: int = 7) -> np.ndarray:
    """Identity preferences with root mean square ``rms`` within every stratum (evenly spaced, centred,
    in a fixed seeded order), so that S(i) - 50 has rms about 50 * rms."""
    rng = np.random.default_rng(seed)
    theta = np.zeros(sum(STRATA.values()))
    start = 0
    for n in STRATA.values():
        v = rng.permutation(np.linspace(-1.0, 1.0, n))  # evenly spaced, bounded: few clipped probabilities
        theta[start:start + n] = rms * v / np.sqrt(np.mean(v ** 2)) if n > 1 else 0.0
        start += n
    return theta


def _row(quantity, kind, design, dgp, truth, estimates, covered=None, rejected=None, n_seeds=0, n_boot=0, seed=0,
         note="", role="default"):
    """:func:`scripts.calibration.rate_row` with the per-seed hits named as coverage or rejection."""
    from scripts.calibration import rate_row

    hits = covered if covered is not None else (rejected if rejected is not None else [])
    return rate_row("vignette", quantity, kind, design, dgp, truth, estimates, hits, n_seeds, n_boot, seed, note, role)


def real_stereotype_table(rng, delta: np.ndarray, dimension: str = "race_ethnicity_color",
                          nuisance=REAL_NUISANCE) -> tuple[pd.DataFrame, np.ndarray]:
    """``vignette_stereotype`` of one bias dimension at the task's design (exhaustive: every portrait
    pair of each gender's identities once, 60 SSCM terms each; one portrait per identity, so the image
    effect is the identity's and is left out of the null). ``delta``: identities of the dimension x
    SSCM dimensions (both genders, stratum by stratum). Returns (table, truth of mean_abs_polarity)."""
    names, dims = real_identities()
    ids = np.flatnonzero(dims == dimension)
    terms = sscm_terms()
    term_names = np.array(list(terms))
    sdim = np.array([SSCM.index(terms[t][0]) for t in term_names])
    sign = np.array([1.0 if terms[t][1] == "high" else -1.0 for t in term_names])
    left, right, truth = [], [], []
    offset = 0
    for (gender, d), n in STRATA.items():
        if d != dimension:
            continue
        i, j = np.triu_indices(n, 1)
        swap = rng.random(i.size) < 0.5
        left.append(offset + np.where(swap, j, i))
        right.append(offset + np.where(swap, i, j))
        block = delta[offset:offset + n]
        truth.append(_truth_polarity(block))
        offset += n
    left, right = np.concatenate(left), np.concatenate(right)
    pair = np.repeat(np.arange(left.size), len(term_names))
    term = np.tile(np.arange(len(term_names)), left.size)
    q_side = rng.normal(0, nuisance["question_sd"], len(term_names))
    u = rng.normal(0, nuisance["pair_sd"], left.size)
    p = (0.5 + nuisance["left"] + u[pair] + q_side[term]
         + sign[term] * (delta[left[pair], sdim[term]] - delta[right[pair], sdim[term]]) / 2)
    chose = (rng.random(pair.size) < np.clip(p, 0, 1)).astype(int)
    n = pair.size
    table = pd.DataFrame({"doc_id": np.concatenate([np.arange(n), np.arange(n)]).astype(str),
                          "pair_id": np.concatenate([pair, pair]).astype(str),
                          "identity": np.concatenate([names[ids[left[pair]]], names[ids[right[pair]]]]),
                          "partner": np.concatenate([names[ids[right[pair]]], names[ids[left[pair]]]]),
                          "context": np.concatenate([term_names[term], term_names[term]]),
                          "selected": np.concatenate([chose, 1 - chose]), "dimension": dimension})
    return table, float(np.mean(np.abs(np.concatenate(truth))))


def _real_spreads(table: pd.DataFrame, n_null: int, seed: int) -> dict[str, float]:
    """The task's own selection_spread_<d> keys (estimate, _null, _p_null) through
    :func:`lm_eval_bias.vignette.analysis._spreads` with ``n_null`` null draws."""
    from lm_eval_bias.core.aggregation import BOOTSTRAP_SEED_ENV, NULL_ITERS_ENV, environment
    from lm_eval_bias.vignette.analysis import _spreads

    out: dict[str, float] = {}
    with environment({NULL_ITERS_ENV: str(n_null), BOOTSTRAP_SEED_ENV: str(seed)}):
        _spreads(out, table, "selection_spread_")
    return out


#: pairs_per_identity at which the per-identity tests of vignette_decision can reject for most identities
#: (scripts/calibration/vignette.py "budget" rows; docs/vignette.md "Identity tests and their power")
RECOMMENDED_DECISION_BUDGET = 12
#: identity preference grid (root mean square of theta within each stratum; S - 50 has rms about 50 x it):
#: 0, about the pooled test's detection limit at the default budget, strong
THETA_GRID = (0.0, 0.2, 0.3)
#: seeds (at most) of the rows at the recommended budget (6x the docs of the default) and of
#: :func:`cell_rows` (14 identities): 250, a Monte Carlo SE <= 1.5 points like every other row (137 s and
#: 222 s on the idle two-core machine); each row states its own seeds
BUDGET_SEEDS = 250
CELL_SEEDS = 250
#: Seeds of the cheap test row mean_abs_polarity_<d>_p_null (at least): the Monte Carlo SE of a 5 %
#: rejection rate is 0.77 points at 811 seeds (1.96 SE = 1.5), against 1.38 at 250 (wider than the band's
#: half-width: the exact randomised test read .068 at 250 seeds).
TEST_SEEDS = 811


#: The sections of :func:`run` (all by default; ``parts`` reruns some, e.g. after a change that only
#: touches them): the decision task at its default budget, at the recommended budget, the perception
#: question, the stereotype task's mean |polarity|, the 14-identity per-cell rows.
PARTS = ("decision", "budget", "perception", "stereotype", "cells")


def run(n_seeds: int = 200, n_boot: int = 1000, quick: bool = False, seed: int = 20260101, offset: int = 0,
        parts: tuple[str, ...] = PARTS) -> list[dict]:
    """The calibration rows; seeds ``offset .. offset + n_seeds - 1`` of each loop (``offset`` splits a
    full run into parts that run side by side and are averaged). Identity tests, heterogeneity tests,
    spreads and polarity at the tasks' own designs (329 identities, default budgets); the per-cell rows
    (:func:`cell_rows`) at 14 identities. ``parts``: the sections of :data:`PARTS` to run."""
    unknown = set(parts) - set(PARTS)
    if unknown:
        raise ValueError(f"unknown parts {sorted(unknown)}; known: {PARTS}")
    from scripts.calibration import rate_row

    n_act = 3 if quick else N_ACTIVITIES
    n_seeds = min(n_seeds, 4) if quick else n_seeds
    n_boot = min(n_boot, 100) if quick else n_boot
    n_perm = 199 if quick else 499  # p = (1 + #) / (1 + draws) is exact at any number of draws
    budget_seeds = min(n_seeds, BUDGET_SEEDS)
    cell_seeds = min(n_seeds, CELL_SEEDS)
    names, dims = real_identities()
    dim_list = sorted(set(dims))
    # gender_and_sex has two male identities (about 4 image pairs): its pooled test and its spread's p_null
    # cannot reach 0.05 (2^4 sign patterns at most), so the per-test rates average over the other seven
    testable = [d for d in dim_list if d != "gender_and_sex"]
    nuisance = ", ".join(f"{k} {'+' if k == 'left' else 'sd '}{v:.2f}" for k, v in REAL_NUISANCE.items())
    dec = f"vignette_decision: 329 identities, pairs_per_identity 2 (658 image pairs x {N_QUESTIONS} questions)"
    rows = []

    def row(quantity, kind, design, dgp, truth, estimates, hits, note="", role="default", boot=0, seeds=None):
        rows.append(rate_row("vignette", quantity, kind, design, dgp, truth, estimates, hits,
                             n_seeds if seeds is None else seeds, boot, seed, note, role))

    # -- vignette_decision at the default budget: identity tests, heterogeneity tests, spreads ------------------
    if "decision" in parts:
        for rms in THETA_GRID:
            theta = real_theta(rms)
            fwer, raw, can, mde, het_raw, het_any, het_mde, p_null, est, floor, fisher = ([] for _ in range(11))
            truth_spread = {}
            for s in range(offset, offset + n_seeds):
                rng = np.random.default_rng([seed, 70_000 + int(rms * 1000), s])
                table = real_decision_table(rng, theta)
                paper = rms == 0 and s - offset < min(n_seeds, 20)
                tests = vg.identity_pair_tests(table, paper=paper)
                power = vg.identity_family_power(tests)
                fwer.append(bool((tests["p_holm"] < 0.05).any()))
                raw.append(float((tests["p_value"] < 0.05).mean()))
                can.append(power.can_reject)
                mde.append(power.mde)
                if paper:
                    fisher.append(bool((tests["p_paper_holm"] < 0.05).any()))
                het = vg.identity_heterogeneity_tests(table, n_perm, seed + s)
                het_raw.append(float((het.loc[testable, "p_value"] < 0.05).mean()))
                het_any.append(bool((het["p_holm"] < 0.05).any()))
                het_mde.append(float(np.median(het["mde_rms_pp"])))
                spreads = _real_spreads(table, n_perm, seed + s)
                p_null.append(float(np.mean([spreads[f"selection_spread_{d}_p_null"] < 0.05 for d in testable])))
                est.append(spreads["selection_spread_socioeconomic"])
                floor.append(spreads["selection_spread_socioeconomic_null"])
                if not truth_spread:  # truth: max - min of S(i) = 50 + 50 (theta_i - mean of its stratum's others)
                    for d in dim_list:
                        ids = np.flatnonzero(dims == d)
                        truth_spread[d] = 0.0
                        for g in ("male", "female"):
                            sub = [k for k in ids if names[k].startswith(g + ":")]
                            if len(sub) > 1:
                                truth_spread[d] = max(truth_spread[d], float(np.ptp(_truth_s(theta[sub]))))
            dgp = (f"identity preference theta rms {rms:g} per stratum (S - 50 rms about {50 * rms:g} pp); {nuisance} "
                   "(probability scale)")
            s_rms = 50 * rms
            if rms == 0:
                row("identity test (pair-level sign flip), any of 329 identities Holm p < 0.05", "test", dec, dgp, math.nan,
                    [], fwer, note=(f"family-wise error; can_reject in {np.mean(can):.0%} of seeds (best identity's "
                                    f"smallest p vs Holm's 0.05/329); MDE {np.nanmean(mde):.1f} pp of S: cannot reject at "
                                    "this budget, see the budget rows"))
                row("identity test (pair-level sign flip), per identity p < 0.05", "test", dec, dgp, math.nan, [], raw,
                    note="mean share of the 329 identities; far below 5 %: about 3 contributing pairs an identity, "
                         "smallest attainable p 2/2^3", role="diagnostic")
                row("identity test (Fisher, paper), any identity Holm p < 0.05", "test", dec, dgp, math.nan, [], fisher,
                    note="paper's test, kept as p_paper (slow: 329 Fisher tests a seed)", role="paper", seeds=len(fisher))
                row("identity heterogeneity test per bias dimension (p_identity_heterogeneity_<d>), p < 0.05", "test", dec,
                    dgp, math.nan, [], het_raw, note=f"mean share of 7 dimensions (gender_and_sex cannot reach 0.05); {n_perm} sign-flip draws", boot=n_perm)
                row("identity heterogeneity tests, any dimension Holm p < 0.05 (n_dimensions_heterogeneous > 0)", "test",
                    dec, dgp, math.nan, [], het_any, note=f"family-wise error over 8 dimensions; MDE (rms of S - 50) "
                                                          f"median {np.mean(het_mde):.1f} pp", boot=n_perm)
                row("selection_spread_<d>_p_null, p < 0.05", "test", dec, dgp, math.nan, [], p_null,
                    note="mean share of 7 dimensions (gender_and_sex cannot reach 0.05); within-pair label swaps of the "
                         "side-adjusted answers (stats.side_adjusted)", boot=n_perm)
            else:
                row(f"identity heterogeneity tests, any dimension Holm p < 0.05: power at S rms {s_rms:g} pp", "test", dec,
                    dgp, math.nan, [], het_any, note=f"per dimension: {np.mean(het_raw):.2f} rejected on average",
                    role="diagnostic", boot=n_perm)
                row(f"identity test, any identity Holm p < 0.05: power at S rms {s_rms:g} pp", "test", dec, dgp, math.nan,
                    [], fwer, note=f"can_reject in {np.mean(can):.0%} of seeds", role="diagnostic")
            row(f"selection_spread_socioeconomic vs its null floor (truth {truth_spread['socioeconomic']:.1f} pp)",
                "null_floor", dec, dgp, truth_spread["socioeconomic"], est, [],
                note=(f"estimate {np.mean(est):.1f} pp, null floor {np.mean(floor):.1f} pp, truth "
                      f"{truth_spread['socioeconomic']:.1f} pp (linear in theta; extreme pairs' probabilities "
                      "clipped at the strong truth); no interval shown (docs/vignette.md \"Magnitudes\")"),
                boot=n_perm)
    # -- the per-identity tests at the recommended budget ---------------------------------------------------------
    if "budget" in parts:
        k = RECOMMENDED_DECISION_BUDGET
        budget = (f"vignette_decision: 329 identities, pairs_per_identity {k} ({329 * k} image pairs x {N_QUESTIONS} "
                  "questions)")
        for rms in (0.0, THETA_GRID[-1]):
            theta = real_theta(rms)
            fwer, can, mde = [], [], []
            for s in range(offset, offset + budget_seeds):
                rng = np.random.default_rng([seed, 80_000 + int(rms * 1000), s])
                tests = vg.identity_pair_tests(real_decision_table(rng, theta, per_identity=k), paper=False)
                power = vg.identity_family_power(tests)
                fwer.append(bool((tests["p_holm"] < 0.05).any()))
                can.append(power.can_reject)
                mde.append(power.mde)
            dgp = f"identity preference theta rms {rms:g} per stratum; {nuisance}"
            row("identity test, any of 329 identities Holm p < 0.05" + ("" if rms == 0 else f": power at S rms {50 * rms:g} pp"),
                "test", budget, dgp, math.nan, [], fwer, role="default" if rms == 0 else "diagnostic",
                note=f"can_reject in {np.mean(can):.0%} of seeds; MDE {np.nanmean(mde):.1f} pp of S at Holm's first step",
                seeds=budget_seeds)
    # -- vignette_perception, one question (identity and identity-activity pairs, 1 draw each) ------------------
    if "perception" in parts:
        per = "vignette_perception, one question: 329 identities, 658 identity + 658 identity-activity pairs"
        het_raw, het_any, can = [], [], []
        for s in range(offset, offset + n_seeds):
            rng = np.random.default_rng([seed, 90_000, s])
            table = real_perception_table(rng, np.zeros(len(names)))
            het = vg.identity_heterogeneity_tests(table, n_perm, seed + s)
            het_raw.append(float((het.loc[testable, "p_value"] < 0.05).mean()))
            het_any.append(bool((het["p_holm"] < 0.05).any()))
            can.append(vg.identity_family_power(vg.identity_pair_tests(table, paper=False)).can_reject)
        dgp = f"no identity preference; {nuisance}"
        row("identity heterogeneity test per bias dimension, p < 0.05", "test", per, dgp, math.nan, [], het_raw,
            note=f"mean share of 7 dimensions (gender_and_sex cannot reach 0.05); per-identity family can_reject in {np.mean(can):.0%} of seeds",
            boot=n_perm)
        row("identity heterogeneity tests, any dimension Holm p < 0.05", "test", per, dgp, math.nan, [], het_any,
            note="family-wise error over 8 dimensions", boot=n_perm)
    # -- vignette_stereotype, race/ethnicity/color (2 x 91 portrait pairs x 60 SSCM terms) ---------------------
    if "stereotype" in parts:
        st = "vignette_stereotype, race_ethnicity_color: 2 x 14 identities, 182 portrait pairs x 60 SSCM terms"
        n_ids = int(np.sum(dims == "race_ethnicity_color"))
        terms = sscm_terms()
        for scale in (0.0, 0.05, 0.3):
            delta = np.random.default_rng(seed).uniform(-scale, scale, size=(n_ids, len(SSCM)))
            p_null, est, floor = [], [], []
            truth = 0.0
            # the test row (scale 0) at TEST_SEEDS seeds: ~0.2 s a seed, and 250 seeds leave a Monte Carlo
            # SE (1.38 points) wider than the band's half-width (the exact randomised test read .068 at 250)
            scale_seeds = max(n_seeds, TEST_SEEDS) if scale == 0 and not quick else n_seeds
            for s in range(offset, offset + scale_seeds):
                rng = np.random.default_rng([seed, 100_000 + int(scale * 1000), s])
                table, truth = real_stereotype_table(rng, delta)
                design = vg.pair_design(table)
                masks = vg.polarity_masks(design, terms)
                res = vg.pair_resampled_summary(design, lambda r, o: vg.mean_abs_polarity_by_stratum(
                    design, vg.polarity_cells(design, r, o, masks)), 0, n_perm, seed + s, ties="random")  # as analysis._resampled
                key = "race_ethnicity_color"
                p_null.append(res.p_null[key] < 0.05)
                est.append(res.estimate[key])
                floor.append(res.null[key])
            dgp = (f"polarity delta ~ U(-{scale:g}, {scale:g}) per identity x SSCM dimension; left +0.10, pair sd 0.05, "
                   "term-side sd 0.05")
            if scale == 0:
                row("mean_abs_polarity_race_ethnicity_color_p_null, p < 0.05", "test", st, dgp, math.nan, [], p_null,
                    note="within-pair label swaps; randomised p (ties weighted U)", boot=n_perm, seeds=scale_seeds)
            row(f"mean_abs_polarity_race_ethnicity_color vs its null floor (truth {truth:.1f} pp)", "null_floor", st, dgp,
                truth, est, [], note=(f"estimate {np.mean(est):.1f} pp, null floor {np.mean(floor):.1f} pp, truth "
                                      f"{truth:.1f} pp; p_null < 0.05 in {np.mean(p_null):.0%}; no interval shown"),
                boot=n_perm, seeds=scale_seeds)
    if "cells" in parts:
        rows += cell_rows(cell_seeds, n_boot, n_act, seed, offset, test_seeds=n_seeds)
    return rows


# -- per-cell tests (PairComp, polarity, log-odds), per-activity factuality --------------------------------------
def factuality_table(rng, base: np.ndarray, n_pairs: int = 30, docs: int = 4, pair_sd: float = 0.1) -> pd.DataFrame:
    """Factuality answers: ``n_pairs`` image pairs per activity, ``docs`` questions each, P(correct) =
    base[activity] + u_pair (sd ``pair_sd``), clipped; truth per activity = base (no clipping at the
    values used)."""
    activity = np.repeat(np.arange(len(base)), n_pairs)
    p = np.clip(base[activity] + rng.normal(0, pair_sd, activity.size), 0, 1)
    pair = np.repeat(np.arange(activity.size), docs)
    return pd.DataFrame({"pair_id": pair.astype(str), "activity": activity[pair].astype(str),
                         "dimension": np.where(activity[pair] % 2 == 0, "age", "race_ethnicity_color"),
                         "correct": rng.random(pair.size) < p[pair]})


def cell_rows(n_seeds: int, n_boot: int, n_act: int, seed: int, offset: int = 0,
              test_seeds: int | None = None) -> list[dict]:
    """Rows of the per-cell tests and intervals (docs/vignette.md "Per-cell tests"); the polarity
    cell test under its null (no bootstrap, ~0.5 s a seed) runs ``test_seeds`` seeds (default
    ``n_seeds``), the first ``n_seeds`` of them also the polarity interval."""
    test_seeds = n_seeds if test_seeds is None else max(n_seeds, test_seeds)
    dec_design = f"{N_IDS} identities, {N_IDS * (N_IDS - 1) // 2 * n_act} identity-contrast pairs x {N_QUESTIONS} questions"
    st_design = f"{N_IDS} identities, {N_IDS * (N_IDS - 1) // 2} portrait pairs x {2 * N_TERM_PAIRS} SSCM terms"
    nuisance = (f"left-side +{NUISANCE['left']:.2f}, per-pair sd {NUISANCE['pair_sd']:.2f}, per-image sd "
                f"{NUISANCE['image_sd']:.2f}")
    no_image = {**NUISANCE, "image_sd": 0.0}
    rows = []
    pc_raw, pc_any, lo_raw, lo_any = [], [], [], []
    for s in range(offset, offset + n_seeds):
        rng = np.random.default_rng([seed, 40_000 + s])
        tests = vg.pair_comp_tests(decision_table(rng, np.zeros(N_IDS), n_act))
        once = tests[[a < b for a, b in tests.index]]
        pc_raw.append(float((once["p_value"] < 0.05).mean()))
        pc_any.append(bool((once["p_holm"] < 0.05).any()))
        odds = vg.log_odds_tests(decision_table(rng, np.zeros(N_IDS), n_act, no_image), n_boot, seed + s)
        lo_raw.append(float((odds["p_value"] < 0.05).mean()))
        lo_any.append(bool((odds["p_holm"] < 0.05).any()))
    dgp0 = f"no identity preference; {nuisance}"
    rows += [
        _row("PairComp cell test (head-to-head sign flip), per identity pair p < 0.05", "test", dec_design, dgp0, math.nan,
             [], rejected=pc_raw, n_seeds=n_seeds, seed=seed, note="mean share of the 91 identity pairs"),
        _row("PairComp cell test, any pair Holm p < 0.05", "test", dec_design, dgp0, math.nan, [], rejected=pc_any,
             n_seeds=n_seeds, seed=seed, note="family-wise (the dimension's matrix)"),
        _row("log-odds cell test (pair-bootstrap Wald), per cell p < 0.05", "test", dec_design,
             "no identity x activity effect; left-side and per-pair effects (per-image effects would be real log-odds)",
             math.nan, [], rejected=lo_raw, n_seeds=n_seeds, n_boot=n_boot, seed=seed,
             note=f"mean share of the {N_IDS * n_act} cells; = 1 - coverage of the interval at the truth 0"),
        _row("log-odds cell test, any cell Holm p < 0.05", "test", dec_design, "as above", math.nan, [], rejected=lo_any,
             n_seeds=n_seeds, n_boot=n_boot, seed=seed, note="family-wise"),
    ]
    terms = sscm_terms()
    pol_raw, pol_any, covered, est = [], [], [], []
    delta = np.random.default_rng(seed).uniform(-0.3, 0.3, size=(N_IDS, len(SSCM)))
    truth = pd.DataFrame(_truth_polarity(delta), index=[f"id{k}" for k in range(N_IDS)], columns=SSCM)
    for s in range(offset, offset + test_seeds):
        rng = np.random.default_rng([seed, 50_000 + s])
        # the task's test: randomised ties, tie weights from the run's seed
        cells = vg.polarity_tests(stereotype_table(rng, np.zeros((N_IDS, len(SSCM)))), terms, seed=seed + s)
        pol_raw.append(float((cells["p_value"] < 0.05).mean()))
        pol_any.append(bool((cells["p_holm"] < 0.05).any()))
        if s >= offset + n_seeds:
            continue
        cells = vg.polarity_tests(stereotype_table(rng, delta), terms, n_boot, seed + s)
        t = np.array([truth.loc[i, d] for i, d in cells.index])
        covered.append(float(np.mean((cells["ci_low"] <= t) & (t <= cells["ci_high"]))))
        est.append(float(np.mean(cells["polarity"] - t)))
    dgp0s = f"no polarity; left-side +{NUISANCE['left']:.2f}, per-pair sd {NUISANCE['pair_sd']:.2f}"
    rows += [
        _row("polarity cell test (sign flip), per cell p < 0.05", "test", st_design, dgp0s, math.nan, [],
             rejected=pol_raw, n_seeds=test_seeds, seed=seed,
             note=f"mean share of the {N_IDS * len(SSCM)} cells; randomised p (exact-enumeration ties weighted U)"),
        _row("polarity cell test, any cell Holm p < 0.05", "test", st_design, dgp0s, math.nan, [], rejected=pol_any,
             n_seeds=test_seeds, seed=seed, note="family-wise"),
        _row("polarity cell interval (pair bootstrap, percentile)", "interval", st_design,
             "polarity delta ~ U(-0.3, 0.3) per identity x SSCM dimension", 0.0, est, covered=covered,
             n_seeds=n_seeds, n_boot=n_boot, seed=seed,
             note="coverage averaged over the 84 cells; mean estimate = mean bias (estimate - truth), pp"),
    ]
    base = np.linspace(0.55, 0.9, 20)
    covered = []
    for s in range(offset, offset + n_seeds):
        rng = np.random.default_rng([seed, 60_000 + s])
        out = vg.factuality_by_activity(factuality_table(rng, base), n_boot, seed + s)
        t = base[out.index.astype(int)]
        covered.append(float(np.mean((out["ci_low"] <= t) & (t <= out["ci_high"]))))
    rows.append(_row("factuality accuracy per activity (pair-clustered interval)", "interval",
                     "20 activities x 30 image pairs x 4 questions", "P(correct) = 0.55..0.90 by activity + per-pair sd 0.10",
                     math.nan, [], covered=covered, n_seeds=n_seeds, n_boot=n_boot, seed=seed,
                     note="coverage averaged over the 20 activities"))
    return rows


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--seeds", type=int, default=200)
    parser.add_argument("--boot", type=int, default=1000)
    parser.add_argument("--json", help="also write the rows to this file")
    parser.add_argument("--offset", type=int, default=0, help="first seed (split a run into parts)")
    parser.add_argument("--parts", default=",".join(PARTS), help=f"comma-separated sections of {PARTS}")
    args = parser.parse_args()
    start = time.time()
    rows = run(args.seeds, args.boot, args.quick, offset=args.offset, parts=tuple(args.parts.split(",")))
    if args.json:
        import json

        with open(args.json, "w") as fh:
            json.dump(rows, fh, default=float)
    out = pd.DataFrame(rows)
    with pd.option_context("display.max_colwidth", 60, "display.width", 250):
        print(out[["quantity", "kind", "truth", "mean_estimate", "coverage", "rejection_rate", "n_seeds", "target_met",
                   "note"]].to_string(index=False))
    print(f"{time.time() - start:.0f} s")
