"""Calibration simulations of the project's statistics, one module per benchmark.

Each module ``scripts/calibration/<benchmark>.py`` defines

    def run(n_seeds: int, n_boot: int, quick: bool) -> list[dict]

returning one row per quantity checked, with the keys of :data:`ROW_FIELDS` (``role`` may be left out:
it defaults to "default"; ``mc_error`` may be left out: the runner computes it). ``quick`` shrinks the
designs so that a smoke test finishes in seconds; the documented figures use ``quick=False``.
``scripts/calibrate_statistics.py`` runs every module and prints / writes the table; it recomputes
``target_met`` of every row from the bands (:func:`band_met`), whatever the module said.
"""

import math

ROW_FIELDS = (
    "benchmark",      # "reflect" | "fact_or_fair" | "cf_vqa" | "vignette"
    "quantity",       # result key or test name, e.g. "polarization", "p_race (template-clustered)"
    "kind",           # "interval" (coverage), "test" (rejection rate under its null), "null_floor"
    "design",         # sizes, e.g. "48 templates x 45 pairs x 2 orders"
    "dgp",            # data-generating model, e.g. "no bias; per-portrait effect 1 % of salary"
    "truth",          # true value of the quantity (NaN for tests)
    "mean_estimate",  # mean estimate over seeds (for null floors: mean under no bias)
    "coverage",       # share of seeds whose 95 % interval covers the truth (NaN unless kind == interval)
    "rejection_rate", # share of seeds with p < 0.05 under the null (NaN unless kind == test)
    "n_seeds",
    "n_boot",
    "seed",           # first seed; seeds are seed .. seed + n_seeds - 1
    "target_met",     # bool: coverage in [0.93, 0.97] / rejection in [0.04, 0.06] (family-wise rows: <= 0.06),
                      # NO Monte Carlo allowance; None for null floors. The runner recomputes it (:func:`band_met`).
    "note",           # e.g. "paper's procedure, kept by name as p_race_unit"
    "role",           # "default": what the tool reports by default (the target applies);
                      # "paper": the paper's procedure kept by name (shown, target not applied);
                      # "diagnostic": e.g. raw per-occupation p before Holm (shown, target not applied).
                      # Optional in a module's rows: the runner fills in "default" (DEFAULT_ROLE).
    "mc_error",       # Monte Carlo standard error of the rate: sqrt(p (1 - p) / n_seeds) at the target rate p
                      # (0.95 for coverage, 0.05 for rejection), or ``mc_error_clustered`` where the row has
                      # one; shown as its own column, never added to the band. Optional in a module's rows:
                      # the runner fills it in (:func:`mc_error`).
    "mc_error_clustered",  # a row that pools several intervals a seed (one per activity, per cell, ...): the
                      # Monte Carlo SE of that pooled rate with the seed as the cluster
                      # (:func:`seed_clustered_mc_error`); NaN for one interval or test a seed. Optional.
)
#: the fields a module must return (the runner adds the others)
REQUIRED_FIELDS = tuple(f for f in ROW_FIELDS if f not in ("role", "mc_error", "mc_error_clustered"))
#: the stated bands: a row meets its target only inside them (no Monte Carlo allowance)
COVERAGE_BAND, REJECTION_BAND = (0.93, 0.97), (0.04, 0.06)
#: how far outside an interval a truth may lie and still count as covered: floating-point rounding only
#: (truths such as S_fair = S_E + S_KLD - S_E S_KLD at the ideal come out as 1 +- 2e-16), nothing a method
#: could produce. Not wider: FACT-OR-FAIR's S_fair is flat to fourth order at its ideal, so an interval that
#: rejects S_fair = 1 ends at 1 - 1e-11 to 1 - 1e-7; a tolerance of 1e-9 counted two thirds of those as covering 1
#: (the fair models' rows 97.7 % until 1 Dec 2026, 95.2 % with this one: docs/fact-or-fair.md)
COVERAGE_TOLERANCE = 1e-12
#: the roles a row may have (:data:`ROW_FIELDS`), and the one a row without ``role`` gets
ROLES = ("default", "paper", "diagnostic")
DEFAULT_ROLE = "default"


