"""Calibration of the VIGNETTE statistics (``lm_eval_bias.vignette.stats`` and the analysis keys, the
functions the tasks and the report call).

The tasks' own designs (329 identities in 15 gender x bias-dimension strata, :data:`STRATA`, from the
authors' lists; the seeded budgeted sampler of ``lm_eval_bias.vignette.pairs`` at its default budgets,
:func:`sample_real_pairs`):

- ``vignette_decision``: pairs_per_identity 12 (:data:`DECISION_DEFAULT_BUDGET`, the tasks' default since 1 Dec
  2026, the budget at which per-identity tests can reject) -> 3,948 identity-contrast image pairs x 6 role
  questions; the rows at 2 (658 image pairs, the default until then) are kept;
- ``vignette_perception``, one question: pairs_per_identity 4 (:data:`PERCEPTION_DEFAULT_BUDGET`) -> 1,316
  identity-contrast + 1,316 identity-activity pairs (+ 1,316 activity-contrast pairs); the rows at 1 are kept;
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
per-cell tests and intervals (PairComp, polarity, log-odds tests) at 14 identities (one stratum of the
paper's sizes). :func:`share_rows`: every pair-clustered share the analysis and the report show (response
rates, factuality accuracy overall / per activity / per dimension x activity, activity-contrast shares,
Table 11's match rates, the per-identity paradigm scores of Figs 3 and 5) at the tasks' designs on truth
grids from near 0 (or 1) to the middle. :func:`log_odds_rows`: the log-odds cell intervals against the
true (unsmoothed) log-odds on a grid of identity x activity effects. Added 1 Dec 2026
(:func:`gap_test_rows`, :func:`gap_interval_rows`): the tests shown without a row until then -- the perception
and factuality spreads' ``p_null``, the activity-contrast spread and tests, the decision-by-question identity
tests, the vision-vs-text tests and the per-identity sign-flip test per identity at pairs_per_identity 12 --
and the per-identity factuality score F(i) of Figs 3 and 5 and the response rates at the factuality design.
"""

from __future__ import annotations

import math
import time

import numpy as np
import pandas as pd

from lm_eval_bias.vignette import stats as vg
from lm_eval_bias.vignette.tasks import DEFAULT_BUDGET
from scripts.calibration import covers

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


def sample_real_pairs(rng, per_identity: int, n_activities: int = N_ROLE_ACTIVITIES, two_activities: bool = False,
                      strata: dict | None = None):
    """The budgeted sampler of lm_eval_bias.vignette.pairs.sample_pairs (with replacement) on the real
    strata (``strata``: :data:`STRATA` unless given, e.g. one of them alone): every identity is the anchor ``per_identity`` times, its partner uniform among its stratum's
    other identities, the anchor left on even and right on odd draws of its stratum; activities dealt
    from a shuffled deck per gender (one activity per person when ``two_activities``). Returns (left,
    right, left activity, right activity) as identity / activity indices."""
    strata = STRATA if strata is None else strata
    left, right, act_l, act_r = [], [], [], []
    start = 0
    for gender in ("male", "female"):
        deck: list[int] = []
        for (g, _), n in strata.items():
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
    return _option_frame(names, dims, left, right, act, q, chose)


def _option_frame(names, dims, left, right, act, q, chose, **extra) -> pd.DataFrame:
    """The option table of docs ``q`` (pair index per doc) of the pairs (``left``, ``right``, activity ``act``):
    two rows a doc, the left person's then the right's, ``chose`` 1 where the left person was chosen;
    ``extra`` columns (one value per doc) repeated for both rows."""
    n = q.size
    frame = {"doc_id": np.concatenate([np.arange(n), np.arange(n)]).astype(str),
             "pair_id": np.concatenate([q, q]).astype(str),
             "identity": np.concatenate([names[left[q]], names[right[q]]]),
             "partner": np.concatenate([names[right[q]], names[left[q]]]),
             "context": np.concatenate([act[q], act[q]]).astype(str),
             "selected": np.concatenate([chose, 1 - chose]),
             "dimension": np.concatenate([dims[left[q]], dims[left[q]]]),
             "position": np.repeat([0, 1], n)}
    frame.update({k: np.concatenate([v, v]) for k, v in extra.items()})
    return pd.DataFrame(frame)


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
         note="", role="default", hits_per_seed=None):
    """:func:`scripts.calibration.rate_row` with the per-seed hits named as coverage or rejection
    (``hits_per_seed``: a row pooling several intervals a seed, for its seed-clustered Monte Carlo SE)."""
    from scripts.calibration import rate_row

    hits = covered if covered is not None else (rejected if rejected is not None else [])
    return rate_row("vignette", quantity, kind, design, dgp, truth, estimates, hits, n_seeds, n_boot, seed, note, role,
                    hits_per_seed)


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
#: the decision tasks' default pairs_per_identity (lm_eval_bias.vignette.tasks.DEFAULT_BUDGET): 12 since 1 Dec 2026,
#: the budget above; the rows of the "decision_default" part are at it
DECISION_DEFAULT_BUDGET = DEFAULT_BUDGET["decision"]["identity"]
#: vignette_perception's default pairs_per_identity (every pairing type; 4 since 1 Dec 2026, 1 before): the rows of
#: the "perception_default" part are at it
PERCEPTION_DEFAULT_BUDGET = DEFAULT_BUDGET["perception"]["identity"]
#: the decision tasks' default until 1 Dec 2026 (an identity in about 4 pairs: the per-identity tests cannot reject);
#: the "decision", "default_tests" and "shares" parts' decision rows are at it, kept for runs that choose it
SMALL_DECISION_BUDGET = 2
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
#: question, the stereotype task's mean |polarity|, the 14-identity per-cell rows, the pair-clustered
#: shares (:func:`share_rows`) and the log-odds cell intervals (:func:`log_odds_rows`).
PARTS = ("decision", "budget", "perception", "stereotype", "cells", "shares", "logodds",
         # added 1 Dec 2026 (gap_test_rows, gap_interval_rows)
         "perception_tests", "factuality_tests", "activity_tests", "activity_budget_tests", "budget_tests",
         "default_tests", "factuality_scores", "perception_scores", "factuality_rates",
         # added 1 Dec 2026, evening: the decision and perception tasks' rows at their new default budgets
         # (DECISION_DEFAULT_BUDGET, PERCEPTION_DEFAULT_BUDGET)
         "decision_default", "perception_default",
         # added 2 Dec 2026: vignette-real-vs-synthetic's S per identity x activity (real_vs_synthetic_rows)
         "real_vs_synthetic")
GAP_TEST_PARTS = ("perception_tests", "factuality_tests", "activity_tests", "activity_budget_tests", "budget_tests",
                  "default_tests")
GAP_INTERVAL_PARTS = ("factuality_scores", "perception_scores", "factuality_rates")
#: truths of the per-identity paradigm-score rows (one each: 250 seeds of Figs 3/5's per-identity intervals take
#: 2-4 CPU-s a seed, the mid-p interval's root finding for 329 identities): the factuality logit (typical
#: accuracy ~0.86) and the perception identity preference rms (S - 50 rms about 5 pp)
FACTUALITY_SCORE_MU = (2.2,)
PERCEPTION_SCORE_THETA = (0.1,)


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
    rows = []

    def row(quantity, kind, design, dgp, truth, estimates, hits, note="", role="default", boot=0, seeds=None):
        rows.append(rate_row("vignette", quantity, kind, design, dgp, truth, estimates, hits,
                             n_seeds if seeds is None else seeds, boot, seed, note, role))

    # -- vignette_decision: identity tests, heterogeneity tests, spreads, at pairs_per_identity 2 (part "decision",
    # the tasks' default until 1 Dec 2026) and at the tasks' default (part "decision_default", 12) --------------
    for k, stream in [(b, s0) for b, s0, part in ((SMALL_DECISION_BUDGET, 70_000, "decision"),
                                               (DECISION_DEFAULT_BUDGET, 76_000, "decision_default")) if part in parts]:
        dec = (f"vignette_decision: 329 identities, pairs_per_identity {k} ({329 * k} image pairs x {N_QUESTIONS} "
               "questions)")
        # at the default budget the identity family's rows (family-wise error over TEST_SEEDS, power at the
        # strong truth) are the "budget" part's; the paper's Fisher test (329 Fisher tests a seed) is run at 2
        small = k == SMALL_DECISION_BUDGET
        for rms in THETA_GRID:
            theta = real_theta(rms)
            fwer, raw, can, mde, het_raw, het_any, het_mde, p_null, est, floor, fisher = ([] for _ in range(11))
            truth_spread = {}
            # the identity family's rows of this loop (the exact tests cost ~1 s a seed at 12): all at 2, the power
            # at the middle truth only at the default (the null and the strong truth are the "budget" part's)
            identity_rows = small or rms not in (0, THETA_GRID[-1])
            for s in range(offset, offset + n_seeds):
                rng = np.random.default_rng([seed, stream + int(rms * 1000), s])
                table = real_decision_table(rng, theta, per_identity=k)
                paper = small and rms == 0 and s - offset < min(n_seeds, 20)
                if identity_rows:  # deterministic given the table: skipping it leaves the other rows' draws alone
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
            if rms == 0 and small:
                row("identity test (pair-level sign flip), any of 329 identities Holm p < 0.05", "test", dec, dgp, math.nan,
                    [], fwer, note=(f"family-wise error; can_reject in {np.mean(can):.0%} of seeds (best identity's "
                                    f"smallest p vs Holm's 0.05/329); MDE {np.nanmean(mde):.1f} pp of S: cannot reject at "
                                    "this budget, see the budget rows"))
                row("identity test (pair-level sign flip), per identity p < 0.05", "test", dec, dgp, math.nan, [], raw,
                    note="mean share of the 329 identities; far below 5 %: about 4 contributing (side-adjusted) pairs "
                         "an identity, smallest attainable mid-p 2^-4 > 0.05", role="diagnostic")
                row("identity test (Fisher, paper), any identity Holm p < 0.05", "test", dec, dgp, math.nan, [], fisher,
                    note="paper's test, kept as p_paper (slow: 329 Fisher tests a seed)", role="paper", seeds=len(fisher))
            if rms == 0:
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
                if identity_rows:
                    row(f"identity test, any identity Holm p < 0.05: power at S rms {s_rms:g} pp", "test", dec, dgp,
                        math.nan, [], fwer, note=(f"can_reject in {np.mean(can):.0%} of seeds" if small else
                                                  f"can_reject in {np.mean(can):.0%} of seeds; MDE "
                                                  f"{np.nanmean(mde):.1f} pp of S at Holm's first step"),
                        role="diagnostic")
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
            # the family-wise error at the null: TEST_SEEDS (811) seeds, as every other test at this budget (it sat
            # at the band's edge, 6.0 % over 250); the power row BUDGET_SEEDS
            n_here = min(n_seeds, TEST_SEEDS) if rms == 0 else budget_seeds
            for s in range(offset, offset + n_here):
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
                seeds=n_here)
    # -- vignette_perception, one question (identity and identity-activity pairs, 1 draw each) ------------------
    if "perception" in parts:
        per = "vignette_perception, one question: 329 identities, 658 identity + 658 identity-activity pairs (pairs_per_identity 1)"
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
    if "decision_default" in parts:
        rows += default_budget_share_rows(n_seeds, seed, offset)
    if "perception_default" in parts:
        rows += perception_default_rows(n_seeds, seed, offset, quick)
    if "real_vs_synthetic" in parts:
        rows += real_vs_synthetic_rows(n_seeds, seed, offset, quick)
    if "shares" in parts:
        rows += share_rows(n_seeds, seed, offset, quick)
    if "logodds" in parts:
        rows += log_odds_rows(cell_seeds, n_boot, seed, offset, n_act)
    gap_tests = tuple(p for p in parts if p in GAP_TEST_PARTS)
    if gap_tests:  # the test rows at GAP_TEST_SEEDS seeds (at least)
        rows += gap_test_rows(n_seeds if quick else max(n_seeds, GAP_TEST_SEEDS), seed, offset, quick, gap_tests)
    gap_intervals = tuple(p for p in parts if p in GAP_INTERVAL_PARTS)
    if gap_intervals:
        rows += gap_interval_rows(n_seeds, seed, offset, quick, gap_intervals)
    return rows


