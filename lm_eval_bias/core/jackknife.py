"""Design-based intervals of shares over clusters (image pairs): the stratified delete-one-cluster
jackknife standard error and the logit-t interval (Wilson's with t at a share of 0 or 1); the Wilson
interval at the effective sample size for rates of rare events; the mid-p binomial interval where every
cluster carries one answer.

Used by Counterfactual VQA (every rate and Cons; docs/cf-vqa.md "Intervals") and VIGNETTE (every share;
docs/vignette.md "Intervals"). Pure numpy / scipy, no harness imports. References: Wolter 2007,
*Introduction to Variance Estimation*, Sec. 2.5 and 4.5; Korn & Graubard 1999, *Analysis of Health
Surveys*, Sec. 5.2; Lumley 2010, *Complex Surveys*, Sec. 2.3.1."""

from __future__ import annotations

from typing import Sequence

import numpy as np


def pooled_strata(strata: Sequence) -> np.ndarray:
    """Stratum codes 0..H-1 (sorted labels) with the single-pair strata pooled into one, or a lone one
    collapsed into the smallest other stratum (a stratum of one cluster has no within-stratum variance
    to estimate: the collapsed-strata rule; Wolter 2007, Introduction to Variance Estimation, Sec. 2.5)."""
    labels, codes = np.unique(np.asarray([str(s) for s in strata], dtype=object), return_inverse=True)
    sizes = np.bincount(codes, minlength=len(labels))
    single = sizes[codes] == 1
    if single.sum() == 1 and len(labels) > 1:  # one single-pair stratum: collapse it with the smallest other
        others = np.where(sizes > 1, sizes, np.iinfo(np.int64).max)
        codes = np.where(single, int(np.argmin(others)), codes)
    elif single.sum() > 1:
        codes = np.where(single, len(labels), codes)
    return np.unique(codes, return_inverse=True)[1]


def design_df(strata: np.ndarray) -> int:
    """Degrees of freedom of a stratified cluster design: clusters - strata (Korn & Graubard 1990,
    Am. Stat. 44:270; :func:`lm_eval_bias.core.bootstrap.design_degrees_of_freedom`)."""
    strata = np.asarray(strata)
    return int(len(strata) - len(np.unique(strata))) if len(strata) else 0


def jackknife_weights(strata: np.ndarray, rows: slice) -> np.ndarray:
    """Rows ``rows`` of the (P, P) delete-one-cluster stratified jackknife weights (JKn): replicate ``i``
    drops cluster ``i`` and weights the other ``m_h - 1`` clusters of its stratum ``m_h / (m_h - 1)``
    (so the stratum keeps its weight), every other cluster 1 (Wolter 2007, Sec. 4.5; Rust & Rao 1996,
    Stat. Methods Med. Res. 5:283). A stratum of one cluster gets weight 1 (pool such strata first:
    :func:`pooled_strata`)."""
    strata = np.asarray(strata)
    sizes = np.bincount(strata)
    idx = np.arange(len(strata))[rows]
    m = sizes[strata[idx]].astype(np.float64)
    factor = np.where(m > 1, m / np.maximum(m - 1, 1), 1.0)
    w = np.where(strata[None, :] == strata[idx][:, None], factor[:, None], 1.0)
    w[np.arange(len(idx)), idx] = 0.0
    return w


#: a standard error at or below this is no variance seen: the rounding noise of replicates that are all equal. The
#: mean of m equal doubles is not always that double, so equal leave-one-out estimates (every cluster at the same
#: share) give an SE of about 1e-17 rather than 0; taken at face value it made the effective sample size p (1 - p) /
#: SE^2 about 1e32, a point interval (VIGNETTE's uncapped domain shares) or one at every unit (the capped form),
#: where every cluster alike calls for :func:`boundary_interval`. Two shares that differ, with denominators n1 and n2,
#: differ by at least 1 / (n1 n2): above 1e-12 for any count of up to a million units, so a real spread stays above.
NO_VARIANCE_SE = 1e-12