def covers(low, high, truth, tolerance: float = COVERAGE_TOLERANCE):
    """1.0 where the interval [``low``, ``high``] contains ``truth`` (within ``tolerance``,
    :data:`COVERAGE_TOLERANCE`), 0.0 where it does not, NaN where the interval is not finite (no interval:
    not counted). Scalars give a float, arrays an array of the broadcast shape. The one coverage check of
    every calibration module."""
    import numpy as np

    low, high, truth = (np.asarray(x, dtype=float) for x in (low, high, truth))
    shown = np.isfinite(low) & np.isfinite(high)
    with np.errstate(invalid="ignore"):
        hit = np.where(shown, (low - tolerance <= truth) & (truth <= high + tolerance), np.nan)
    return float(hit) if hit.ndim == 0 else hit


def mc_error(n_seeds: int, rate: float = 0.95) -> float:
    """Monte Carlo standard error of a rate near ``rate`` estimated from ``n_seeds`` seeds:
    sqrt(rate (1 - rate) / n_seeds) (the "Monte Carlo SE" of coverage and of rejection rates, Morris,
    White & Crowther 2019, Stat. Med. 38:2074, Table 6). The same for 95 % coverage and 5 % rejection:
    1.38 points at 250 seeds (<= 1.5 points from 212 seeds on). Shown beside each row; it is NOT added
    to the band (a row counts as met only inside the band itself); the runner lists each row outside its
    band with z = (rate - target) / this error. A row outside the band by |z| < 2 may be inside it in truth:
    with 250 seeds even an exact 5 % test lands outside 4-6 % in about half of the rows (|z| > 0.72), an
    exact 95 % interval outside 93-97 % in about 15 % (|z| > 1.45)."""
    return math.sqrt(rate * (1 - rate) / max(n_seeds, 1))


def seed_clustered_mc_error(hits_per_seed) -> float:
    """Monte Carlo standard error of a coverage (or rejection) rate pooled over several cells a seed
    (e.g. one interval per activity): the seeds are independent, the cells of one seed are not, so
    the rate sum(h_s) / sum(n_s) is a ratio over S seed clusters with SE sqrt(sum_s (h_s - r n_s)^2 /
    (S (S - 1))) / mean(n_s) (h_s hits of n_s intervals in seed s; Cochran 1977, Sampling Techniques,
    Sec. 6.4). :func:`mc_error` counts a seed's cells as one draw, so it is an upper bound here when
    the cells vary independently; this is the error of the pooled row itself. NaN below two seeds
    with intervals."""
    import numpy as np

    hits = [np.asarray(h, dtype=float) for h in hits_per_seed]
    h = np.array([np.nansum(x) for x in hits])
    n = np.array([np.isfinite(x).sum() for x in hits], dtype=float)
    keep = n > 0
    h, n = h[keep], n[keep]
    if len(n) < 2:
        return float("nan")
    rate = h.sum() / n.sum()
    return float(math.sqrt(np.sum((h - rate * n) ** 2) / (len(n) * (len(n) - 1))) / n.mean())


def is_family_wise(row: dict) -> bool:
    """A row whose test is "any of a family significant after Holm" (quantity ``… any … Holm …``)."""
    import re

    quantity = str(row.get("quantity", ""))
    return row.get("kind") == "test" and re.search(r"\bany\b.*\bHolm\b", quantity) is not None


def band_met(kind: str, coverage: float, rejection: float, family_wise: bool = False) -> bool | None:
    """Whether a rate lies inside its stated band, with no Monte Carlo allowance:

    - ``interval``: coverage in [0.93, 0.97];
    - ``test``: rejection rate in [0.04, 0.06];
    - family-wise ``test`` (any of a family significant after Holm): rejection rate <= 0.06 (Holm
      controls the family-wise error at *at most* the level, conservatively so with discrete p-values);
    - anything else (null floors) or a NaN rate: None (no target)."""
    if kind == "interval" and coverage is not None and math.isfinite(coverage):
        return bool(COVERAGE_BAND[0] <= coverage <= COVERAGE_BAND[1])
    if kind == "test" and rejection is not None and math.isfinite(rejection):
        if family_wise:
            return bool(rejection <= REJECTION_BAND[1])
        return bool(REJECTION_BAND[0] <= rejection <= REJECTION_BAND[1])
    return None