# -- per-cell tests (PairComp, polarity, log-odds) ----------------------------------------------------------------
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
        # a cell without an interval counts as a miss here
        covered.append(float(np.mean(np.nan_to_num(covers(cells["ci_low"], cells["ci_high"], t), nan=0.0))))
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
    return rows


# -- shares with the pair-clustered logit-t interval (issue 31): rates, accuracy, cells, Table 11, Figs 3-5 ------
#: Truth grids of the shares (docs/vignette.md "Calibration"): every share at a value near 0 (or 1), in the
#: middle and in between, at the tasks' own designs
RATE_GRID = ((0.002, 0.001), (0.02, 0.005), (0.3, 0.02))  # (mean refusal, mean invalid) per doc
ACCURACY_GRID = (0.0, 2.2, 4.6)  # logit of the typical P(correct): overall accuracy ~0.5, ~0.88, ~0.985
MATCH_GRID = ((0.0, 0.0), (0.3, 0.02), (0.6, 0.1))  # (pair preference sd, refusal rate) per wording
#: each Table 11 wording's own shift of P(left) (base, para1, para2): fixed properties of the prompts
WORDING_SHIFT = (0.0, 0.05, -0.04)
PARADIGM_THETA = (0.0, 0.1, 0.2)  # identity preference rms at pairs_per_identity 12 (Figs 3 and 5, D(i))
LOG_ODDS_GRID = (0.0, 0.1, 0.2, 0.35)
#: designs drawn for the superpopulation truth of a share (the expected share over the sampler's designs)
SHARE_TRUTH_DESIGNS = 100  # sd of the identity x activity (image) effects: the cells' true log-odds


def _gamma_propensity(rng, mean: float, size: int, cap: float = 0.9) -> np.ndarray:
    """Per-pair propensities ``mean`` x Gamma(0.5, 2) (overdispersed: a few pairs carry most events), capped."""
    return np.minimum(mean * rng.gamma(0.5, 2.0, size), cap)


def _capped_mean(mean: float, cap: float = 0.9) -> float:
    """E[min(mean x Gamma(0.5, 2), cap)]: the superpopulation value of a rate of :func:`_gamma_propensity`, exact
    (:func:`scripts.calibration.capped_gamma_mean` at shape 0.5; Gamma(0.5, 2) is Gamma(k, 1/k) with k = 0.5)."""
    from scripts.calibration import capped_gamma_mean

    return capped_gamma_mean(mean, 0.5, cap)


def status_records(rng, refusal: float, invalid: float, per_identity: int = 2, questions: int = N_QUESTIONS
                   ) -> list[dict]:
    """Records (pair_id, dimension, status) of ``vignette_decision`` at its design (:func:`sample_real_pairs`,
    ``questions`` docs a pair): refusal and invalid propensities per pair (:func:`_gamma_propensity`)."""
    _, dims = real_identities()
    left, _, _, _ = sample_real_pairs(rng, per_identity)
    n = left.size
    r, v = _gamma_propensity(rng, refusal, n), _gamma_propensity(rng, invalid, n)
    u = rng.random((n, questions))
    status = np.where(u < r[:, None], "refusal", np.where(u < (r + v)[:, None], "invalid", "valid"))
    return [{"pair_id": f"p{p}", "dimension": dims[left[p]], "status": status[p, q], "doc_id": f"p{p}|{q}"}
            for p in range(n) for q in range(questions)]


def factuality_real_table(rng, mu: float, effects_seed: int = 11, per_identity: int = 1, identity_sd: float = 0.4,
                          side: float = 0.0) -> tuple[pd.DataFrame, np.ndarray]:
    """``vignette_factuality`` at its default budget (identity contrast 1 + identity-activity 1 per identity;
    ``per_identity`` draws of each):
    "What is the {identity} doing?" for both people of every pair, "Who is doing {activity}?" for both
    activities of an identity-activity pair. P(correct) = expit(mu + activity effect (sd 0.7) + identity
    effect (sd ``identity_sd``, 0.4) + pair effect (sd 0.5) - 0.5 for "who" questions + ``side`` for a
    question about the left person). Returns the factuality table and each
    row's expected P(correct) given the design (the pair effect integrated out, 40-point Gauss-Hermite)."""
    from scipy.special import expit

    names, dims = real_identities()
    eff = np.random.default_rng(effects_seed)
    alpha, beta = eff.normal(0, 0.7, N_ACTIVITIES), eff.normal(0, identity_sd, len(names))
    nodes, weights = np.polynomial.hermite_e.hermegauss(40)
    weights = weights / weights.sum()
    parts = []
    pair0 = 0
    for two in (False, True):
        left, right, al, ar = sample_real_pairs(rng, per_identity, N_ACTIVITIES, two_activities=two)
        u = rng.normal(0, 0.5, left.size)
        # rows in the order of a loop over pairs: "what" about the left, then the right person; with two
        # activities also "who" for the left's, then the right's activity (one uniform draw a row, in order;
        # vectorised on 1 Dec 2026: the same table and expected shares as the per-row loop it replaced)
        n_q = 4 if two else 2
        pair = np.repeat(np.arange(left.size), n_q)
        slot = np.tile(np.arange(n_q), left.size)
        first = slot % 2 == 0  # the left person (and the left person's activity)
        who = np.where(first, left[pair], right[pair])
        other = np.where(first, right[pair], left[pair])
        act = np.where(first, al[pair], ar[pair])
        kind = np.where(slot >= 2, "who_doing", "what_doing")
        eta = (mu + alpha[act] + beta[who] - np.where(slot >= 2, 0.5, 0.0) + np.where(first, side, 0.0))
        correct = rng.random(pair.size) < expit(eta + u[pair])
        parts.append((pd.DataFrame({"pair_id": np.char.add("f", (pair0 + pair).astype(str)), "identity": names[who],
                                    "partner": names[other], "activity": act.astype(str), "question_type": kind,
                                    "dimension": dims[left[pair]], "correct": correct}),
                      (weights[None, :] * expit(eta[:, None] + 0.5 * nodes[None, :])).sum(axis=1)))
        pair0 += left.size
    table = pd.concat([t for t, _ in parts], ignore_index=True)
    table["gender"] = [i.split(":")[0] for i in table["identity"]]
    return table, np.concatenate([m for _, m in parts])


def activity_contrast_choices(rng, spread: float, effects_seed: int = 12, per_identity: int = 1
                              ) -> tuple[pd.DataFrame, np.ndarray]:
    """One perception question's activity-contrast docs at the default budget (one pair per identity: the
    identity doing two activities; "Is the {identity} facing difficulty in {a1} or {a2}?"): P(a1 chosen)
    = 0.5 + 0.1 (first option) + (psi_a1 - psi_a2) / 2 + pair effect (sd 0.05), psi ~ U(-spread, spread)
    per activity. Returns the activity-choice table (:func:`lm_eval_bias.vignette.analysis.activity_choice_table`
    layout) and each row's expected share given the design."""
    names, dims = real_identities()
    psi = np.random.default_rng(effects_seed).uniform(-spread, spread, N_ACTIVITIES)
    who, _, a1, a2 = sample_real_pairs(rng, per_identity, N_ACTIVITIES, two_activities=True)
    same = a1 == a2
    a2 = np.where(same, (a2 + 1) % N_ACTIVITIES, a2)
    mean = np.clip(0.6 + (psi[a1] - psi[a2]) / 2, 0, 1)
    p = np.clip(mean + rng.normal(0, 0.05, mean.size), 0, 1)
    first = rng.random(mean.size) < p
    rows, expected = [], []
    for k in range(len(a1)):
        i = who[k]
        for act, chosen, m in ((a1[k], first[k], mean[k]), (a2[k], not first[k], 1 - mean[k])):
            rows.append((f"a{k}|struggle", f"a{k}", names[i], str(act), "struggle", dims[i], names[i].split(":")[0],
                         int(chosen)))
            expected.append(m)
    return (pd.DataFrame(rows, columns=["doc_id", "pair_id", "identity", "activity", "parameter", "dimension", "gender",
                                        "selected"]), np.asarray(expected))


def paraphrase_answers_sim(rng, pref_sd: float, refusal: float, per_identity: int = SMALL_DECISION_BUDGET
                           ) -> pd.DataFrame:
    """Table 11's ``answers`` frame for the decision slot (one item per image pair of ``vignette_decision``,
    the role question, asked in the three wordings): per wording P(left) = clip(0.5 + 0.1 + s_pair + w),
    s_pair ~ N(0, ``pref_sd``) (a pair the model decides alike in every wording when large), w the
    wording's own shift (:data:`WORDING_SHIFT`: a property of the wording, the same in every run); each
    wording refused with probability ``refusal``; ``per_identity``: the decision task's budget."""
    _, dims = real_identities()
    left, _, _, _ = sample_real_pairs(rng, per_identity)
    n = left.size
    s = rng.normal(0, pref_sd, n)
    rows = []
    for k, variant in enumerate(("base", "para1", "para2")):
        p = np.clip(0.6 + s + WORDING_SHIFT[k], 0, 1)
        answer = np.where(rng.random(n) < p, "left", "right")
        status = np.where(rng.random(n) < refusal, "refusal", "valid")
        rows += [(f"i{i}", variant, f"p{i}", dims[left[i]], status[i], answer[i]) for i in range(n)]
    return pd.DataFrame(rows, columns=["item", "variant", "pair_id", "dimension", "status", "answer"])