def no_variance_seen(stderr: float) -> bool:
    """Whether ``stderr`` (finite) is at most :data:`NO_VARIANCE_SE`: every replicate alike up to rounding."""
    return bool(np.isfinite(stderr) and abs(float(stderr)) <= NO_VARIANCE_SE)


def jackknife_stderr(leave_one_out: np.ndarray, strata: np.ndarray) -> float:
    """sqrt(sum_h (m_h - 1) / m_h sum_{i in h} (theta_(i) - mean_h theta_(.))^2), the stratified
    jackknife standard error (Wolter 2007, Eq. 4.5.5), from the leave-one-cluster-out estimates of
    :func:`jackknife_weights`. NaN when any of them is undefined (an estimate that needs that cluster)."""
    theta = np.asarray(leave_one_out, dtype=np.float64)
    strata = np.asarray(strata)
    if theta.size < 2 or not np.all(np.isfinite(theta)):
        return float("nan")
    sizes = np.bincount(strata).astype(np.float64)
    means = np.bincount(strata, weights=theta) / np.maximum(sizes, 1)
    dev2 = np.bincount(strata, weights=(theta - means[strata]) ** 2, minlength=len(sizes))
    return float(np.sqrt(np.sum(np.where(sizes > 1, (sizes - 1) / np.maximum(sizes, 1), 0.0) * dev2)))


def wilson_t_interval(estimate: float, n_clusters: float, df: int, level: float = 0.95) -> tuple[float, float]:
    """The Wilson score interval (Wilson 1927) of a share ``estimate`` with the sample size set to the
    number of clusters and the normal quantile replaced by Student's t with ``df`` degrees of freedom:
    the interval where the design-based variance is 0 (a share of 0 or 1, or every cluster alike).
    Korn & Graubard (1998, Survey Methodology 24:193) take the number of units as the effective
    sample size there; with pair-clustered answers that under-covered (a rare refusal rate in a
    subcategory of 54 pairs: 0.85, every draw without a refusal missing it), so the sample size is the
    number of clusters -- the largest design effect, every unit of a cluster alike -- which covers.
    :func:`effective_n_wilson_interval` passes an effective sample size instead. NaN without clusters
    or degrees of freedom."""
    from scipy.stats import t as student_t

    if not (np.isfinite(estimate) and n_clusters > 0) or df < 1:
        return float("nan"), float("nan")
    return _wilson_score(estimate, float(n_clusters), float(student_t.ppf(0.5 + level / 2.0, df)))


def design_effect(estimate: float, stderr: float, n_units: float) -> float:
    """Kish's design effect of a share ``estimate`` of ``n_units`` binary units with design-based
    standard error ``stderr``: SE^2 / (p (1 - p) / n), the variance against a simple random sample of
    the units (Kish 1965, *Survey Sampling*). NaN where it cannot be estimated: a share of
    0 or 1, an SE of 0 (at most :data:`NO_VARIANCE_SE`) or not finite, no units."""
    p, se, n = float(estimate), float(stderr), float(n_units)
    if not (np.isfinite(p) and 0.0 < p < 1.0 and np.isfinite(se) and se > NO_VARIANCE_SE and n > 0.0):
        return float("nan")
    return se * se * n / (p * (1.0 - p))


def boundary_interval(estimate: float, n_clusters: float, df: int, level: float = 0.95, n_units: float | None = None,
                      borrowed_design_effect: float | None = None) -> tuple[float, float]:
    """The interval of a share whose own design effect cannot be estimated (a share of 0 or 1, or every
    cluster alike: SE 0). Without a borrowed design effect it is :func:`wilson_t_interval` over the
    ``n_clusters`` clusters (every unit of a cluster alike, the largest design effect). With one --
    the design effect of the same share in the scope the cell belongs to (a report table's cells in
    the run's pairs: :func:`design_effect` of the enclosing scope, whose stratified SE is the pooled
    within-cell clustering) -- it is Wilson's interval with z at the effective sample size
    ``n_units`` / max(1, deff) times Korn & Graubard's factor (:func:`korn_graubard_df_factor`), as
    :func:`effective_n_wilson_interval` inside the bounds: a generalised design effect (Kish 1995,
    "Methods for design effects", J. Off. Stat. 11:55; Wolter 2007, Ch. 7) carried from a scope
    where the share is not at a bound. Counterfactual VQA's Table 3 cells (about 100 pairs, Cons of
    the greedy model 0.98-0.99, exactly 1 in 2 % of them) covered 97.1 % with the clusters and 96.9 %
    with the borrowed design effect (docs/cf-vqa.md "Intervals")."""
    if (n_units is not None and n_units > 0 and borrowed_design_effect is not None
            and np.isfinite(borrowed_design_effect) and np.isfinite(estimate) and df >= 1):
        from scipy.stats import norm

        n_eff = float(n_units) / max(1.0, float(borrowed_design_effect)) * korn_graubard_df_factor(n_units, df, level)
        return _wilson_score(estimate, n_eff, float(norm.ppf(0.5 + level / 2.0)))
    return wilson_t_interval(estimate, n_clusters, df, level)


