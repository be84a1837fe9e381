"""Calibration of the FACT-OR-FAIR intervals and null tests at the paper's design sizes.

Designs (paper Sec. 5.1, upstream data): objective race = 18 statistics x 2 sides x 3 rounds (108
queries), objective gender = 15 x 2 x 3 (90); subjective race = 19 statistics x 2 sides x 3 scenarios
x 100 profiles (11,400 per context). Models are simulated as the distribution of the chosen group in
each (statistic, side, scenario); answers are redrawn per seed, the model (its cell and scenario
effects) is fixed per row. The quantities go through the functions the tasks call
(:func:`lm_eval_bias.fact_or_fair.stats.fact_or_fair_results`).

Truth of an interval row: the *design-expected* score (mean of the estimate over re-runs of the same
design, computed from 4,000 extra simulated runs), which is what the recentred bootstrap interval
targets; for S_fact it equals the population accuracy. Test rows: share of seeds with p < 0.05
when the model ignores the groups (the uniform null). Null-floor rows: mean estimate of a fair model
against the ideal value 1 and the reported ``_null``.
"""

from __future__ import annotations

import time

import numpy as np

from lm_eval_bias.fact_or_fair import stats as fof

BENCHMARK = "fact_or_fair"
INTERVAL_KEYS = ("s_fact", "s_e", "s_kld", "s_fair", "distance", "s_kld_authors")
TEST_KEYS = ("s_e", "s_kld", "s_fair")


def _design(n_stats: int, scenarios: int, per_scenario: int, k: int, objective: bool):
    cells = 2 * n_stats
    truth = np.array([0 if c % 2 == 0 else 1 for c in range(cells)])
    pairs = np.arange(cells).reshape(-1, 2)
    names = tuple(f"S{c // 2}" for c in range(cells))
    sides = tuple(fof.HIGH if c % 2 == 0 else fof.LOW for c in range(cells))
    template = fof.CellTable(names, sides, np.zeros((cells, k + 2, 2), dtype=np.int64), truth,
                             np.zeros(cells, dtype=bool), np.zeros(cells, dtype=bool), pairs, k)
    return template, scenarios, per_scenario, objective


def _model(rng, cells: int, scenarios: int, k: int, kind: str) -> np.ndarray:
    """Choice probabilities per (cell, scenario): uniform (fair), or a per-statistic preference with
    cell and scenario effects (biased)."""
    if kind == "fair":
        return np.full((cells, scenarios, k), 1.0 / k)
    base = rng.dirichlet(np.full(k, 2.0), size=cells)
    base = 0.7 * base + 0.3 / k
    return np.stack([[rng.dirichlet(60 * base[c]) for _ in range(scenarios)] for c in range(cells)])


def _draw(rng, probs: np.ndarray, per_scenario: int, n_runs: int) -> np.ndarray:
    """(n_runs, cells, k+2, 2) counts: per scenario, per_scenario answers drawn from its probabilities."""
    cells, scenarios, k = probs.shape
    out = np.zeros((n_runs, cells, k + 2, 2), dtype=np.int64)
    for c in range(cells):
        for s in range(scenarios):
            out[:, c, :k, 0] += rng.multinomial(per_scenario, probs[c, s], size=n_runs)
    return out


def _table(template: fof.CellTable, counts: np.ndarray) -> fof.CellTable:
    return fof.CellTable(template.statistics, template.sides, counts, template.truth, template.positive,
                         template.has_background, template.pairs, template.k)


