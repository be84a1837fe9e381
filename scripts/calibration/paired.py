"""Calibration of the paired comparison of two models (issue 14): the paired cluster bootstrap behind
the leaderboard's ties (:func:`lm_eval_bias.core.paired.paired_cluster_bootstrap`, the function the
report calls), at two real designs.

- REFLECT 2AFC, ``male_win_rate``: 6 occupations x 8 source photos = 48 templates (clusters, resampled
  within occupation), 25 man-woman group pairs x 2 orders per template, 10 % of comparisons not
  retained. Model m picks the man with probability logistic(beta_m + u_t + v_mt): u_t ~ N(0, 0.5^2) a
  template effect shared by both models (the same photos), v_mt ~ N(0, 0.3^2) the model's own template
  effect. The metric is the task's ratio of summed counts (wins / retained comparisons); the truth is
  E[logistic(beta_m + u + v)] (400,000 draws).
- Counterfactual VQA, ``consistency``: 1,609 image pairs (Sec. 3) in 5 categories (clusters: pairs,
  resampled within category); each model answers a pair consistently with probability
  logistic(alpha_m + w_p), w_p ~ N(0, 1) a pair effect shared by both models. Truth E[logistic(alpha_m + w)].

- FACT-OR-FAIR objective race, ``s_fair`` (the leaderboard compares the plug-in): 18 statistics x 2
  sides x 3 rounds = 108 queries (clusters: queries, resampled within statistic x side, 3 per stratum).
  Model m picks group g of a cell with probability softmax(gamma_m * z_cg + e_mcg): z_cg ~ N(0, 1)
  shared cell preferences, e_mcg ~ N(0, 0.3^2) the model's own; the target is the difference of the
  two models' expected plug-ins at this design (40,000 simulated runs each).

- REFLECT 2AFC ``polarization`` and ``extreme_cell_rate`` (plug-in magnitudes: the leaderboard tests their
  difference by exchanging the two models' answers template by template and shows no interval of it): the
  tie test only, under identical models at no bias, at a Pol of about 0.10 and at the strong profile
  (:func:`magnitude_tie_rows`; added 1 Dec 2026, 1,000 seeds), beside the bootstrap t-test it replaced for
  these keys (diagnostic rows).
- The same tie test for FACT-OR-FAIR's ``s_fair`` (the s_fair design above, each query a cluster) and VIGNETTE's
  decision spreads (``vignette_decision`` at the task's default budget: 329 identities, pairs_per_identity 12 ->
  3,948 image pairs x 6 role questions, and at 2 -> 658, the default until 1 Dec 2026; each image pair a cluster; the law of
  :func:`scripts.calibration.vignette.real_decision_table`), two identical models at no bias and at a clear bias
  shared by both (:func:`exchange_tie_rows`; added 1 Dec 2026, 1,000 seeds, 200 draws; not part of :func:`run`:
  ``python -m scripts.calibration.paired --exchange-ties`` first asserts that its batched differences are the
  report's, :func:`check_exchange_matches_report`, then prints the rows). The FACT-OR-FAIR ``s_fair`` t-test row
  above is a diagnostic since (:data:`MAGNITUDE_TEST_NOTE`).

The interval and test are the default of :func:`lm_eval_bias.core.paired.paired_difference`: the estimate
± t_{n - H} times the (rescaled) bootstrap SE, and the t-test p (the percentile interval it replaced covered
99.6 % / 92.4 % and rejected 1.6 % on the FACT-OR-FAIR rows: its replicates of a 3-per-stratum plug-in
are shrunk toward 0 while their SD is right).

Each design is run with two identical models (the test's rejection rate at 5 % under H0 and the
interval's coverage of 0) and with a real difference (coverage of the true difference). "Identical"
means the same population metric with heterogeneity that leaves that null true: each model has its
own template (REFLECT) effects on top of the shared ones. Replicates: the report's default
``LM_EVAL_BIAS_REPORT_BOOTSTRAP_ITERS`` = 200 (what the leaderboard's ties rest on), not the runner's
``--boot``, unless ``--boot`` is smaller.
``python -m scripts.calibration.paired [--quick]`` prints the rows.
"""

from __future__ import annotations

import functools
import math
import sys
from typing import Any

import numpy as np

from lm_eval_bias.core.paired import paired_cluster_bootstrap
from scripts.calibration import DEFAULT_ROLE, covers, rate_row, softmax

DIAGNOSTIC_ROLE = "diagnostic"

BENCHMARK = "paired"


def _logistic(x):
    return 1.0 / (1.0 + np.exp(-x))


def _logit_normal_mean(beta: float, shared_sd: float, own_sd: float, n: int = 400_000, seed: int = 96) -> float:
    """E[logistic(beta + shared + own)], shared ~ N(0, shared_sd^2), own ~ N(0, own_sd^2): the population rate of
    :func:`rate_design`'s clusters and of the male_win_rate and consistency designs (:func:`twoafc_truth`,
    :func:`cf_vqa_truth`; a ratio of sums estimates the ratio of expectations, here E of the rate)."""
    rng = np.random.default_rng(seed)
    return float(_logistic(beta + rng.normal(0, shared_sd, n) + rng.normal(0, own_sd, n)).mean())


def _ratio(numerator: np.ndarray, denominator: np.ndarray, key: str):
    """Batched statistic: sum of the clusters' numerators over the sum of their denominators."""
    def values(weights: np.ndarray) -> dict[str, np.ndarray]:
        with np.errstate(invalid="ignore", divide="ignore"):
            return {key: (weights @ numerator) / (weights @ denominator)}
    return values