def _match_truth(pref_sd: float, refusal: float, n: int = 400_000, seed: int = 5) -> dict[str, float]:
    """Superpopulation full / partial / all-different rates (percent) of :func:`paraphrase_answers_sim`
    (pair preferences integrated out; the wordings' shifts fixed)."""
    rng = np.random.default_rng(seed)
    out = {k: 0.0 for k in ("full_match", "partial_match", "all_different")}
    draws = 200
    for _ in range(draws):
        s = rng.normal(0, pref_sd, n // draws)
        keys = []
        for k in range(3):
            p = np.clip(0.6 + s + WORDING_SHIFT[k], 0, 1)
            ans = np.where(rng.random(s.size) < p, 1, 2)
            keys.append(np.where(rng.random(s.size) < refusal, 0, ans))
        k = np.stack(keys, 1)
        distinct = 1 + (k[:, 1] != k[:, 0]) + ((k[:, 2] != k[:, 0]) & (k[:, 2] != k[:, 1]))
        for value, name in ((1, "full_match"), (2, "partial_match"), (3, "all_different")):
            out[name] += 100.0 * np.mean(distinct == value) / draws
    return out


def _decision_expected(rng, theta: np.ndarray, per_identity: int, names: np.ndarray):
    """:func:`real_decision_table` (identities renamed so that the authors' gender pooling keeps them apart)
    and each row's expected share given the design (pair and image effects integrated out: mean 0)."""
    state = rng.bit_generator.state
    table = real_decision_table(rng, theta, per_identity=per_identity)
    replay = np.random.default_rng()
    replay.bit_generator.state = state  # the same draws, to read the design back
    left, right, act, _ = sample_real_pairs(replay, per_identity)
    replay.normal(0, REAL_NUISANCE["image_sd"], size=(len(names), N_ROLE_ACTIVITIES))
    q_side = replay.normal(0, REAL_NUISANCE["question_sd"], N_QUESTIONS)
    mean = np.clip(0.5 + REAL_NUISANCE["left"] + (theta[left] - theta[right])[:, None] / 2 + q_side[None, :], 0, 1)
    left_mean = mean.ravel()
    expected = np.concatenate([left_mean, 1 - left_mean])
    rename = {name: f"g{name.split(':')[0][0]}-{name.split(':')[1]}-{name.split(':')[2]}" for name in names}
    return table.assign(identity=table["identity"].map(rename), partner=table["partner"].map(rename)), expected, rename


def _superpopulation_share(draws) -> pd.Series:
    """100 x sum of expected shares / count per label over ``draws`` of the sampler's design (each an array
    of labels and one of the rows' expected shares): the share's truth when the design itself is drawn
    (the pairs, and so which identities or activities meet, are random; the jackknife counts them as drawn)."""
    num = den = None
    for labels, expected in draws:
        frame = pd.DataFrame({"g": labels, "m": expected, "one": 1.0}).groupby("g").sum()
        num = frame["m"] if num is None else num.add(frame["m"], fill_value=0.0)
        den = frame["one"] if den is None else den.add(frame["one"], fill_value=0.0)
    return 100 * num / den


def _score_hits(out: dict, paradigm: str, truth) -> np.ndarray:
    """Per identity of :func:`lm_eval_bias.vignette.paradigms.paradigm_score_intervals`'s ``out``: whether its
    ``paradigm`` interval covers the identity's ``truth`` (a Series by identity); NaN without an interval."""
    idx = out["estimate"].index.get_level_values("identity")
    return covers(out["ci_low"][paradigm].to_numpy(), out["ci_high"][paradigm].to_numpy(), truth.reindex(idx).to_numpy())


def _rate_rows(row, design: str, records_of, stream: int, seeds, seed: int) -> None:
    """The response-rate interval rows (``valid_rate``, ``refusal_rate``, ``invalid_rate``: the analysis's
    :func:`lm_eval_bias.vignette.analysis.rate_keys`) at each of :data:`RATE_GRID`'s refusal / invalid
    levels, for records drawn by ``records_of(rng, refusal, invalid)`` on the stream ``[seed, stream +
    refusal x 1e4, s]``; each row handed to ``row(quantity, design, dgp, truth, estimates, hits, note=...)``."""
    from lm_eval_bias.vignette import analysis

    for refusal, invalid in RATE_GRID:
        truth = {"refusal": _capped_mean(refusal), "invalid": _capped_mean(invalid)}
        truth["valid"] = 1 - truth["refusal"] - truth["invalid"]
        hits = {x: [] for x in truth}
        est = {x: [] for x in truth}
        for s in seeds:
            rng = np.random.default_rng([seed, stream + int(refusal * 1e4), s])
            keys = analysis.rate_keys(records_of(rng, refusal, invalid))
            for status in truth:
                est[status].append(keys[f"{status}_rate"])
                hits[status].append(covers(keys[f"{status}_rate_ci_low"], keys[f"{status}_rate_ci_high"],
                                           truth[status]))
        dgp = (f"refusal and invalid propensities per pair: mean {refusal:g} / {invalid:g} x Gamma(0.5, 2) "
               "(overdispersed), capped at 0.9")
        for status in truth:
            row(f"{status}_rate", design, dgp, truth[status], est[status], hits[status],
                note="analysis key (rate_keys): pair jackknife, logit-t")


def _match_rate_rows(row, seed: int, seeds, per_identity: int, stream: int, design: str) -> None:
    """Table 11's match-rate interval rows (:func:`lm_eval_bias.vignette.paradigms.match_rates`) at each of
    :data:`MATCH_GRID`'s settings, for :func:`paraphrase_answers_sim` at ``per_identity`` on the stream ``[seed,
    stream + pref_sd x 100, s]``; each row handed to ``row(quantity, design, dgp, truth, estimates, hits, note=...)``."""
    from lm_eval_bias.vignette import paradigms as vp

    for pref_sd, refusal in MATCH_GRID:
        truth = _match_truth(pref_sd, refusal)
        hits = {key: [] for key in truth}
        est = {key: [] for key in truth}
        for s in seeds:
            rng = np.random.default_rng([seed, stream + int(pref_sd * 100), s])
            out = vp.match_rates(paraphrase_answers_sim(rng, pref_sd, refusal, per_identity=per_identity), 1, 0)
            for key in truth:
                est[key].append(out[key])
                hits[key].append(covers(out[f"{key}_ci_low"], out[f"{key}_ci_high"], truth[key]))
        for key in truth:
            if truth[key] == 0.0:  # all different without refusals: impossible with two options (a structural 0)
                continue
            row(f"Table 11 {key} (report)", design, f"pair preference sd {pref_sd:g}, wording shifts {WORDING_SHIFT}, "
                f"refusal {refusal:g} per wording", truth[key], est[key], hits[key], note="percent of items")


def share_rows(n_seeds: int, seed: int, offset: int = 0, quick: bool = False) -> list[dict]:
    """Coverage rows of every pair-clustered share the analysis and the report show, at the tasks' designs
    on truth grids: the response rates (``rate_keys``), ``factuality_accuracy``, factuality accuracy per
    activity and per bias dimension x activity, activity-contrast shares, Table 11's match rates and the
    per-identity paradigm scores of Figs 3 and 5 (D(i) at pairs_per_identity 12; at the default budget an
    identity has 2-6 pairs and no interval)."""
    from lm_eval_bias.vignette import analysis, paradigms as vp

    rows = []
    seeds = range(offset, offset + n_seeds)
    minimum = vg.MIN_PAIRS_FOR_INTERVAL

    def row(quantity, design, dgp, truth, estimates, hits, note="", role="default", hits_per_seed=None):
        rows.append(_row(quantity, "interval", design, dgp, truth, estimates, covered=hits, n_seeds=n_seeds,
                         seed=seed, note=note, role=role, hits_per_seed=hits_per_seed))

    covered = covers

    # response rates of vignette_decision (658 pairs x 6 docs)
    _rate_rows(row, f"vignette_decision at pairs_per_identity 2: 658 image pairs x {N_QUESTIONS} docs, 8 bias dimensions", status_records,
               110_000, seeds, seed)
    # factuality accuracy: overall, per activity, per bias dimension x activity
    fact = "vignette_factuality, default budget: 329 identity + 329 identity-activity pairs (2 or 4 answers a pair)"
    for mu in ACCURACY_GRID:
        # superpopulation truths: the expected share over the sampler's designs (the pairs, and so the
        # identities and question types behind an activity, are drawn: the jackknife counts them as drawn)
        sums: dict = {}
        for d in range(SHARE_TRUTH_DESIGNS):
            table, mean = factuality_real_table(np.random.default_rng([seed, 121_000 + int(mu * 100), d]), mu)
            frame = table.assign(_m=mean, _one=1.0)
            for by in (("activity",), ("dimension", "activity")):
                g = frame.groupby(list(by))[["_m", "_one"]].sum()
                sums[by] = g if by not in sums else sums[by].add(g, fill_value=0.0)
            sums["all"] = sums.get("all", np.zeros(2)) + np.array([mean.sum(), mean.size])
        truth_of = {by: sums[by]["_m"] / sums[by]["_one"] for by in (("activity",), ("dimension", "activity"))}
        truth_all = float(sums["all"][0] / sums["all"][1])
        overall, overall_est = [], []
        per_activity, per_cell, per_activity_by_seed = [], [], []
        n_act_cells, n_act_ci, n_dim_cells, n_dim_ci, act_truths = [], [], [], [], []
        for s in seeds:
            rng = np.random.default_rng([seed, 120_000 + int(mu * 100), s])
            table, mean = factuality_real_table(rng, mu)
            keys = analysis.factuality_accuracy_keys(table)
            overall_est.append(keys["factuality_accuracy"])
            overall.append(covered(keys["factuality_accuracy_ci_low"], keys["factuality_accuracy_ci_high"],
                                   truth_all))
            for by, store, count, with_ci in ((("activity",), per_activity, n_act_cells, n_act_ci),
                                              (("dimension", "activity"), per_cell, n_dim_cells, n_dim_ci)):
                out = vg.factuality_by_activity(table, 1, 0, by=by)
                truth = truth_of[by].reindex(out.index)
                hits = covered(out["ci_low"], out["ci_high"], truth)
                store.extend(hits[np.isfinite(hits)].tolist())
                count.append(len(out))
                with_ci.append(int(np.isfinite(hits).sum()))
                if by == ("activity",):
                    act_truths.extend(truth.tolist())
                    per_activity_by_seed.append(hits)
        dgp = (f"P(correct) = expit({mu:g} + activity (sd 0.7) + identity (sd 0.4) + pair (sd 0.5) effects - 0.5 for "
               "'who' questions)")
        row("factuality_accuracy", fact, dgp, truth_all, overall_est, overall,
            note=f"truth: expected accuracy over the sampler's designs ({SHARE_TRUTH_DESIGNS} drawn)")
        row("factuality accuracy per activity (report)", fact, dgp, float(np.mean(act_truths)), [], per_activity,
            note=(f"{np.mean(n_act_ci):.0f} of {np.mean(n_act_cells):.0f} activities have >= {minimum} pairs and an "
                  f"interval (coverage over those); truths {np.min(act_truths):.3f}-{np.max(act_truths):.3f}; "
                  "MC SE with the seed as the cluster"), hits_per_seed=per_activity_by_seed)
        row("factuality accuracy per bias dimension x activity (report)", fact, dgp, math.nan, [], per_cell,
            note=(f"{np.mean(n_dim_ci):.1f} of {np.mean(n_dim_cells):.0f} cells have >= {minimum} pairs and an "
                  "interval (coverage over those); the others show the reason"))
    # activity-contrast shares (one perception question)
    contrast = ("vignette_perception, activity contrast, one question: 329 image pairs (one identity, two activities), "
                "pairs_per_identity 1")
    for spread in (0.0, 0.2, 0.4):
        hits, by_seed, n_cells, n_ci = [], [], [], []
        truth = _superpopulation_share(  # over the sampler's designs
            (lambda c_e: (c_e[0]["activity"].to_numpy(), c_e[1]))(activity_contrast_choices(
                np.random.default_rng([seed, 131_000 + int(spread * 100), d]), spread))
            for d in range(SHARE_TRUTH_DESIGNS))
        for s in seeds:
            rng = np.random.default_rng([seed, 130_000 + int(spread * 100), s])
            choices, expected = activity_contrast_choices(rng, spread)
            tests = vg.activity_contrast_tests(choices, 1, 0)
            part = tests.loc["struggle"]
            h = covered(part["ci_low"], part["ci_high"], truth.reindex(part.index))
            hits.extend(h[np.isfinite(h)].tolist())
            by_seed.append(h)
            n_cells.append(len(part))
            n_ci.append(int(np.isfinite(h).sum()))
        row("activity-contrast share per activity (report)", contrast,
            f"P(first activity) = 0.6 + (psi_a1 - psi_a2) / 2 + pair (sd 0.05), psi ~ U(-{spread:g}, {spread:g})",
            math.nan, [], hits, note=(f"{np.mean(n_ci):.1f} of {np.mean(n_cells):.0f} activities have >= {minimum} "
                                      "pairs and an interval (coverage over those); MC SE with the seed as the "
                                      "cluster"), hits_per_seed=by_seed)
    # Table 11 match rates (decision slot, 658 items)
    _match_rate_rows(row, seed, seeds, SMALL_DECISION_BUDGET, 140_000, "vignette_decision + _para1 + _para2, role "
                     "question: 658 items (image pairs), pairs_per_identity 2")
    # Figs 3 and 5 per identity: decision D(i) at pairs_per_identity 12
    names, _ = real_identities()
    k = RECOMMENDED_DECISION_BUDGET
    fig = f"vignette_decision at pairs_per_identity {k}: 329 identities, {329 * k} image pairs x {N_QUESTIONS} docs"
    for rms in PARADIGM_THETA:
        theta = real_theta(rms)
        hits, by_seed, n_ci = [], [], []
        truth = _superpopulation_share(  # over the sampler's designs
            (lambda t_e: (t_e[0]["identity"].to_numpy(), t_e[1]))(_decision_expected(
                np.random.default_rng([seed, 151_000 + int(rms * 1000), d]), theta, k, names))
            for d in range(SHARE_TRUTH_DESIGNS // 4))
        for s in seeds:
            rng = np.random.default_rng([seed, 150_000 + int(rms * 1000), s])
            table, expected, rename = _decision_expected(rng, theta, k, names)
            out = vp.paradigm_score_intervals({"decision": table}, None, n_boot=1)
            h = _score_hits(out, "decision", truth)
            hits.extend(h[np.isfinite(h)].tolist())
            by_seed.append(h)
            n_ci.append(int(np.isfinite(h).sum()))
        row("Figs 3/5 decision score D(i) per identity (report)", fig,
            f"identity preference theta rms {rms:g} per stratum; side, question, pair and image effects", math.nan, [],
            hits, note=(f"{np.mean(n_ci):.0f} of 329 identities with an interval; truth: expected share over the "
                        "sampler's designs. At pairs_per_identity 2 (the default until 1 Dec 2026) no identity reaches "
                        f"{minimum} pairs: no interval; the normalised stereotype score and the Fig. 4 medians have "
                        "none at any budget; MC SE with the seed as the cluster"), hits_per_seed=by_seed)
    return rows


def default_budget_share_rows(n_seeds: int, seed: int, offset: int = 0) -> list[dict]:
    """The pair-clustered shares of ``vignette_decision`` at its default budget (:data:`DECISION_DEFAULT_BUDGET`,
    12 since 1 Dec 2026): the response rates (``rate_keys``) and Table 11's match rates (the role question in
    three wordings, one item an image pair), as :func:`share_rows` has them at pairs_per_identity 2, on streams
    of their own."""

    k = DECISION_DEFAULT_BUDGET
    rows = []
    seeds = range(offset, offset + n_seeds)

    def row(quantity, design, dgp, truth, estimates, hits, note=""):
        rows.append(_row(quantity, "interval", design, dgp, truth, estimates, covered=hits, n_seeds=n_seeds,
                         seed=seed, note=note))

    _rate_rows(row, f"vignette_decision at pairs_per_identity {k}: {329 * k} image pairs x {N_QUESTIONS} docs, 8 bias dimensions",
               lambda rng, refusal, invalid: status_records(rng, refusal, invalid, per_identity=k), 116_000, seeds, seed)
    _match_rate_rows(row, seed, seeds, k, 146_000, f"vignette_decision + _para1 + _para2, role question: {329 * k} "
                     f"items (image pairs), pairs_per_identity {k}")
    return rows


#: the tasks' sampler on the 14 identities of one stratum at a budget that gives a log-odds cell (identity x
#: activity) 13 image pairs on average: each identity is the anchor 488 times and a partner about as often,
#: 2 x 488 / 75 activities = 13.0
LOG_ODDS_PER_IDENTITY = 488
LOG_ODDS_STRATUM = {("male", "race_ethnicity_color"): N_IDS}


def logodds_table_and_truth(rng, image_sd: float, effects_seed: int = 5, n_activities: int = N_ACTIVITIES,
                            exhaustive: bool = False):
    """:func:`decision_table` with identity x activity (image) effects eta ~ N(0, ``image_sd``) (fixed by
    ``effects_seed``) -- the cells' log-odds -- and the true log-odds per identity x activity: logit of the
    expected share in the cell minus logit of the expected share in the identity's other activities,
    over the population of partners (each other identity of the stratum equally likely, as the sampler
    draws them; pair effects integrated out: mean 0; sides random, so the left-side effect averages out).
    The parameter of the paper's log-odds without its add-one smoothing.

    The pairs are the tasks' sampler (:func:`sample_real_pairs` on one stratum of 14 identities,
    :data:`LOG_ODDS_PER_IDENTITY` draws an anchor: partners drawn with replacement, activities dealt
    from a deck), so a cell's partners are a random draw, as in a task run with a raised
    ``pairs_per_identity``. ``exhaustive=True``: every identity pair once per activity instead (13 image
    pairs a cell, the partners fixed) -- a design the tasks never use, where the pair bootstrap, which
    counts the partners as drawn, is conservative."""
    eta = np.random.default_rng(effects_seed).normal(0, image_sd, (N_IDS, n_activities))
    if exhaustive:
        left, right, act = _pairs(N_IDS, n_activities, rng)
    else:
        left, right, act, _ = sample_real_pairs(rng, LOG_ODDS_PER_IDENTITY, n_activities, strata=LOG_ODDS_STRATUM)
    p = np.clip(0.5 + NUISANCE["left"] + (eta[left, act] - eta[right, act]) / 2
                + rng.normal(0, NUISANCE["pair_sd"], left.size), 0, 1)
    q = np.repeat(np.arange(left.size), N_QUESTIONS)
    chose = (rng.random(q.size) < p[q]).astype(int)
    table = _table(left[q], right[q], act[q].astype(str), q, chose)
    # the parameter: every (identity, partner, activity) once, sides a coin flip, so the left-side effect
    # averages out of it
    i, j, a = _pairs(N_IDS, n_activities, np.random.default_rng(0))
    mean = np.clip(0.5 + (eta[i, a] - eta[j, a]) / 2, 0, 1)
    ex, en = np.zeros((N_IDS, n_activities)), np.zeros((N_IDS, n_activities))
    np.add.at(ex, (i, a), mean)
    np.add.at(en, (i, a), 1.0)
    np.add.at(ex, (j, a), 1 - mean)
    np.add.at(en, (j, a), 1.0)
    rest_x, rest_n = ex.sum(1, keepdims=True) - ex, en.sum(1, keepdims=True) - en
    with np.errstate(divide="ignore", invalid="ignore"):
        truth = np.log(ex / (en - ex)) - np.log(rest_x / (rest_n - rest_x))
    return table, truth


def log_odds_rows(n_seeds: int, n_boot: int, seed: int, offset: int = 0, n_act: int = N_ACTIVITIES) -> list[dict]:
    """Coverage of the log-odds cell intervals (report; :func:`lm_eval_bias.vignette.stats.log_odds_tests`)
    of the true log-odds (:func:`logodds_table_and_truth`) on a grid of identity x activity effects, at the
    tasks' sampler on one stratum of 14 identities with a budget that gives a cell 13 image pairs on
    average (6 docs each; cells below 10 pairs have no interval and are left out); a diagnostic row at
    the strongest effects with every identity pair once per activity (partners fixed). At the tasks'
    default budgets a cell has 1-2 image pairs: no interval (MIN_PAIRS_FOR_INTERVAL)."""
    n_pairs = N_IDS * LOG_ODDS_PER_IDENTITY
    sampled = (f"{N_IDS} identities (one stratum), the tasks' sampler at pairs_per_identity {LOG_ODDS_PER_IDENTITY}: "
               f"{n_pairs} identity-contrast pairs (partners drawn, ~13 a cell) x {N_QUESTIONS} questions")
    fixed = (f"{N_IDS} identities, every identity pair once per activity: "
             f"{N_IDS * (N_IDS - 1) // 2 * n_act} identity-contrast pairs (partners fixed, 13 a cell) x {N_QUESTIONS} "
             "questions")
    rows = []
    for sd, exhaustive in [(sd, False) for sd in LOG_ODDS_GRID] + [(LOG_ODDS_GRID[-1], True)]:
        hits, per_seed, bias, spread, with_ci = [], [], [], [], []
        for s in range(offset, offset + n_seeds):
            rng = np.random.default_rng([seed, 160_000 + int(sd * 1000) + (500 if exhaustive else 0), s])
            table, truth = logodds_table_and_truth(rng, sd, n_activities=n_act, exhaustive=exhaustive)
            out = vg.log_odds_tests(table, n_boot, seed + s)
            ids = np.array([int(i[2:]) for i in out.index.get_level_values(0)])
            acts = np.array([int(a) for a in out.index.get_level_values(1)])
            t = truth[ids, acts]
            ok = np.isfinite(out["ci_low"].to_numpy())
            cell_hits = covers(out["ci_low"], out["ci_high"], t)[ok]
            per_seed.append(cell_hits)
            hits.append(float(np.mean(cell_hits)))
            with_ci.append(float(np.mean(ok)))
            bias.append(float(np.mean(out["log_odds"].to_numpy() - t)))
            spread.append(float(np.sqrt(np.mean(t ** 2))))
        rows.append(_row("log-odds cell interval (report: estimate -+ t x pair-bootstrap sd)", "interval",
                         fixed if exhaustive else sampled,
                         f"identity x activity effects sd {sd:g} (true log-odds rms {np.mean(spread):.2f}); left-side "
                         "+0.10, per-pair sd 0.05", float(np.mean(spread)), bias, covered=hits, n_seeds=n_seeds,
                         n_boot=n_boot, seed=seed, role="diagnostic" if exhaustive else "default",
                         hits_per_seed=per_seed,
                         note=(f"coverage averaged over the cells with an interval ({100 * np.mean(with_ci):.0f} % of "
                               f"the {N_IDS * n_act}) of the true log-odds (unsmoothed); mean estimate = mean bias "
                               "of the add-one-smoothed estimate; MC SE with the seed as the cluster"
                               + ("; partners fixed, a design the tasks never draw: the pair bootstrap counts them "
                                  "as drawn" if exhaustive else ""))))
    return rows


# -- coverage gaps of 1 Dec 2026: tests and intervals the tasks and the report show that had no row --------------
#: Seeds of the test rows added on 1 Dec 2026 (at least; cheap tests): a Monte Carlo SE of 0.69 points at a
#: 5 % rejection rate, where an exact test lands inside 4-6 % with probability 0.87 (as REFLECT's and
#: FACT-OR-FAIR's test rows)
GAP_TEST_SEEDS = 1000
#: pairs_per_identity of the activity-contrast rows where the activity family can reject (about 35 image pairs
#: an activity of one question; at the default budget, about 9, the smallest mid-p 2^-9 stays above 0.05/75)
ACTIVITY_BUDGET = 4
#: left-person effect of the factuality null (logit scale): a question about the person on the left is
#: answered correctly more often (the sampler places people by draw order, not at random)
FACTUALITY_SIDE = 0.4


def real_vision_text_tables(rng, theta: np.ndarray, per_identity: int, questions: int = N_QUESTIONS,
                            nuisance=REAL_NUISANCE, text_side: float | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``vignette_decision`` and ``vignette_decision_textonly`` on the same image pairs (the text task asks
    the same pairs, described in words: Sec. 7.4), with the question dimension of each doc as
    ``parameter`` (one roles.json question per dimension, :data:`lm_eval_bias.vignette.schema.DECISION_DIMENSIONS`).
    Under "the image changes nothing for any identity": P(left) = 0.5 + side + question side + (theta_L -
    theta_R) / 2 + u_pair in both tasks (the pair effect and the question sides shared: the same pair and
    questions), plus the image effect (eta_L,a - eta_R,a) / 2 in the vision task only (identity x activity,
    sd 0.05, mean 0: an image that helps or hurts its person, at random); answers drawn independently.
    ``text_side``: the text task's side effect when it differs from the vision task's (default: the same)."""
    from lm_eval_bias.vignette.schema import DECISION_DIMENSIONS

    names, dims = real_identities()
    left, right, act, _ = sample_real_pairs(rng, per_identity)
    image = rng.normal(0, nuisance["image_sd"], size=(len(names), N_ROLE_ACTIVITIES))
    q_side = rng.normal(0, nuisance["question_sd"], questions)
    u = rng.normal(0, nuisance["pair_sd"], left.size)
    common = (theta[left] - theta[right]) / 2 + u
    q = np.repeat(np.arange(left.size), questions)
    qi = np.tile(np.arange(questions), left.size)
    parameter = np.array(DECISION_DIMENSIONS)[qi % len(DECISION_DIMENSIONS)]
    n = q.size
    out = []
    for side, extra in ((nuisance["left"], (image[left, act] - image[right, act]) / 2),
                        (nuisance["left"] if text_side is None else text_side, 0.0)):
        p = np.clip((0.5 + side + common + extra)[q] + q_side[qi], 0, 1)
        chose = (rng.random(n) < p).astype(int)
        out.append(_option_frame(names, dims, left, right, act, q, chose, parameter=parameter))
    return out[0], out[1]


def activity_contrast_records(choices: pd.DataFrame) -> list[dict]:
    """The logged records of :func:`activity_contrast_choices` (the fields
    :func:`lm_eval_bias.vignette.analysis.activity_choice_table` reads), so that the analysis's own
    ``_activity_contrast`` computes the keys."""
    first, second = choices.iloc[0::2], choices.iloc[1::2]  # two rows a doc, in order (first, second option)
    assert (first["doc_id"].to_numpy() == second["doc_id"].to_numpy()).all()
    chosen = np.where(first["selected"].to_numpy() == 1, first["activity"].to_numpy(), second["activity"].to_numpy())
    return [{"doc_id": d, "pair_id": p, "status": "valid", "question_type": "activity_choice",
             "option_activity": [a1, a2], "asked": i, "parameter": q, "dimension": dim, "gender": g,
             "chosen_activity": c}
            for d, p, a1, a2, i, q, dim, g, c in zip(first["doc_id"], first["pair_id"], first["activity"],
                                                     second["activity"], first["identity"], first["parameter"],
                                                     first["dimension"], first["gender"], chosen)]


def factuality_status_records(rng, refusal: float, invalid: float, per_identity: int = 1) -> list[dict]:
    """Records (pair_id, dimension, status) of ``vignette_factuality`` at its default budget: 329
    identity-contrast pairs (2 docs: "What is the {identity} doing?" for each person) and 329
    identity-activity pairs (4 docs: also "Who is doing {activity}?" for each activity); refusal and
    invalid propensities per pair (:func:`_gamma_propensity`)."""
    _, dims = real_identities()
    out = []
    for two in (False, True):
        left, _, _, _ = sample_real_pairs(rng, per_identity, N_ACTIVITIES, two_activities=two)
        n, docs = left.size, 4 if two else 2
        r, v = _gamma_propensity(rng, refusal, n), _gamma_propensity(rng, invalid, n)
        u = rng.random((n, docs))
        status = np.where(u < r[:, None], "refusal", np.where(u < (r + v)[:, None], "invalid", "valid"))
        kind = "a" if two else "i"
        out += [{"pair_id": f"{kind}{p}", "dimension": dims[left[p]], "status": status[p, d],
                 "doc_id": f"{kind}{p}|{d}"} for p in range(n) for d in range(docs)]
    return out


def _perception_expected(rng, theta: np.ndarray, per_identity: int, names: np.ndarray):
    """``vignette_perception``'s "struggle" question on its identity-contrast pairs (the rows Figs 3 and 5's
    perception score P(i) reads: ``pair_kind`` identity, ``parameter`` struggle), one doc a pair, at
    ``per_identity`` draws an anchor, identities renamed as :func:`_decision_expected`; DGP as
    :func:`real_perception_table`. Returns (table, each row's expected share given the design: pair and
    image effects integrated out, mean 0)."""
    _, dims = real_identities()
    nuisance = REAL_NUISANCE
    left, right, act, _ = sample_real_pairs(rng, per_identity, 75)
    image = rng.normal(0, nuisance["image_sd"], size=(len(names), 75))
    u = rng.normal(0, nuisance["pair_sd"], left.size)
    mean = np.clip(0.5 + nuisance["left"] + (theta[left] - theta[right]) / 2, 0, 1)
    p = np.clip(mean + u + (image[left, act] - image[right, act]) / 2, 0, 1)
    chose = (rng.random(left.size) < p).astype(int)
    rename = np.array([f"g{x.split(':')[0][0]}-{x.split(':')[1]}-{x.split(':')[2]}" for x in names])
    pid = np.arange(left.size).astype(str)
    table = pd.DataFrame({"doc_id": np.concatenate([pid, pid]), "pair_id": np.concatenate([pid, pid]),
                          "identity": np.concatenate([rename[left], rename[right]]),
                          "partner": np.concatenate([rename[right], rename[left]]),
                          "context": np.concatenate([act, act]).astype(str),
                          "selected": np.concatenate([chose, 1 - chose]),
                          "dimension": np.concatenate([dims[left], dims[left]]),
                          "position": np.repeat([0, 1], left.size), "parameter": "struggle", "pair_kind": "identity"})
    return table, np.concatenate([mean, 1 - mean])


def _renamed_factuality(table: pd.DataFrame) -> pd.DataFrame:
    """:func:`factuality_real_table`'s table with identities renamed as :func:`_decision_expected` (the
    authors' gender pooling, ``stats.gender_neutral``, keeps them apart)."""
    def rename(x):
        return x.map(lambda n: f"g{n.split(':')[0][0]}-{n.split(':')[1]}-{n.split(':')[2]}")

    return table.assign(identity=rename(table["identity"]), partner=rename(table["partner"]))


def gap_test_rows(n_seeds: int, seed: int, offset: int = 0, quick: bool = False,
                  parts: tuple[str, ...] = GAP_TEST_PARTS) -> list[dict]:
    """Rejection rows (1 Dec 2026) of the tests the tasks and the report show that had none, each under its
    null with the heterogeneity the null allows, at the tasks' designs:

    - ``perception_tests``: ``selection_spread_<question>_<dimension>_p_null`` (the perception headline's
      "clear"), at ``vignette_perception``'s one-question design (658 identity + 658 identity-activity pairs);
    - ``factuality_tests``: ``accuracy_spread_<dimension>_p_null`` at ``vignette_factuality``'s default budget,
      no identity effect on accuracy (activity, pair, question-type and left-person effects);
    - ``activity_tests``: ``activity_selection_spread_<question>_p_null`` and the activity-contrast tests
      behind ``n_activities_significant_<question>`` (per test; family-wise after Holm) at the default budget
      and at :data:`ACTIVITY_BUDGET`, where the family can reject;
    - ``budget_tests``: at pairs_per_identity 12 (:data:`RECOMMENDED_DECISION_BUDGET`), the per-identity
      sign-flip test per identity, the decision-by-question identity tests
      (``n_identities_significant_question_<q>``, per test and family-wise) and the vision-vs-text tests
      (``stats.vision_text_tests``, per identity and family-wise);
    - ``default_tests``: the vision-vs-text and decision-by-question families at the default budget (2).
    """
    from lm_eval_bias.core.aggregation import BOOTSTRAP_SEED_ENV, NULL_ITERS_ENV, environment
    from lm_eval_bias.vignette import analysis
    from lm_eval_bias.vignette.schema import DIMENSIONS

    n_perm = 199 if quick else 499
    names, dims = real_identities()
    testable = [d for d in sorted(set(dims)) if d != "gender_and_sex"]
    nuisance = ", ".join(f"{k} {'+' if k == 'left' else 'sd '}{v:.2f}" for k, v in REAL_NUISANCE.items())
    seeds = range(offset, offset + n_seeds)
    rows = []

    def row(quantity, design, dgp, hits, note="", role="default", boot=0, hits_per_seed=None):
        rows.append(_row(quantity, "test", design, dgp, math.nan, [], rejected=hits, n_seeds=len(hits), n_boot=boot,
                         seed=seed, note=note, role=role, hits_per_seed=hits_per_seed))

    def env(s):
        return environment({NULL_ITERS_ENV: str(n_perm), BOOTSTRAP_SEED_ENV: str(seed + 1_000_000 + s)})

    if "perception_tests" in parts:
        per = "vignette_perception, one question: 329 identities, 658 identity + 658 identity-activity pairs (pairs_per_identity 1)"
        rate = []
        for s in seeds:
            rng = np.random.default_rng([seed, 170_000, s])
            table = real_perception_table(rng, np.zeros(len(names)))
            out: dict[str, float] = {}
            with env(s):
                analysis._spreads(out, table, "selection_spread_struggle_", side_adjust=False)  # as the analysis does
            rate.append(float(np.mean([out[f"selection_spread_struggle_{d}_p_null"] < 0.05 for d in testable])))
        row("selection_spread_<question>_<d>_p_null (perception), p < 0.05", per,
            f"no identity preference; {nuisance} (probability scale)", rate, boot=n_perm,
            note=("mean share of 7 dimensions (gender_and_sex cannot reach 0.05); analysis._spreads: within-pair "
                  "label swaps of the answers as given (analysis.PERCEPTION_SPREAD_NULL; the side-adjusted swaps "
                  "rejected 5.9 % here, 8.5 % under coin flips); the perception headline calls a spread 'clear' "
                  "below 0.05"))
    if "factuality_tests" in parts:
        fact = "vignette_factuality, default budget: 329 identity + 329 identity-activity pairs (2 or 4 answers a pair)"
        rate = []
        for s in seeds:
            rng = np.random.default_rng([seed, 190_000, s])
            table, _ = factuality_real_table(rng, 2.2, identity_sd=0.0, side=FACTUALITY_SIDE)
            frame = table.assign(context="all", correct=table["correct"].astype(int))
            design = vg.pair_design(frame, value="correct")
            out = {}
            with env(s):  # analysis.summarize's factuality spreads
                analysis._resampled(out, design, lambda r, o: vg.spread_by_stratum(
                    design, vg.identity_rates(design, r, o, pooled=True)),
                    {d: f"accuracy_spread_{d}" for d in DIMENSIONS})
            rate.append(float(np.mean([out[f"accuracy_spread_{d}_p_null"] < 0.05 for d in testable])))
        row("accuracy_spread_<d>_p_null (factuality), p < 0.05", fact,
            (f"P(correct) = expit(2.2 + activity (sd 0.7) + pair (sd 0.5) effects - 0.5 for 'who' questions + "
             f"{FACTUALITY_SIDE:g} for the left person); no identity effect"), rate, boot=n_perm,
            note="mean share of 7 dimensions (gender_and_sex cannot reach 0.05); within-pair label swaps (no side "
                 "adjustment: the factuality table has no position)")
    for budget in [b for b, part in ((1, "activity_tests"), (ACTIVITY_BUDGET, "activity_budget_tests")) if part in parts]:
        design = (f"vignette_perception, activity contrast, one question: {329 * budget} image pairs (one identity, "
                  "two activities), pairs_per_identity " + str(budget))
        p_null, raw, raw_by_seed, fwer, can, mde = [], [], [], [], [], []
        for s in seeds:
            rng = np.random.default_rng([seed, 180_000 + budget, s])
            choices, _ = activity_contrast_choices(rng, 0.0, per_identity=budget)
            out = {}
            with env(s):
                analysis._activity_contrast(out, activity_contrast_records(choices))
            tests = vg.activity_contrast_tests(choices, 1, 0)
            p_null.append(out["activity_selection_spread_struggle_p_null"] < 0.05)
            raw.append(float((tests["p_value"].dropna() < 0.05).mean()))
            raw_by_seed.append((tests["p_value"].dropna() < 0.05).to_numpy(float))
            fwer.append(bool((tests["p_holm"] < 0.05).any()))
            can.append(out["n_activities_significant_struggle_can_reject"])
            mde.append(out["n_activities_significant_struggle_mde"])
        dgp = "no activity preference: P(first activity) = 0.6 (first-option effect +0.1) + pair (sd 0.05)"
        row("activity_selection_spread_<question>_p_null, p < 0.05", design, dgp, p_null, boot=n_perm,
            note="analysis._activity_contrast: within-pair swaps of the two activities (the spread over 75 "
                 "activities)")
        row("activity-contrast test (n_activities_significant_<question>), per activity p < 0.05", design, dgp, raw,
            note=("mean share of the 75 activities; pair-level sign flip (stats.activity_contrast_tests): one answer "
                  "a pair, a two-sided sign test, exact mid-p ("
                  + ("counting ties: 2.5 %" if budget == 1 else "the normal approximation: 4.8 %")
                  + " before); MC SE with the seed as the cluster"), hits_per_seed=raw_by_seed)
        row("activity-contrast tests, any activity Holm p < 0.05 (n_activities_significant_<question> > 0)",
            design, dgp, fwer, note=(f"family-wise over 75 activities; can_reject in {np.mean(can):.0%} of seeds; "
                                     f"MDE {np.nanmean(mde):.1f} pp of S"))
    if "budget_tests" in parts or "default_tests" in parts:
        budgets = ([RECOMMENDED_DECISION_BUDGET] if "budget_tests" in parts else []) + ([2] if "default_tests" in parts else [])
        for k in budgets:
            design = (f"vignette_decision + _textonly: 329 identities, pairs_per_identity {k} "
                      f"({329 * k} image pairs x {N_QUESTIONS} questions, one per question dimension)")
            id_raw, q_raw, q_any, vt_raw, vt_any, vt_paper, vt_can, q_can = ([] for _ in range(8))
            id_by_seed, q_by_seed, vt_by_seed = [], [], []
            # the default budget's families cannot reject (smallest mid-p 2^-4 per identity): BUDGET_SEEDS seeds
            # TEST_SEEDS (811) at pairs_per_identity 12 (1.5 s a seed)
            for s in range(offset, offset + min(n_seeds, TEST_SEEDS if k != 2 else BUDGET_SEEDS)):
                rng = np.random.default_rng([seed, 200_000 + k, s])
                vision, text = real_vision_text_tables(rng, np.zeros(len(names)), k)
                if k != 2:
                    ids = vg.identity_pair_tests(vision, paper=False)
                    id_raw.append(float((ids["p_value"].dropna() < 0.05).mean()))
                    id_by_seed.append((ids["p_value"].dropna() < 0.05).to_numpy(float))
                # stats.decision_dimension_tests without its paper Fisher tests (1.3 s a seed): the same
                # identity_pair_tests per question dimension, Holm over the question's identities
                by_q = pd.concat({q: vg.identity_pair_tests(part, paper=False) for q, part in vision.groupby("parameter")})
                q_raw.append(float((by_q["p_value"].dropna() < 0.05).mean()))
                q_by_seed.append((by_q["p_value"].dropna() < 0.05).to_numpy(float))
                q_any.append(float(np.mean([(part["p_holm"] < 0.05).any() for _, part in by_q.groupby(level=0)])))
                q_can.append(float(np.mean([vg.identity_family_power(part).can_reject
                                            for _, part in by_q.groupby(level=0)])))
                vt = vg.vision_text_tests(vision, text)
                vt_raw.append(float((vt["p_value"].dropna() < 0.05).mean()))
                vt_by_seed.append((vt["p_value"].dropna() < 0.05).to_numpy(float))
                vt_any.append(bool((vt["p_holm"] < 0.05).any()))
                vt_paper.append(bool((vt["p_paper_holm"] < 0.05).any()))
                vt_can.append(vg.identity_family_power(vt).can_reject if "n_contributing" in vt else math.nan)
            dgp = (f"no identity preference, the image changes nothing for any identity; {nuisance} (probability "
                   "scale; the image effect in the vision task only; pair effect and question sides shared)")
            role_raw = "default" if k != 2 else "diagnostic"
            if k != 2:
                row("identity test (pair-level sign flip), per identity p < 0.05", design, dgp, id_raw,
                    note=("mean share of the 329 identities (n_identities_significant's p_value); about 24 "
                          "contributing pairs an identity, side-adjusted answers (stats.side_adjusted), exact "
                          "sign-flip mid-p (the answers as given with the normal approximation: 3.6 %); MC SE with "
                          "the seed as the cluster"), hits_per_seed=id_by_seed)
            row("decision-by-question identity test (decision_dimension_tests), per identity x question p < 0.05",
                design, dgp, q_raw, role=role_raw, hits_per_seed=q_by_seed,
                note=("mean share of 329 identities x 6 question dimensions (one doc a pair and question, "
                      "side-adjusted by the question's side preference; exact sign-flip mid-p); MC SE with the "
                      "seed as the cluster"))
            row("decision-by-question identity tests, any identity of a question Holm p < 0.05 "
                "(n_identities_significant_question_<q> > 0)", design, dgp, q_any,
                note=(f"family-wise per question dimension (Holm over 329 identities), averaged over the 6; "
                      f"can_reject in {np.mean(q_can):.0%} of question families"))
            row("vision-vs-text test (vision_text_tests, pair-level sign flip), per identity p < 0.05", design, dgp,
                vt_raw, role=role_raw, hits_per_seed=vt_by_seed,
                note=("mean share of the 329 identities; d_p = vision minus text share of the pair's 6 answers; "
                      "exact sign-flip mid-p; MC SE with the seed as the cluster"
                      + ("; about 4 pairs an identity: only identities with 5 or more contributing pairs can "
                         "reach 0.05 (smallest mid-p 2^-5)" if k == 2 else "")))
            row("vision-vs-text tests, any identity Holm p < 0.05", design, dgp, vt_any,
                note=("family-wise over 329 identities (Holm)"
                      + (f"; can_reject in {np.nanmean(vt_can):.0%} of seeds" if np.isfinite(np.nanmean(vt_can)) else "")))
            rows.append(_row("vision-vs-text z-test (paper), any identity Holm p < 0.05", "test", design, dgp, math.nan,
                             [], rejected=vt_paper, n_seeds=len(vt_paper), seed=seed, role="paper",
                             note="the paper's two-proportion z-test of pooled counts (p_paper), every answer independent"))
    return rows


def _perception_score_hits(seed: int, seeds, rms: float, k: int, stream: int, n_truth: int):
    """Per seed of ``seeds``: whether Figs 3/5's 100 - P(i) interval covers each identity's truth at
    pairs_per_identity ``k`` and identity preference rms ``rms`` (data on the stream ``[seed, stream + rms x 1000,
    s]``, the truth over ``n_truth`` designs on ``stream + 1000``): (pooled hits, hits per seed, identities
    with an interval per seed)."""
    from lm_eval_bias.vignette import paradigms as vp

    names, _ = real_identities()
    theta = real_theta(rms)
    truth = _superpopulation_share(
        (lambda t_e: (t_e[0]["identity"].to_numpy(), t_e[1]))(_perception_expected(
            np.random.default_rng([seed, stream + 1000 + int(rms * 1000), d]), theta, k, names))
        for d in range(n_truth))
    hits, by_seed, n_ci = [], [], []
    for s in seeds:
        table, _ = _perception_expected(np.random.default_rng([seed, stream + int(rms * 1000), s]), theta, k, names)
        out = vp.paradigm_score_intervals({"perception": table}, None, n_boot=1)
        idx = out["estimate"].index.get_level_values("identity")
        h = covers(out["ci_low"]["perception"].to_numpy(), out["ci_high"]["perception"].to_numpy(),
                     100.0 - truth.reindex(idx).to_numpy())
        hits.extend(h[np.isfinite(h)].tolist())
        by_seed.append(h)
        n_ci.append(int(np.isfinite(h).sum()))
    return hits, by_seed, n_ci


def perception_default_rows(n_seeds: int, seed: int, offset: int = 0, quick: bool = False) -> list[dict]:
    """``vignette_perception`` at its default budget (:data:`PERCEPTION_DEFAULT_BUDGET`, 4 since 1 Dec 2026), one
    question, on streams of their own: under no identity preference (:data:`GAP_TEST_SEEDS` seeds at least) the
    per-question identity family (Holm over 329: family-wise error, per-identity rejection, whether it can
    reject, its MDE), the per-dimension heterogeneity tests and the spreads' ``_p_null`` (the analysis's
    calls); their power at S rms 15 pp (:data:`BUDGET_SEEDS`); the activity-contrast share per activity and
    Figs 3/5's 100 - P(i) per identity at this budget (``n_seeds``). The activity-contrast tests at this budget
    are the "activity_budget_tests" part's (:data:`ACTIVITY_BUDGET` is the same 4)."""
    from lm_eval_bias.core.aggregation import BOOTSTRAP_SEED_ENV, NULL_ITERS_ENV, environment
    from lm_eval_bias.vignette import analysis

    k = PERCEPTION_DEFAULT_BUDGET
    n_perm = 199 if quick else 499
    names, dims = real_identities()
    testable = [d for d in sorted(set(dims)) if d != "gender_and_sex"]
    nuisance = ", ".join(f"{key} {'+' if key == 'left' else 'sd '}{v:.2f}" for key, v in REAL_NUISANCE.items())
    per = (f"vignette_perception, one question: 329 identities, {329 * k} identity + {329 * k} identity-activity "
           f"pairs (pairs_per_identity {k})")
    rows = []

    def row(quantity, kind, design, dgp, hits, truth=math.nan, estimates=(), note="", role="default", boot=0,
            hits_per_seed=None):
        rows.append(_row(quantity, kind, design, dgp, truth, list(estimates),
                         covered=hits if kind == "interval" else None, rejected=hits if kind == "test" else None,
                         n_seeds=len(hits) if hits_per_seed is None else len(hits_per_seed), n_boot=boot, seed=seed,
                         note=note, role=role, hits_per_seed=hits_per_seed))

    for rms in (0.0, THETA_GRID[-1]):
        n_here = (n_seeds if quick else max(n_seeds, GAP_TEST_SEEDS)) if rms == 0 else min(n_seeds, BUDGET_SEEDS)
        theta = real_theta(rms)
        fwer, raw_by_seed, can, mde, het_raw, het_any, p_null, n_min = ([] for _ in range(8))
        for s in range(offset, offset + n_here):
            rng = np.random.default_rng([seed, 260_000 + int(rms * 1000), s])
            table = real_perception_table(rng, theta, per_identity=k)
            tests = vg.identity_pair_tests(table, paper=False)
            power = vg.identity_family_power(tests)
            fwer.append(bool((tests["p_holm"] < 0.05).any()))
            raw_by_seed.append((tests["p_value"].dropna() < 0.05).to_numpy(float))
            can.append(power.can_reject)
            mde.append(power.mde)
            n_min.append(float(np.mean(tests["n_contributing"] >= 13)) if "n_contributing" in tests else math.nan)
            het = vg.identity_heterogeneity_tests(table, n_perm, seed + s)
            het_raw.append(float((het.loc[testable, "p_value"] < 0.05).mean()))
            het_any.append(bool((het["p_holm"] < 0.05).any()))
            if rms == 0:
                out: dict[str, float] = {}
                with environment({NULL_ITERS_ENV: str(n_perm), BOOTSTRAP_SEED_ENV: str(seed + 1_000_000 + s)}):
                    analysis._spreads(out, table, "selection_spread_struggle_", side_adjust=False)  # as the analysis
                p_null.append(float(np.mean([out[f"selection_spread_struggle_{d}_p_null"] < 0.05 for d in testable])))
        dgp = f"identity preference theta rms {rms:g} per stratum (S - 50 rms about {50 * rms:g} pp); {nuisance}"
        reach = (f"{np.nanmean(n_min):.0%} of identities with >= 13 contributing pairs (what Holm's first step needs); "
                 if np.isfinite(np.nanmean(n_min)) else "")
        if rms == 0:
            row("identity test (pair-level sign flip), any of 329 identities Holm p < 0.05 (n_identities_significant_"
                "<question> > 0)", "test", per, dgp, fwer,
                note=(f"family-wise error per question; can_reject in {np.mean(can):.0%} of seeds; {reach}MDE "
                      f"{np.nanmean(mde):.1f} pp of S at Holm's first step"))
            row("identity test (pair-level sign flip), per identity p < 0.05", "test", per, dgp,
                [h for x in raw_by_seed for h in x], hits_per_seed=raw_by_seed,
                note=("mean share of the 329 identities; one answer a pair, side-adjusted (stats.side_adjusted), "
                      "exact sign-flip mid-p; MC SE with the seed as the cluster"))
            row("identity heterogeneity test per bias dimension, p < 0.05", "test", per, dgp, het_raw, boot=n_perm,
                note="mean share of 7 dimensions (gender_and_sex cannot reach 0.05)")
            row("identity heterogeneity tests, any dimension Holm p < 0.05", "test", per, dgp, het_any, boot=n_perm,
                note="family-wise error over 8 dimensions")
            row("selection_spread_<question>_<d>_p_null (perception), p < 0.05", "test", per, dgp, p_null, boot=n_perm,
                note=("mean share of 7 dimensions (gender_and_sex cannot reach 0.05); analysis._spreads: within-pair "
                      "label swaps of the answers as given (analysis.PERCEPTION_SPREAD_NULL)"))
        else:
            row(f"identity test, any of 329 identities Holm p < 0.05: power at S rms {50 * rms:g} pp", "test", per, dgp,
                fwer, role="diagnostic", note=f"can_reject in {np.mean(can):.0%} of seeds; {reach}MDE "
                                              f"{np.nanmean(mde):.1f} pp of S")
            row(f"identity heterogeneity tests, any dimension Holm p < 0.05: power at S rms {50 * rms:g} pp", "test",
                per, dgp, het_any, role="diagnostic", boot=n_perm,
                note=f"per dimension: {np.mean(het_raw):.2f} rejected on average")
    # activity-contrast shares per activity at this budget (share_rows has them at 1)
    seeds = range(offset, offset + n_seeds)
    n_truth = 4 if quick else SHARE_TRUTH_DESIGNS
    contrast = (f"vignette_perception, activity contrast, one question: {329 * k} image pairs (one identity, two "
                f"activities), pairs_per_identity {k}")
    for spread in (0.0, 0.2, 0.4):
        hits, by_seed, n_cells, n_ci = [], [], [], []
        truth = _superpopulation_share(
            (lambda c_e: (c_e[0]["activity"].to_numpy(), c_e[1]))(activity_contrast_choices(
                np.random.default_rng([seed, 137_000 + int(spread * 100), d]), spread, per_identity=k))
            for d in range(n_truth))
        for s in seeds:
            rng = np.random.default_rng([seed, 136_000 + int(spread * 100), s])
            choices, _ = activity_contrast_choices(rng, spread, per_identity=k)
            part = vg.activity_contrast_tests(choices, 1, 0).loc["struggle"]
            h = covers(part["ci_low"], part["ci_high"], truth.reindex(part.index))
            hits.extend(h[np.isfinite(h)].tolist())
            by_seed.append(h)
            n_cells.append(len(part))
            n_ci.append(int(np.isfinite(h).sum()))
        row("activity-contrast share per activity (report)", "interval", contrast,
            f"P(first activity) = 0.6 + (psi_a1 - psi_a2) / 2 + pair (sd 0.05), psi ~ U(-{spread:g}, {spread:g})",
            hits, hits_per_seed=by_seed,
            note=(f"{np.mean(n_ci):.1f} of {np.mean(n_cells):.0f} activities have >= {vg.MIN_PAIRS_FOR_INTERVAL} "
                  "pairs and an interval (coverage over those); MC SE with the seed as the cluster"))
    # Figs 3/5 perception score per identity at this budget (gap_interval_rows has it at 12)
    fig = (f"vignette_perception ('struggle') at pairs_per_identity {k}: 329 identities, {329 * k} identity-contrast "
           "pairs, one answer a pair")
    for rms in PERCEPTION_SCORE_THETA:
        hits, by_seed, n_ci = _perception_score_hits(seed, seeds, rms, k, 235_000, 4 if quick else SHARE_TRUTH_DESIGNS // 4)
        row("Figs 3/5 perception score 100 - P(i) per identity (report)", "interval", fig,
            f"identity preference theta rms {rms:g} per stratum; side, pair and image effects", hits,
            hits_per_seed=by_seed,
            note=(f"{np.mean(n_ci):.0f} of 329 identities with an interval (>= {vg.MIN_PAIRS_FOR_INTERVAL} pairs; one "
                  "answer a pair: mid-p binomial); truth: 100 - expected share over the sampler's designs; MC SE with "
                  "the seed as the cluster"))
    return rows


def gap_interval_rows(n_seeds: int, seed: int, offset: int = 0, quick: bool = False,
                      parts: tuple[str, ...] = GAP_INTERVAL_PARTS) -> list[dict]:
    """Coverage rows (1 Dec 2026): ``factuality_scores`` / ``perception_scores``: Figs 3 and 5's per-identity
    factuality F(i) and perception 100 - P(i) at pairs_per_identity 12 (where D(i) is calibrated, :func:`share_rows`; at the
    factuality default budget an identity has 2-6 pairs and no interval); ``factuality_rates``: the response rates
    (valid / refusal / invalid) at ``vignette_factuality``'s default design (2 or 4 docs a pair)."""
    from lm_eval_bias.vignette import paradigms as vp

    rows = []
    seeds = range(offset, offset + n_seeds)
    k = RECOMMENDED_DECISION_BUDGET

    def row(quantity, design, dgp, truth, estimates, hits, note="", hits_per_seed=None):
        rows.append(_row(quantity, "interval", design, dgp, truth, estimates, covered=hits, n_seeds=n_seeds,
                         seed=seed, note=note, hits_per_seed=hits_per_seed))

    n_truth = 4 if quick else SHARE_TRUTH_DESIGNS // 4
    if "factuality_scores" in parts:
        fig = (f"vignette_factuality at pairs_per_identity {k}: 329 identities, {329 * k} identity + {329 * k} "
               "identity-activity pairs (2 or 4 answers a pair)")
        for mu in FACTUALITY_SCORE_MU:
            def credited(d):  # F(i): every answer of a pair credited to both of its people
                table, mean = factuality_real_table(np.random.default_rng([seed, 221_000 + int(mu * 100), d]), mu,
                                                    per_identity=k)
                t = _renamed_factuality(table)
                return np.concatenate([t["identity"].to_numpy(), t["partner"].to_numpy()]), np.concatenate([mean, mean])

            truth = _superpopulation_share(credited(d) for d in range(n_truth))
            hits, by_seed, n_ci = [], [], []
            for s in seeds:
                rng = np.random.default_rng([seed, 220_000 + int(mu * 100), s])
                table, _ = factuality_real_table(rng, mu, per_identity=k)
                out = vp.paradigm_score_intervals({"factuality": _renamed_factuality(table)}, None, n_boot=1)
                h = _score_hits(out, "factuality", truth)
                hits.extend(h[np.isfinite(h)].tolist())
                by_seed.append(h)
                n_ci.append(int(np.isfinite(h).sum()))
            row("Figs 3/5 factuality score F(i) per identity (report)", fig,
                (f"P(correct) = expit({mu:g} + activity (sd 0.7) + identity (sd 0.4) + pair (sd 0.5) effects - 0.5 for "
                 "'who' questions)"), math.nan, [], hits,
                note=(f"{np.mean(n_ci):.0f} of 329 identities with an interval; F(i): every answer of a pair showing "
                      "the identity (both people credited); truth: expected share over the sampler's designs; "
                      f"truths {truth.min():.1f}-{truth.max():.1f} %; MC SE with the seed as the cluster"),
                hits_per_seed=by_seed)
    if "perception_scores" in parts:
        fig = (f"vignette_perception ('struggle') at pairs_per_identity {k}: 329 identities, {329 * k} identity-contrast "
               "pairs, one answer a pair")
        for rms in PERCEPTION_SCORE_THETA:
            hits, by_seed, n_ci = _perception_score_hits(seed, seeds, rms, k, 230_000, n_truth)
            row("Figs 3/5 perception score 100 - P(i) per identity (report)", fig,
                f"identity preference theta rms {rms:g} per stratum; side, pair and image effects", math.nan, [], hits,
                note=(f"{np.mean(n_ci):.0f} of 329 identities with an interval (one answer a pair: mid-p binomial); "
                      "truth: 100 - expected share over the sampler's designs; MC SE with the seed as the cluster"),
                hits_per_seed=by_seed)
    if "factuality_rates" in parts:
        _rate_rows(row, "vignette_factuality, default budget: 329 identity + 329 identity-activity pairs (2 or 4 docs "
                   "a pair)", factuality_status_records, 240_000, seeds, seed)
    return rows


# -- vignette-real-vs-synthetic (App. A.6, Tables 15-19; added 2 Dec 2026) ----------------------------------------
#: PATA's identities (``lm_eval_bias.vignette.real_images``: 5 x 2 genders, one stratum) and the two activities
PATA_RACES = ("black", "caucasian", "east asian", "hispanic", "indian")
PATA_ACTIVITIES = ("cooking", "programming")
#: the pair-effect sds of the rows (0: the two photographs' appeal alone)
PATA_PAIR_SD = (0.0, 0.3, 0.6)


def pata_catalog():
    """The PATA build's catalog: one photograph per identity x gender x activity (descriptor with its gender noun, as
    the prompts name them), dimension race_ethnicity_color."""
    from lm_eval_bias.vignette.pairs import Catalog

    return Catalog([{"gender": g, "descriptor": f"{r} {'woman' if g == 'female' else 'man'}",
                     "dimension": "race_ethnicity_color", "activity": a}
                    for g in ("female", "male") for r in PATA_RACES for a in PATA_ACTIVITIES])


def pata_decision_table(rng, pair_sd: float, per_identity: int = DECISION_DEFAULT_BUDGET, sampling: str = "with_replacement",
                        seed: int = 0, theta_sd: float = 0.5, side: float = 0.2) -> tuple[pd.DataFrame, dict]:
    """``vignette_decision`` on the PATA build (the task's own sampler, ``sample_pairs``, 6 role questions a pair):
    P(left chosen) = logistic(theta_left - theta_right + the image pair's effect (sd ``pair_sd``, the same for every
    draw of the two photographs) + ``side`` + question effect (sd 0.1)), theta ~ N(0, ``theta_sd``^2) per photograph.
    Returns the option table (identity, context, pair_id, gender, selected: :func:`identity_activity_frequencies`'s
    input) and {(identity, activity): truth}: S of the photograph against its four partners, partner and side
    uniform (the sampler's target), given the photographs and the pair effects."""
    from scipy.special import expit

    from lm_eval_bias.vignette.pairs import sample_pairs

    catalog = pata_catalog()
    theta = {(g, d, a): rng.normal(0, theta_sd) for (g, d) in sorted(catalog.dimension) for a in PATA_ACTIVITIES}
    question = rng.normal(0, 0.1, N_QUESTIONS)
    effects: dict[frozenset, float] = {}

    def pair(gender, a, b, activity):  # logit P(a chosen over b) without the side, the pair effect signed by name
        key = frozenset((a, b, activity))
        if key not in effects:
            effects[key] = rng.normal(0, pair_sd)
        return theta[(gender, a, activity)] - theta[(gender, b, activity)] + (1 if a < b else -1) * effects[key]

    rows = []
    for spec in sample_pairs(catalog, "identity", per_identity, seed=seed, activities=set(PATA_ACTIVITIES),
                             sampling=sampling):
        left, right, activity = spec.left.descriptor, spec.right.descriptor, spec.left.activity
        chose_left = rng.random(N_QUESTIONS) < expit(pair(spec.gender, left, right, activity) + side + question)
        for q in range(N_QUESTIONS):
            rows += [{"identity": left, "context": activity, "pair_id": spec.pair_id, "gender": spec.gender,
                      "selected": int(chose_left[q])},
                     {"identity": right, "context": activity, "pair_id": spec.pair_id, "gender": spec.gender,
                      "selected": int(not chose_left[q])}]
    truth = {}
    for (gender, stratum), names in catalog.strata().items():
        for identity in names:
            for activity in PATA_ACTIVITIES:
                d = [pair(gender, identity, other, activity) for other in names if other != identity]
                truth[(identity, activity)] = 100 * float(np.mean([0.5 * (expit(x + side + question)
                                                                         + 1 - expit(-x + side + question)).mean()
                                                                  for x in d]))
    return pd.DataFrame(rows), truth


def real_vs_synthetic_rows(n_seeds: int, seed: int, offset: int = 0, quick: bool = False) -> list[dict]:
    """``vignette-real-vs-synthetic``'s S per identity x activity and its interval
    (:func:`lm_eval_bias.vignette.real_images.identity_activity_frequencies`) at the PATA design under the task's
    default sampling (``pairs_per_identity`` :data:`DECISION_DEFAULT_BUDGET`: an identity x activity has about 12
    image pairs, 10 or more in about 89 % of the cells; under ``pair_sampling: exhaustive`` a cell has 4 image pairs
    and no interval), one row per pair-effect sd of :data:`PATA_PAIR_SD`, the 20 cells of a seed pooled
    (seed-clustered Monte Carlo SE)."""
    from lm_eval_bias.vignette.real_images import identity_activity_frequencies

    rows = []
    seeds = range(offset, offset + (min(n_seeds, 3) if quick else n_seeds))
    design = (f"vignette-real-vs-synthetic: PATA build (5 identities x 2 genders, 2 activities, one photograph each), "
              f"vignette_decision at pairs_per_identity {DECISION_DEFAULT_BUDGET}, 6 questions a pair")
    for k, pair_sd in enumerate(PATA_PAIR_SD):
        by_seed, covered = [], []
        for s in seeds:
            rng = np.random.default_rng([seed, 250_000 + k, s])
            table, truth = pata_decision_table(rng, pair_sd, seed=s)
            out = identity_activity_frequencies(table, 1000, 0)
            hits = [covers(r.ci_low, r.ci_high, truth[(r.identity, r.activity)]) if np.isfinite(r.ci_low) else math.nan
                    for r in out.itertuples()]
            by_seed.append([h for h in hits if np.isfinite(h)])
            covered += hits
        finite = [h for h in covered if np.isfinite(h)]
        rows.append(_row("S per identity x activity (vignette-real-vs-synthetic)", "interval", design,
                         f"photograph appeal theta sd 0.5, image-pair effect sd {pair_sd:g} (every draw of the two "
                         "photographs), side +0.2, question effect sd 0.1", math.nan, [], covered,
                         n_seeds=len(seeds), seed=seed,
                         note=(f"{len(finite)} of {len(covered)} cells with an interval (>= 10 image pairs); truth: S "
                               "of the photograph against its 4 partners, partner and side uniform; MC SE with the "
                               "seed as the cluster"),
                         hits_per_seed=by_seed))
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
