"""Calibration of the Counterfactual VQA intervals and permutation null floors at the paper's design.

Design (paper Sec. 3.3 and 4.2, App. D.2, Table 11): 1,609 image pairs in 5 categories (sizes 360 / 300 /
320 / 310 / 319; the paper gives no per-category count), each asked under 3 option orders. The report's
tables are cells of this design, each calibrated at its own size (:func:`real_design`):

- 17 subcategories (Tables 6-10), of unequal sizes (the paper gives attribute counts only, Fig. 2):
  shares :data:`SUBCATEGORY_SHARES` of each category, 36-161 pairs;
- the HNER query split, 30 % of the pairs (a seeded draw, as the tasks' hashed split): Table 3 per
  category (about 100 pairs each) and over all (about 480);
- the question source (Table 11): o3 or Sonnet 4 for each pair (half each), 10 category x source cells of
  about 160 pairs;
- human consistency (App. D.2) on a fixed 30 % of the pairs, five workers each;
- the smallest scope that gets an interval: a fixed set of ``stats.MIN_PAIRS_FOR_INTERVAL`` pairs of one
  subcategory (and as many rated pairs for the human keys), to check the rule: once as a call of its own
  (a ``--limit`` run: nothing encloses it) and once as a cell of a full run's subcategory table
  (``smallest_cell``: the scope whose design effect a cell at a bound borrows,
  :func:`lm_eval_bias.core.jackknife.boundary_interval`).

``quick`` shrinks to 40 pairs a category.

Interval rows (:func:`interval_rows`): a truth grid of four models (:data:`SCENARIOS`), each with pair,
category, subcategory and question-source effects on the attribute flip (logit scale), heterogeneous
refusal, invalid and truncated propensities per pair, coarse confidences (Sec. 3.4):

- ``none``: no attribute effect, sampled answers (temperature > 0): both images draw their answers
  from the same pair-specific distribution; refusals independent; Cons about 0.75;
- ``limit``: greedy answers and a rare attribute flip (about 1 % of pair-runs), rare refusals, invalid
  and truncated answers (0.2-1 %): every share near its bound, where symmetric intervals fail;
- ``paper``: the paper's range (Cons about 0.42, 15 % refusals, one-sided);
- ``strong``: frequent flips and mostly symmetric refusals of a cautious model (refusal rate about 0.7,
  CC-AUC about 0.03, SR-AUC about 0.95, as Claude 4.5 Sonnet in Table 2).

Truth: the population value of each cell's metric, computed on the cell's own pairs tiled to at least
:data:`TRUTH_PAIRS` pairs (the same composition; :func:`population_truth`). Until 2 Dec 2026 every cell took
its truth from :data:`TRUTH_REPLICATES` copies of the whole design, so a cell of 20 pairs had 4,000, and the
truths of its rare rates moved 10-40 % between truth seeds (the "limit" model's invalid rate at the smallest
scope: 0.0025 for a model whose rate is 0.0020). Each row pools the coverage of the scope's cells (one row per
metric, scope and model; the note gives the cells' truths and the lowest / highest cell coverage).
The intervals are those of :func:`lm_eval_bias.cf_vqa.stats.pair_summary` and
:func:`~lm_eval_bias.cf_vqa.stats.response_rates` (the functions the tasks, the analysis and the report's
tables call; the report's cells through :func:`~lm_eval_bias.cf_vqa.stats.metrics_by_cell`, which is
``pair_summary`` with the cell as its scope): stratified delete-one-pair jackknife standard error,
logit-t interval (the response-status rates: Wilson's interval at the effective sample size,
:func:`lm_eval_bias.core.jackknife.effective_n_wilson_interval`). Diagnostic rows: the percentile interval of the pair bootstrap that the tasks used
before (``n_boot`` replicates), in the cells where it fell short.

Test rows: rejection rate at 5 % of ``<m>_p_null`` when the two sides are unrelated (:func:`simulate`,
``linked=False``): each side has its own preferred option, refusal propensity and confidence level
(per-pair heterogeneity kept, the link between the two images of a pair removed), and --
heterogeneity that leaves the null true -- each category has its own letter preference (the
preferred option is drawn from a category-specific distribution, the same for both images: a position
/ category effect, not a link between the two images) and its own refusal level. Per-category tests
(five per metric, the pooled rate over the categories) and the family-wise row "any category Holm p <
0.05" (the Holm family of the task) are included, at :data:`TEST_SEEDS` seeds from
:data:`TEST_FIRST_SEED` (n_boot permutations each, as the task). The p-values are the task's randomised
permutation p-values (ties with the observation weighted by a uniform U,
:func:`lm_eval_bias.cf_vqa.stats.null_p_value`), exact under this null. Null-floor rows: the mean of
``<m>_null`` under that null against the mean estimate.

``python -m scripts.calibration.cf_vqa [--quick]`` prints the rows; ``--sweep-rates [--seeds=N]`` writes the coverage of
a response-status rate at the smallest scope against its truth and the clustering of its events by pair
(:func:`smallest_scope_rate_sweep`, ``scripts/calibration/sweeps/rates_smallest_scope.json``, its figure in docs/).
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from lm_eval_bias.cf_vqa import stats
from lm_eval_bias.cf_vqa.schema import CATEGORIES
from lm_eval_bias.core.multiplicity import adjust
from scripts.calibration import covers, rate_row

BENCHMARK = "cf_vqa"
CATEGORY_SIZES = {"Demography": 360, "Culture": 300, "Environment": 320, "Behavior": 310, "Aesthetic": 319}
#: each category's pairs over its subcategories (paper Fig. 2 order), unequal: 36-161 pairs at 1,609 pairs
SUBCATEGORY_SHARES = {"Demography": (0.3, 0.25, 0.2, 0.15, 0.1), "Culture": (0.5, 0.3, 0.2),
                      "Environment": (0.45, 0.35, 0.2), "Behavior": (0.4, 0.35, 0.25), "Aesthetic": (0.5, 0.3, 0.2)}
SOURCES = ("o3", "Sonnet 4")
RUNS = 3
ALPHA = -0.4
GRID = np.array([0.5, 0.6, 0.7, 0.8, 0.9, 0.95])
#: copies of the design whose metrics were the truth of each scope until 2 Dec 2026 (:func:`population_truth`)
TRUTH_REPLICATES = 200
#: pairs (at least) on which each cell's truth is computed: the cell's pairs tiled; a rate of 0.2 % with the
#: models' overdispersed propensities then has a Monte Carlo SE of about 1.5 % of itself
TRUTH_PAIRS = 500_000
#: Seeds of the test rows (at least; ``quick`` keeps ``n_seeds``): the Monte Carlo SE of a 5 % rejection rate
#: is 0.49 points at 2,000 seeds. They start at :data:`TEST_FIRST_SEED`, a stream independent of the 811
#: seeds of the 26 Nov run (``consistency_p_null`` 3.7 % there, 1.7 SE below 5 %).
TEST_SEEDS = 2000
TEST_FIRST_SEED = 30_000_000
#: Seeds of the interval rows (at least; ``quick`` keeps ``n_seeds``): 1,000 (Monte Carlo SE 0.69 points) --
#: cheap (the jackknife needs no replicates), and at 250 seeds the rows of one cell (all pairs, the
#: smallest scope) strayed outside 93-97 % by Monte Carlo error alone (an independent 1,000-seed stream put
#: every all-pairs row at 0.935-0.963)
INTERVAL_SEEDS = 1000
#: Attribute-flip shifts (logit scale) per category (Table 2 order), subcategory (sd) and question source
#: (Sonnet 4's questions harder, as Table 11): heterogeneity of the truths within every scope
CATEGORY_SHIFT = {"Demography": -0.5, "Culture": 0.3, "Environment": 0.0, "Behavior": 0.4, "Aesthetic": -0.2}
SUBCATEGORY_SD = 0.3
SOURCE_SHIFT = {"o3": 0.0, "Sonnet 4": 0.4}


@dataclass(frozen=True)
class Scenario:
    """One model of the truth grid: attribute flip = logistic(alpha + shifts + N(0, flip_sd)) per pair
    (``alpha`` None: no flip); b+ answers = the pair's preferred option w.p. 1 - ``noise`` per run, else
    uniform; b- answers copy b+ (greedy) or are drawn afresh from the same distribution (``sampled``),
    then flipped; refusal propensity per pair ``refusal`` x Beta(1, 3) / 0.25 (clipped at 0.95; b+ x 1.2,
    b- / 1.2), the b- refusal copying the b+ one w.p. ``link``; invalid and truncated responses with
    per-pair propensities ``invalid`` / ``truncated`` x Gamma(0.5) / 0.5 (overdispersed)."""

    name: str
    text: str
    alpha: float | None
    sampled: bool
    noise: float
    refusal: float
    link: float
    invalid: float
    truncated: float
    flip_sd: float = 1.0


SCENARIOS = (
    Scenario("none", "no attribute effect, sampled answers (b+ and b- drawn alike), refusals 5 % independent",
             None, True, 0.15, 0.05, 0.0, 0.005, 0.01),
    Scenario("limit", "rare attribute flips (~1 % of pair-runs), greedy answers; refusals 1 % mostly symmetric, "
             "invalid 0.2 %, truncated 0.3 %", -5.5, False, 0.2, 0.01, 0.8, 0.002, 0.003),
    Scenario("paper", "paper-like: b- flips w.p. logistic(-0.4 + effects), refusals 15 % one-sided, invalid 1 %, "
             "truncated 2 %", ALPHA, False, 0.2, 0.15, 0.0, 0.01, 0.02),
    Scenario("strong", "strong flips (logistic(2.5 + effects)) and a cautious model: refusals ~70 %, 98 % of them "
             "symmetric, invalid 5 %, truncated 5 %", 2.5, False, 0.2, 0.9, 0.98, 0.05, 0.05),
)


@dataclass(frozen=True)
class Design:
    """Per pair: category, subcategory, question source, HNER query split, human rating (fixed, seeded)."""

    category: np.ndarray
    subcategory: np.ndarray
    source: np.ndarray
    query: np.ndarray
    rated: np.ndarray
    smallest: np.ndarray  # the pairs of the smallest scope (MIN_PAIRS_FOR_INTERVAL of one subcategory)
    smallest_rated: np.ndarray  # MIN_PAIRS_FOR_INTERVAL rated pairs of one category

    @property
    def n(self) -> int:
        return len(self.category)


def _sizes(quick: bool) -> dict[str, int]:
    if not quick:
        return CATEGORY_SIZES
    return {c: 40 for c in CATEGORY_SIZES}


def real_design(quick: bool = False, seed: int = 5) -> Design:
    """The report's design at the paper's size (module docstring), fixed for every seed."""
    cats, subs = [], []
    for category, n in _sizes(quick).items():
        sizes = np.floor(np.asarray(SUBCATEGORY_SHARES[category]) * n).astype(int)
        sizes[0] += n - sizes.sum()
        for sub, m in zip(CATEGORIES[category], sizes):
            cats += [category] * int(m)
            subs += [sub] * int(m)
    rng = np.random.default_rng(seed)
    n = len(cats)
    source = np.asarray(SOURCES, dtype=object)[rng.integers(0, 2, n)]
    query = rng.random(n) < 0.3
    rated = rng.random(n) < 0.3
    subs_arr, cats_arr = np.asarray(subs, dtype=object), np.asarray(cats, dtype=object)
    k = stats.MIN_PAIRS_FOR_INTERVAL
    largest = max(set(subs), key=lambda s: (subs.count(s), s))
    smallest = np.sort(rng.permutation(np.flatnonzero(subs_arr == largest))[:k])
    pool = np.flatnonzero(rated & (cats_arr == "Demography"))
    if len(pool) < k:  # quick designs: rate enough pairs of one category
        pool = np.flatnonzero(cats_arr == "Demography")
        rated = rated.copy()
        rated[pool[:k]] = True
    smallest_rated = np.sort(rng.permutation(pool)[:k])
    return Design(cats_arr, subs_arr, source, query, rated, smallest, smallest_rated)


def _logistic(x):
    return 1.0 / (1.0 + np.exp(-x))


def simulate_scenario(rng, scenario: Scenario, design: Design):
    """(PairGrid with categories as strata, per-pair status counts) of one run of ``scenario``."""
    n = design.n
    categories = tuple(CATEGORY_SIZES)
    cat_index = np.asarray([categories.index(c) for c in design.category])
    sub_names = sorted(s for c in CATEGORY_SIZES for s in CATEGORIES[c])  # every design's: a cell's truth keeps them
    sub_shift = dict(zip(sub_names, np.random.default_rng(99).normal(0, SUBCATEGORY_SD, len(sub_names))))
    if scenario.alpha is None:
        flip = np.zeros(n)
    else:
        shift = (np.asarray([CATEGORY_SHIFT[c] for c in design.category]) + np.asarray(
            [sub_shift[s] for s in design.subcategory]) + np.asarray([SOURCE_SHIFT[s] for s in design.source]))
        flip = _logistic(scenario.alpha + shift + rng.normal(0, scenario.flip_sd, n))
    pref = rng.integers(0, 4, n)

    def answers():
        keep = rng.random((n, RUNS)) < 1 - scenario.noise
        return np.where(keep, pref[:, None], rng.integers(0, 4, (n, RUNS)))

    a = answers()
    b = answers() if scenario.sampled else a
    other = (b + rng.integers(1, 4, (n, RUNS))) % 4
    b = np.where(rng.random((n, RUNS)) < flip[:, None], other, b)
    rho = np.clip(scenario.refusal * rng.beta(1, 3, n) / 0.25, 0, 0.95)
    ref_a = rng.random((n, RUNS)) < np.clip(rho * 1.2, 0, 0.95)[:, None]
    own = rng.random((n, RUNS)) < (rho / 1.2)[:, None]
    ref_b = np.where(rng.random((n, RUNS)) < scenario.link, ref_a, own)
    level = rng.choice([1, 2, 3, 4], n)
    jitter = np.array([0, 1, -1])
    conf_a = GRID[np.clip(level[:, None] + rng.choice(jitter, (n, RUNS)), 0, len(GRID) - 1)]
    conf_b = GRID[np.clip(level[:, None] + rng.choice(jitter, (n, RUNS)), 0, len(GRID) - 1)]
    lp, lm = np.where(ref_a, stats.REFUSED, a), np.where(ref_b, stats.REFUSED, b)
    cp, cm = np.where(ref_a, 0.0, conf_a), np.where(ref_b, 0.0, conf_b)
    human = np.where(design.rated, rng.binomial(5, np.clip(0.95 - 0.6 * flip, 0, 1)) / 5.0, np.nan)
    grid = np.unique(np.concatenate([[0.0, 1.0], cp.ravel(), cm.ravel()]))
    g = stats.PairGrid(tuple(f"p{i}" for i in range(n)), categories, cat_index.astype(np.int64), lp, lm, lp == lm,
                       np.searchsorted(grid, cp), np.searchsorted(grid, cm), grid, human, True)
    p_inv = np.clip(scenario.invalid * rng.gamma(0.5, 2.0, n), 0, 0.5)
    p_trunc = np.clip(scenario.truncated * rng.gamma(0.5, 2.0, n), 0, 0.5)
    u = rng.random((n, 2 * RUNS))
    counts = {"responses": np.full(n, 2.0 * RUNS), "refusal": (ref_a.sum(1) + ref_b.sum(1)).astype(float),
              "invalid": (u < p_inv[:, None]).sum(1).astype(float),
              "truncated": ((u >= p_inv[:, None]) & (u < (p_inv + p_trunc)[:, None])).sum(1).astype(float)}
    return g, counts


def _with_strata(g, labels: np.ndarray, idx: np.ndarray | None = None):
    """``g`` (or its pairs ``idx``) with ``labels`` as the strata (a report table's cells)."""
    sub = g if idx is None else stats._subgrid(g, idx)
    lab = labels if idx is None else labels[idx]
    names, codes = np.unique(np.asarray(lab, dtype=object), return_inverse=True)
    return stats.PairGrid(sub.pair_ids, tuple(str(x) for x in names), codes.astype(np.int64), sub.letter_plus,
                          sub.letter_minus, sub.same, sub.rank_plus, sub.rank_minus, sub.grid, sub.human, True)


#: The scopes of the report and analysis: name -> (what it is, the keys shown with an interval)
PAIR_KEYS = ("consistency", "cc_auc", "sr_auc", "refusal_asymmetry_rate", "human_consistency",
             "consistency_minus_human")
RATE_KEYS = ("refusal_rate", "invalid_rate", "truncated_rate")
SCOPES = {
    "all": ("all pairs (the headline; 5 categories as strata)", PAIR_KEYS + RATE_KEYS),
    "category": ("each of the 5 categories (analysis keys <metric>_<category>, Table 2)", PAIR_KEYS + RATE_KEYS),
    "subcategory": ("each of the 17 subcategories (report, Tables 6-10)",
                    ("consistency", "cc_auc", "sr_auc", "empty_answer_rate", "refusal_asymmetry_rate",
                     "human_consistency")),
    "query_category": ("Table 3: each category on the HNER query pairs", ("consistency",)),
    "query_all": ("Table 3: all HNER query pairs (5 categories as strata)", ("consistency",)),
    "source": ("Table 11: each of the 10 category x question source cells", ("consistency", "cc_auc", "sr_auc")),
    "smallest": ("the smallest scope with an interval (MIN_PAIRS_FOR_INTERVAL pairs of one subcategory; as many "
                 "rated pairs for the human keys)", ("consistency", "cc_auc", "sr_auc", "empty_answer_rate",
                                                     "refusal_asymmetry_rate", "human_consistency",
                                                     "consistency_minus_human") + RATE_KEYS),
    "smallest_cell": ("the same MIN_PAIRS_FOR_INTERVAL pairs as a cell of a full run's subcategory table (the rest of "
                      "their subcategory a cell of its own): the enclosing scope a cell at a bound borrows its design "
                      "effect from", ("consistency", "cc_auc", "sr_auc", "empty_answer_rate", "refusal_asymmetry_rate")),
}


#: the label of the smallest scope's pairs when they are a cell of a full run (scope ``smallest_cell``)
SMALLEST_CELL = "smallest in a run"


def _smallest_cell_labels(design: Design) -> np.ndarray:
    """The subcategory of every pair, with the smallest scope's pairs relabelled :data:`SMALLEST_CELL`."""
    labels = design.subcategory.copy()
    labels[design.smallest] = SMALLEST_CELL
    return labels


def scope_cells(design: Design) -> dict[str, dict[str, np.ndarray]]:
    """{scope: {cell name: pair indices}} of :data:`SCOPES`."""
    out: dict[str, dict[str, np.ndarray]] = {"all": {"all": np.arange(design.n)}}
    out["category"] = {c: np.flatnonzero(design.category == c) for c in CATEGORY_SIZES}
    out["subcategory"] = {s: np.flatnonzero(design.subcategory == s) for s in sorted(set(design.subcategory))}
    out["query_category"] = {c: np.flatnonzero(design.query & (design.category == c)) for c in CATEGORY_SIZES}
    out["query_all"] = {"query": np.flatnonzero(design.query)}
    out["source"] = {f"{c} / {s}": np.flatnonzero((design.category == c) & (design.source == s))
                     for c in CATEGORY_SIZES for s in SOURCES}
    out["smallest"] = {"smallest": design.smallest, "smallest rated": design.smallest_rated}
    out["smallest_cell"] = {SMALLEST_CELL: design.smallest}
    return out


def _rates(counts: dict[str, np.ndarray], idx: np.ndarray) -> dict[str, float]:
    total = counts["responses"][idx].sum()
    return {f"{k}_rate": float(counts[k][idx].sum() / total) for k in stats.RATE_NAMES}


def _sub_design(design: Design, idx: np.ndarray, copies: int) -> Design:
    """The pairs ``idx`` of ``design``, tiled ``copies`` times (the smallest-scope indices kept, unused)."""
    return Design(*(np.tile(getattr(design, f)[idx], copies) for f in ("category", "subcategory", "source", "query",
                                                                       "rated")), design.smallest, design.smallest_rated)


def population_truth(scenario: Scenario, design: Design, pairs: int = TRUTH_PAIRS,
                     seed: int = 777) -> dict[str, dict[str, dict[str, float]]]:
    """{scope: {cell: {key: truth}}}: the metrics of each cell on its own pairs tiled to at least ``pairs`` pairs
    (a stream per cell): a pair's model depends only on its category, subcategory and question source, so that is
    the cell's population value. A cell of 20 pairs gets as precise a truth as one of 1,609."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    for s_index, (scope, cells) in enumerate(scope_cells(design).items()):
        out[scope] = {}
        for c_index, (cell, idx) in enumerate(cells.items()):
            big = _sub_design(design, idx, -(-pairs // len(idx)))
            g, counts = simulate_scenario(np.random.default_rng([seed, s_index, c_index]), scenario, big)
            values = {k: float(v[0]) for k, v in stats._scoped(g, None).items()}
            values.update(_rates(counts, np.arange(big.n)))
            out[scope][cell] = values
    return out


def estimates(g, counts, design: Design, level: float = 0.95) -> dict[str, dict[str, dict[str, float]]]:
    """{scope: {cell: pair_summary / response_rates output}} for one simulated run, as the tasks, the
    analysis and the report compute them (n_perm = 0: intervals only)."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    cells = scope_cells(design)
    summary = stats.pair_summary(g, 1, 0, 0, level)
    rates = stats.response_rates(design.category.tolist(), counts, 1, 0, level)
    out["all"] = {"all": {**summary[None], **rates[None]}}
    out["category"] = {c: {**summary[c], **rates[c]} for c in CATEGORY_SIZES}
    for scope, labels in (("subcategory", design.subcategory), ("source", np.asarray(
            [f"{c} / {s}" for c, s in zip(design.category, design.source)], dtype=object))):
        per_cell = stats.pair_summary(_with_strata(g, labels), 1, 0, 0, level)
        out[scope] = {cell: per_cell[cell] for cell in cells[scope]}
    query = cells["query_all"]["query"]
    per_query = stats.pair_summary(_with_strata(g, design.category, query), 1, 0, 0, level)
    out["query_category"] = {c: per_query[c] for c in CATEGORY_SIZES}
    out["query_all"] = {"query": per_query[None]}
    out["smallest_cell"] = {SMALLEST_CELL: stats.pair_summary(_with_strata(g, _smallest_cell_labels(design)), 1, 0, 0,
                                                             level)[SMALLEST_CELL]}
    out["smallest"] = {}
    for cell, idx in cells["smallest"].items():
        one = stats.pair_summary(_with_strata(g, np.asarray(["cell"] * design.n, dtype=object), idx), 1, 0, 0, level)
        sub_counts = {k: v[idx] for k, v in counts.items()}
        out["smallest"][cell] = {**one[None], **stats.response_rates(["cell"] * len(idx), sub_counts, 1, 0, level)[None]}
    return out


def percentile_interval(g, labels: np.ndarray, idx: np.ndarray, key: str, n_boot: int, seed: int,
                        counts: dict[str, np.ndarray] | None = None) -> tuple[float, float]:
    """The interval the tasks used before: the 2.5-97.5 percentiles of the pair bootstrap (pairs
    resampled within ``labels``) -- diagnostic rows only."""
    from lm_eval_bias.core.bootstrap import cluster_bootstrap_weights, summarize_replicates

    weights = cluster_bootstrap_weights(list(labels[idx]), n_boot, seed).astype(np.float64)
    if counts is not None:  # a response rate
        name = key[: -len("_rate")]
        values = (weights @ counts[name][idx]) / (weights @ counts["responses"][idx])
    else:
        values = stats._scoped(stats._subgrid(g, idx), weights)[key]
    s = summarize_replicates(values)
    return s.ci_low, s.ci_high


#: (scope, key) pairs whose former percentile interval is shown as a diagnostic row (scenario ``limit``)
PERCENTILE_DIAGNOSTICS = (("subcategory", "consistency"), ("subcategory", "refusal_asymmetry_rate"),
                          ("category", "invalid_rate"))


def _row(quantity, kind, design, dgp, truth, estimates_, hits, n_seeds, n_boot, seed, note="", role="default",
         hits_per_seed=None) -> dict[str, Any]:
    return rate_row(BENCHMARK, quantity, kind, design, dgp, truth, estimates_, hits, n_seeds, n_boot, seed, note,
                    role, hits_per_seed)


def interval_rows(n_seeds: int, n_boot: int, quick: bool, seed: int = 20261129,
                  scenarios: tuple[Scenario, ...] = SCENARIOS) -> list[dict]:
    """Coverage rows of every scope x key of :data:`SCOPES` on the truth grid :data:`SCENARIOS`."""
    design = real_design(quick)
    cells = scope_cells(design)
    size = f"{design.n} pairs in 5 categories x {RUNS} option orders x 2 images"
    rows = []
    for k, scenario in enumerate(scenarios):
        truth = population_truth(scenario, design, 5_000 if quick else TRUTH_PAIRS)
        hits: dict[tuple[str, str, str], list[float]] = {}
        est: dict[tuple[str, str, str], list[float]] = {}
        diag: dict[tuple[str, str, str], list[float]] = {}
        for s in range(seed, seed + n_seeds):
            g, counts = simulate_scenario(np.random.default_rng([s, k]), scenario, design)
            out = estimates(g, counts, design)
            for scope, (_, keys) in SCOPES.items():
                for cell, values in out[scope].items():
                    for key in keys:
                        if (cell == "smallest") == (key in stats.HUMAN_KEYS) and scope == "smallest":
                            continue  # the rated cell checks the human keys, the other one the rest
                        t = truth[scope][cell].get(key, math.nan)
                        low, high = values.get(f"{key}_ci_low", math.nan), values.get(f"{key}_ci_high", math.nan)
                        if not math.isfinite(t):
                            continue
                        est[(scope, key, cell)] = est.get((scope, key, cell), []) + [values.get(key, math.nan)]
                        covered = covers(low, high, t)
                        hits.setdefault((scope, key, cell), []).append(covered)
            if scenario.name == "limit" and n_boot:
                for scope, key in PERCENTILE_DIAGNOSTICS:
                    labels = design.category if scope == "category" else design.subcategory
                    for cell, idx in cells[scope].items():
                        low, high = percentile_interval(g, labels, idx, key, n_boot, s,
                                                        counts if key in RATE_KEYS else None)
                        t = truth[scope][cell][key]
                        diag.setdefault((scope, key, cell), []).append(covers(low, high, t))
        dgp = f"{scenario.name}: {scenario.text}; category, subcategory, source and pair effects"
        for scope, (what, keys) in SCOPES.items():
            for key in keys:
                chosen = [c for (sc, kk, c) in hits if sc == scope and kk == key]
                if not chosen:
                    continue
                per_cell = {c: np.asarray(hits[(scope, key, c)], dtype=float) for c in chosen}
                pooled = np.concatenate(list(per_cell.values()))
                shown = {c: v[np.isfinite(v)] for c, v in per_cell.items()}
                shown = {c: v for c, v in shown.items() if v.size}
                truths = [truth[scope][c][key] for c in chosen]
                n_cells = len(chosen)
                sizes = [len(cells[scope][c]) if key not in stats.HUMAN_KEYS else
                         int(design.rated[cells[scope][c]].sum()) for c in chosen]
                note = (f"{what}; {n_cells} cell(s), {min(sizes)}-{max(sizes)} "
                        f"{'rated ' if key in stats.HUMAN_KEYS else ''}pairs; truth {min(truths):.4g}-{max(truths):.4g}")
                if len(shown) > 1:
                    cov = [float(v.mean()) for v in shown.values()]
                    note += f"; cell coverage {min(cov):.3f}-{max(cov):.3f}"
                missing = n_cells - len(shown)
                if missing:
                    note += (f"; {missing} cell(s) below {stats.MIN_PAIRS_FOR_INTERVAL} "
                             f"{'rated ' if key in stats.HUMAN_KEYS else ''}pairs: no interval (not counted)")
                estimates_ = np.concatenate([np.asarray(est[(scope, key, c)], dtype=float) for c in chosen])
                # several cells a seed: the Monte Carlo SE with the seed as the cluster
                by_seed = np.column_stack(list(per_cell.values())) if n_cells > 1 else None
                rows.append(_row(f"{key} [{scope}]", "interval", size, dgp, float(np.mean(truths)), estimates_,
                                 pooled, n_seeds, 0, seed, note, hits_per_seed=by_seed))
        for scope, key in PERCENTILE_DIAGNOSTICS:
            chosen = [c for (sc, kk, c) in diag if sc == scope and kk == key]
            if not chosen:
                continue
            pooled = np.concatenate([np.asarray(diag[(scope, key, c)]) for c in chosen])
            cov = [float(np.mean(diag[(scope, key, c)])) for c in chosen]
            rows.append(_row(f"{key} [{scope}], percentile pair bootstrap (the former interval)", "interval", size,
                             dgp, float(np.mean([truth[scope][c][key] for c in chosen])), [], pooled, n_seeds, n_boot,
                             seed, f"diagnostic: the interval the tasks showed before; cell coverage "
                                   f"{min(cov):.3f}-{max(cov):.3f}", role="diagnostic"))
    return rows


#: the null's category-level heterogeneity: letter preference per category (the preferred option of
#: each image is drawn from it) and refusal multiplier per category
CATEGORY_LETTERS = np.array([[0.55, 0.15, 0.15, 0.15], [0.25, 0.25, 0.25, 0.25], [0.1, 0.2, 0.3, 0.4],
                             [0.4, 0.4, 0.1, 0.1], [0.15, 0.15, 0.15, 0.55]])
CATEGORY_REFUSAL = np.array([1.0, 2.0, 0.5, 1.0, 1.5])


def simulate(rng, sizes: dict[str, int], linked: bool = True):
    """(grid, per-pair strata, per-pair status counts) of one simulated run of the design. Unlinked
    (the null): each image draws its own preferred option from its category's letter distribution
    (:data:`CATEGORY_LETTERS`) and its own refusal propensity (times :data:`CATEGORY_REFUSAL`)."""
    cats = np.concatenate([[c] * n for c, n in sizes.items()])
    n = len(cats)
    cat_index = np.concatenate([[i] * m for i, m in enumerate(sizes.values())])
    flip = _logistic(ALPHA + rng.normal(0, 1, n))
    if linked:
        pref_p = rng.integers(0, 4, n)
        pref_m = pref_p
    else:
        cumulative = CATEGORY_LETTERS.cumsum(1)[cat_index]
        pref_p = (rng.random(n)[:, None] > cumulative).sum(1)
        pref_m = (rng.random(n)[:, None] > cumulative).sum(1)
    rho_p = rng.beta(1, 12, n) * 1.5
    rho_m = rho_p / 1.5 if linked else rng.beta(1, 12, n)
    if not linked:
        rho_p = np.clip(rho_p * CATEGORY_REFUSAL[cat_index] / 1.5, 0, 0.9)
        rho_m = np.clip(rho_m * CATEGORY_REFUSAL[cat_index], 0, 0.9)
    level_p = rng.choice([1, 2, 3, 4], n)
    level_m = level_p if linked else rng.choice([1, 2, 3, 4], n)

    def answers(pref):
        keep = rng.random((n, RUNS)) < 0.8
        return np.where(keep, pref[:, None], rng.integers(0, 4, (n, RUNS)))

    a = answers(pref_p)
    if linked:
        other = (a + rng.integers(1, 4, (n, RUNS))) % 4
        b = np.where(rng.random((n, RUNS)) < flip[:, None], other, a)
    else:
        b = answers(pref_m)
    ref_a = rng.random((n, RUNS)) < rho_p[:, None]
    ref_b = rng.random((n, RUNS)) < rho_m[:, None]
    jitter = np.array([0, 1, -1])
    conf_a = GRID[np.clip(level_p[:, None] + rng.choice(jitter, (n, RUNS)), 0, len(GRID) - 1)]
    conf_b = GRID[np.clip(level_m[:, None] + rng.choice(jitter, (n, RUNS)), 0, len(GRID) - 1)]
    lp = np.where(ref_a, stats.REFUSED, a)
    lm = np.where(ref_b, stats.REFUSED, b)
    cp, cm = np.where(ref_a, 0.0, conf_a), np.where(ref_b, 0.0, conf_b)
    human = np.where(rng.random(n) < 0.3, rng.binomial(5, 1 - 0.6 * flip) / 5.0, np.nan)
    grid = np.unique(np.concatenate([[0.0, 1.0], cp.ravel(), cm.ravel()]))
    names = tuple(sizes)
    g = stats.PairGrid(tuple(f"p{i}" for i in range(n)), names, np.array([names.index(c) for c in cats]), lp, lm,
                       lp == lm, np.searchsorted(grid, cp), np.searchsorted(grid, cm), grid, human, True)
    statuses = rng.choice(4, size=(n, 2 * RUNS), p=[0.97, 0.0, 0.01, 0.02])
    counts = {"responses": np.full(n, 2.0 * RUNS), "refusal": (ref_a.sum(1) + ref_b.sum(1)).astype(float),
              "invalid": (statuses == 2).sum(1).astype(float), "truncated": (statuses == 3).sum(1).astype(float)}
    return g, cats, counts


def run(n_seeds: int, n_boot: int, quick: bool, seed: int = 20261129, parts: tuple[str, ...] = ("intervals", "tests")
        ) -> list[dict]:
    """Interval rows (:func:`interval_rows`, :data:`INTERVAL_SEEDS` seeds per model at least; ``n_boot``
    replicates for the diagnostic percentile rows) and test rows (:data:`TEST_SEEDS` seeds from :data:`TEST_FIRST_SEED`,
    ``n_boot`` permutations: the task's own number)."""
    rows = interval_rows(n_seeds if quick else max(n_seeds, INTERVAL_SEEDS), n_boot, quick, seed) if "intervals" in parts else []
    if "tests" in parts:
        rows += null_test_rows(n_seeds if quick else max(n_seeds, TEST_SEEDS), n_boot, quick,
                          seed if quick else TEST_FIRST_SEED)
    return rows


def null_test_rows(test_seeds: int, n_perm: int, quick: bool, first_seed: int) -> list[dict]:
    """Rejection rates of the permutation tests under the null (:func:`simulate`, ``linked=False``) and
    the null floors' means."""
    sizes = _sizes(quick)
    design = f"{sum(sizes.values())} pairs in 5 categories x {RUNS} option orders x 2 images"
    null_p = {k: [] for k in stats.NULL_METRICS}
    null_p_category = {k: [] for k in stats.NULL_METRICS}
    null_any_holm = {k: [] for k in stats.NULL_METRICS}
    null_est = {k: [] for k in stats.NULL_METRICS}
    null_floor = {k: [] for k in stats.NULL_METRICS}
    for s in range(first_seed, first_seed + test_seeds):
        g0, _, _ = simulate(np.random.default_rng(10_000_000 + s), sizes, linked=False)
        summary0 = stats.pair_summary(g0, 0, n_perm, s, categories=None)
        out0 = summary0[None]
        for key in stats.NULL_METRICS:
            null_p[key].append(out0[f"{key}_p_null"] < 0.05)
            null_est[key].append(out0[key])
            null_floor[key].append(out0[f"{key}_null"])
            per_category = [summary0[name][f"{key}_p_null"] for name in sizes]
            null_p_category[key].extend(p < 0.05 for p in per_category)
            null_any_holm[key].append(bool(np.any(np.asarray(adjust(per_category)) < 0.05)))
    null_dgp = ("the two images unrelated: own preferred option, refusal propensity and confidence level per side; "
                "category-specific letter preferences and refusal levels")
    permutation = (f"b- responses permuted across pairs within category; randomised p (ties weighted U); seeds "
                   f"{first_seed}-{first_seed + test_seeds - 1}")
    rows = []
    for key in stats.NULL_METRICS:
        rows.append(_row(f"{key}_p_null", "test", design, null_dgp, math.nan, null_est[key], null_p[key], test_seeds,
                         n_perm, first_seed, permutation))
        rows.append(_row(f"{key}_<category>_p_null (each of 5 categories)", "test", design, null_dgp, math.nan,
                         null_est[key], null_p_category[key], test_seeds, n_perm, first_seed,
                         "rejection pooled over the five per-category tests"))
        rows.append(_row(f"{key}_<category>_p_null_holm: any category Holm p < 0.05", "test", design, null_dgp,
                         math.nan, null_est[key], null_any_holm[key], test_seeds, n_perm, first_seed,
                         "family-wise: the task's Holm family of five categories"))
        rows.append(_row(f"{key}_null", "null_floor", design, null_dgp, float(np.mean(null_est[key])),
                         null_floor[key], [], test_seeds, n_perm, first_seed,
                         "mean null floor vs mean estimate (truth column)"))
    return rows


def exactness_check(n_seeds: int = 1500, n_perm: int = 99, first_seed: int = 50_000_000) -> dict[str, dict[str, float]]:
    """The permutation tests' p-values under the calibration null (:func:`simulate`, ``linked=False``) on
    ``n_seeds`` fresh designs: per test (pooled and per category, Cons / CC-AUC / SR-AUC) the rejection
    rate at 5 % and the Kolmogorov-Smirnov p of uniformity (``scipy.stats.kstest``). The randomised p
    is exact at any number of permutations, so 99 keep this cheap (~0.15 s a seed). The 26 Nov run
    (defaults): pooled 0.051 / 0.056 / 0.047, per category 0.045-0.057, every KS p >= 0.096."""
    from scipy.stats import kstest

    names = [None, *CATEGORY_SIZES]
    p = {(scope, k): [] for scope in names for k in stats.NULL_METRICS}
    for s in range(first_seed, first_seed + n_seeds):
        g0, _, _ = simulate(np.random.default_rng(s), CATEGORY_SIZES, linked=False)
        out = stats.pair_summary(g0, 0, n_perm, s)
        for scope, k in p:
            p[(scope, k)].append(out[scope][f"{k}_p_null"])
    return {f"{k}" + ("" if scope is None else f"_{scope.lower()}"): {
        "rejection": float(np.mean(np.asarray(v) < 0.05)), "ks_p": float(kstest(v, "uniform").pvalue)}
        for (scope, k), v in p.items()}


#: the smallest-scope rate sweep's mean rates (:func:`smallest_scope_rate_sweep`) and per-pair heterogeneity
#: (None: independent responses; Gamma shapes k, 0.5 the table's invalid and truncated propensities)
RATE_SWEEP_RATES = (0.005, 0.01, 0.02, 0.05, 0.1, 0.2)
RATE_SWEEP_SHAPES = (None, 0.5, 0.1)
RATE_SWEEP_CAP = 0.95
#: cell sizes at which the sweep also runs the strongest clustering at rates of 5-20 % (a report cell has 36-161 pairs)
RATE_SWEEP_MORE_PAIRS = (40, 80, 160)
RATE_SWEEP_JSON = Path(__file__).resolve().parent / "sweeps" / "rates_smallest_scope.json"
RATE_SWEEP_FIGURE = Path(__file__).resolve().parents[2] / "docs" / "coverage-sweep-rates-smallest-scope.png"


def smallest_scope_rate_sweep(n_seeds: int, rates=RATE_SWEEP_RATES, shapes=RATE_SWEEP_SHAPES,
                              seed: int = 61_000_000, pairs: int = stats.MIN_PAIRS_FOR_INTERVAL) -> list[dict]:
    """A response-status rate of one cell of ``pairs`` pairs (by default the smallest scope with an interval,
    ``stats.MIN_PAIRS_FOR_INTERVAL`` = 20, a ``--limit`` run: nothing to borrow) of 2 x :data:`RUNS` responses each,
    against its truth: each pair's propensity r x Gamma(k, 1/k) capped at :data:`RATE_SWEEP_CAP` (``shape`` None:
    every response independent at r), its 6 responses Bernoulli at it, ``n_seeds`` runs a point (a stream of its
    own) through :func:`lm_eval_bias.cf_vqa.stats.response_rates`, the tasks' function. Per point: ``coverage`` of
    its interval (the jackknife's effective size, capped at the cell's responses, in Wilson's interval with Korn &
    Graubard's factor, (t_119 / t_19)^2 = 0.896 at 20 pairs), ``coverage_no_factor`` (the same without the factor)
    and ``coverage_count`` (Wilson's interval of the count over the responses, clustering ignored), each of the truth
    :func:`scripts.calibration.capped_gamma_mean`; ``design_effect`` the variance of the run's count against the
    binomial's; ``mc_error`` sqrt(0.95 0.05 / n). Made to say what the factor buys and what the interval assumes
    about how the events cluster by pair (docs/cf-vqa.md, "The response-status rates against their truth")."""
    from lm_eval_bias.core.jackknife import effective_n_wilson_interval
    from scripts.calibration import capped_gamma_mean, mc_error

    per_pair = 2 * RUNS
    labels = ["cell"] * pairs
    responses = np.full(pairs, float(per_pair))
    n = float(responses.sum())
    points = []
    for r_index, rate in enumerate(rates):
        for k_index, shape in enumerate(shapes):
            truth = capped_gamma_mean(rate, shape, RATE_SWEEP_CAP)
            hits = {"coverage": [], "coverage_no_factor": [], "coverage_count": []}
            totals = []
            for s in range(seed, seed + n_seeds):
                rng = np.random.default_rng([s, r_index, k_index, *(() if pairs == stats.MIN_PAIRS_FOR_INTERVAL
                                                                      else (pairs,))])
                propensity = (np.full(pairs, rate) if shape is None else
                              np.minimum(RATE_SWEEP_CAP, rate * rng.gamma(shape, 1.0 / shape, pairs)))
                events = rng.binomial(per_pair, propensity).astype(float)
                totals.append(events.sum())
                out = stats.response_rates(labels, {"responses": responses, "event": events}, 1, 0)[None]
                est, se = out["event_rate"], out["event_rate_stderr"]
                hits["coverage"].append(covers(out["event_rate_ci_low"], out["event_rate_ci_high"], truth))
                hits["coverage_no_factor"].append(covers(*effective_n_wilson_interval(est, se, int(n) - 1, n,
                                                                                       float(pairs)), truth))
                binomial_se = math.sqrt(est * (1.0 - est) / n)
                hits["coverage_count"].append(covers(*effective_n_wilson_interval(est, binomial_se, int(n) - 1, n, n),
                                                     truth))
            points.append({"rate": rate, "shape": shape, "pairs": pairs,
                           "clustering": "independent" if shape is None else f"by pair, k = {shape:g}",
                           "truth": truth, "mean_events": float(np.mean(totals)),
                           "design_effect": float(np.var(totals, ddof=1) / (pairs * per_pair * truth * (1.0 - truth))),
                           **{name: float(np.mean(v)) for name, v in hits.items()},
                           "mc_error": mc_error(n_seeds), "intervals": n_seeds, "n_seeds": n_seeds, "seed": seed})
    return points


if __name__ == "__main__":
    import time

    quick = "--quick" in sys.argv
    start = time.time()
    if "--sweep-rates" in sys.argv:  # python -m scripts.calibration.cf_vqa --sweep-rates [--seeds=N]
        from scripts.calibration import int_option, write_truth_sweep

        n = int_option(sys.argv, "seeds", 4000)
        points = smallest_scope_rate_sweep(n)
        write_truth_sweep(points, None, RATE_SWEEP_FIGURE, "truth (a response-status rate)",
                          f"Counterfactual VQA, smallest scope: 20 pairs x 6 responses (19 df); "
                          f"{points[0]['n_seeds']} runs a point",
                          {"coverage_no_factor": "no df factor"}, group="clustering")
        for pairs in RATE_SWEEP_MORE_PAIRS:  # the strongest clustering in larger cells (JSON only)
            points += smallest_scope_rate_sweep(n, rates=RATE_SWEEP_RATES[3:], shapes=RATE_SWEEP_SHAPES[2:], pairs=pairs)
        write_truth_sweep(points, RATE_SWEEP_JSON)
        for point in points:
            print(point)
        print(f"{time.time() - start:.0f} s")
        sys.exit(0)
    if "--exactness" in sys.argv:  # python -m scripts.calibration.cf_vqa --exactness [--quick]
        for key, value in exactness_check(30 if quick else 1500).items():
            print(f"{key:32s} rejection={value['rejection']:.4f} ks_p={value['ks_p']:.3f}")
        print(f"{time.time() - start:.0f} s")
        sys.exit(0)
    parts = tuple(a.split("=", 1)[1].split(",") for a in sys.argv if a.startswith("--parts="))
    table = run(5 if quick else 250, 200 if quick else 1000, quick, parts=parts[0] if parts else ("intervals", "tests"))
    for r in table:
        print(f"{r['quantity']:60s} {r['kind']:10s} truth={r['truth']:.4f} mean={r['mean_estimate']:.4f} "
              f"cov={r['coverage']:.3f} rej={r['rejection_rate']:.3f} met={r['target_met']} {r['note'][-60:]}")
    print(f"{time.time() - start:.0f} s")