def inside_band_probability(kind: str, n_seeds: int, family_wise: bool = False,
                            clustered_error: float | None = None) -> float | None:
    """P(an exactly calibrated procedure's Monte Carlo rate over ``n_seeds`` seeds lands inside its band):
    the Binomial(n_seeds, p) probability of a rate in :data:`COVERAGE_BAND` (p = 0.95) or
    :data:`REJECTION_BAND` (p = 0.05; family-wise rows: <= 0.06 at p = 0.05). None without a band. Summed
    over the rows it is the number of rows a perfect set of procedures would put inside (the reference the
    table's "target met" count is read against: at 250 seeds an exact interval lands inside 93-97 % with
    probability 0.86, an exact test inside 4-6 % with 0.62, at 1,000 seeds 1.00 and 0.87). A row that pools
    several intervals a seed gives its ``clustered_error`` (:func:`seed_clustered_mc_error`): the rate is then
    a mean over seed clusters, and the probability is the normal one at that standard error."""
    from scipy.stats import binom

    if n_seeds is None or n_seeds < 1:
        return None
    if clustered_error is not None and math.isfinite(clustered_error) and kind in ("interval", "test"):
        from scipy.stats import norm

        target = 0.95 if kind == "interval" else 0.05
        low, high = (COVERAGE_BAND if kind == "interval"
                     else ((-math.inf if family_wise else REJECTION_BAND[0]), REJECTION_BAND[1]))
        return float(norm.cdf((high - target) / clustered_error) - norm.cdf((low - target) / clustered_error))
    if kind == "interval":
        low, high, p = COVERAGE_BAND[0], COVERAGE_BAND[1], 0.95
    elif kind == "test":
        low, high, p = (0.0 if family_wise else REJECTION_BAND[0]), REJECTION_BAND[1], 0.05
    else:
        return None
    # counts k with low <= k / n <= high (a small tolerance: 0.93 * 250 is 232.49999... in floating point)
    k_low, k_high = math.ceil(low * n_seeds - 1e-9), math.floor(high * n_seeds + 1e-9)
    return float(binom.cdf(k_high, n_seeds, p) - binom.cdf(k_low - 1, n_seeds, p))


def rate_row(benchmark, quantity, kind, design, dgp, truth, estimates, hits, n_seeds, n_boot, seed, note="",
             role=DEFAULT_ROLE, hits_per_seed=None) -> dict:
    """One row of :data:`ROW_FIELDS` from per-seed ``hits`` (covered / rejected, NaN left out) and
    ``estimates``: coverage for ``kind == "interval"``, rejection rate for ``kind == "test"``, and
    whether it lies inside 93-97 % / 4-6 % (:func:`band_met`, no Monte Carlo allowance), and the Monte
    Carlo error of ``n_seeds`` (:func:`mc_error`). A row that pools several intervals a seed passes them
    as ``hits_per_seed`` (one sequence a seed) as well: its Monte Carlo error is then
    :func:`seed_clustered_mc_error` (``mc_error_clustered``, also shown as ``mc_error``)."""
    import numpy as np

    hits = np.asarray(hits, dtype=float)
    hits = hits[np.isfinite(hits)]
    rate = float(hits.mean()) if hits.size else math.nan
    coverage = rate if kind == "interval" else math.nan
    rejection = rate if kind == "test" else math.nan
    met = band_met(kind, coverage, rejection, is_family_wise({"kind": kind, "quantity": quantity}))
    row = {"benchmark": benchmark, "quantity": quantity, "kind": kind, "design": design, "dgp": dgp,
           "truth": float(truth), "mean_estimate": float(np.nanmean(estimates)) if len(estimates) else math.nan,
           "coverage": coverage, "rejection_rate": rejection, "n_seeds": n_seeds, "n_boot": n_boot, "seed": seed,
           "target_met": met, "note": note, "role": role,
           "mc_error": mc_error(n_seeds, 0.95 if kind == "interval" else 0.05) if kind in ("interval", "test") else math.nan,
           "mc_error_clustered": seed_clustered_mc_error(hits_per_seed) if hits_per_seed is not None else math.nan}
    if math.isfinite(row["mc_error_clustered"]):
        row["mc_error"] = row["mc_error_clustered"]
    return {k: row[k] for k in ROW_FIELDS}