def _wilson_score(estimate: float, n: float, q: float) -> tuple[float, float]:
    """Wilson's (1927) score interval of a share ``estimate`` of ``n`` units with quantile ``q``."""
    p = float(np.clip(estimate, 0.0, 1.0))
    den = 1.0 + q * q / n
    centre = (p + q * q / (2 * n)) / den
    half = q * np.sqrt(p * (1 - p) / n + q * q / (4 * n * n)) / den
    low, high = float(max(0.0, centre - half)), float(min(1.0, centre + half))
    # at p = 0 (1) the lower (upper) end is exactly 0 (1): centre -+ half equal it up to rounding
    return (0.0 if p == 0.0 else low), (1.0 if p == 1.0 else high)


def mid_p_interval(successes: int, trials: int, level: float = 0.95) -> tuple[float, float]:
    """The mid-p exact interval of a binomial proportion (Lancaster 1961, JASA 56:223; Berry &
    Armitage 1995, The Statistician 44:417; Agresti & Gottard 2007, Stat. Probab. Lett. 77:1806): with
    x = ``successes`` of n = ``trials`` and alpha = 1 - ``level``, the lower end solves
    P(X > x) + P(X = x) / 2 = alpha / 2 and the upper end P(X < x) + P(X = x) / 2 = alpha / 2 under
    X ~ Binomial(n, theta) (0 at x = 0, 1 at x = n). Clopper-Pearson's exact interval counts P(X = x) whole
    and covers 97.2-99.4 % at ten trials (truths 0.2-0.8); the mid-p interval's coverage stays near the level (94.9-98.2 %
    at 10 trials, 93.2-98.1 % at 12, for truths 0.2-0.8). It is the interval of a share whose clusters
    each carry one answer (a sum of independent Bernoulli answers: nothing within a cluster to
    estimate), where the jackknife's logit-t interval with pairs - 1 degrees of freedom accepted 2-9 of
    10 and covered 99 % (VIGNETTE's activity-contrast shares). NaN without trials or with x outside
    [0, n]. Written here because neither scipy's ``binomtest(...).proportion_ci`` nor statsmodels'
    ``proportion_confint`` offers the mid-p interval."""
    from scipy.optimize import brentq
    from scipy.stats import binom

    x, n = int(successes), int(trials)
    if n < 1 or not 0 <= x <= n:
        return float("nan"), float("nan")
    tail = (1.0 - level) / 2.0

    def upper_tail(theta: float) -> float:  # P(X > x) + P(X = x) / 2 - tail, increasing in theta
        return float(binom.sf(x, n, theta) + 0.5 * binom.pmf(x, n, theta)) - tail

    def lower_tail(theta: float) -> float:  # P(X < x) + P(X = x) / 2 - tail, decreasing in theta
        return float(binom.cdf(x - 1, n, theta) + 0.5 * binom.pmf(x, n, theta)) - tail

    eps = 1e-12
    low = 0.0 if x == 0 else float(brentq(upper_tail, eps, 1.0 - eps, xtol=1e-12))
    high = 1.0 if x == n else float(brentq(lower_tail, eps, 1.0 - eps, xtol=1e-12))
    return low, high


