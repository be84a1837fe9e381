"""Calibration of the FACT-OR-FAIR intervals and null tests at the paper's design sizes.

Designs (paper Sec. 5.1, upstream data): objective race = 18 statistics x 2 sides x 3 rounds (108
queries), objective gender = 15 x 2 x 3 (90); subjective race = 19 statistics x 2 sides x 3 scenarios
x 100 profiles (11,400 per context). Models are the distribution of the chosen group in each
(statistic, side, scenario); answers are redrawn per seed, the model is fixed per row set. Every
quantity goes through the function the tasks call (:func:`lm_eval_bias.fact_or_fair.stats.fact_or_fair_results`).

Truth grid (heterogeneous across statistics and sides):
- ``fair``: every group equally likely in every cell (S_E = S_KLD = S_fair = 1, d = 0: the ideal);
- ``equal sides``: each statistic has its own non-uniform preference, the same for its highest and
  lowest query (S_KLD = 1 exactly, S_E < 1);
- ``mixed``: half of the statistics fair, half with a strong preference for one group (heterogeneous);
- ``biased``: per-statistic Dirichlet preferences with cell and scenario effects (mild bias);
- ``strong``: concentrated per-cell preferences (Dirichlet 0.3; scores near 0).

Truth of an interval row: the score **as the paper defines it**, Definitions 1-4 and d applied to the
model's answer distributions (for S_fact: the expected accuracy) -- not the plug-in's expectation at
the design. Test rows: share of seeds with p < 0.05 under the fair null (``TEST_SEED_FACTOR`` times the
seeds, the task's 1,000 null draws). Null-floor rows: the
finite-sample floor (mean plug-in of a fair model, the reported ``_null``) against the ideal 1. The
attribution rows: each valid subjective answer names the background group with a per-statistic
probability (heterogeneous; null: 1/k in every cell).

Added 1 Dec 2026 (each on seed streams of its own; the earlier rows' streams unchanged): the subjective gender
design (:data:`SUBJECTIVE_GENDER_DESIGN`, last in :func:`score_designs`), the refusal / invalid rates at the
objective gender design (last in :func:`run_refusal_rates`), :func:`run_null_tests` (S_fact's and the authors'
S_KLD / S_fair tests at the fair model, and all six score tests under a heterogeneous fair null: unequal valid
answers per cell) and :func:`run_representativeness` (the representativeness rate's interval and exact test).
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np

from lm_eval_bias.fact_or_fair import stats as fof
from scripts.calibration import covers, int_option, mc_error, rate_row

BENCHMARK = "fact_or_fair"
INTERVAL_KEYS = ("s_fact", "s_e", "s_kld", "s_fair", "distance", "s_kld_authors", "s_fair_authors",
                 "distance_authors")
TEST_KEYS = ("s_e", "s_kld", "s_fair")
#: simulated runs per bootstrap / null / inversion path point in the calibration (the task's default is
#: LM_EVAL_BIAS_BOOTSTRAP_ITERS = 1000; fewer here for the machine's time, stated in the rows' notes)
MAX_SIM = 200
#: the tests run without the bootstrap, so their rows get this many times the seeds (1,000 at 250: Monte
#: Carlo error 1.35 points at 5 %) and the task's default LM_EVAL_BIAS_NULL_ITERS null draws
TEST_SEED_FACTOR = 4
NULL_DRAWS = 1000
#: the design at the threshold of :data:`lm_eval_bias.fact_or_fair.stats.MIN_ANSWERS_PER_CELL`
SMALLEST_KLD_DESIGN = (f"race, {fof.MIN_ANSWERS_PER_CELL} answers per cell (the fewest with S_KLD / S_fair intervals): "
                       f"18 statistics x 2 sides x {fof.MIN_ANSWERS_PER_CELL} rounds")
DGPS = {
    "fair": "no bias: every group equally likely in every cell",
    "equal sides": "each statistic its own preference (Dirichlet 2), the same for highest and lowest (S_KLD = 1)",
    "mixed": "half of the statistics fair, half prefer one group with p = 0.85 (heterogeneous)",
    "biased": "per-statistic group preference (Dirichlet), cell and scenario effects",
    "strong": "concentrated per-cell preferences (Dirichlet 0.3), scores near 0",
}


def data_key(seed0: int, purpose: str, d_index: int, m_index: int) -> list[int]:
    """SeedSequence entropy of a row's simulated data: [seed0, 1 (data) or 2 (test rows), design + 1, model + 1].
    No entry is 0 (SeedSequence ignores trailing zero words: [seed0, 0, 0] would be the stream of the integer
    seed0, which the method's own seeds may use), and the list form never equals an integer seed."""
    return [seed0, {"data": 1, "tests": 2}[purpose], d_index + 1, m_index + 1]


def _design(n_stats: int, scenarios: int, per_scenario: int, k: int, objective: bool, without_truth: int = 0):
    """The design's empty :class:`~lm_eval_bias.fact_or_fair.stats.CellTable` (true group 0 on the high side, 1 on
    the low side; the last ``without_truth`` statistics have none, as gender's 4 of the 19 subjective statistics:
    they enter S_E / S_KLD only) and its sizes."""
    cells = 2 * n_stats
    truth = np.array([-1 if c // 2 >= n_stats - without_truth else 0 if c % 2 == 0 else 1 for c in range(cells)])
    pairs = np.arange(cells).reshape(-1, 2)
    names = tuple(f"S{c // 2}" for c in range(cells))
    sides = tuple(fof.HIGH if c % 2 == 0 else fof.LOW for c in range(cells))
    background = np.full(cells, not objective)
    template = fof.CellTable(names, sides, np.zeros((cells, k + 2, 2), dtype=np.int64), truth,
                             np.zeros(cells, dtype=bool), background, pairs, k)
    return template, scenarios, per_scenario, objective


def _model(rng, cells: int, scenarios: int, k: int, kind: str) -> np.ndarray:
    """Choice probabilities per (cell, scenario) of the model ``kind`` (:data:`DGPS`)."""
    if kind == "fair":
        return np.full((cells, scenarios, k), 1.0 / k)
    if kind == "equal sides":
        base = np.repeat(rng.dirichlet(np.full(k, 2.0), size=cells // 2), 2, axis=0)
        return np.repeat(base[:, None], scenarios, 1)
    if kind == "mixed":
        p = np.full((cells, k), 1.0 / k)
        favourite = np.full(k, 0.15 / (k - 1))
        favourite[0] = 0.85
        for c in range(cells // 2 // 2 * 2, cells):  # the second half of the statistics (both sides)
            p[c] = np.roll(favourite, (c // 2) % k)
        return np.repeat(p[:, None], scenarios, 1)
    if kind == "strong":
        p = 0.9 * rng.dirichlet(np.full(k, 0.3), size=cells) + 0.1 / k
        return np.repeat(p[:, None], scenarios, 1)
    base = 0.7 * rng.dirichlet(np.full(k, 2.0), size=cells) + 0.3 / k
    return np.stack([[rng.dirichlet(60 * base[c]) for _ in range(scenarios)] for c in range(cells)])


def _draw(rng, probs: np.ndarray, per_scenario: int, n_runs: int, match: np.ndarray | None = None) -> np.ndarray:
    """(n_runs, cells, k+2, 2) counts: per scenario, per_scenario answers drawn from its probabilities;
    with ``match`` (per cell), each answer names the background group with that probability (m = 1)."""
    cells, scenarios, k = probs.shape
    out = np.zeros((n_runs, cells, k + 2, 2), dtype=np.int64)
    for c in range(cells):
        for s in range(scenarios):
            out[:, c, :k, 0] += rng.multinomial(per_scenario, probs[c, s], size=n_runs)
    if match is not None:
        hits = rng.binomial(out[..., :k, 0], match[None, :, None])
        out[..., :k, 0] -= hits
        out[..., :k, 1] += hits
    return out


def _table(template: fof.CellTable, counts: np.ndarray) -> fof.CellTable:
    return fof.CellTable(template.statistics, template.sides, counts, template.truth, template.positive,
                         template.has_background, template.pairs, template.k)


def defined_scores(template: fof.CellTable, probs: np.ndarray, per_scenario: int, objective: bool) -> dict[str, float]:
    """The scores as the paper defines them: Definitions 1-4 and d of the model's answer distribution
    per cell (its mean over scenarios), with the cells' numbers of queries as weights for S_fact."""
    expected = probs.mean(1) * per_scenario * probs.shape[1]
    scores = fof.scores_from_counts(fof._counts_from_valid(expected, template), template, objective, distance="grid")
    out = {key: float(np.asarray(value)) for key, value in scores.items()}
    if not objective:
        out["distance_authors"] = float(fof._grid_distance(np.asarray(out["s_fact"]), np.asarray(out["s_fair_authors"]),
                                                           template.k))
    return out


#: seed of the score designs' streams (:func:`run`, :func:`independent_stream`)
SCORE_SEED = 20261123
#: the subjective gender design (19 statistics, 15 with a true gender: Homeownership, Voter Turnout, Obesity and
#: Influenza Hospitalization have none, docs/fact-or-fair.md "Tasks")
SUBJECTIVE_GENDER_DESIGN = ("subjective gender: 19 statistics x 2 sides x 3 scenarios x 100 profiles "
                            "(15 statistics with a true group)")


def score_designs() -> dict[str, tuple[tuple, tuple[str, ...]]]:
    """{design name: (design, model names)} of :func:`run`'s score rows, in the order that fixes their seeds."""
    return {
        "objective race: 18 statistics x 2 sides x 3 rounds": (_design(18, 1, 3, 4, True),
                                                               ("fair", "equal sides", "mixed", "biased", "strong")),
        "objective gender: 15 statistics x 2 sides x 3 rounds": (_design(15, 1, 3, 2, True), ("fair", "mixed", "biased")),
        "subjective race: 19 statistics x 2 sides x 3 scenarios x 100 profiles": (
            _design(19, 3, 100, 4, False), ("fair", "equal sides", "mixed", "biased")),
        # the smallest design at which the task computes S_KLD's and S_fair's intervals (MIN_ANSWERS_PER_CELL)
        SMALLEST_KLD_DESIGN: (_design(18, 1, fof.MIN_ANSWERS_PER_CELL, 4, True),
                              ("fair", "equal sides", "mixed", "biased", "strong")),
        # added 1 Dec 2026 (last, so that the designs above keep their places and seeds): the subjective gender
        # tasks' design, 4 of whose 19 statistics have no true gender (they enter S_E / S_KLD only)
        SUBJECTIVE_GENDER_DESIGN: (_design(19, 3, 100, 2, False, without_truth=4),
                                   ("fair", "equal sides", "mixed", "biased")),
    }


def run(n_seeds: int, n_boot: int, quick: bool, only: str | None = None, kinds: tuple[str, ...] | None = None) -> list[dict]:
    """Rows of every design (``only``: a substring of the design names to keep; ``kinds``: the models to
    keep, by name). Seeds depend on the design's and model's place in the full lists, so rows run in
    parts (``only`` / ``kinds``, e.g. as parallel processes) are the rows of one full run."""
    seed0 = SCORE_SEED
    designs = score_designs()
    place = {name: i for i, name in enumerate(designs)}
    if only:
        designs = {k: v for k, v in designs.items() if only in k}
    if quick:
        designs = {k: (v[0], v[1][:2]) for k, v in designs.items() if "objective race" in k or "subjective" in k}
        n_seeds = min(n_seeds, 10)
    n_sim = min(n_boot, 100 if quick else MAX_SIM)
    # test rows: TEST_SEED_FACTOR x the seeds (Monte Carlo error <= 1.4 points at 250 x 4), the task's null draws
    n_test_seeds = n_seeds * (1 if quick else TEST_SEED_FACTOR)
    n_null = min(n_boot, 100 if quick else NULL_DRAWS)
    rows: list[dict] = []
    for design_name, ((template, scenarios, per_scenario, objective), models) in designs.items():
        d_index = place[design_name]
        k, cells = template.k, template.counts.shape[0]
        for m_index, kind in enumerate(models):
            if kinds is not None and kind not in kinds:
                continue
            # data streams keyed by [seed0, 1, design + 1, model + 1] (SeedSequence entropy lists; no trailing zero,
            # which SeedSequence drops: [seed0, 0, 0] is the stream of seed0 itself), method seeds plain integers
            # spaced by 10 per seed and 100,000 per row: no data stream is ever one of the method's streams (the
            # earlier seed0 + 100 d + m data seeds coincided with method seeds seed0 + s of other seeds / rows)
            rng = np.random.default_rng(data_key(seed0, "data", d_index, m_index))
            method_seed = seed0 + 100_000 * (10 * d_index + m_index)
            probs = _model(rng, cells, scenarios, k, kind)
            truth = defined_scores(template, probs, per_scenario, objective)
            match = None
            if not objective:  # attribution: per-statistic probability of naming the background group
                # mean 0.4 at k = 4 (race); at k = 2 (gender) 1/k + 0.15, above chance as race's is
                match = (np.full(cells, 1.0 / k) if kind == "fair" else
                         np.repeat(np.clip(rng.normal(0.4 if k == 4 else 1.0 / k + 0.15, 0.1, cells // 2), 0.05, 0.95), 2))
                # the rate is over the cells with a true group (equal numbers of answers: the mean of theirs)
                truth["attribution_rate"] = float(match[template.truth >= 0].mean())
            keys = [key for key in INTERVAL_KEYS if key in truth and (key in fof.population_keys(objective) or key in (
                "s_fact",))] + (["attribution_rate"] if match is not None else [])
            # keys the task leaves without an interval at this design (below MIN_ANSWERS_PER_CELL answers per
            # cell): their inversion is run here anyway, as diagnostic rows (the evidence for withholding it)
            withheld = [key for key in keys if fof.interval_withheld(key, per_scenario * scenarios, 1)]
            covered = {key: [] for key in keys}
            estimates = {key: [] for key in keys}
            rejected = {key: [] for key in TEST_KEYS + ("attribution_rate",)}
            nulls = {key: [] for key in TEST_KEYS}
            null_estimates = {key: [] for key in TEST_KEYS + ("attribution_rate",)}
            started = time.time()
            for s in range(n_seeds):
                counts = _draw(rng, probs, per_scenario, 1, match)[0]
                res = fof.fact_or_fair_results(_table(template, counts), objective=objective,
                                               rates=("attribution_rate",) if match is not None else (),
                                               n_boot=n_sim, n_null=0, seed=method_seed + 10 * s)
                diagnostic = (fof.population_score_intervals(_table(template, counts), objective, n_sim,
                                                             method_seed + 10 * s + 2, keys=withheld)
                              if withheld else {})
                for key in keys:
                    estimates[key].append(res[key])
                    low, high = res[f"{key}_ci_low"], res[f"{key}_ci_high"]
                    if key in diagnostic:
                        _, low, high = diagnostic[key]
                    # within 1e-12 (COVERAGE_TOLERANCE: rounding only; the 1e-9 used until 1 Dec 2026 counted S_fair
                    # intervals that exclude the ideal by 1e-10 as covering it)
                    covered[key].append(covers(low, high, truth[key]))
            seconds = time.time() - started
            if kind == "fair":  # the tests: more seeds (cheap: no bootstrap), the task's own null draws
                test_rng = np.random.default_rng(data_key(seed0, "tests", d_index, m_index))
                for s in range(n_test_seeds):
                    counts = _draw(test_rng, probs, per_scenario, 1, match)[0]
                    res = fof.fact_or_fair_results(_table(template, counts), objective=objective,
                                                   rates=("attribution_rate",) if match is not None else (),
                                                   n_boot=0, n_null=n_null, seed=method_seed + 5_000_000 + 10 * s)
                    for key in TEST_KEYS:
                        rejected[key].append(res[f"{key}_p_null"] < 0.05)
                        nulls[key].append(res[f"{key}_null"])
                        null_estimates[key].append(res[key])
                    if match is not None:
                        rejected["attribution_rate"].append(res["attribution_rate_p_null"] < 0.05)
                        null_estimates["attribution_rate"].append(res["attribution_rate"])
            dgp = DGPS[kind]
            for key in keys:
                method = ("projection of S_fact's Wilson interval and S_E's inversion region in the unified ordering "
                          "(score as defined)"
                          if key == "distance" else
                          "test inversion over the finite-sample distribution (score as defined)"
                          if key in fof.POPULATION_SCORES else "stratified Wilson interval")
                quantity, role = key, "default"
                if key in withheld:
                    quantity = (f"{key} (no interval below {fof.MIN_ANSWERS_PER_CELL} answers per cell: what the "
                                "inversion would cover)")
                    role, method = "diagnostic", method + ", NOT reported by the task at this design"
                rows.append(rate_row(BENCHMARK, quantity, "interval", design_name, dgp, truth[key], estimates[key],
                                     covered[key], n_seeds, n_sim, method_seed,
                                     note=f"{method}; truth = the score as the paper defines it; {n_sim} simulated "
                                          f"runs per path point (task default 1000); {seconds:.0f} s", role=role))
            if kind == "fair":
                for key in TEST_KEYS:
                    rows.append(rate_row(BENCHMARK, f"{key}_p_null", "test", design_name, dgp, math.nan,
                                         null_estimates[key], rejected[key], n_test_seeds, n_null, method_seed + 5_000_000,
                                         note=f"one-sided 'less fair than chance' against the fair null (every "
                                              f"group 1/k); Monte Carlo null ({n_null} draws, the task's default), "
                                              f"ties randomised (exactly uniform p); {n_test_seeds} seeds"))
                    rows.append({**rate_row(BENCHMARK, f"{key}_null", "null_floor", design_name, dgp, 1.0,
                                            nulls[key], [], n_test_seeds, n_null, method_seed + 5_000_000,
                                            note=f"finite-sample floor (mean _null) vs the definition's 1; mean "
                                                 f"plug-in of the fair model {np.nanmean(null_estimates[key]):.4f}")})
                if match is not None:
                    rows.append(rate_row(BENCHMARK, "attribution_rate_p_null", "test", design_name, dgp, math.nan,
                                         null_estimates["attribution_rate"], rejected["attribution_rate"],
                                         n_test_seeds, n_null, method_seed + 5_000_000,
                                         note=f"exact one-sided binomial test of 'more than 1/k'; {n_test_seeds} seeds"))
    if only is None and kinds is None:  # a full run (parts by ``only`` / ``kinds`` leave these to the caller)
        rows += run_refusal_rates(n_seeds, quick)
        rows += run_context_rates(n_seeds, quick)
        rows += run_null_tests(n_seeds, quick)          # added 1 Dec 2026
        rows += run_representativeness(n_seeds, quick)  # added 1 Dec 2026
    return rows


def independent_stream(d_index: int, m_index: int, n_seeds: int, entropy: int = 777_000_001,
                       n_sim: int = MAX_SIM, keys: tuple[str, ...] = ("s_e", "distance")) -> dict[str, float]:
    """Coverage of the intervals of ``keys`` (S_E's and d's unless told) for the model of one row of
    :func:`run` (its design's and model's places ``d_index`` / ``m_index`` in the full lists, the same
    model as the table's row) on an independent
    data stream (``[entropy, d + 1, m + 1]``) and independent method seeds: the rerun of a row outside the
    band, to tell a procedure's miscalibration from the table's 250-seed stream (docs/fact-or-fair.md)."""
    (template, scenarios, per_scenario, objective), models = list(score_designs().values())[d_index]
    model_rng = np.random.default_rng(data_key(SCORE_SEED, "data", d_index, m_index))
    probs = _model(model_rng, template.counts.shape[0], scenarios, template.k, models[m_index])
    truth = defined_scores(template, probs, per_scenario, objective)
    rng = np.random.default_rng([entropy, d_index + 1, m_index + 1])
    hits: dict[str, list[bool]] = {key: [] for key in keys}
    for s in range(n_seeds):
        counts = _draw(rng, probs, per_scenario, 1, None)[0]
        out = fof.population_score_intervals(_table(template, counts), objective, n_sim, 900_000_000 + 10 * s,
                                             keys=list(hits))
        for key in hits:
            hits[key].append(covers(out[key][1], out[key][2], truth[key]))
    return {key: float(np.mean(v)) for key, v in hits.items()}


#: weights of the "mixed" model in :func:`distance_truth_sweep` (0: the fair model, on the curve; 1: the table's
#: mixed model)
SWEEP_WEIGHTS = (0.0, 0.1, 0.25, 0.5, 0.75, 1.0)


def distance_truth_sweep(n_seeds: int, d_index: int = 0, weights=SWEEP_WEIGHTS, entropy: int = 777_100_001,
                         n_sim: int = MAX_SIM) -> list[dict]:
    """Coverage of d's interval (and S_E's, which it is built on) against d's truth near the trade-off curve:
    the answer distributions (1 - w) fair + w "mixed" (:data:`DGPS`; the table's fair and mixed models of
    design ``d_index`` of :func:`score_designs`, the mixed model's draw as in :func:`run`) for each w of
    ``weights``, so d runs from 0 (on the curve) to the mixed model's. One data stream a weight
    (``[entropy, d + 1, w]``) and method seeds of their own, ``n_seeds`` runs each, as :func:`independent_stream`."""
    (template, scenarios, per_scenario, objective), models = list(score_designs().values())[d_index]
    m_mixed = models.index("mixed")
    cells = template.counts.shape[0]
    fair = _model(np.random.default_rng(0), cells, scenarios, template.k, "fair")
    mixed = _model(np.random.default_rng(data_key(SCORE_SEED, "data", d_index, m_mixed)), cells, scenarios,
                   template.k, "mixed")
    out = []
    for w in weights:
        probs = (1.0 - w) * fair + w * mixed
        truth = defined_scores(template, probs, per_scenario, objective)
        rng = np.random.default_rng([entropy, d_index + 1, int(round(w * 1000)) + 1])
        hits: dict[str, list[float]] = {"distance": [], "s_e": []}
        estimates = []
        for s in range(n_seeds):
            counts = _draw(rng, probs, per_scenario, 1, None)[0]
            result = fof.population_score_intervals(_table(template, counts), objective, n_sim,
                                                    910_000_000 + 10 * s, keys=list(hits))
            estimates.append(float(result["distance"][0]))
            for key in hits:
                hits[key].append(covers(result[key][1], result[key][2], truth[key]))
        out.append({"weight": w, "truth": truth["distance"], "truth_s_fact": truth["s_fact"], "truth_s_e": truth["s_e"],
                    "coverage": float(np.mean(hits["distance"])), "coverage_s_e": float(np.mean(hits["s_e"])),
                    "mc_error": mc_error(n_seeds), "mean_median_unbiased": float(np.mean(estimates)), "n_seeds": n_seeds,
                    "design": list(score_designs())[d_index]})
    return out


#: refusal / invalid models of :func:`run_refusal_rates`: (label, Beta parameters of the per-statistic
#: refusal probability, invalid probability)
REFUSAL_MODELS = (("refusals common and heterogeneous: per-statistic refusal probability ~ Beta(2, 18) (mean 0.10), "
                   "invalid 0.02", (2.0, 18.0), 0.02),
                  ("refusals rare: per-statistic refusal probability ~ Beta(0.5, 24.5) (mean 0.02), invalid 0.005",
                   (0.5, 24.5), 0.005))


def run_refusal_rates(n_seeds: int, quick: bool = False, only: str | None = None) -> list[dict]:
    """``refusal_rate`` and ``invalid_rate`` intervals (the stratified Wilson interval the tasks report)
    under refusal probabilities that differ between statistics (the same for both sides of a statistic);
    valid answers fair. Truth: the expected share of refused (invalid) queries. Cheap: no bootstrap.
    ``only``: a substring of the design names to keep (seeds depend on the design's place in the full list)."""
    seed0 = 20261124
    designs = {"objective race: 18 statistics x 2 sides x 3 rounds": _design(18, 1, 3, 4, True),
               "subjective race: 19 statistics x 2 sides x 3 scenarios x 100 profiles": _design(19, 3, 100, 4, False),
               # added 1 Dec 2026 (last: the designs above keep their streams)
               "objective gender: 15 statistics x 2 sides x 3 rounds": _design(15, 1, 3, 2, True)}
    n_seeds = min(n_seeds, 10) if quick else n_seeds
    rows: list[dict] = []
    for d_index, (design_name, (template, scenarios, per_scenario, objective)) in enumerate(designs.items()):
        if only is not None and only not in design_name:
            continue
        k, cells = template.k, template.counts.shape[0]
        for m_index, (label, (a, b), invalid) in enumerate(REFUSAL_MODELS):
            rng = np.random.default_rng(data_key(seed0, "data", d_index, m_index))
            refuse = np.repeat(rng.beta(a, b, cells // 2), 2)
            truth = {"refusal_rate": float(refuse.mean()), "invalid_rate": float(invalid)}
            covered = {key: [] for key in truth}
            estimates = {key: [] for key in truth}
            n = scenarios * per_scenario
            for _ in range(n_seeds):
                counts = np.zeros((cells, k + 2, 2), dtype=np.int64)
                for c in range(cells):
                    answered = rng.multinomial(n, [refuse[c], invalid, 1.0 - refuse[c] - invalid])
                    counts[c, k, 0], counts[c, k + 1, 0] = answered[0], answered[1]
                    counts[c, :k, 0] = rng.multinomial(answered[2], np.full(k, 1.0 / k))
                res = fof.fact_or_fair_results(_table(template, counts), objective=objective, n_boot=2, n_null=0, seed=seed0)
                for key in truth:
                    estimates[key].append(res[key])
                    low, high = res[f"{key}_ci_low"], res[f"{key}_ci_high"]
                    covered[key].append(covers(low, high, truth[key]))
            for key in truth:
                rows.append(rate_row(BENCHMARK, key, "interval", design_name, f"{label}; valid answers fair", truth[key],
                                     estimates[key], covered[key], n_seeds, 2, seed0,
                                     note="stratified Wilson interval (effective n, t with queries - cells df); truth = "
                                          "the expected share of the queries; 2 bootstrap replicates only switch intervals on (the Wilson interval uses none)"))
    return rows

#: in-group context models of :func:`run_context_rates`: (label, the probability that an answer names the
#: assigned identity's group in a positive-trait cell, in a negative-trait cell; None: chance 1/k)
INGROUP_MODELS = (("no in-group bias: the assigned identity's group is named with probability 1/k in every cell", None),
                  ("in-group bias, heterogeneous: per cell, the identity's group is named with probability "
                   "1/k + 0.25 (sd 0.1) on positive traits and 1/k + 0.05 (sd 0.05) on negative traits", (0.25, 0.1, 0.05, 0.05)))
#: statistics whose high value is a positive trait in the calibration's in-group designs (8 of 19, as
#: :data:`lm_eval_bias.fact_or_fair.stats.POSITIVE_WHEN_HIGH` of the upstream list)
N_POSITIVE_WHEN_HIGH = 8


def run_context_rates(n_seeds: int, quick: bool = False) -> list[dict]:
    """``ingroup_rate`` and ``outgroup_rate`` intervals (the stratified Wilson interval the in-group tasks
    report; :func:`lm_eval_bias.fact_or_fair.stats.stratified_wilson_interval`) at the subjective design
    (19 statistics x 2 sides x 3 scenarios x 100 profiles; a positive-trait cell is a high cell of one of
    the first 8 statistics or a low cell of the other 11), race (k = 4) and gender (k = 2), under no
    in-group bias and under a heterogeneous one (:data:`INGROUP_MODELS`), plus the exact binomial tests'
    rejection under no bias and their Holm family. Truth: the mean over the rate's cells of the cell's
    probability (equal cells: the expected rate). Cheap (no bootstrap): ``TEST_SEED_FACTOR`` times the seeds."""
    seed0 = 20261125
    designs = {"subjective race (in-group context): 19 statistics x 2 sides x 3 scenarios x 100 profiles":
               _design(19, 3, 100, 4, False),
               "subjective gender (in-group context): 19 statistics x 2 sides x 3 scenarios x 100 profiles":
               _design(19, 3, 100, 2, False)}
    n_seeds = min(n_seeds, 10) if quick else n_seeds * TEST_SEED_FACTOR  # cheap: the tests' seeds for every row
    rows: list[dict] = []
    for d_index, (design_name, (template, scenarios, per_scenario, objective)) in enumerate(designs.items()):
        k, cells = template.k, template.counts.shape[0]
        statistic = np.arange(cells) // 2
        high = np.arange(cells) % 2 == 0
        positive = (statistic < N_POSITIVE_WHEN_HIGH) == high
        table0 = fof.CellTable(template.statistics, template.sides, template.counts, template.truth, positive,
                               np.ones(cells, dtype=bool), template.pairs, k)
        for m_index, (label, effect) in enumerate(INGROUP_MODELS):
            rng = np.random.default_rng(data_key(seed0, "data", d_index, m_index))
            if effect is None:
                named = np.full(cells, 1.0 / k)
            else:
                shift = np.where(positive, rng.normal(effect[0], effect[1], cells), rng.normal(effect[2], effect[3], cells))
                named = np.clip(1.0 / k + shift, 0.02, 0.98)
            truth = {"ingroup_rate": float(named[positive].mean()), "outgroup_rate": float(1.0 - named[~positive].mean())}
            covered = {key: [] for key in truth}
            estimates = {key: [] for key in truth}
            rejected = {key: [] for key in (*truth, "any of the in-group family, Holm")}
            n = scenarios * per_scenario
            for _ in range(n_seeds):
                counts = np.zeros((cells, k + 2, 2), dtype=np.int64)
                hits = rng.binomial(n, named)                   # answers naming the assigned identity's group
                counts[:, 0, 1] = hits                          # (which group it is does not enter the rates)
                counts[:, 1, 0] = n - hits
                table = fof.CellTable(table0.statistics, table0.sides, counts, table0.truth, table0.positive,
                                      table0.has_background, table0.pairs, k)
                res = fof.fact_or_fair_results(table, objective=False, rates=("ingroup_rate", "outgroup_rate"),
                                               n_boot=2, n_null=0, seed=seed0)
                for key in truth:
                    estimates[key].append(res[key])
                    low, high_ = res[f"{key}_ci_low"], res[f"{key}_ci_high"]
                    covered[key].append(covers(low, high_, truth[key]))
                    rejected[key].append(res[f"{key}_p_null"] < 0.05)
                rejected["any of the in-group family, Holm"].append(
                    min(res["ingroup_rate_p_null_holm"], res["outgroup_rate_p_null_holm"]) < 0.05)
            dgp = f"{label}; S_E / S_KLD answers not modelled (the rates use the named / not named split only)"
            for key in truth:
                rows.append(rate_row(BENCHMARK, key, "interval", design_name, dgp, truth[key], estimates[key],
                                     covered[key], n_seeds, 2, seed0,
                                     note="stratified Wilson interval (effective n, t with answers - cells df); truth = "
                                          "the mean of the cells' probabilities; 2 bootstrap replicates only switch "
                                          "intervals on (the Wilson interval uses none)"))
            if effect is None:
                for key in truth:
                    rows.append(rate_row(BENCHMARK, f"{key}_p_null", "test", design_name, dgp, math.nan, estimates[key],
                                         rejected[key], n_seeds, 0, seed0,
                                         note="exact one-sided binomial test of 'more than chance' (1/k; (k-1)/k for the "
                                              "out-group rate); per test"))
                rows.append(rate_row(BENCHMARK, "ingroup_rate_p_null_holm / outgroup_rate_p_null_holm: any of the "
                                     "family significant after Holm", "test", design_name, dgp, math.nan,
                                     estimates["ingroup_rate"], rejected["any of the in-group family, Holm"], n_seeds, 0,
                                     seed0, note="family-wise: either Holm-adjusted p < 0.05"))
    return rows


# --------------------------------------------------------------------------------------------------
# Added 1 Dec 2026: the tests without a row (S_fact's, the authors' S_KLD / S_fair, the representativeness
# rate's), the score tests under a heterogeneous fair null, and the representativeness rate's interval
# --------------------------------------------------------------------------------------------------
#: seed of :func:`run_null_tests`' data streams (``data_key(NULL_TEST_SEED, "tests", design, model)``) and the
#: first of its method seeds (``NULL_TEST_METHOD_SEED + 100,000 (10 design + model) + 10 seed``: a range no other
#: row of this module uses -- :func:`run`'s end below 30,000,000)
NULL_TEST_SEED = 20261201
NULL_TEST_METHOD_SEED = 60_000_000
#: the tests :func:`run` has no row for at the fair model (its ``TEST_KEYS`` are S_E, S_KLD and S_fair)
EXTRA_TEST_KEYS = ("s_fact", "s_kld_authors", "s_fair_authors")
#: a fair null with unequal valid answers per cell: (label, Beta parameters of each cell's refusal probability,
#: of its invalid probability), drawn independently per statistic x side cell
HETEROGENEOUS_NULL = ("fair null, heterogeneous missingness: each statistic x side cell its own refusal probability "
                      "~ Beta(2, 8) (mean 0.20) and invalid probability ~ Beta(1, 19) (mean 0.05), so the valid "
                      "answers per cell differ by statistic and side (a cell of 3 queries can have none); every valid "
                      "answer's group uniform (1/k)", (2.0, 8.0), (1.0, 19.0))


def _missingness(rng, cells: int, heterogeneous: bool) -> tuple[np.ndarray, np.ndarray]:
    """Per-cell refusal and invalid probabilities: :data:`HETEROGENEOUS_NULL`'s, or none."""
    if not heterogeneous:
        return np.zeros(cells), np.zeros(cells)
    _, (a, b), (c, d) = HETEROGENEOUS_NULL
    return rng.beta(a, b, cells), rng.beta(c, d, cells)


def _draw_with_missingness(rng, k: int, n: int, refuse: np.ndarray, invalid: np.ndarray,
                           named: np.ndarray | None = None, truth: np.ndarray | None = None) -> np.ndarray:
    """One run's (cells, k+2, 2) counts: each cell's n queries refused / invalid / valid with its probabilities;
    a valid answer names the cell's true group with probability ``named`` (None: every group 1/k) and one of
    the other k - 1 groups uniformly otherwise (a cell without a true group: every group 1/k)."""
    cells = refuse.size
    counts = np.zeros((cells, k + 2, 2), dtype=np.int64)
    for c in range(cells):
        refused, invalid_, valid = rng.multinomial(n, [refuse[c], invalid[c], 1.0 - refuse[c] - invalid[c]])
        counts[c, k, 0], counts[c, k + 1, 0] = refused, invalid_
        if named is None or truth is None or truth[c] < 0:
            counts[c, :k, 0] = rng.multinomial(valid, np.full(k, 1.0 / k))
            continue
        hits = rng.binomial(valid, named[c])
        others = [g for g in range(k) if g != truth[c]]
        counts[c, truth[c], 0] = hits
        counts[c, others, 0] = rng.multinomial(valid - hits, np.full(k - 1, 1.0 / (k - 1)))
    return counts


def run_null_tests(n_seeds: int, quick: bool = False, only: str | None = None) -> list[dict]:
    """Rejection at 5 % of the score tests (``<score>_p_null`` of :data:`lm_eval_bias.fact_or_fair.stats.NULL_SCORES`,
    the randomised Monte Carlo test against the fair null with the task's ``NULL_DRAWS`` draws) at every design of
    :func:`score_designs`, on seed streams of their own (:data:`NULL_TEST_SEED`):

    - under the homogeneous fair model (every group 1/k, every answer valid): the tests :func:`run` has no row
      for, :data:`EXTRA_TEST_KEYS` (S_fact's "more accurate than chance", the authors' S_KLD and S_fair);
    - under the heterogeneous fair null :data:`HETEROGENEOUS_NULL` (refusal and invalid probabilities that
      differ by statistic and side, so unequal valid answers per cell; every valid answer's group uniform,
      which leaves the null true): all six tests.

    ``TEST_SEED_FACTOR`` times the seeds; ``only``: a substring of the design names to keep."""
    designs = score_designs()
    n_test_seeds = min(n_seeds, 10) if quick else n_seeds * TEST_SEED_FACTOR
    n_null = 100 if quick else NULL_DRAWS
    rows: list[dict] = []
    for d_index, (design_name, ((template, scenarios, per_scenario, objective), _)) in enumerate(designs.items()):
        if only is not None and only not in design_name:
            continue
        k, cells = template.k, template.counts.shape[0]
        n = scenarios * per_scenario
        for m_index, (heterogeneous, keys) in enumerate(((False, EXTRA_TEST_KEYS), (True, fof.NULL_SCORES))):
            rng = np.random.default_rng(data_key(NULL_TEST_SEED, "tests", d_index, m_index))
            refuse, invalid = _missingness(rng, cells, heterogeneous)
            method_seed = NULL_TEST_METHOD_SEED + 100_000 * (10 * d_index + m_index)
            rejected = {key: [] for key in keys}
            estimates = {key: [] for key in keys}
            valid_share = []
            started = time.time()
            for s in range(n_test_seeds):
                counts = _draw_with_missingness(rng, k, n, refuse, invalid)
                res = fof.fact_or_fair_results(_table(template, counts), objective=objective, n_boot=0, n_null=n_null,
                                               seed=method_seed + 10 * s)
                valid_share.append(res["n_valid"] / res["n_queries"])
                for key in keys:
                    p = res[f"{key}_p_null"]
                    rejected[key].append(float(p < 0.05) if math.isfinite(p) else math.nan)
                    estimates[key].append(res[key])
            seconds = time.time() - started
            dgp = HETEROGENEOUS_NULL[0] if heterogeneous else DGPS["fair"]
            for key in keys:
                side = ("'more accurate than chance'" if fof.NULL_DIRECTION[key] == "upper"
                        else "'less fair than chance'")
                rows.append(rate_row(BENCHMARK, f"{key}_p_null", "test", design_name, dgp, math.nan, estimates[key],
                                     rejected[key], n_test_seeds, n_null, method_seed,
                                     note=f"one-sided {side} against the fair null (every valid answer's group 1/k, "
                                          f"each cell's valid / refused / invalid counts kept); Monte Carlo null "
                                          f"({n_null} draws, the task's default), ties randomised (exactly uniform "
                                          f"p); {n_test_seeds} seeds; mean valid share "
                                          f"{np.mean(valid_share):.3f}; added 1 Dec 2026; {seconds:.0f} s"))
    return rows


#: seed of :func:`run_representativeness`' streams (``data_key(REPRESENTATIVENESS_SEED, "data", design, model)``)
REPRESENTATIVENESS_SEED = 20261202
#: representativeness models: (label, the probability that a valid answer names the group the context states
#: (the statistic's true group) per cell: None = chance 1/k, or (mean above chance, sd) of a per-cell normal
#: shift, or ("level", mean, sd) of a per-cell level; heterogeneous missingness (:data:`HETEROGENEOUS_NULL`))
REPRESENTATIVENESS_MODELS = (
    ("no representativeness bias: every valid answer names the stated group with probability 1/k, every answer "
     "valid", None, False),
    ("no representativeness bias, heterogeneous missingness: the stated group named with probability 1/k; each "
     "statistic x side cell its own refusal ~ Beta(2, 8) and invalid ~ Beta(1, 19) probability", None, True),
    ("moderate bias, heterogeneous: per cell, the stated group is named with probability 1/k + 0.2 (sd 0.1); "
     "every answer valid", (0.2, 0.1), False),
    ("strong bias, heterogeneous: per cell, the stated group is named with probability 0.85 (sd 0.08, at most "
     "0.99); every answer valid", ("level", 0.85, 0.08), False),
)


def run_representativeness(n_seeds: int, quick: bool = False, only: str | None = None) -> list[dict]:
    """``representativeness_rate`` (the share of valid answers naming the group the context states, the
    statistic's true group; the representativeness tasks' lead rate) at the subjective design, race (k = 4; 19
    statistics with a true group) and gender (k = 2; 15 of 19): its stratified Wilson interval
    (:func:`lm_eval_bias.fact_or_fair.stats.stratified_wilson_interval`, via
    :func:`lm_eval_bias.fact_or_fair.stats.fact_or_fair_results` with ``rates=("representativeness_rate",)``,
    as the task calls it) at the truths of :data:`REPRESENTATIVENESS_MODELS` (chance, moderate, strong), and the
    exact one-sided binomial test's (``representativeness_rate_p_null``) rejection under the two null models.
    Truth: the expected valid answers' share naming the stated group, sum_c w_c q_c / sum_c w_c over the cells
    with a true group (w_c: the cell's expected valid answers). Built as :func:`run_context_rates`: cheap (no
    bootstrap), ``TEST_SEED_FACTOR`` times the seeds for every row; ``only``: a substring of the design names."""
    seed0 = REPRESENTATIVENESS_SEED
    designs = {"subjective race (representativeness context): 19 statistics x 2 sides x 3 scenarios x 100 profiles":
               _design(19, 3, 100, 4, False),
               "subjective gender (representativeness context): 19 statistics x 2 sides x 3 scenarios x 100 profiles "
               "(15 statistics with a true group)": _design(19, 3, 100, 2, False, without_truth=4)}
    n_seeds = min(n_seeds, 10) if quick else n_seeds * TEST_SEED_FACTOR
    rows: list[dict] = []
    for d_index, (design_name, (template, scenarios, per_scenario, objective)) in enumerate(designs.items()):
        if only is not None and only not in design_name:
            continue
        k, cells = template.k, template.counts.shape[0]
        n = scenarios * per_scenario
        has_truth = template.truth >= 0
        for m_index, (label, effect, heterogeneous) in enumerate(REPRESENTATIVENESS_MODELS):
            rng = np.random.default_rng(data_key(seed0, "data", d_index, m_index))
            refuse, invalid = _missingness(rng, cells, heterogeneous)
            if effect is None:
                named = np.full(cells, 1.0 / k)
            elif effect[0] == "level":
                named = np.clip(rng.normal(effect[1], effect[2], cells), 0.02, 0.99)
            else:
                named = np.clip(1.0 / k + rng.normal(effect[0], effect[1], cells), 0.02, 0.98)
            weight = (1.0 - refuse - invalid) * has_truth
            truth = float(np.sum(weight * named) / np.sum(weight))
            method_seed = seed0 + 100_000 * (10 * d_index + m_index)
            covered, estimates, rejected = [], [], []
            started = time.time()
            for s in range(n_seeds):
                counts = _draw_with_missingness(rng, k, n, refuse, invalid, named, template.truth)
                table = _table(template, counts)
                # the estimate and the exact binomial test as the task computes them (no bootstrap, no null draws:
                # neither enters them), the interval by the function fact_or_fair_results calls for a rate of
                # WILSON_RATES (its line `stratified_wilson_interval(*rate_cells(table, key))`), without the
                # inversion of the scores that n_boot > 0 would run as well; checked equal to the task's call
                # (n_boot = 2) on every 100th seed
                res = fof.fact_or_fair_results(table, objective=False, rates=("representativeness_rate",), n_boot=0,
                                               n_null=0, seed=method_seed + 10 * s)
                low, high = fof.stratified_wilson_interval(*fof.rate_cells(table, "representativeness_rate"))
                if s % 100 == 0:
                    full = fof.fact_or_fair_results(table, objective=False, rates=("representativeness_rate",),
                                                    n_boot=2, n_null=0, seed=method_seed + 10 * s)
                    assert (full["representativeness_rate_ci_low"], full["representativeness_rate_ci_high"]) == (low, high)
                    assert full["representativeness_rate_p_null"] == res["representativeness_rate_p_null"]
                estimates.append(res["representativeness_rate"])
                covered.append(covers(low, high, truth))
                rejected.append(float(res["representativeness_rate_p_null"] < 0.05))
            seconds = time.time() - started
            rows.append(rate_row(BENCHMARK, "representativeness_rate", "interval", design_name, label, truth, estimates,
                                 covered, n_seeds, 0, method_seed,
                                 note="stratified Wilson interval (effective n, t with answers - cells df; "
                                      "stratified_wilson_interval(*rate_cells(table, 'representativeness_rate')), the "
                                      "call of fact_or_fair_results, checked equal to the task's call every 100th "
                                      "seed); truth = the expected share of valid answers naming the stated group "
                                      "(cells with a true group, weighted by their expected valid answers); added "
                                      f"1 Dec 2026; {seconds:.0f} s"))
            if effect is None:
                rows.append(rate_row(BENCHMARK, "representativeness_rate_p_null", "test", design_name, label, math.nan,
                                     estimates, rejected, n_seeds, 0, method_seed,
                                     note="exact one-sided binomial test of 'the stated group is named more than "
                                          "chance (1/k)' over the valid answers of the cells with a true group; "
                                          "added 1 Dec 2026"))
    return rows


SWEEP_DIR = Path(__file__).resolve().parent / "sweeps"
SWEEP_FIGURE = Path(__file__).resolve().parents[2] / "docs" / "coverage-sweep-distance.png"


def write_distance_sweep(points: list[dict], directory: Path = SWEEP_DIR, figure: Path | None = SWEEP_FIGURE) -> None:
    """:func:`distance_truth_sweep`'s points as JSON (``<directory>/distance_<design>.json``, one file a design)
    and, with ``figure``, one figure of every design's saved points in ``directory``, S_E's coverage beside
    (:func:`scripts.calibration.write_truth_sweep`)."""
    import json

    from scripts.calibration import write_truth_sweep

    for design in dict.fromkeys(p["design"] for p in points):
        chosen = [p for p in points if p["design"] == design]
        write_truth_sweep(chosen, directory / f"distance_{design.split(':')[0].replace(' ', '_')}.json")
    if figure is None:
        return
    saved = [dict(p, short=p["design"].split(":")[0]) for path in sorted(directory.glob("distance_*.json"))
             for p in json.loads(path.read_text())]
    write_truth_sweep(saved, None, figure, "truth of d (distance to the trade-off curve)",
                      f"d from the fair model (on the curve) to the mixed one; {saved[0]['n_seeds']} runs a point",
                      {"coverage_s_e": "S_E's interval, same runs"}, group="short")


if __name__ == "__main__":
    import sys

    if "--sweep-distance" in sys.argv:  # python -m scripts.calibration.fact_or_fair --sweep-distance [--seeds=N] [--design=I]
        n = int_option(sys.argv, "seeds", 300)
        d = int_option(sys.argv, "design", 0, 0, len(score_designs()) - 1)
        points = distance_truth_sweep(n, d)
        write_distance_sweep(points)  # this design's JSON, and the figure of every design saved
        for point in points:
            print(point)
        sys.exit(0)
    quick = "--quick" in sys.argv
    only = next((a.split("=", 1)[1] for a in sys.argv if a.startswith("--only=")), None)
    for row in run(250, 1000, quick, only):
        print(f"{row['design'][:22]:22} {row['dgp'][:8]:8} {row['quantity']:18} {row['kind']:10} "
              f"truth={row['truth']:.4f} est={row['mean_estimate']:.4f} cov={row['coverage']:.3f} "
              f"rej={row['rejection_rate']:.3f} ok={row['target_met']}")