def attainable_coverages(probabilities, low: float = COVERAGE_BAND[0], high: float = COVERAGE_BAND[1]) -> dict:
    """The coverages a non-randomised interval can have at one truth when the data enter it through a
    discrete statistic X (a count of events, a share of a few answers) whose distribution at that truth is
    ``probabilities`` (P(X = x_j) over its values in increasing order). An interval whose ends are
    non-decreasing in X contains the truth on a run of consecutive values x_a .. x_b (its acceptance
    region; Neyman 1937), so its coverage there is one of the sums P(x_a) + ... + P(x_b), and no other
    (Brown, Cai & DasGupta 2001, Stat. Sci. 16:101, Sec. 2: the oscillation of every such interval).
    Returns ``{"inside": bool, "below": float, "above": float, "values": int}``: whether some run's
    probability lies in [``low``, ``high``] (the band can be met at this truth), the largest attainable
    coverage under ``low`` and the smallest over ``high`` (NaN when there is none). When ``inside`` is
    False no such interval meets the band at this truth: a valid one (coverage >= ``high``) covers at
    least ``above``."""
    sums, values = _run_sums(probabilities)
    return _against_band(sums, values, low, high)


def _against_band(coverages, values: int, low: float, high: float) -> dict:
    """The dict of :func:`attainable_coverages` from the attainable ``coverages``."""
    import numpy as np

    if values == 0:
        return {"inside": False, "below": math.nan, "above": math.nan, "values": 0}
    under, over = coverages[coverages < low], coverages[coverages > high]
    return {"inside": bool(np.any((coverages >= low) & (coverages <= high))),
            "below": float(under.max()) if under.size else math.nan,
            "above": float(over.min()) if over.size else math.nan, "values": values}


def _run_sums(probabilities) -> tuple["np.ndarray", int]:
    """(P(x_a) + ... + P(x_b) for every run a <= b of consecutive values, number of values with P > 0)."""
    import numpy as np

    p = np.asarray(probabilities, dtype=np.float64)
    p = p[p > 0]
    if p.size == 0:
        return np.zeros(0), 0
    cumulative = np.concatenate([[0.0], np.cumsum(p / p.sum())])
    return (cumulative[None, :] - cumulative[:, None])[np.triu_indices(cumulative.size, 1)], int(p.size)


def pooled_attainable_coverages(distributions, low: float = COVERAGE_BAND[0], high: float = COVERAGE_BAND[1],
                                resolution: float = 1e-4) -> dict:
    """:func:`attainable_coverages` of a row that pools several cells over the same seeds (its coverage
    is the mean of the cells' coverages): each cell's coverage is one of its runs' sums, so the row's is
    one of the means of one run sum per cell. ``distributions``: one P(X = x_j) array per cell. The means
    are built cell by cell on a grid of ``resolution`` (each cell's sums rounded to it: the mean is
    exact to ``resolution`` / 2). Returns the same keys, ``values`` the largest number of distinct
    values of a cell."""
    import numpy as np

    totals, widest = np.zeros(1, dtype=np.int64), 0
    for probabilities in distributions:
        sums, values = _run_sums(probabilities)
        if values == 0:
            return _against_band(sums, 0, low, high)
        widest = max(widest, values)
        steps = np.unique(np.round(sums / resolution).astype(np.int64))
        totals = np.unique((totals[:, None] + steps[None, :]).ravel())
    return _against_band(totals * resolution / max(len(distributions), 1), widest, low, high)


def empirical_distribution(values) -> "np.ndarray":
    """P(X = x_j) over the distinct values of a sample of a discrete statistic, in increasing order (the
    input of :func:`attainable_coverages` when the distribution is simulated; values that agree to 12
    decimals count as one; NaN left out)."""
    import numpy as np

    v = np.round(np.asarray(values, dtype=np.float64), 12)
    _, counts = np.unique(v[np.isfinite(v)], return_counts=True)
    return counts / counts.sum()


def softmax(logits):
    """exp(logits) normalised over the last axis (the calibration models' option and group probabilities)."""
    import numpy as np

    z = np.exp(logits - np.max(logits, axis=-1, keepdims=True))
    return z / z.sum(axis=-1, keepdims=True)