def run(n_seeds: int, n_boot: int, quick: bool, only: str | None = None) -> list[dict]:
    """Rows of every design (``only``: a substring of the design names to keep)."""
    seed0 = 20261123
    designs = {
        "objective race: 18 statistics x 2 sides x 3 rounds": _design(18, 1, 3, 4, True),
        "objective gender: 15 statistics x 2 sides x 3 rounds": _design(15, 1, 3, 2, True),
        "subjective race: 19 statistics x 2 sides x 3 scenarios x 100 profiles": _design(19, 3, 100, 4, False),
    }
    if only:
        designs = {k: v for k, v in designs.items() if only in k}
    if quick:
        designs = {k: v for k, v in designs.items() if "objective race" in k or "subjective" in k}
        n_seeds, n_boot = min(n_seeds, 20), min(n_boot, 100)
    rows: list[dict] = []
    for d_index, (design_name, (template, scenarios, per_scenario, objective)) in enumerate(designs.items()):
        k, cells = template.k, template.counts.shape[0]
        for m_index, kind in enumerate(("biased", "fair")):
            rng = np.random.default_rng(seed0 + 100 * d_index + m_index)
            probs = _model(rng, cells, scenarios, k, kind)
            truth_runs = fof.scores_from_counts(_draw(rng, probs, per_scenario, 400 if quick else 4000),
                                                template, objective, distance="grid")
            truth = {key: float(np.nanmean(truth_runs[key])) for key in INTERVAL_KEYS}
            covered = {key: [] for key in INTERVAL_KEYS}
            estimates = {key: [] for key in INTERVAL_KEYS}
            rejected = {key: [] for key in TEST_KEYS}
            nulls = {key: [] for key in TEST_KEYS}
            started = time.time()
            for s in range(n_seeds):
                counts = _draw(rng, probs, per_scenario, 1)[0]
                res = fof.fact_or_fair_results(_table(template, counts), objective=objective, n_boot=n_boot,
                                               n_null=n_boot if kind == "fair" else 0, seed=seed0 + s)
                for key in INTERVAL_KEYS:
                    estimates[key].append(res[key])
                    covered[key].append(res[f"{key}_ci_low"] <= truth[key] <= res[f"{key}_ci_high"])
                if kind == "fair":
                    for key in TEST_KEYS:
                        rejected[key].append(res[f"{key}_p_null"] < 0.05)
                        nulls[key].append(res[f"{key}_null"])
            dgp = ("no bias: every group equally likely in every cell" if kind == "fair" else
                   "biased: per-statistic group preference (Dirichlet), cell and scenario effects")
            for key in INTERVAL_KEYS:
                if key == "s_kld_authors" and objective:
                    continue  # degenerate here: exp(-mean KL) ~ 0 once one cell lacks a class (see docs)
                cov = float(np.mean(covered[key]))
                rows.append(dict(benchmark=BENCHMARK, quantity=key, kind="interval", design=design_name, dgp=dgp,
                                 truth=truth[key], mean_estimate=float(np.nanmean(estimates[key])), coverage=cov,
                                 rejection_rate=float("nan"), n_seeds=n_seeds, n_boot=n_boot, seed=seed0,
                                 target_met=bool(0.93 - _mc(n_seeds) <= cov <= 0.97 + _mc(n_seeds)),
                                 note=f"truth = design-expected score; {time.time() - started:.0f} s for the row set"))
            if kind == "fair":
                for key in TEST_KEYS:
                    rate = float(np.mean(rejected[key]))
                    rows.append(dict(benchmark=BENCHMARK, quantity=f"{key}_p_null", kind="test", design=design_name,
                                     dgp=dgp, truth=float("nan"), mean_estimate=float(np.nanmean(estimates[key])),
                                     coverage=float("nan"), rejection_rate=rate, n_seeds=n_seeds, n_boot=n_boot,
                                     seed=seed0, target_met=bool(rate <= 0.06 + _mc(n_seeds, 0.05)),
                                     note="one-sided 'less fair than chance'; exact permutation-type null, "
                                          "conservative with ties"))
                    rows.append(dict(benchmark=BENCHMARK, quantity=f"{key}_null", kind="null_floor",
                                     design=design_name, dgp=dgp, truth=1.0,
                                     mean_estimate=float(np.nanmean(estimates[key])), coverage=float("nan"),
                                     rejection_rate=float("nan"), n_seeds=n_seeds, n_boot=n_boot, seed=seed0,
                                     target_met=None,
                                     note=f"ideal 1; mean reported {key}_null = {np.nanmean(nulls[key]):.4f}"))
    return rows


def _mc(n_seeds: int, p: float = 0.95) -> float:
    """Two Monte Carlo standard errors of a proportion p over n_seeds."""
    return 2 * float(np.sqrt(p * (1 - p) / max(n_seeds, 1)))


if __name__ == "__main__":
    import sys

    quick = "--quick" in sys.argv
    only = next((a.split("=", 1)[1] for a in sys.argv if a.startswith("--only=")), None)
    for row in run(200, 1000, quick, only):
        print(f"{row['design'][:22]:22} {row['dgp'][:8]:8} {row['quantity']:18} {row['kind']:10} "
              f"truth={row['truth']:.4f} est={row['mean_estimate']:.4f} cov={row['coverage']:.3f} "
              f"rej={row['rejection_rate']:.3f} ok={row['target_met']}")