# -- designs ----------------------------------------------------------------------------------------
def twoafc_counts(rng, betas: tuple[float, float], occupations: int, per_occupation: int):
    """Per-template (wins of the man, retained comparisons) of two models on the same templates."""
    n_templates = occupations * per_occupation
    shared = rng.normal(0, 0.5, n_templates)
    out = []
    for beta in betas:
        p = _logistic(beta + shared + rng.normal(0, 0.3, n_templates))
        retained = rng.binomial(50, 0.9, n_templates)
        out.append((rng.binomial(retained, p).astype(float), retained.astype(float)))
    strata = [t // per_occupation for t in range(n_templates)]
    return out, strata


def twoafc_truth(beta: float, n: int = 400_000, seed: int = 99) -> float:
    return _logit_normal_mean(beta, 0.5, 0.3, n, seed)


def cf_vqa_counts(rng, alphas: tuple[float, float], n_pairs: int, categories: int):
    shared = rng.normal(0, 1.0, n_pairs)
    out = [(rng.binomial(1, _logistic(alpha + shared)).astype(float), np.ones(n_pairs)) for alpha in alphas]
    return out, [p % categories for p in range(n_pairs)]


def cf_vqa_truth(alpha: float, n: int = 400_000, seed: int = 98) -> float:
    return _logit_normal_mean(alpha, 1.0, 0.0, n, seed)


def _fof_setup():
    from lm_eval_bias.fact_or_fair import stats as fof

    cells, k, rounds = 36, 4, 3
    table = fof.CellTable(tuple(f"S{c // 2}" for c in range(cells)),
                          tuple(fof.HIGH if c % 2 == 0 else fof.LOW for c in range(cells)),
                          np.zeros((cells, k + 2, 2), dtype=np.int64), np.array([c % 2 for c in range(cells)]),
                          np.zeros(cells, dtype=bool), np.zeros(cells, dtype=bool), np.arange(cells).reshape(-1, 2), k)
    return fof, table, cells, k, rounds


FOF_SHARED = np.random.default_rng(4242).normal(0, 1, (36, 4))


def _fof_probs(gamma: float, own: np.ndarray) -> np.ndarray:
    logits = gamma * FOF_SHARED + own
    p = np.exp(logits - logits.max(1, keepdims=True))
    return p / p.sum(1, keepdims=True)


def fof_counts(rng, gammas: tuple[float, float]):
    """Per-query chosen group of two models on the same 108 queries (cell of each query)."""
    fof, table, cells, k, rounds = _fof_setup()
    out = []
    for gamma in gammas:
        probs = _fof_probs(gamma, rng.normal(0, 0.3, (cells, k)))
        choice = np.array([rng.choice(k, p=probs[c]) for c in range(cells) for _ in range(rounds)])
        out.append(choice)
    return out, [q // rounds for q in range(cells * rounds)]


def _fof_statistic(choice: np.ndarray, key: str):
    fof, table, cells, k, rounds = _fof_setup()
    cell_of = np.arange(cells * rounds) // rounds
    onehot = np.zeros((cells * rounds, cells, k + 2, 2))
    onehot[np.arange(cells * rounds), cell_of, choice, 0] = 1.0

    def values(weights: np.ndarray) -> dict[str, np.ndarray]:
        counts = np.tensordot(weights.astype(np.float64), onehot, axes=(1, 0))
        return {key: np.asarray(fof.scores_from_counts(counts, table, True, distance="none")[key])}
    return values


def fof_truth(gamma: float, n: int = 40_000, seed: int = 97, key: str = "s_fair") -> float:
    """Expected plug-in of ``key`` at the design, averaged over the model's own cell effects."""
    fof, table, cells, k, rounds = _fof_setup()
    rng = np.random.default_rng(seed)
    values = []
    for _ in range(n // 1000):
        probs = _fof_probs(gamma, rng.normal(0, 0.3, (cells, k)))
        counts = np.zeros((1000, cells, k + 2, 2), dtype=np.int64)
        for c in range(cells):
            counts[:, c, :k, 0] = rng.multinomial(rounds, probs[c], size=1000)
        values.append(fof.scores_from_counts(counts, table, True, distance="none")[key])
    return float(np.mean(values))


def reflect_wins(rng, betas: tuple[np.ndarray, np.ndarray], per_occupation: int = 8):
    """Per-template win matrices ``(T, 10, 10)`` of two 2AFC models on the same 6 x ``per_occupation``
    templates (:func:`scripts.calibration.reflect.simulate_2afc`: model m's group effects ``betas[m]``, each
    model with its own portrait effects, sd 0.5 logit, position bias and 5 % refusals), and the templates'
    occupations (the strata)."""
    from lm_eval_bias.reflect import twoafc
    from scripts.calibration import reflect as sim

    out, strata = [], None
    for beta in betas:
        table = twoafc.twoafc_count_table(sim.simulate_2afc(rng, beta, 0.5, per_occupation))
        out.append(table.counts["wins"])
        strata = list(table.strata)
    return out, strata


def _wins_statistic(wins: np.ndarray, key: str):
    """Batched 2AFC key (Pol, Ext: :func:`lm_eval_bias.reflect.twoafc.wins_metrics_batch`, the task's formulas)
    of the template-weighted sum of ``wins``."""
    from lm_eval_bias.reflect import twoafc

    flat = np.asarray(wins, dtype=np.float64).reshape(len(wins), -1)
    size = wins.shape[1:]

    def values(weights: np.ndarray) -> dict[str, np.ndarray]:
        return {key: twoafc.wins_metrics_batch((weights.astype(np.float64) @ flat).reshape(-1, *size))[key]}
    return values


def _wins_exchange(a: np.ndarray, b: np.ndarray, key: str):
    """Batched ``difference(masks)`` of :func:`lm_eval_bias.core.paired.exchange_test` for a 2AFC key: model a'
    takes model b's win matrices in the templates with mask 1 (and b' model a's)."""
    from lm_eval_bias.reflect import twoafc

    fa, fb = (np.asarray(x, dtype=np.float64).reshape(len(x), -1) for x in (a, b))
    size = a.shape[1:]
    total_a, total_b, delta = fa.sum(axis=0), fb.sum(axis=0), fb - fa

    def difference(masks: np.ndarray) -> dict[str, np.ndarray]:
        moved = masks.astype(np.float64) @ delta
        first = twoafc.wins_metrics_batch((total_a + moved).reshape(-1, *size))[key]
        second = twoafc.wins_metrics_batch((total_b - moved).reshape(-1, *size))[key]
        return {key: first - second}
    return difference


def magnitude_tie_rows(n_seeds: int, n_boot: int, seed: int, per_occupation: int = 8) -> list[dict]:
    """The leaderboard's tie test for REFLECT's 2AFC magnitudes (``polarization``, ``extreme_cell_rate``: a
    difference of two plug-ins, shown without an interval) under identical models, with no bias, at the
    mild profile's Pol of about 0.10 (scale 0.83) and at the strong profile (cells near 0.9, where Ext moves):
    rejection at 5 %. Each model has its own portrait effects drawn from the same law, so the two plug-ins
    have the same expectation (the test's null)."""
    from lm_eval_bias.core.paired import exchange_test
    from lm_eval_bias.reflect.schema import OCCUPATIONS
    from scripts.calibration import reflect as sim

    rows = []
    design = (f"{len(OCCUPATIONS) * per_occupation} templates ({len(OCCUPATIONS)} occupations x {per_occupation} photos) "
              "x 45 pairs x 2 orders, templates resampled within occupation")
    for label, beta in (("no bias", 0.0 * sim.BASE_2AFC), ("Pol about 0.10 (0.83 x the mild profile)", 0.83 * sim.BASE_2AFC),
                        ("strong bias (Ext 13/45 cells, several near 0.9)", sim.STRONG_2AFC)):
        hits = {k: [] for k in ("polarization", "extreme_cell_rate")}
        exchange_hits = {k: [] for k in hits}
        estimates = {k: [] for k in hits}
        for s in range(seed, seed + n_seeds):
            rng = np.random.default_rng([s, 31])
            (a, b), strata = reflect_wins(rng, (beta, beta), per_occupation)
            for key in hits:
                diff = paired_cluster_bootstrap(_wins_statistic(a, key), _wins_statistic(b, key), strata, n_boot,
                                                s + 10_000, [key], batched=True)[key]
                estimates[key].append(diff.estimate)
                hits[key].append(float(diff.p_value < 0.05) if math.isfinite(diff.p_value) else math.nan)
                p = exchange_test(_wins_exchange(a, b, key), len(strata), n_boot, s + 20_000, [key], batched=True)[key]
                exchange_hits[key].append(float(p < 0.05) if math.isfinite(p) else math.nan)
        for key in hits:
            # Ext without strong bias: no cell near 0.1 / 0.9, so both plug-ins are 0 in (nearly) every run, every
            # exchange ties with the observation (mid-p 1/2) and the test cannot reject: a diagnostic, not a level check
            degenerate = key == "extreme_cell_rate" and not label.startswith("strong")
            note = ("rejection at 5 % under identical models: the leaderboard's tie test of a magnitude (the two "
                    "models' answers exchanged template by template, mid-p for ties)")
            if degenerate:
                note += "; diagnostic: Ext is 0 for both models in nearly every run, so the test cannot reject"
            rows.append(_row(f"REFLECT 2AFC {key} (plug-in): exchange test, identical models", "test", design,
                             f"{label}; each model its own portrait effects (sd 0.5 logit), position bias 0.3, "
                             "5 % refusals; identical models", math.nan, estimates[key], exchange_hits[key], n_seeds,
                             n_boot, seed, note, role=DIAGNOSTIC_ROLE if degenerate else DEFAULT_ROLE))
        for key in hits:
            # Ext without strong bias: no cell near 0.1 / 0.9, so both plug-ins are 0 in (nearly) every run, the
            # difference is 0 and the test has nothing to reject: a diagnostic, not a level check
            rows.append(_row(f"REFLECT 2AFC {key} (plug-in): paired test, identical models", "test", design,
                             f"{label}; each model its own portrait effects (sd 0.5 logit), position bias 0.3, "
                             "5 % refusals; identical models", math.nan, estimates[key], hits[key], n_seeds, n_boot,
                             seed, "diagnostic since 1 Dec 2026: the paired bootstrap t-test the exchange test replaced "
                             "for magnitudes (conservative near 0: the replicates of |·| spread too wide)",
                             role=DIAGNOSTIC_ROLE))
    return rows


# -- the exchange test of FACT-OR-FAIR's s_fair and of VIGNETTE's decision spreads (added 1 Dec 2026) ----------
def _fof_onehot(choice: np.ndarray) -> np.ndarray:
    """``(queries, cells, k + 2, 2)`` counts of each query of :func:`fof_counts` (its chosen group in its cell)."""
    fof, table, cells, k, rounds = _fof_setup()
    out = np.zeros((cells * rounds, cells, k + 2, 2))
    out[np.arange(cells * rounds), np.arange(cells * rounds) // rounds, choice, 0] = 1.0
    return out


def _fof_exchange(a: np.ndarray, b: np.ndarray, key: str):
    """Batched ``difference(masks)`` of :func:`lm_eval_bias.core.paired.exchange_test` for a FACT-OR-FAIR score
    (:func:`lm_eval_bias.fact_or_fair.stats.scores_from_counts`, the task's formulas) of the per-query choices
    ``a``, ``b`` of :func:`fof_counts`: model a' takes model b's answer in the queries with mask 1 (and b' model
    a's); the queries are the clusters (:data:`lm_eval_bias.report.intervals.CLUSTERING`)."""
    fof, table, *_ = _fof_setup()
    oa, ob = _fof_onehot(a), _fof_onehot(b)
    total_a, total_b, delta = oa.sum(axis=0), ob.sum(axis=0), ob - oa

    def difference(masks: np.ndarray) -> dict[str, np.ndarray]:
        moved = np.tensordot(masks.astype(np.float64), delta, axes=(1, 0))
        first = fof.scores_from_counts(total_a + moved, table, True, distance="none")[key]
        second = fof.scores_from_counts(total_b - moved, table, True, distance="none")[key]
        return {key: np.asarray(first - second, dtype=float)}
    return difference


FOF_TASK = "fact_or_fair_objective_race"


def fof_records(choice: np.ndarray) -> list[dict]:
    """``FOF_TASK``'s logged records of the per-query choices of :func:`fof_counts` (cell c = statistic S{c // 2},
    the highest side for even c; true group the class c % 2, as the simulated table), one query id per query."""
    from lm_eval_bias.fact_or_fair.tasks import CLASSES

    fof, table, cells, k, rounds = _fof_setup()
    classes = CLASSES["race"]
    return [{"doc_id": f"q{q:03d}", "query_id": f"q{q:03d}", "attribute": "race", "statistic": f"S{q // rounds // 2}",
             "side": "highest" if (q // rounds) % 2 == 0 else "lowest", "status": "valid", "chosen": classes[int(c)],
             "true_group": classes[(q // rounds) % 2], "context": None, "background_group": None, "truncated": False}
            for q, c in enumerate(choice)]


def decision_answers(rng, theta: np.ndarray, left: np.ndarray, right: np.ndarray, act: np.ndarray,
                     questions: int | None = None, nuisance: dict | None = None) -> np.ndarray:
    """One model's answers (1: the left person chosen; doc d asks pair d // questions) to the image pairs
    (``left``, ``right``, activity ``act``) of :func:`scripts.calibration.vignette.sample_real_pairs`: the draws of
    :func:`scripts.calibration.vignette.real_decision_table` after its pairs, in its order (its own image,
    question-side and pair effects, then the answers), so that two models answer the same pairs
    (:func:`check_exchange_matches_report` asserts the table is that function's)."""
    from scripts.calibration import vignette as sim

    questions = sim.N_QUESTIONS if questions is None else questions
    nuisance = sim.REAL_NUISANCE if nuisance is None else nuisance
    names, _ = sim.real_identities()
    image = rng.normal(0, nuisance["image_sd"], size=(len(names), sim.N_ROLE_ACTIVITIES))
    q_side = rng.normal(0, nuisance["question_sd"], questions)
    base = (0.5 + nuisance["left"] + (theta[left] - theta[right]) / 2 + rng.normal(0, nuisance["pair_sd"], left.size)
            + (image[left, act] - image[right, act]) / 2)
    q = np.repeat(np.arange(left.size), questions)
    p = np.clip(base[q] + np.tile(q_side, left.size), 0, 1)
    return (rng.random(q.size) < p).astype(int)


def vignette_decision_tables(rng, theta: np.ndarray, per_identity: int = 2):
    """Option tables of ``vignette_decision`` (:func:`scripts.calibration.vignette.real_decision_table`'s law) of two
    models on the same image pairs (the task's default budget: ``per_identity`` 2), each model with its own
    image, question-side and pair effects, and the number of pairs."""
    from scripts.calibration import vignette as sim

    names, dims = sim.real_identities()
    left, right, act, _ = sim.sample_real_pairs(rng, per_identity)
    q = np.repeat(np.arange(left.size), sim.N_QUESTIONS)
    tables = [sim._option_frame(names, dims, left, right, act, q, decision_answers(rng, theta, left, right, act))
              for _ in range(2)]
    return tables, left.size


def _pair_order(design, n_pairs: int) -> np.ndarray:
    """Row of ``design`` (its pair ids sorted as strings) of pair 0 .. n_pairs - 1 (ids ``str(p)``)."""
    position = {str(p): i for i, p in enumerate(design.pair_ids)}
    return np.array([position[str(p)] for p in range(n_pairs)])


def _spread_exchange(table_a, table_b, n_pairs: int, keys: tuple[str, ...] | None = None):
    """Batched ``difference(masks)`` of :func:`lm_eval_bias.core.paired.exchange_test` for the decision paradigm's
    ``selection_spread_<dimension>`` (the task's metric: :func:`lm_eval_bias.vignette.stats.spread_by_stratum` of
    :func:`~lm_eval_bias.vignette.stats.identity_rates` of the :func:`~lm_eval_bias.vignette.stats.pair_design`
    counts, as :func:`lm_eval_bias.vignette.analysis._spreads`); mask column p exchanges image pair p (the
    clusters), i.e. model a' takes model b's counts of that pair and b' model a's."""
    from lm_eval_bias.vignette import stats as vg

    da, db = vg.pair_design(table_a), vg.pair_design(table_b)
    same = (np.array_equal(da.pair_ids, db.pair_ids) and np.array_equal(da.group_identity, db.group_identity)
            and np.array_equal(da.group_context, db.group_context) and (da.n0 != db.n0).nnz == 0)
    if not same:
        raise ValueError("the two models' option tables do not have the same docs")
    order = _pair_order(da, n_pairs)
    xa, n = vg.observed_counts(da)
    xb, _ = vg.observed_counts(db)
    delta = (db.x0 - da.x0).tocsr()[order]  # pairs (in pair order) x groups

    def spreads(x: np.ndarray) -> dict[str, np.ndarray]:
        found = vg.spread_by_stratum(da, vg.identity_rates(da, x, np.broadcast_to(n, x.shape)))
        return {f"selection_spread_{d}": v for d, v in found.items()}

    def difference(masks: np.ndarray) -> dict[str, np.ndarray]:
        moved = np.asarray((delta.T @ masks.T.astype(np.float64)).T)
        first, second = spreads(xa + moved), spreads(xb - moved)
        return {k: first[k] - second[k] for k in (keys or first)}
    return difference


VIGNETTE_TASK = "vignette_decision"


def vignette_records(table) -> list[dict]:
    """``VIGNETTE_TASK``'s logged records of an option table of :func:`vignette_decision_tables` (doc d of pair
    d // 6 asks question d % 6 about the pair's activity; every doc answered)."""
    from scripts.calibration import vignette as sim

    left = table.iloc[: len(table) // 2]
    right = table.iloc[len(table) // 2:]
    out = []
    for d, (l_row, r_row) in enumerate(zip(left.itertuples(index=False), right.itertuples(index=False))):
        pair = int(l_row.pair_id)
        gender = str(l_row.identity).split(":")[0]
        out.append({"doc_id": f"d{pair:04d}-{d % sim.N_QUESTIONS}", "pair_id": f"p{pair:04d}", "paradigm": "decision",
                    "pair_kind": "identity", "gender": gender, "dimension": l_row.dimension, "left": l_row.identity,
                    "right": r_row.identity, "question_type": "identity_choice", "parameter": f"role{d % sim.N_QUESTIONS}",
                    "context": str(l_row.context), "option_activity": None, "asked": None, "direction": None,
                    "status": "valid", "chosen_identity": l_row.identity if l_row.selected else r_row.identity,
                    "chosen_activity": None, "correct": None})
    return out


def _report_difference(task: str, records_a: list[dict], records_b: list[dict], mask: np.ndarray, keys) -> dict:
    """metric(a') − metric(b') of :func:`lm_eval_bias.samples.result_values` with the records of the clusters
    flagged in ``mask`` exchanged, as :func:`lm_eval_bias.report.comparison.paired_comparison` does (clusters by
    :func:`lm_eval_bias.report.intervals.clusters_of` of the records, in their order)."""
    from lm_eval_bias import samples
    from lm_eval_bias.report.intervals import clusters_of, point_estimates_only

    family = samples.task_family(task)
    _, members_a, _ = clusters_of(records_a, family)
    _, members_b, _ = clusters_of(records_b, family)
    first = [r for swap, ca, cb in zip(mask, members_a, members_b) for r in (cb if swap else ca)]
    second = [r for swap, ca, cb in zip(mask, members_a, members_b) for r in (ca if swap else cb)]
    with point_estimates_only():
        va, vb = samples.result_values(task, first), samples.result_values(task, second)
    return {k: va[k] - vb[k] for k in keys}


def check_exchange_matches_report(seed: int = 1, n_draws: int = 12, vignette: bool = True) -> dict:
    """Asserts that the batched differences of :func:`_fof_exchange` and :func:`_spread_exchange` are the
    report's (:func:`_report_difference`: ``samples.result_values`` of the exchanged records, for the observation
    and one random mask), that :func:`lm_eval_bias.report.comparison.paired_comparison`'s ``exchange_p`` equals
    :func:`lm_eval_bias.core.paired.exchange_test` on them (``n_draws`` draws), and that
    :func:`vignette_decision_tables` draws :func:`scripts.calibration.vignette.real_decision_table`'s table.
    Returns the compared values."""
    from lm_eval_bias.core.paired import exchange_test
    from lm_eval_bias.report.comparison import paired_comparison

    rng = np.random.default_rng([seed, 43])
    found: dict = {}
    (a, b), strata = fof_counts(rng, (1.0, 1.0))
    records_a, records_b = fof_records(a), fof_records(b)
    mask = rng.integers(0, 2, len(strata))
    batched = _fof_exchange(a, b, "s_fair")
    for m in (np.zeros(len(strata), dtype=int), mask):
        mine = float(batched(m[None, :])["s_fair"][0])
        theirs = _report_difference(FOF_TASK, records_a, records_b, m, ["s_fair"])["s_fair"]
        assert math.isclose(mine, theirs, rel_tol=1e-9, abs_tol=1e-12), (mine, theirs)
        found.setdefault("fof_differences", []).append((mine, theirs))
    p_report = paired_comparison(FOF_TASK, records_a, records_b, ["s_fair"], n_boot=n_draws, seed=seed + 5,
                                 exchange_keys=["s_fair"]).exchange_p["s_fair"]
    p_mine = exchange_test(batched, len(strata), n_draws, seed + 5, ["s_fair"], batched=True)["s_fair"]
    assert math.isclose(p_report, p_mine), (p_report, p_mine)
    found["fof_p"] = (p_mine, p_report)
    if not vignette:
        return found
    from scripts.calibration import vignette as sim

    theta = sim.real_theta(0.3)
    reference = sim.real_decision_table(np.random.default_rng([seed, 44]), theta)
    (first, _), _ = vignette_decision_tables(np.random.default_rng([seed, 44]), theta)
    import pandas.testing

    pandas.testing.assert_frame_equal(reference, first)
    (ta, tb), n_pairs = vignette_decision_tables(rng, theta)
    keys = [f"selection_spread_{d}" for d in ("race_ethnicity_color", "socioeconomic", "gender_and_sex")]
    records_a, records_b = vignette_records(ta), vignette_records(tb)
    batched = _spread_exchange(ta, tb, n_pairs, tuple(keys))
    mask = rng.integers(0, 2, n_pairs)
    for m in (np.zeros(n_pairs, dtype=int), mask):
        mine = {k: float(v[0]) for k, v in batched(m[None, :]).items()}
        theirs = _report_difference(VIGNETTE_TASK, records_a, records_b, m, keys)
        for k in keys:
            assert math.isclose(mine[k], theirs[k], rel_tol=1e-9, abs_tol=1e-9), (k, mine[k], theirs[k])
        found.setdefault("vignette_differences", []).append((mine, theirs))
    key = keys[0]
    p_report = paired_comparison(VIGNETTE_TASK, records_a, records_b, [key], n_boot=n_draws, seed=seed + 6,
                                 exchange_keys=[key]).exchange_p[key]
    p_mine = exchange_test(batched, n_pairs, n_draws, seed + 6, [key], batched=True)[key]
    assert math.isclose(p_report, p_mine), (p_report, p_mine)
    found["vignette_p"] = (p_mine, p_report)
    return found


#: the VIGNETTE dimension of the default exchange rows (14 + 14 identities, 56 of the 658 image pairs at
#: pairs_per_identity 2, 336 of the 3,948 at 12); the
#: pooled diagnostic row covers the other dimensions too
VIGNETTE_DIMENSION = "race_ethnicity_color"
#: the dimension left out of the pooled row: its test cannot reject at the default budget
VIGNETTE_DEGENERATE = "gender_and_sex"


def exchange_tie_rows(n_seeds: int, n_boot: int, seed: int, quick: bool = False, vignette_budget: int = 2,
                      fof: bool = True) -> list[dict]:
    """The leaderboard's tie test of a plug-in magnitude (:func:`lm_eval_bias.core.paired.exchange_test`, as
    :func:`magnitude_tie_rows` for REFLECT) for FACT-OR-FAIR's ``s_fair`` (the design of the s_fair rows, queries
    exchanged) and VIGNETTE's decision spreads (``vignette_decision`` at the default budget, image pairs exchanged)
    under two identical models, each with its own effects drawn from the same law, at no bias and at a clear bias
    shared by both: rejection at 5 % (and a diagnostic row pooling the decision spreads of the dimensions with more
    than two identities). ``quick``: the FACT-OR-FAIR rows only. ``vignette_budget``: the decision task's
    pairs_per_identity (2, the default until 1 Dec 2026, on the stream ``[s, 42]``; 12, the default since, on
    ``[s, 42, 12]``); ``fof``: whether to run the FACT-OR-FAIR rows."""
    from lm_eval_bias.core.paired import exchange_test
    from scripts.calibration import vignette as sim

    rows = []
    note = ("rejection at 5 % under identical models: the leaderboard's tie test of a magnitude (the two models' "
            "answers exchanged {unit} by {unit}, mid-p for ties)")
    fof_design = ("108 queries (18 statistics x 2 sides x 3 rounds, 4 race groups), each query a cluster exchanged "
                  "between the models (queries resampled within statistic x side)")
    for label, gamma in (("no bias (gamma 0)", 0.0), ("clear bias (gamma 1)", 1.0)) if fof else ():
        hits, estimates = [], []
        for s in range(seed, seed + n_seeds):
            rng = np.random.default_rng([s, 41])
            (a, b), strata = fof_counts(rng, (gamma, gamma))
            difference = _fof_exchange(a, b, "s_fair")
            estimates.append(float(difference(np.zeros((1, len(strata))))["s_fair"][0]))
            p = exchange_test(difference, len(strata), n_boot, s + 20_000, ["s_fair"], batched=True)["s_fair"]
            hits.append(float(p < 0.05) if math.isfinite(p) else math.nan)
        rows.append(_row("FACT-OR-FAIR objective race s_fair (plug-in): exchange test, identical models", "test",
                         fof_design, f"{label}; P(group) = softmax(gamma * shared cell preference (sd 1) + model's own "
                         "cell effect (sd 0.3, shared by the cell's 3 queries)); identical models (the same gamma, "
                         "each its own cell effects)", math.nan, estimates, hits, n_seeds, n_boot, seed,
                         note.format(unit="query")))
    if quick:
        return rows
    seed += 1
    n_dims = len(set(sim.real_identities()[1]))
    budget = vignette_budget
    which = "the default budget" if budget == sim.DECISION_DEFAULT_BUDGET else "the default budget until 1 Dec 2026"
    vignette_design = (f"vignette_decision at {which}: 329 identities in 15 gender x dimension strata, "
                       f"pairs_per_identity {budget} -> {329 * budget} identity-contrast image pairs x {sim.N_QUESTIONS} role questions; "
                       "each image pair a cluster exchanged between the models (image pairs resampled within "
                       "dimension)")
    dgp = ("P(left chosen) = 0.5 + side 0.10 + model's question-side effect (sd 0.05) + (theta_L - theta_R) / 2 + "
           "model's pair effect (sd 0.05) + model's image (identity x activity) effect (sd 0.05, half difference), "
           "clipped; identical models (the same theta, each its own effects)")
    for label, rms in (("no bias (theta 0)", 0.0), ("strong bias (theta rms 0.3 within every stratum, shared)", 0.3)):
        theta = sim.real_theta(rms)
        hits: dict[str, list] = {}
        estimates: dict[str, list] = {}
        for s in range(seed, seed + n_seeds):
            rng = np.random.default_rng([s, 42] if budget == 2 else [s, 42, budget])
            (ta, tb), n_pairs = vignette_decision_tables(rng, theta, per_identity=budget)
            difference = _spread_exchange(ta, tb, n_pairs)
            observed = difference(np.zeros((1, n_pairs), dtype=np.int8))
            p = exchange_test(difference, n_pairs, n_boot, s + 20_000, list(observed), batched=True)
            for k in observed:
                estimates.setdefault(k, []).append(float(observed[k][0]))
                hits.setdefault(k, []).append(float(p[k] < 0.05) if math.isfinite(p[k]) else math.nan)
        key = f"selection_spread_{VIGNETTE_DIMENSION}"
        rows.append(_row(f"VIGNETTE decision {key} (plug-in): exchange test, identical models", "test", vignette_design,
                         f"{label}; {dgp}", math.nan, estimates[key], hits[key], n_seeds, n_boot, seed,
                         note.format(unit="image pair")))
        pooled = [k for k in sorted(hits) if k != f"selection_spread_{VIGNETTE_DEGENERATE}"]
        per_seed = [[hits[k][i] for k in pooled] for i in range(n_seeds)]
        rates = ", ".join(f"{k[len('selection_spread_'):]} {np.nanmean(hits[k]):.3f}" for k in sorted(hits))
        rows.append(_row(f"VIGNETTE decision selection_spread_<dimension> (plug-in), {len(pooled)} dimensions pooled: "
                         "exchange test, identical models", "test", vignette_design, f"{label}; {dgp}", math.nan,
                         [e for k in pooled for e in estimates[k]], [h for row in per_seed for h in row],
                         n_seeds, n_boot, seed, note.format(unit="image pair") + f"; diagnostic: the tests of {len(pooled)} "
                         f"of the {n_dims} dimensions pooled (one a dimension and seed, seed-clustered MC SE), all but "
                         f"{VIGNETTE_DEGENERATE} " + (
                             "(2 male identities, 4 image pairs: up to the sign of the difference 8 arrangements of "
                             "equal probability, so the exact mid-p is at least 1/16 and the 200 draws reject only by "
                             "their Monte Carlo noise)" if budget == 2 else
                             f"(2 male identities, {2 * budget} image pairs: a spread of one pair of identities, "
                             "kept out as at pairs_per_identity 2)") + f"; per dimension: {rates}",
                         role=DIAGNOSTIC_ROLE, hits_per_seed=per_seed))
    return rows


# -- rows ---------------------------------------------------------------------------------------------
def _row(quantity, kind, design, dgp, truth, estimates, hits, n_seeds, n_boot, seed, note="",
         role: str = DEFAULT_ROLE, hits_per_seed=None) -> dict[str, Any]:
    return rate_row(BENCHMARK, quantity, kind, design, dgp, truth, estimates, hits, n_seeds, n_boot, seed, note,
                    role=role, hits_per_seed=hits_per_seed)


#: why the interval rows of a magnitude's difference are diagnostics: the leaderboard shows the tie test of a
#: difference of two plug-in magnitudes but no interval of it (lm_eval_bias.report.intervals.DIFFERENCE_OF_MAGNITUDES)
MAGNITUDE_INTERVAL_NOTE = ("diagnostic since 1 Dec 2026: the leaderboard shows no interval of a difference of two "
                           "plug-in magnitudes (it targets the difference of their expectations at the design); the row "
                           "checks the paired bootstrap's SE on a non-linear statistic, and the test row is the tie rule")


#: why the t-test row of a magnitude's difference is a diagnostic: the leaderboard decides the tie of two plug-in
#: magnitudes by the exchange test (:func:`exchange_tie_rows` calibrates it for FACT-OR-FAIR's s_fair)
MAGNITUDE_TEST_NOTE = ("diagnostic since 1 Dec 2026: the leaderboard tests a magnitude's tie by the exchange test (the "
                       "two models' answers exchanged query by query, rows 'exchange test, identical models'), not by "
                       "this paired bootstrap t-test")


def _design_rows(name: str, key: str, simulate, truth_of, null: tuple[float, float], real: tuple[float, float],
                 design: str, dgp: str, n_seeds: int, n_boot: int, seed: int, statistic=None,
                 magnitude: bool = False) -> list[dict]:
    """Interval and test rows of one design (``magnitude``: the key is a plug-in magnitude, whose difference the
    leaderboard tests but shows no interval of, so the interval rows are diagnostics)."""
    rows = []
    for label, params in (("identical models", null), ("real difference", real)):
        truth = truth_of(params[0]) - truth_of(params[1])
        estimates, covered, rejected = [], [], []
        for s in range(seed, seed + n_seeds):
            rng = np.random.default_rng(s)
            (a, b), strata = simulate(rng, params)
            make = statistic or (lambda data, key: _ratio(*data, key))
            diff = paired_cluster_bootstrap(make(a, key), make(b, key), strata, n_boot, s + 10_000, [key],
                                            batched=True)[key]
            estimates.append(diff.estimate)
            covered.append(covers(diff.ci_low, diff.ci_high, truth))
            rejected.append(float(diff.p_value < 0.05) if math.isfinite(diff.p_value) else math.nan)
        dgp_text = f"{dgp}; {label} ({', '.join(f'{p:g}' for p in params)})"
        rows.append(_row(f"{name}: paired interval of a − b, {label}", "interval", design, dgp_text, truth, estimates,
                         covered, n_seeds, n_boot, seed, MAGNITUDE_INTERVAL_NOTE if magnitude else "",
                         role=DIAGNOSTIC_ROLE if magnitude else DEFAULT_ROLE))
        if label == "identical models":
            rows.append(_row(f"{name}: paired test, {label}", "test", design, dgp_text, math.nan, estimates, rejected,
                             n_seeds, n_boot, seed, MAGNITUDE_TEST_NOTE if magnitude else
                             "rejection at 5 % under identical models (the leaderboard's tie rule)",
                             role=DIAGNOSTIC_ROLE if magnitude else DEFAULT_ROLE))
    return rows


# -- the leaderboard's other headline differences (added 2 Dec 2026) ------------------------------------------
#: the leaderboard's headline keys shown with the paired interval of a difference (the report's headline keys,
#: ``report.card.SECTIONS``' ``HEADLINE``, less the plug-in magnitudes), by task family: the name of the design
#: of this module that calibrates each (rows "<name>: paired interval of a − b, ..." and "<name>: paired test, ...")
LEADERBOARD_INTERVAL_DESIGNS = {
    "2afc": {"male_win_rate": "REFLECT 2AFC male_win_rate", "retained_rate": "REFLECT 2AFC retained_rate"},
    "mcq": {"gap_male": "REFLECT MCQ (salary) gap_male", "valid_rate": "REFLECT MCQ (salary) valid_rate"},
    "salary": {"gap_pct_male": "REFLECT salary gap_pct_male", "gap_pct_black": "REFLECT salary gap_pct_black",
               "valid_rate": "REFLECT salary valid_rate"},
    "fact_or_fair": {"s_fact": "FACT-OR-FAIR objective race s_fact"},
    "cf_vqa": {"consistency": "CF-VQA consistency", "cc_auc": "CF-VQA cc_auc", "sr_auc": "CF-VQA sr_auc",
               "refusal_rate": "CF-VQA refusal_rate"},
    "vignette": {"valid_rate": "VIGNETTE decision valid_rate", "factuality_accuracy": "VIGNETTE factuality_accuracy"},
}
#: the headline keys that are plug-in magnitudes: the leaderboard shows no interval of their difference and decides
#: their ties by the exchange test (:func:`magnitude_tie_rows`, :func:`exchange_tie_rows`)
LEADERBOARD_MAGNITUDES = {"2afc": ("polarization", "extreme_cell_rate"), "mcq": ("jsd_male",),
                          "fact_or_fair": ("s_e", "s_kld", "s_fair", "distance"),
                          "vignette": ("selection_spread_race_ethnicity_color", "mean_abs_polarity_race_ethnicity_color")}

#: the share of calls refused in the MCQ, salary and Counterfactual VQA simulations below
REFUSAL_SHARE = 0.05


def rate_design(sizes: np.ndarray, strata: list, shared_sd: float, own_sd: float):
    """(simulate, truth_of) of a headline rate (events / trials summed over the clusters: ``retained_rate``,
    ``valid_rate``, ``refusal_rate``, ``factuality_accuracy``) of two models on the same clusters of ``sizes``
    trials: events ~ Binomial(size, logistic(beta_m + the cluster's shared effect (sd ``shared_sd``: a hard
    template or image pair is hard for both) + the model's own effect (sd ``own_sd``)))."""
    def simulate(rng, betas):
        shared = rng.normal(0, shared_sd, sizes.size)
        return [(rng.binomial(sizes, _logistic(beta + shared + rng.normal(0, own_sd, sizes.size))).astype(float),
                 sizes.astype(float)) for beta in betas], strata
    return simulate, lambda beta: _logit_normal_mean(beta, shared_sd, own_sd)


def _batch_statistic(data, key: str):
    """Batched ``key`` of a task's own vectorised metrics: ``data`` = (per-cluster count arrays {name: (n, ...)},
    the task's batch function of summed count tables {name: (B, ...)}); cluster weights (B, n) sum the counts."""
    counts, batch = data

    def values(weights: np.ndarray) -> dict[str, np.ndarray]:
        w = weights.astype(np.float64)
        return {key: np.asarray(batch({k: np.tensordot(w, v, axes=(1, 0)) for k, v in counts.items()})[key])}
    return values


#: ``focus_mcq_salary``'s simulation: option logits = template effect (sd 0.5 per option, shared by the two models)
#: + portrait effect (sd 0.5 per option, shared) + the model's own portrait effect (sd 0.3 per option) + beta_m x
#: (man: 1, woman: 0) x the centred bin index (A..F: -2.5..2.5)
MCQ_EFFECT_SD = (0.5, 0.5, 0.3)


def _mcq_probabilities(rng, beta: float, shared: np.ndarray) -> np.ndarray:
    """Option probabilities (T, 10, 6) of a model with gender effect ``beta`` and its own portrait effects."""
    from lm_eval_bias.reflect.schema import GROUPS

    man = np.asarray([g.gender == "man" for g in GROUPS], dtype=np.float64)
    own = rng.normal(0, MCQ_EFFECT_SD[2], shared.shape)
    return softmax(shared + own + beta * man[None, :, None] * (np.arange(6) - 2.5))


def _mcq_shared(rng, n: int) -> np.ndarray:
    return rng.normal(0, MCQ_EFFECT_SD[0], (n, 1, 6)) + rng.normal(0, MCQ_EFFECT_SD[1], (n, 10, 6))


def mcq_counts(rng, betas: tuple[float, float], occupations: int = 6, per_occupation: int = 8):
    """``focus_mcq_salary`` of two models on the same templates and portraits (one call a portrait, 5 % refused):
    each model's per-template count arrays (those of :func:`lm_eval_bias.reflect.mcq.mcq_count_table`) with the
    task's batch metrics, and the templates' occupations (the strata)."""
    from functools import partial

    from lm_eval_bias.reflect import mcq
    from scripts.calibration import reflect as reflect_sim

    n = occupations * per_occupation
    shared = _mcq_shared(rng, n)
    batch = partial(mcq._mcq_metrics_batch, options=mcq.SALARY_OPTIONS, option_values=mcq.SALARY_BIN_MIDPOINTS_USD)
    out = []
    for beta in betas:
        p = _mcq_probabilities(rng, beta, shared)
        valid = rng.random((n, 10)) >= REFUSAL_SHARE
        choice = reflect_sim._sample_options(rng, p)
        answers = np.zeros((n, 10, 6))
        t, g = np.nonzero(valid)
        np.add.at(answers, (t, g, choice[t, g]), 1.0)
        n_valid = valid.sum(axis=1).astype(np.float64)
        counts = {"answers": answers, "n_calls": np.full(n, 10.0), "n_valid": n_valid, "n_refusal": 10.0 - n_valid,
                  "n_invalid": np.zeros(n)}
        out.append((counts, batch))
    return out, [t // per_occupation for t in range(n)]


def mcq_gap_truth(beta: float, n: int = 20_000, seed: int = 95) -> float:
    """``gap_male`` of the population (the ratio of expectations the task's ratio of sums estimates): the mean
    bin midpoint (USD) of men's answers over women's, minus 1, over ``n`` simulated templates."""
    from lm_eval_bias.reflect import mcq
    from lm_eval_bias.reflect.schema import GROUPS

    rng = np.random.default_rng(seed)
    values = np.asarray([mcq.SALARY_BIN_MIDPOINTS_USD[o] for o in mcq.SALARY_OPTIONS])
    mean = (_mcq_probabilities(rng, beta, _mcq_shared(rng, n)) @ values).mean(axis=0)    # (10,) groups
    man = np.asarray([g.gender == "man" for g in GROUPS])
    return float(mean[man].mean() / mean[~man].mean() - 1.0)


#: ``focus_salary``'s simulation: a salary = the occupation's base x exp(delta_m x group effect + portrait effect
#: (sd 0.03, shared) + the model's own portrait effect (sd 0.02) + biography effect (sd 0.2, shared: the same 50
#: biographies) + noise (sd 0.1)), 5 % of calls refused; group effects in log salary
SALARY_GROUP_EFFECTS = {"man": 0.05, "Black": -0.04, "Latino": -0.02, "Middle_Eastern": -0.02, "White": 0.02}
SALARY_BASES = (40_000.0, 55_000.0, 70_000.0, 85_000.0, 100_000.0, 120_000.0)


def _salary_group_effects(delta: float) -> np.ndarray:
    from lm_eval_bias.reflect.schema import GROUPS

    return delta * np.asarray([SALARY_GROUP_EFFECTS.get(g.gender, 0.0) + SALARY_GROUP_EFFECTS.get(g.race, 0.0)
                               for g in GROUPS])


def salary_counts(rng, deltas: tuple[float, float], occupations: int = 6, per_occupation: int = 8, bios: int = 50):
    """``focus_salary`` of two models on the same templates, portraits and biographies: each model's per-template
    count arrays (those of :func:`lm_eval_bias.reflect.salary.salary_count_table`) with the task's batch metrics,
    and the templates' occupations (the strata)."""
    from lm_eval_bias.reflect import salary

    n = occupations * per_occupation
    occupation = np.arange(n) // per_occupation
    log_shared = (np.log(np.asarray(SALARY_BASES[:occupations]))[occupation][:, None, None]
                  + rng.normal(0, 0.03, (n, 10, 1)) + rng.normal(0, 0.2, (occupations, 1, bios))[occupation])
    out = []
    for delta in deltas:
        value = np.exp(log_shared + _salary_group_effects(delta)[None, :, None] + rng.normal(0, 0.02, (n, 10, 1))
                       + rng.normal(0, 0.1, (n, 10, bios)))
        valid = rng.random((n, 10, bios)) >= REFUSAL_SHARE
        sums, n_valid = np.zeros((n, occupations, 10)), np.zeros((n, occupations, 10))
        sums[np.arange(n), occupation] = (value * valid).sum(axis=2)
        n_valid[np.arange(n), occupation] = valid.sum(axis=2)
        calls = float(10 * bios)
        counts = {"sum": sums, "n_valid": n_valid, "n_calls": np.full(n, calls),
                  "n_refusal": calls - n_valid.sum(axis=(1, 2)), "n_invalid": np.zeros(n)}
        out.append((counts, salary._salary_metrics_batch))
    return out, [int(o) for o in occupation]


def salary_gap_truth(delta: float, key: str) -> float:
    """``gap_pct_male`` / ``gap_pct_black`` of the population, exact: every other effect multiplies the groups'
    expected salaries alike, so Gap% = (mean of exp(effect) over the group / over the reference - 1) x 100 in
    every occupation (men / women; Black / White)."""
    from lm_eval_bias.reflect.schema import GROUPS

    scale = np.exp(_salary_group_effects(delta))
    group, reference = ((lambda g: g.gender == "man", lambda g: g.gender == "woman") if key == "gap_pct_male"
                        else (lambda g: g.race == "Black", lambda g: g.race == "White"))
    mean = lambda member: np.mean([s for s, g in zip(scale, GROUPS) if member(g)])  # noqa: E731
    return float((mean(group) / mean(reference) - 1.0) * 100.0)


def fof_objective_choices(rng, deltas: tuple[float, float]):
    """FACT-OR-FAIR objective race of two models on the same 108 queries: P(group) = softmax(shared cell preference
    + the model's own cell effect (sd 0.3) + delta_m on the cell's true group) (:func:`_fof_setup`'s truths)."""
    fof, table, cells, k, rounds = _fof_setup()
    out = []
    for delta in deltas:
        probs = _fof_probs(1.0, rng.normal(0, 0.3, (cells, k)) + delta * np.eye(k)[table.truth])
        out.append(np.array([rng.choice(k, p=probs[c]) for c in range(cells) for _ in range(rounds)]))
    return out, [q // rounds for q in range(cells * rounds)]


def fof_fact_truth(delta: float, n: int = 20_000, seed: int = 94) -> float:
    """S_fact of the population: the mean over cells of P(true group) (every cell has 3 valid answers, so the
    plug-in is unbiased for it), own cell effects integrated over ``n`` draws."""
    fof, table, cells, k, rounds = _fof_setup()
    own = np.random.default_rng(seed).normal(0, 0.3, (n, cells, k))
    probs = softmax(FOF_SHARED[None] + own + delta * np.eye(k)[table.truth][None])
    return float(probs[:, np.arange(cells), table.truth].mean())


#: Counterfactual VQA's simulation: 1,609 image pairs in 5 categories x 3 option orders; each side refused with
#: probability 0.05 (answer None, confidence 0); otherwise the pair is answered consistently with probability
#: logistic(alpha_m + pair effect (sd 1, shared) + the model's own pair effect (sd 0.3)), and each side's
#: confidence is logistic(0.5 + 1.0 x consistent + N(0, 0.7^2)) rounded to 0.05 (confident when consistent)
CF_VQA_RUNS = 3


def cf_vqa_responses(rng, alphas: tuple[float, float], n_pairs: int = 1609, categories: int = 5):
    """Each model's :class:`lm_eval_bias.cf_vqa.stats.PairResponse` list on the same pairs, and the categories."""
    from lm_eval_bias.cf_vqa.stats import PairResponse

    shared = rng.normal(0, 1.0, n_pairs)
    out = []
    for alpha in alphas:
        p = _logistic(alpha + shared + rng.normal(0, 0.3, n_pairs))[:, None]
        consistent = rng.random((n_pairs, CF_VQA_RUNS)) < p
        refused = rng.random((n_pairs, CF_VQA_RUNS, 2)) < REFUSAL_SHARE
        conf = np.clip(np.round(20 * _logistic(0.5 + consistent[..., None]
                                                 + rng.normal(0, 0.7, (n_pairs, CF_VQA_RUNS, 2)))) / 20, 0.05, 1.0)
        conf = np.where(refused, 0.0, conf)
        out.append([PairResponse(f"p{i:06d}", None if refused[i, r, 0] else "A",
                                 None if refused[i, r, 1] else ("A" if consistent[i, r] else "B"),
                                 float(conf[i, r, 0]), float(conf[i, r, 1]), run=r, category=f"c{i % categories}")
                    for i in range(n_pairs) for r in range(CF_VQA_RUNS)])
    return out, [i % categories for i in range(n_pairs)]


def _cf_vqa_statistic(responses, key: str):
    """Batched ``key`` (``cc_auc``, ``sr_auc``) of :func:`lm_eval_bias.cf_vqa.stats.grid_metrics` (the task's
    pair-weighted metrics) of the pair-weighted responses (pairs in :func:`pair_grid`'s sorted order)."""
    from lm_eval_bias.cf_vqa import stats

    grid = stats.pair_grid(responses)

    def values(weights: np.ndarray) -> dict[str, np.ndarray]:
        return {key: stats.grid_metrics(grid, weights)[key]}
    return values


@functools.lru_cache(maxsize=16)
def cf_vqa_curve_truth(alpha: float, key: str, n_pairs: int = 300_000, seed: int = 93) -> float:
    """``cc_auc`` / ``sr_auc`` of the population: the plug-in on ``n_pairs`` simulated pairs (a smooth function of
    the confidence histograms on the 0.05 grid, so its error at this size is a few ten-thousandths)."""
    from lm_eval_bias.cf_vqa import stats

    (responses, _), _ = cf_vqa_responses(np.random.default_rng(seed), (alpha, alpha), n_pairs)
    return float(stats.grid_metrics(stats.pair_grid(responses))[key][0])


def headline_difference_rows(n_seeds: int, n_boot: int, seed: int, quick: bool = False) -> list[dict]:
    """The paired interval and tie test of the leaderboard's other headline keys (those with an interval of the
    difference: not plug-in magnitudes), each at its task's real design through the task's own batch metrics:
    REFLECT ``retained_rate`` (48 templates x 45 pairs), ``focus_mcq_salary``'s ``gap_male`` and ``valid_rate``
    (48 templates x 10 portraits), ``focus_salary``'s ``gap_pct_male``, ``gap_pct_black`` and ``valid_rate`` (48
    templates x 10 portraits x 50 biographies), FACT-OR-FAIR's ``s_fact`` (108 queries), Counterfactual VQA's
    ``cc_auc``, ``sr_auc`` and ``refusal_rate`` (1,609 pairs x 3 option orders), VIGNETTE's ``valid_rate`` (decision:
    3,948 image pairs x 6 docs) and ``factuality_accuracy`` (329 + 329 image pairs, 2 or 4 docs); the clusters and
    strata of :data:`lm_eval_bias.report.intervals.CLUSTERING`. Each design on its own seed stream ``seed + 10^5 x
    (i + 1)``; ``quick``: smaller designs and truths (a smoke test)."""
    from scripts.calibration import vignette as vignette_sim

    per, pairs, truth_pairs = (4, 200, 2_000) if quick else (8, 1609, 300_000)
    templates = 6 * per
    occupations = [t // per for t in range(templates)]
    _, dims = vignette_sim.real_identities()
    decision = np.repeat(dims, 2 if quick else 12).tolist()
    factuality = np.concatenate([dims, dims]).tolist()
    factuality_sizes = np.concatenate([np.full(dims.size, 2), np.full(dims.size, 4)])
    reflect = f"{templates} templates (6 occupations x {per})"
    specs = [
        ("REFLECT 2AFC retained_rate", "retained_rate", *rate_design(np.full(templates, 45), occupations, 0.5, 0.3),
         (1.5, 1.5), (1.5, 1.2), f"{reflect} x 45 pairs", "logit P(pair retained) = beta_m + template effect (sd 0.5, "
         "shared) + model's template effect (sd 0.3)", None),
        ("REFLECT MCQ (salary) valid_rate", "valid_rate", *rate_design(np.full(templates, 10), occupations, 0.5, 0.3),
         (3.0, 3.0), (3.0, 2.2), f"{reflect} x 10 portraits, one call each", "logit P(valid) = beta_m + template effect "
         "(sd 0.5, shared) + model's template effect (sd 0.3)", None),
        ("REFLECT MCQ (salary) gap_male", "gap_male", lambda rng, b: mcq_counts(rng, b, 6, per), mcq_gap_truth,
         (0.1, 0.1), (0.1, 0.0), f"{reflect} x 10 portraits, one call each, 6 salary bins, 5 % refused",
         "option logits = template (sd 0.5) + portrait (sd 0.5, shared) + model's portrait effect (sd 0.3) + beta_m x "
         "man x centred bin index", _batch_statistic),
        ("REFLECT salary valid_rate", "valid_rate", *rate_design(np.full(templates, 500), occupations, 0.5, 0.3),
         (3.0, 3.0), (3.0, 2.2), f"{reflect} x 10 portraits x 50 biographies", "logit P(valid) = beta_m + template "
         "effect (sd 0.5, shared) + model's template effect (sd 0.3)", None),
    ]
    for key in ("gap_pct_male", "gap_pct_black"):
        specs.append((f"REFLECT salary {key}", key, lambda rng, d: salary_counts(rng, d, 6, per),
                      lambda d, key=key: salary_gap_truth(d, key), (1.0, 1.0), (1.0, 0.5),
                      f"{reflect} x 10 portraits x 50 biographies, 5 % refused",
                      "log salary = occupation base + delta_m x (man +0.05, Black -0.04, Latino / Middle Eastern -0.02, "
                      "White +0.02) + portrait (sd 0.03, shared) + model's portrait effect (sd 0.02) + biography (sd "
                      "0.2, shared) + noise (sd 0.1)", _batch_statistic))
    specs.append(("FACT-OR-FAIR objective race s_fact", "s_fact", fof_objective_choices, fof_fact_truth, (1.0, 1.0),
                  (1.0, 0.5), "108 queries (18 statistics x 2 sides x 3 rounds), queries resampled within statistic x side",
                  "P(group) = softmax(shared cell preference + model's own cell effect (sd 0.3) + delta_m on the true "
                  "group)", _fof_statistic))
    for key in ("cc_auc", "sr_auc"):
        specs.append((f"CF-VQA {key}", key, lambda rng, a: cf_vqa_responses(rng, a, pairs),
                      lambda a, key=key: cf_vqa_curve_truth(a, key, truth_pairs), (1.5, 1.5), (1.5, 1.1),
                      f"{pairs} image pairs in 5 categories x {CF_VQA_RUNS} option orders",
                      "logit P(consistent) = alpha_m + pair effect (sd 1, shared) + model's pair effect (sd 0.3); 5 % "
                      "of sides refused (c = 0); confidence logistic(0.5 + consistent + N(0, 0.7^2)) on a 0.05 grid",
                      _cf_vqa_statistic))
    specs += [
        ("CF-VQA refusal_rate", "refusal_rate", *rate_design(np.full(pairs, 6), [i % 5 for i in range(pairs)], 1.0, 0.3),
         (-3.0, -3.0), (-3.0, -2.6), f"{pairs} image pairs in 5 categories x 3 option orders x 2 images",
         "logit P(refused) = beta_m + pair effect (sd 1, shared) + model's pair effect (sd 0.3)", None),
        ("VIGNETTE decision valid_rate", "valid_rate", *rate_design(np.full(len(decision), 6), decision, 1.0, 0.3),
         (4.0, 4.0), (4.0, 3.3), f"{len(decision)} image pairs x 6 docs in 8 bias dimensions",
         "logit P(valid) = beta_m + pair effect (sd 1, shared) + model's pair effect (sd 0.3)", None),
        ("VIGNETTE factuality_accuracy", "factuality_accuracy", *rate_design(factuality_sizes, factuality, 1.0, 0.3),
         (1.5, 1.5), (1.5, 1.2), "329 identity pairs x 2 docs + 329 identity-activity pairs x 4 docs in 8 bias dimensions",
         "logit P(correct) = beta_m + pair effect (sd 1, shared) + model's pair effect (sd 0.3)", None),
    ]
    rows = []
    for i, (name, key, simulate, truth_of, null, real, design, dgp, statistic) in enumerate(specs):
        rows += _design_rows(name, key, simulate, truth_of, null, real, design, dgp, n_seeds, n_boot,
                             seed + 100_000 * (i + 1), statistic=statistic)
    return rows


def run(n_seeds: int, n_boot: int, quick: bool, seed: int = 20260414) -> list[dict]:
    """Rows of the calibration table (``quick``: smaller designs, for a smoke test)."""
    from lm_eval_bias.report.intervals import DEFAULT_ITERS

    n_boot = min(n_boot, DEFAULT_ITERS)  # the report's default replicates for comparisons
    occupations, per_occupation, n_pairs = (3, 4, 200) if quick else (6, 8, 1609)
    rows = _design_rows(
        "REFLECT 2AFC male_win_rate", "male_win_rate",
        lambda rng, betas: twoafc_counts(rng, betas, occupations, per_occupation), twoafc_truth, (0.3, 0.3), (0.5, 0.2),
        f"{occupations * per_occupation} templates ({occupations} occupations x {per_occupation}) x 25 man-woman "
        "pairs x 2 orders, 90 % retained", "logit P(man) = beta_m + template effect (sd 0.5, shared) + model's template "
        "effect (sd 0.3)", n_seeds, n_boot, seed)
    rows += _design_rows(
        "CF-VQA consistency", "consistency",
        lambda rng, alphas: cf_vqa_counts(rng, alphas, n_pairs, 5), cf_vqa_truth, (1.5, 1.5), (1.6, 1.3),
        f"{n_pairs} image pairs in 5 categories", "logit P(consistent) = alpha_m + pair effect (sd 1, shared)",
        n_seeds, n_boot, seed + 1)
    rows += _design_rows(
        "FACT-OR-FAIR objective race s_fair (plug-in)", "s_fair", fof_counts, fof_truth, (1.0, 1.0), (0.5, 1.5),
        "108 queries (18 statistics x 2 sides x 3 rounds), queries resampled within statistic x side",
        "P(group) = softmax(gamma_m * shared cell preference + model's own cell effect, sd 0.3)",
        n_seeds, n_boot, seed + 2, statistic=_fof_statistic, magnitude=True)
    rows += magnitude_tie_rows(n_seeds, n_boot, seed + 3, per_occupation=per_occupation)
    # 4 x the seeds (Monte Carlo SE 0.69 points at 1,000): the first 250 of the FoF stream rejected 8.8 %
    rows += exchange_tie_rows(n_seeds if quick else 4 * n_seeds, n_boot, seed + 4, quick)
    rows += headline_difference_rows(n_seeds, n_boot, seed, quick)
    return rows


if __name__ == "__main__":
    quick = "--quick" in sys.argv
    if "--exchange-ties" in sys.argv:
        print(check_exchange_matches_report(vignette=not quick))
        budget = int(sys.argv[sys.argv.index("--vignette-budget") + 1]) if "--vignette-budget" in sys.argv else 2
        # --vignette-budget K: the VIGNETTE rows alone, at pairs_per_identity K (the FACT-OR-FAIR rows do not depend on it)
        chosen = exchange_tie_rows(20 if quick else 1000, 200, 20260418, quick, vignette_budget=budget,
                                   fof="--vignette-budget" not in sys.argv)
    else:
        chosen = run(20 if quick else 200, 200 if quick else 1000, quick)
    for row in chosen:
        print({k: row[k] for k in ("quantity", "kind", "truth", "mean_estimate", "coverage", "rejection_rate",
                                    "target_met")})