def capped_gamma_mean(rate: float, shape: float | None, cap: float = 1.0) -> float:
    """E[min(cap, r G)] with r = ``rate`` and G ~ Gamma(k, 1/k) (mean 1, variance 1 / k; ``shape`` None: G = 1, the
    mean is min(cap, r); 0 at r <= 0): the mean propensity of units whose propensities are r x Gamma(k, 1/k) capped at ``cap``
    (the coverage sweeps' clustered refusals). Closed form r P(G < a; k + 1) + cap P(G >= a; k) with a = cap / r,
    from E[G 1{G < a}] = P(Gamma(k + 1, 1/k) < a)."""
    from scipy.stats import gamma

    if shape is None or rate <= 0:
        return min(cap, max(rate, 0.0))
    a, scale = cap / rate, 1.0 / shape
    return float(rate * gamma.cdf(a, shape + 1.0, scale=scale) + cap * gamma.sf(a, shape, scale=scale))


def int_option(argv: list[str], name: str, default: int, low: int = 1, high: int | None = None) -> int:
    """The integer of ``--<name>=N`` in ``argv`` (``default`` without it), within [``low``, ``high``]; anything
    else exits with one ``error:`` line and a non-zero status, before any work or file is started (the calibration
    modules' command lines)."""
    import sys

    text = next((a.split("=", 1)[1] for a in argv if a.startswith(f"--{name}=")), None)
    if text is None:
        return default
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or value < low or (high is not None and value > high):
        bound = f"{low}..{high}" if high is not None else f">= {low}"
        sys.exit(f"error: --{name} must be an integer {bound}, not {text!r}")
    return value


def write_truth_sweep(points: list[dict], path, figure=None, x_label: str = "truth", title: str = "",
                      references: dict[str, str] | None = None, group: str | None = None) -> None:
    """A coverage-against-truth sweep (one dict a truth, with ``truth``, ``coverage`` and ``mc_error``) as JSON,
    written atomically (not with ``path`` None), and with ``figure`` a PNG of the coverage with 1.96 Monte
    Carlo SEs against the truth, the 93-97 % band shaded and each of ``references`` ({point key: label}) as a dashed line; with ``group`` (a
    point key), one series per value of it. The one writer of the sweeps of the calibration modules
    (``scripts/calibration/sweeps/``, figures in docs/)."""
    import json
    import os
    from pathlib import Path

    if path is not None:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(points, indent=1, ensure_ascii=True))
        os.replace(tmp, path)
    if figure is None:
        return
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure = Path(figure)
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    ax.axhspan(*COVERAGE_BAND, color="#dddddd", label="band 93-97 %")
    names = list(dict.fromkeys(p[group] for p in points)) if group else [None]
    for k, name in enumerate(names):
        chosen = [p for p in points if group is None or p[group] == name]
        truth = [p["truth"] for p in chosen]
        suffix = f": {name}" if name is not None else ""
        ax.errorbar(truth, [p["coverage"] for p in chosen], yerr=[1.96 * p["mc_error"] for p in chosen],
                    fmt="os^D"[k % 4], color="black", capsize=3, label=f"coverage (± 1.96 Monte Carlo SE){suffix}")
        for key, label in (references or {}).items():
            ax.plot(truth, [p[key] for p in chosen], "os^D"[k % 4] + "--", color="#777777", markersize=4,
                    label=label + suffix)
    ax.set_xlabel(x_label)
    ax.set_ylabel("coverage")
    ax.set_ylim(min(0.90, min(p[key] for p in points for key in ("coverage", *(references or {}))) - 0.01), 1.0)
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, frameon=False)
    fig.tight_layout()
    tmp_figure = figure.with_name(figure.stem + ".tmp.png")
    fig.savefig(tmp_figure, dpi=110)
    plt.close(fig)
    os.replace(tmp_figure, figure)


def replace_between_markers(text: str, begin: str, end: str, inner: str) -> str | None:
    """``text`` with what lies between its first ``begin`` and the next ``end`` marker replaced by
    ``inner`` (the markers kept); None when either marker is missing. The one home of the docs blocks
    that the calibration scripts rewrite (the table in docs/statistics.md, each benchmark page's table,
    the attainable-coverage table)."""
    if begin not in text:
        return None
    head, rest = text.split(begin, 1)
    if end not in rest:
        return None
    _, tail = rest.split(end, 1)
    return head + begin + inner + end + tail
