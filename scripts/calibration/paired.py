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

import math
import sys
from typing import Any

import numpy as np

from lm_eval_bias.core.paired import paired_cluster_bootstrap
from scripts.calibration import DEFAULT_ROLE, rate_row

DIAGNOSTIC_ROLE = "diagnostic"

BENCHMARK = "paired"


def _logistic(x):
    return 1.0 / (1.0 + np.exp(-x))


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
    rng = np.random.default_rng(seed)
    return float(_logistic(beta + rng.normal(0, 0.5, n) + rng.normal(0, 0.3, n)).mean())


def cf_vqa_counts(rng, alphas: tuple[float, float], n_pairs: int, categories: int):
    shared = rng.normal(0, 1.0, n_pairs)
    out = [(rng.binomial(1, _logistic(alpha + shared)).astype(float), np.ones(n_pairs)) for alpha in alphas]
    return out, [p % categories for p in range(n_pairs)]


def cf_vqa_truth(alpha: float, n: int = 400_000, seed: int = 98) -> float:
    return float(_logistic(alpha + np.random.default_rng(seed).normal(0, 1.0, n)).mean())


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


# -- rows ---------------------------------------------------------------------------------------------
def _row(quantity, kind, design, dgp, truth, estimates, hits, n_seeds, n_boot, seed, note="",
         role: str = DEFAULT_ROLE) -> dict[str, Any]:
    return rate_row(BENCHMARK, quantity, kind, design, dgp, truth, estimates, hits, n_seeds, n_boot, seed, note,
                    role=role)


#: why the interval rows of a magnitude's difference are diagnostics: the leaderboard shows the tie test of a
#: difference of two plug-in magnitudes but no interval of it (lm_eval_bias.report.intervals.DIFFERENCE_OF_MAGNITUDES)
MAGNITUDE_INTERVAL_NOTE = ("diagnostic since 1 Dec 2026: the leaderboard shows no interval of a difference of two "
                           "plug-in magnitudes (it targets the difference of their expectations at the design); the row "
                           "checks the paired bootstrap's SE on a non-linear statistic, and the test row is the tie rule")


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
            covered.append(float(diff.ci_low <= truth <= diff.ci_high) if math.isfinite(diff.ci_low) else math.nan)
            rejected.append(float(diff.p_value < 0.05) if math.isfinite(diff.p_value) else math.nan)
        dgp_text = f"{dgp}; {label} ({', '.join(f'{p:g}' for p in params)})"
        rows.append(_row(f"{name}: paired interval of a − b, {label}", "interval", design, dgp_text, truth, estimates,
                         covered, n_seeds, n_boot, seed, MAGNITUDE_INTERVAL_NOTE if magnitude else "",
                         role=DIAGNOSTIC_ROLE if magnitude else DEFAULT_ROLE))
        if label == "identical models":
            rows.append(_row(f"{name}: paired test, {label}", "test", design, dgp_text, math.nan, estimates, rejected,
                             n_seeds, n_boot, seed, "rejection at 5 % under identical models (the leaderboard's tie rule)"))
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
    return rows


if __name__ == "__main__":
    quick = "--quick" in sys.argv
    for row in run(20 if quick else 200, 200 if quick else 1000, quick):
        print({k: row[k] for k in ("quantity", "kind", "truth", "mean_estimate", "coverage", "rejection_rate",
                                    "target_met")})