def logit_t_interval(estimate: float, stderr: float, df: int, n_clusters: float,
                     level: float = 0.95, n_units: float | None = None,
                     borrowed_design_effect: float | None = None) -> tuple[float, float]:
    """95 % interval of a quantity in [0, 1] from its design-based standard error: the Wald interval on
    the logit scale with Student's t, expit(logit(p) -+ t_{df} SE / (p (1 - p))) -- the "logit" interval
    of survey proportions (Korn & Graubard 1999, Analysis of Health Surveys, Sec. 5.2; R survey's
    ``svyciprop(method = "logit")``, Lumley 2010, Complex Surveys, Sec. 2.3.1) -- which stays in (0, 1) and
    is asymmetric near the bounds, where the symmetric t (or percentile) interval of a few clusters
    under-covers. When p is 0 or 1, or SE is 0 (at most :data:`NO_VARIANCE_SE`), the logit is undefined and the
    interval is :func:`boundary_interval` (over the ``n_clusters`` clusters, or at ``n_units`` with a
    ``borrowed_design_effect``). NaN without an estimate, SE or degrees of freedom."""
    from scipy.special import expit, logit
    from scipy.stats import t as student_t

    if not np.isfinite(estimate) or df < 1:
        return float("nan"), float("nan")
    if estimate <= 0.0 or estimate >= 1.0 or no_variance_seen(stderr):
        return boundary_interval(estimate, n_clusters, df, level, n_units, borrowed_design_effect)
    if not np.isfinite(stderr):
        return float("nan"), float("nan")
    q = float(student_t.ppf(0.5 + level / 2.0, df))
    centre, spread = float(logit(estimate)), q * stderr / (estimate * (1.0 - estimate))
    return float(expit(centre - spread)), float(expit(centre + spread))


def effective_n_wilson_interval(estimate: float, stderr: float, df: int, n_units: float, n_clusters: float,
                                level: float = 0.95, cap_at_units: bool = True,
                                borrowed_design_effect: float | None = None) -> tuple[float, float]:
    """95 % interval of a share of ``n_units`` binary units (responses, pair-runs) grouped in clusters
    from its design-based standard error: Korn & Graubard's (1998, Survey Methodology 24:193)
    degrees-of-freedom-adjusted effective sample size in Wilson's (1927) score interval. With
    n = ``n_units``, the effective sample size n* = p (1 - p) / SE^2 is capped at n by default (a
    design effect below 1 is taken as 1, as the NCHS presentation standards do: Parker et al. 2017,
    Vital Health Stat. 2(175)) and multiplied by min(1, (t_{n-1} / t_{df})^2) (t quantiles at
    1 - alpha / 2); the interval is Wilson's with the normal quantile and min(n, n*) min(1, (t_{n-1} /
    t_{df})^2) trials. The adjustment only ever shrinks the sample size: it charges the design's
    degrees of freedom against a simple random sample's n - 1, and with fewer units than df + 1
    (REFLECT's man-vs-woman comparisons of one race: about 6 over 12 templates, at most one a
    template) the design has no fewer degrees of freedom than a simple random sample of the units,
    so the factor is 1, not (t_{n-1} / t_{df})^2 > 1. Where units outnumber clusters (Counterfactual
    VQA's and VIGNETTE's callers) n - 1 >= df and the bound never binds.
    Franco, Little, Louis & Slud (2019, J. Surv. Stat. Methodol. 7:334) recommend the Wilson form
    among the effective-size intervals.

    Made for rates of rare events over few clusters (Counterfactual VQA's response-status rates at
    20 pairs: a handful of refusals in 120 responses), where the logit-t interval of
    :func:`logit_t_interval` covers 97-98 %: the Wilson interval follows the binomial count's
    discreteness and the design effect carries the clustering.

    ``cap_at_units=False`` leaves n* uncapped, as R survey's ``svyciprop(method = "beta")`` computes
    Korn & Graubard's effective size (Lumley 2010, Sec. 2.3.1). VIGNETTE's domain shares (factuality
    accuracy per activity: 10-20 pairs of 1-4 answers each, a design effect near 1) use it: there the
    jackknife's SE falls below the binomial one about half of the time, and the cap, which truncates
    only that side of its noise, widens the interval (coverage 95.5 / 96.5 / 96.0 % uncapped at mean
    accuracies 0.47 / 0.86 / 0.98 in scripts/calibration/vignette.py; 96.9 / 97.5 / 95.8 % with the
    cap in a 200-seed replay). At Counterfactual VQA's rates the cap moves coverage by at most 0.5
    points (a replay on the calibration's recorded runs) and stays there, as the NCHS floor for rare
    events.

    When p is 0 or 1, or SE is 0 (at most :data:`NO_VARIANCE_SE`: equal replicates up to rounding), the design
    effect cannot be estimated and the interval is
    :func:`boundary_interval`: :func:`wilson_t_interval` over the ``n_clusters`` clusters (every unit of
    a cluster alike), as in :func:`logit_t_interval`, or, given a ``borrowed_design_effect`` (the same
    rate's in the enclosing scope), Wilson's at ``n_units`` / max(1, deff) with the factor above. NaN
    without an estimate, SE, units or degrees of freedom. REFLECT's
    rates (:func:`lm_eval_bias.core.bootstrap.effective_size_wilson_interval`) use the same effective
    size without the cap, and at a rate of 0 or 1 the trials, with the same factor and z."""
    from scipy.stats import norm

    if not np.isfinite(estimate) or df < 1 or not n_units > 0:
        return float("nan"), float("nan")
    if estimate <= 0.0 or estimate >= 1.0 or no_variance_seen(stderr):
        return boundary_interval(estimate, n_clusters, df, level, n_units, borrowed_design_effect)
    if not np.isfinite(stderr):
        return float("nan"), float("nan")
    n_eff = estimate * (1.0 - estimate) / (stderr * stderr)
    if cap_at_units:
        n_eff = min(float(n_units), n_eff)
    return _wilson_score(estimate, n_eff * korn_graubard_df_factor(n_units, df, level), float(norm.ppf(0.5 + level / 2.0)))


def korn_graubard_df_factor(n_units: float, df: int, level: float = 0.95) -> float:
    """Korn & Graubard's (1998) degrees-of-freedom factor on an effective sample size, min(1, (t_{n-1} /
    t_{df})^2) with t quantiles at (1 + level) / 2 and n = ``n_units``: the design's df charged against a
    simple random sample's n - 1, never above 1 (:func:`effective_n_wilson_interval`)."""
    from scipy.stats import t as student_t

    q = 0.5 + level / 2.0
    return min(1.0, (float(student_t.ppf(q, max(float(n_units) - 1.0, 1.0))) / float(student_t.ppf(q, df))) ** 2)


def ratio_jackknife(y: np.ndarray, n: np.ndarray, strata: np.ndarray) -> float:
    """Stratified delete-one-cluster jackknife SE (:func:`jackknife_stderr`, JKn weights of
    :func:`jackknife_weights`) of the ratio sum(y) / sum(n), in closed form: dropping cluster i of
    stratum h gives (Y - Y_h + m_h / (m_h - 1) (Y_h - y_i)) / (N - N_h + m_h / (m_h - 1) (N_h - n_i))."""
    y, n, strata = np.asarray(y, dtype=np.float64), np.asarray(n, dtype=np.float64), np.asarray(strata)
    sizes = np.bincount(strata).astype(np.float64)
    m = sizes[strata]
    factor = np.where(m > 1, m / np.maximum(m - 1, 1), 1.0)
    y_h, n_h = np.bincount(strata, weights=y)[strata], np.bincount(strata, weights=n)[strata]
    num = y.sum() - y_h + factor * (y_h - y)
    den = n.sum() - n_h + factor * (n_h - n)
    with np.errstate(invalid="ignore", divide="ignore"):
        theta = np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)
    return jackknife_stderr(theta, strata)


__all__ = ["boundary_interval", "design_df", "design_effect", "effective_n_wilson_interval", "jackknife_stderr", "jackknife_weights", "logit_t_interval", "mid_p_interval", "pooled_strata", "ratio_jackknife", "wilson_t_interval"]
