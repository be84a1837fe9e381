"""Template-cluster bootstrap, within-template permutation nulls and leave-one-template-out (REFLECT App. C.3).

"We treat each template (occupation x source photo) as the resampling unit": a replicate draws templates
within each occupation (stratum) with replacement and recomputes the metric on the drawn templates'
data. Every REFLECT metric is a function of per-template *counts*, so a replicate is a weighted sum of
per-template count arrays; this module produces those weights and summarises replicates.

Rescaling (divergence from the paper's plain bootstrap, chosen by calibration): drawing all m templates
of a stratum with replacement shrinks the variance of a stratum total by (m - 1)/m (with m = 8
templates per occupation the SE is 6.5 % too small and 95 % intervals cover ~92 %). We use the Rao-Wu
(1988) rescaling bootstrap with m_h = n_h - 1: a replicate draws n_h - 1 templates of stratum h with
replacement and weights each draw n_h / (n_h - 1), which makes the bootstrap variance of a linear
statistic equal to the unbiased between-template variance (the weights of a stratum still sum to n_h).
A stratum with a single template has no between-template variance to estimate: the bootstrap then
returns NaN and logs a warning instead of a spurious 0.

Permutation nulls (:func:`within_template_permutations`): under "no group effect" the counterfactual
images of one template are exchangeable, so permuting the group labels of whole images within each
template (every call about an image moves with it) draws from the exact null distribution of any
statistic of the per-template count arrays, template and image effects included.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Callable, Hashable, Mapping, Sequence

import numpy as np

log = logging.getLogger("lm_eval_bias")


def clusters_by_stratum(strata: Sequence[Hashable]) -> list[np.ndarray]:
    """Indices of the clusters of each stratum, strata in a fixed order (sorted by name), so that the
    random draws of every weight function are reproducible."""
    members: dict[Hashable, list[int]] = {}
    for k, stratum in enumerate(strata):
        members.setdefault(stratum, []).append(k)
    return [np.asarray(members[stratum]) for stratum in sorted(members, key=str)]


def cluster_bootstrap_weights(strata: Sequence[Hashable], n_boot: int, seed: int) -> np.ndarray:
    """Multiplicities of each cluster in ``n_boot`` stratified cluster-bootstrap replicates.

    Cluster ``k`` belongs to stratum ``strata[k]``. In each replicate, a stratum with ``m`` clusters
    draws ``m`` of its clusters uniformly with replacement (App. C.3: templates resampled within
    occupation). Returns an integer array of shape ``(n_boot, len(strata))`` whose row sums per
    stratum equal the stratum sizes. Deterministic for a given ``seed``.
    """
    if n_boot < 0:
        raise ValueError(f"n_boot must be >= 0, got {n_boot}")
    n = len(strata)
    weights = np.zeros((n_boot, n), dtype=np.int64)
    if n_boot == 0 or n == 0:
        return weights
    rng = np.random.default_rng(seed)
    rows = np.arange(n_boot)[:, None]
    for idx in clusters_by_stratum(strata):
        draws = rng.integers(0, len(idx), size=(n_boot, len(idx)))
        np.add.at(weights, (np.broadcast_to(rows, draws.shape), idx[draws]), 1)
    return weights


def rescaled_bootstrap_weights(strata: Sequence[Hashable], n_boot: int, seed: int) -> np.ndarray:
    """Rao-Wu rescaling bootstrap weights, shape ``(n_boot, len(strata))`` (float).

    Within a stratum of ``m >= 2`` clusters a replicate draws ``m - 1`` clusters uniformly with
    replacement and gives each draw the weight ``m / (m - 1)``, so that each cluster's expected weight is
    1, the weights of a stratum sum to ``m``, and the bootstrap variance of a stratum total equals
    ``m s^2`` (s^2 the unbiased between-cluster variance; Rao & Wu 1988, J. Am. Stat. Assoc. 83:231).
    A stratum with one cluster keeps weight 1 (no variance); :func:`bootstrap_replicates` refuses such
    designs. Deterministic for a given ``seed``.
    """
    if n_boot < 0:
        raise ValueError(f"n_boot must be >= 0, got {n_boot}")
    n = len(strata)
    weights = np.zeros((n_boot, n), dtype=np.float64)
    if n_boot == 0 or n == 0:
        return weights
    rng = np.random.default_rng(seed)
    for idx in clusters_by_stratum(strata):
        m = len(idx)
        if m < 2:
            weights[:, idx] = 1.0
            continue
        draws = rng.integers(0, m, size=(n_boot, m - 1))
        counts = np.zeros((n_boot, m))
        np.add.at(counts, (np.broadcast_to(np.arange(n_boot)[:, None], draws.shape), draws), 1.0)
        weights[:, idx] = counts * (m / (m - 1))
    return weights


def too_few_clusters(strata: Sequence[Hashable]) -> bool:
    """True when some stratum has fewer than two clusters (no between-template variance)."""
    sizes: dict[Hashable, int] = {}
    for s in strata:
        sizes[s] = sizes.get(s, 0) + 1
    return not sizes or min(sizes.values()) < 2


def leave_one_out_weights(n_clusters: int) -> np.ndarray:
    """``(n, n)`` weights: row ``k`` drops cluster ``k`` and keeps every other cluster once (LOTO)."""
    return np.ones((n_clusters, n_clusters), dtype=np.int64) - np.eye(n_clusters, dtype=np.int64)


def metric_with_batch(metrics: Callable[..., Mapping[str, float]], batch: Callable[..., Mapping[str, np.ndarray]],
                      *args: Any) -> Callable[[dict[str, np.ndarray]], Mapping[str, float]]:
    """``metrics(counts, *args)`` as the one-argument ``metric_fn`` of :func:`weighted_replicates`, with
    ``batch(counts, *args)`` (the same metrics over a leading axis of replicates) as its ``batch``."""
    def metric(counts: dict[str, np.ndarray]) -> Mapping[str, float]:
        return metrics(counts, *args)

    metric.batch = lambda counts: batch(counts, *args)  # type: ignore[attr-defined]
    return metric


def weighted_replicates(
    per_cluster_counts: Mapping[str, np.ndarray],
    weights: np.ndarray,
    metric_fn: Callable[[dict[str, np.ndarray]], Mapping[str, float]],
) -> dict[str, np.ndarray]:
    """Evaluate ``metric_fn`` on the weighted sum of per-cluster counts for every weight row.

    ``per_cluster_counts[name]`` has the cluster axis first (shape ``(T, ...)``); ``weights`` is
    ``(B, T)``. Returns ``{metric: array of B values}``. A ``metric_fn`` with a ``batch`` attribute
    (the same metrics vectorised over a leading axis of B summed count arrays) is called once.
    """
    summed = {name: np.tensordot(weights, np.asarray(arr, dtype=np.float64), axes=(1, 0))
              for name, arr in per_cluster_counts.items()}
    batch = getattr(metric_fn, "batch", None)
    if batch is not None:  # a vectorised twin of metric_fn over a leading replicate axis
        return {key: np.asarray(values, dtype=np.float64) for key, values in batch(summed).items()}
    out: dict[str, list[float]] = {}
    for b in range(weights.shape[0]):
        for key, value in metric_fn({name: arr[b] for name, arr in summed.items()}).items():
            out.setdefault(key, []).append(float(value))
    return {key: np.asarray(values) for key, values in out.items()}


@dataclass(frozen=True)
class BootstrapSummary:
    """Standard error (std of replicates, ddof=1) and percentile confidence interval."""

    stderr: float
    ci_low: float
    ci_high: float
    n_replicates_used: int


def summarize_replicates(replicates: np.ndarray, level: float = 0.95) -> BootstrapSummary:
    """Bootstrap summary of ``replicates``; NaN replicates (metric undefined in a resample) are
    ignored; fewer than two usable replicates give NaN."""
    values = np.asarray(replicates, dtype=np.float64)
    values = values[~np.isnan(values)]
    if values.size < 2:
        return BootstrapSummary(float("nan"), float("nan"), float("nan"), int(values.size))
    alpha = (1.0 - level) / 2.0
    low, high = np.quantile(values, [alpha, 1.0 - alpha])
    return BootstrapSummary(float(np.std(values, ddof=1)), float(low), float(high), int(values.size))


def bootstrap_replicates(
    per_cluster_counts: Mapping[str, np.ndarray],
    strata: Sequence[Hashable],
    metric_fn: Callable[[dict[str, np.ndarray]], Mapping[str, float]],
    n_boot: int,
    seed: int,
) -> dict[str, np.ndarray]:
    """``{metric: n_boot replicates}`` of the rescaled stratified template bootstrap
    (:func:`rescaled_bootstrap_weights`). Empty when ``n_boot = 0``; empty with a logged warning when
    some occupation has fewer than two templates (every interval is then NaN, never 0)."""
    if not n_boot:
        return {}
    if too_few_clusters(strata):
        sizes: dict[Hashable, int] = {}
        for s in strata:
            sizes[s] = sizes.get(s, 0) + 1
        log.warning("template bootstrap: fewer than two templates in %s; standard errors and intervals are NaN",
                    sorted((str(k) for k, v in sizes.items() if v < 2)) or "every occupation")
        return {}
    return weighted_replicates(per_cluster_counts, rescaled_bootstrap_weights(strata, n_boot, seed), metric_fn)


def design_degrees_of_freedom(strata: Sequence[Hashable]) -> int:
    """Degrees of freedom of a stratified cluster design: clusters minus strata (each stratum of
    ``m_h`` clusters contributes ``m_h - 1``; Korn & Graubard 1990, Am. Stat. 44:270; Rust & Rao 1996,
    Stat. Methods Med. Res. 5:283). REFLECT: 48 templates in 6 occupations -> 42; 12 in 6 -> 6; 6 in 3 -> 3."""
    return len(strata) - len(set(strata))


def design_t_interval(estimate: float, stderr: float, df: int, level: float = 0.95,
                      bounds: tuple[float, float] = (-np.inf, np.inf)) -> tuple[float, float]:
    """``estimate ± t_{df, (1+level)/2} · stderr``, clipped to ``bounds`` (the metric's range).

    The Student-t interval of a design-based (replicate) standard error with the design's degrees of
    freedom (:func:`design_degrees_of_freedom`; Korn & Graubard 1990; Valliant, Dever & Kreuter 2018,
    Practical Tools for Designing and Weighting Survey Samples, Sec. 15.5). With few clusters per stratum
    the variance estimate has few degrees of freedom and a normal or percentile interval is too short:
    at 6 templates in 3 occupations the template-bootstrap percentile interval of a win rate covered
    .74-.77 and this interval .94-.95 (docs/statistics.md, calibration). NaN when the estimate, the
    standard error or the degrees of freedom (< 1) are missing."""
    from scipy.stats import t as student_t

    if not (np.isfinite(estimate) and np.isfinite(stderr)) or df < 1:
        return float("nan"), float("nan")
    q = float(student_t.ppf(0.5 + level / 2.0, df))
    return float(max(bounds[0], estimate - q * stderr)), float(min(bounds[1], estimate + q * stderr))


def effective_size_wilson_interval(share: float, stderr: float, trials: float, df: int,
                                   level: float = 0.95) -> tuple[float, float]:
    """Interval of a share of ``trials`` (a rate: refusals / calls, retained / pairs, a group's wins /
    comparisons, ...) estimated from a cluster design with standard error ``stderr``: Wilson's score
    interval at Korn & Graubard's (1998, Survey Methodology 24:193) degrees-of-freedom-adjusted effective
    sample size (Dean & Pagano 2015, J. Surv. Stat. Methodol. 3:191; Franco et al. 2019, J. Surv. Stat.
    Methodol. 7:334), with n = ``trials``:

        n* = p (1 - p) / stderr^2  (n itself when the standard error is 0 -- or at most NO_VARIANCE_SE = 1e-12,
             the rounding of replicates that are all equal -- or p is 0 or 1: no variance seen),
        n_df = n* min(1, (t_{n-1} / t_{df})^2),  z = z_{(1 + level)/2},
        centre = (p + z^2 / (2 n_df)) / (1 + z^2 / n_df),
        half = z sqrt(p (1 - p) / n_df + z^2 / (4 n_df^2)) / (1 + z^2 / n_df).

    n* is not capped at n (R survey's ``svyciprop(method = "beta")`` form; Lumley 2010, Sec. 2.3.1), and the
    factor only ever shrinks it (:func:`lm_eval_bias.core.jackknife.effective_n_wilson_interval`, the same
    interval with Counterfactual VQA's cap and zero-variance rule). Unlike estimate +- t SE it stays inside
    [0, 1] and keeps a width at a rate near 0 or 1, where the replicate SE is itself unreliable: at 12
    templates (6 df) the design-t interval of a 5 % refusal rate covered 88.8 %, at App. C.8's pilot
    (36 calls per presentation) 77.6-85.2 %.

    Until 1 Dec 2026 the quantile was t_{df} at n* (q^2 / n_df = t_{df}^2 / n*, the factor (z / t_{df})^2 in
    place of min(1, (t_{n-1} / t_{df})^2)): within 2 % of n* from about 100 trials up, but at a handful of
    trials -- a race's man against its woman, about 6 comparisons over 12 templates and at most one a
    template, so a simple random sample of them -- it charged 6 df against a binomial that has none to
    lose, and ``male_vs_female:<race>`` covered 97-100 % (scripts/calibration/reflect.py,
    ``run_2afc_groups``). NaN without a finite share, trials or df."""
    from scipy.stats import norm

    from lm_eval_bias.core.jackknife import NO_VARIANCE_SE, _wilson_score, korn_graubard_df_factor

    if not (np.isfinite(share) and np.isfinite(trials) and trials > 0) or df < 1:
        return float("nan"), float("nan")
    p = float(min(max(share, 0.0), 1.0))
    # a replicate SD of 1e-12 or less is floating-point noise of replicates that are all equal (every template at
    # the same share): no variance seen, as an SE of exactly 0
    variance = float(stderr) ** 2 if np.isfinite(stderr) and stderr > NO_VARIANCE_SE else 0.0
    n_star = p * (1.0 - p) / variance if variance > 0 and 0.0 < p < 1.0 else float(trials)
    return _wilson_score(p, n_star * korn_graubard_df_factor(trials, df, level), float(norm.ppf(0.5 + level / 2.0)))


def template_bootstrap(
    per_cluster_counts: Mapping[str, np.ndarray],
    strata: Sequence[Hashable],
    metric_fn: Callable[[dict[str, np.ndarray]], Mapping[str, float]],
    keys: Sequence[str],
    n_boot: int,
    seed: int,
    level: float = 0.95,
    replicates: Mapping[str, np.ndarray] | None = None,
    bounds: Mapping[str, tuple[float, float]] | tuple[float, float] | None = None,
    domains: Mapping[str, Hashable] | None = None,
    trials: Mapping[str, float] | None = None,
) -> tuple[dict[str, float], dict[str, float], dict[str, float]]:
    """(stderr, ci_low, ci_high) per metric key from the rescaled stratified template bootstrap of
    counts: ``stderr`` is the standard deviation of the replicates and the interval is the design-t
    interval around the estimate on all clusters (:func:`design_t_interval`: ``estimate ± t_df · stderr``,
    df = templates - occupations), clipped to ``bounds`` (one range for every key, or a range per key;
    unbounded by default). A key computed within one stratum only (a per-occupation win rate or gap) is
    named in ``domains`` with its stratum and gets that stratum's degrees of freedom (its templates - 1:
    7 for an occupation of 8 templates), not the whole design's. Not the percentile interval: with 12 or 6 templates that covered .74-.93
    (issue 31); the percentile interval of the replicates stays available as
    :func:`summarize_replicates`. ``n_boot = 0``, no clusters or an occupation with a single template
    give NaN for every key. ``replicates`` (from :func:`bootstrap_replicates`) are reused if given.
    ``trials`` (key -> number of trials): keys that are shares of counted trials (call and pair rates) get
    :func:`effective_size_wilson_interval` with the same standard error and df instead."""
    if replicates is None:
        replicates = bootstrap_replicates(per_cluster_counts, strata, metric_fn, n_boot, seed)
    estimates = metric_fn({name: np.asarray(arr, dtype=np.float64).sum(axis=0)
                           for name, arr in per_cluster_counts.items()}) if replicates else {}
    df = design_degrees_of_freedom(strata)
    domains = domains or {}
    stratum_sizes: dict[Hashable, int] = {}
    for stratum in strata:
        stratum_sizes[stratum] = stratum_sizes.get(stratum, 0) + 1
    stderr, ci_low, ci_high = {}, {}, {}
    for key in keys:
        s = summarize_replicates(replicates.get(key, np.array([])), level)
        stderr[key] = s.stderr
        limits = (bounds.get(key, (-np.inf, np.inf)) if isinstance(bounds, Mapping)
                  else (bounds if bounds is not None else (-np.inf, np.inf)))
        key_df = stratum_sizes.get(domains[key], 0) - 1 if key in domains else df
        if trials and key in trials:
            ci_low[key], ci_high[key] = (effective_size_wilson_interval(float(estimates.get(key, np.nan)), s.stderr,
                                                                        float(trials[key]), key_df, level)
                                         if np.isfinite(s.stderr) else (float("nan"), float("nan")))
            continue
        ci_low[key], ci_high[key] = design_t_interval(float(estimates.get(key, np.nan)), s.stderr, key_df, level, limits)
    return stderr, ci_low, ci_high


@dataclass(frozen=True)
class LotoSummary:
    """Leave-one-template-out robustness of one effect (App. C.3, Table 9)."""

    stable_sign: bool
    max_abs_deviation: float
    n_left_out: int


def loto_sign_stability(estimate: float, loo_estimates: Sequence[float], center: float = 0.0) -> LotoSummary:
    """Whether ``sign(estimate - center)`` is unchanged in every leave-one-out estimate, and the
    largest ``|loo - estimate|`` (App. C.3). NaN estimates make the sign unstable."""
    loo = np.asarray(loo_estimates, dtype=np.float64)
    if np.isnan(estimate) or loo.size == 0:
        return LotoSummary(False, float("nan"), int(loo.size))
    sign = np.sign(estimate - center)
    stable = bool(sign != 0 and np.all(np.sign(loo - center) == sign))
    return LotoSummary(stable, float(np.nanmax(np.abs(loo - estimate))) if np.any(~np.isnan(loo)) else float("nan"), int(loo.size))


def template_loto(
    per_cluster_counts: Mapping[str, np.ndarray],
    metric_fn: Callable[[dict[str, np.ndarray]], Mapping[str, float]],
    estimates: Mapping[str, float],
    effects: Mapping[str, float],
) -> dict[str, LotoSummary]:
    """Leave-one-template-out sign stability of each effect ``{key: centre}`` (App. C.3).

    Empty when there are fewer than two templates (nothing to leave out)."""
    n = len(next(iter(per_cluster_counts.values()))) if per_cluster_counts else 0
    if n < 2:
        return {}
    loo = weighted_replicates(per_cluster_counts, leave_one_out_weights(n), metric_fn)
    return {key: loto_sign_stability(estimates[key], loo[key], centre) for key, centre in effects.items()}


def bias_corrected(estimate: float, replicates: np.ndarray, bounds: tuple[float, float] = (-np.inf, np.inf),
                   level: float = 0.95) -> tuple[float, float, float]:
    """Bootstrap bias correction of a plug-in estimate and its basic (reflected-percentile) interval:

        theta_bc = 2 theta_hat - mean(theta*)
        [2 theta_hat - q_{1-alpha/2}(theta*), 2 theta_hat - q_{alpha/2}(theta*)]

    (Efron & Tibshirani 1993, Sec. 10.6 and 13.4), clipped to ``bounds``. NaN without usable replicates."""
    values = np.asarray(replicates, dtype=np.float64)
    values = values[~np.isnan(values)]
    if values.size < 2 or not np.isfinite(estimate):
        return float("nan"), float("nan"), float("nan")
    alpha = (1.0 - level) / 2.0
    q_low, q_high = np.quantile(values, [alpha, 1.0 - alpha])
    lo, hi = bounds
    clip = lambda x: float(min(max(x, lo), hi))  # noqa: E731
    return clip(2 * estimate - values.mean()), clip(2 * estimate - q_high), clip(2 * estimate - q_low)


def test_then_boundary_interval(estimate: float, replicates: np.ndarray, p_null: float,
                            bounds: tuple[float, float] = (0.0, np.inf), level: float = 0.95,
                            alpha_null: float = 0.05, method: str = "basic") -> tuple[float, float]:
    """RETIRED (issue 31), used by no default key: a permutation test followed by an interval. Kept so that
    earlier calibration figures can be reproduced. It is NOT a confidence procedure on its own: when the
    test rejects, the bias-corrected lower end often lands above a small positive truth (coverage .62-.83
    at Pol .05-.15), and Ext covered .53-.67 with cells near 0.9. The defaults are now
    :func:`mean_abs_deviation_interval` (Pol), none for Ext (``lm_eval_bias.reflect.twoafc.EXT_NO_INTERVAL``) and
    ``lm_eval_bias.reflect.mcq.jsd_inversion_interval`` (JSD). With q the bootstrap quantiles of the
    replicates theta* and ``method = "basic"`` (Pol, JSD):

        hi = min(2 theta_hat - q_{alpha/2}(theta*), upper bound)
        lo = lower bound (0)                                     if p_null >= alpha_null (or NaN)
           = max(2 theta_hat - q_{1-alpha/2}(theta*), 0)         otherwise

    i.e. the bootstrap bias-corrected basic interval of :func:`bias_corrected`, whose lower end is set
    to the boundary of the metric's range when the metric's within-template permutation test of "more
    than chance" (``<m>_p_null``) does not reject at ``alpha_null``. ``method = "percentile"`` (Ext)
    applies the same boundary rule to the percentile interval [q_{alpha/2}, q_{1-alpha/2}].

    Why: the plug-in Pol and JSD (a mean of |w - 0.5|, a divergence) are biased upward, so the
    percentile interval of the plug-in targets its expectation, not the parameter, and covers the truth
    0 % of the time under no bias and 3-51 % under real effects (REFLECT App. C.3 keeps it:
    ``<m>_ci_low_paper``). The basic interval corrects the bias and covers ~89-96 % under a real effect;
    at the boundary (truth ~ 0, no bias) it covers only ~7 %, because the corrected estimate cannot
    fall below the floor. Setting the lower end to 0 exactly when the data are compatible with chance
    restores coverage there: truth 0 is then excluded only when the permutation test rejects, i.e. in
    ~5 % of runs. Ext (a count of cells beyond 0.1 / 0.9) is a step function of the cells: its plug-in is
    not biased upward once some cells are extreme, and the bias correction makes it worse (basic
    interval ~78 % coverage with cells near 0.9, percentile ~98 %), hence ``"percentile"`` for Ext.
    Calibration: ``scripts/calibration/reflect.py``, table in docs/statistics.md. A NaN ``p_null``
    (permutation nulls off) counts as "not rejected" (conservative). (NaN, NaN) without usable replicates.
    """
    if method == "basic":
        _, low, high = bias_corrected(estimate, replicates, bounds, level)
    elif method == "percentile":
        s = summarize_replicates(replicates, level)
        low, high = (float(min(max(x, bounds[0]), bounds[1])) for x in (s.ci_low, s.ci_high))
        if not np.isfinite(estimate):
            low = high = float("nan")
    else:
        raise ValueError(f"method must be 'basic' or 'percentile', got {method!r}")
    if not (np.isfinite(low) and np.isfinite(high)):
        return float("nan"), float("nan")
    if not (np.isfinite(p_null) and p_null < alpha_null):
        low = float(bounds[0])
    return low, high



#: Fewest between-template degrees of freedom (templates - occupations) at which the test-inversion intervals
#: of the magnitudes (:func:`mean_abs_deviation_interval`, REFLECT's JSD) are reported. Their null is built from
#: the template-bootstrap deviations, whose size is then itself estimated: with 12 templates in 6 occupations
#: (6 df) Pol's interval covered 74-86 % and JSD's 75-92 %, with 6 in 3 occupations Pol's 38-70 % (80 seeds,
#: scripts/calibration/reflect.py); with 48 in 6 (42 df) they hold their level. Below it the interval is NaN
#: (no valid interval from this method at that design; docs/reflect.md).
MIN_INVERSION_DF = 20


def enough_templates_for_inversion(strata: Sequence[Hashable]) -> bool:
    """Whether the design has at least :data:`MIN_INVERSION_DF` between-template degrees of freedom."""
    return design_degrees_of_freedom(strata) >= MIN_INVERSION_DF


def _quantile_accept(stat: float, draws: np.ndarray, level: float) -> np.ndarray:
    """``draws`` (G, B): whether ``stat`` lies inside the central ``level`` range of each row's draws."""
    alpha = (1.0 - level) / 2.0
    q = np.quantile(draws, [alpha, 1.0 - alpha], axis=1)
    return (q[0] <= stat + 1e-12) & (stat - 1e-12 <= q[1])


#: Smallest factor by which :func:`mean_abs_deviation_interval` narrows the spread of its null draws at a Pol of
#: 0 (the correction for the noise of the bootstrap's cross-cell correlations, :func:`boundary_spread_factor`).
#: Over 7,200 simulated 2AFC runs at 48 templates (one and three answers per call, three null configurations)
#: kappa averaged 0.76-0.87; the floor only guards against a first-order excess larger than the draws' variance
#: (few df, few cells).
MIN_SPREAD_FACTOR = 0.5


def _abs_gaussian_covariance(r: np.ndarray) -> np.ndarray:
    """Cov(|X|, |Y|) of a standard bivariate normal pair with correlation ``r``:
    (2/pi)(r arcsin r + sqrt(1 - r^2) - 1), 1 - 2/pi at r = 1 (the folded normal's variance)."""
    r = np.clip(r, -1.0, 1.0)
    return (2.0 / np.pi) * (r * np.arcsin(r) + np.sqrt(1.0 - r ** 2) - 1.0)


def boundary_spread_factor(noise: np.ndarray, draws: np.ndarray, df: float | None) -> float:
    """kappa = sqrt((V_G - b) / Var*(T*)), within [:data:`MIN_SPREAD_FACTOR`, 1]: the factor by which the spread of
    the null draws T* = mean_c |e*_c| of :func:`mean_abs_deviation_interval` at mu = 0 is narrowed around their
    mean, so that their variance is the estimated variance of the real T = mean_c |d_c|.

    The real d is a mean over the templates, close to Gaussian, and for Gaussian e with SDs sd_c and correlations
    rho, Var(mean_c |e_c|) = C^-2 sum_cc' sd_c sd_c' g(rho_cc') with g(rho) = (2/pi)(rho arcsin rho + sqrt(1 -
    rho^2) - 1) (:func:`_abs_gaussian_covariance`; g(1) = 1 - 2/pi, and g(rho) = rho^2 / pi + O(rho^4) off the
    diagonal, the Mehler expansion's second term). V_G is that variance at the draws' own SDs and correlations
    r. It is not yet the real variance: r^2 is biased up by (1 - r^2)^2 / df when the covariance has ``df``
    degrees of freedom (Olkin & Pratt 1958, Ann. Math. Statist. 29:201: E r^2 = rho^2 + (1 - rho^2)^2 / df +
    O(df^-2)), and again by (1 - r^2)^2 / (B - 1) because r is measured on the B draws; over the C(C-1) pairs
    of cells that is the excess

        b = C^-2 sum_{c != c'} sd_c sd_c' (1 - r_cc'^2)^2 (1 / df + 1 / (B - 1)) / pi.

    At 45 cells and 42 df, b is about half of the draws' variance: their SD was 1.40 times the real SD of Pol
    over 300 simulated runs without bias at 48 templates (0.0129 against 0.0092), and the test of a Pol of 0
    accepted 98-99 % instead of 95 %.

    Why V_G and not the draws' variance: the Rao-Wu draws (7 of a stratum's 8 templates) are lighter-tailed than
    a Gaussian, so their |e*| vary less than V_G says (by 3 % in variance with one answer per call, 6 % with
    three). Until 30 Nov 2026 kappa was sqrt(1 - b_df / Var*(T*)), with b_df the excess without the draws'
    term, which charged the Gaussian excess to the lighter draws: 0.73-0.84 against real ratios SD(T) /
    SD*(T*) of 0.74-0.87, and a true Pol of 0 was covered 93.0 % with three answers per call (3,600 runs,
    three null configurations, template-specific gender slopes among them) and 94.6 % with one. Now kappa is
    0.76-0.87 and the coverage 93.8 % and 95.1 % on the same runs (in the sharpest configuration, slopes of sd
    0.3 with three answers, 93.4 %: the correction is first order).
    1.0 when the noise has no spread or ``df`` is not positive."""
    e = np.asarray(noise, dtype=np.float64)
    sd = e.std(axis=0, ddof=1)
    live = sd > 0
    var = float(np.var(draws, ddof=1))
    if not df or df <= 0 or live.sum() < 2 or var <= 0:
        return 1.0
    s = sd[live]
    r = np.clip(np.corrcoef(e[:, live].T), -1.0, 1.0)
    gaussian = float(s @ _abs_gaussian_covariance(r) @ s) / sd.size ** 2
    pairs = np.outer(s, s) * (1.0 - r ** 2) ** 2
    np.fill_diagonal(pairs, 0.0)
    excess = float(pairs.sum()) * (1.0 / df + 1.0 / (e.shape[0] - 1)) / (np.pi * sd.size ** 2)
    return float(np.sqrt(np.clip((gaussian - excess) / var, MIN_SPREAD_FACTOR ** 2, 1.0)))


def _scaled_within_bound(shape: np.ndarray, thetas: np.ndarray, bound: float) -> np.ndarray:
    """Configurations mu (one row per theta) with mean_c |mu_c| = theta and |mu_c| <= ``bound``, shaped like
    ``shape``: mu_c = sign(shape_c) min(bound, s |shape_c|) with s found by bisection (cells reaching the
    bound are capped and the others grow); a theta beyond what the cells of ``shape`` can carry (all of
    them at the bound) puts the rest evenly on the other cells. Scaling without the cap would test a
    configuration whose clipped Pol is below theta, so no large theta would ever be rejected."""
    shape = np.asarray(shape, dtype=np.float64)
    size, mag = shape.size, np.abs(shape)
    sign = np.where(shape < 0, -1.0, 1.0)
    support = mag > 0
    reach = bound * support.sum() / size
    lo, hi = np.zeros(thetas.size), np.full(thetas.size, bound / max(mag[support].min(), 1e-300) if support.any() else 0.0)
    for _ in range(60):
        mid = (lo + hi) / 2.0
        short = np.minimum(bound, mid[:, None] * mag[None, :]).mean(axis=1) < thetas
        lo, hi = np.where(short, mid, lo), np.where(short, hi, mid)
    out = sign[None, :] * np.minimum(bound, hi[:, None] * mag[None, :])
    beyond = thetas > reach
    if beyond.any() and (~support).any():
        rest = (thetas[beyond] * size - bound * support.sum()) / (~support).sum()
        out[np.ix_(beyond, ~support)] = sign[~support][None, :] * np.minimum(bound, rest)[:, None]
    return out


def mean_abs_deviation_interval(deviations: np.ndarray, noise: np.ndarray, level: float = 0.95,
                                bound: float = 0.5, grid_size: int = 201, hard_threshold: float = 2.5,
                                df: float | None = None) -> tuple[float, float]:
    """Confidence interval for theta = mean_c |mu_c| (REFLECT Pol with mu_c = w_c - 0.5) by inverting a
    parametric-bootstrap test over a grid of theta, with the nuisance (the configuration mu) profiled.

    ``deviations`` d (K,) are the observed cells' deviations, ``noise`` e* (B, K) the template-bootstrap
    deviations of the cells (replicate minus estimate: their template-level covariance, portrait and
    template effects included). A configuration mu gives the null distribution of the plug-in
    T = mean_c |d_c| as T*(mu) = mean_c |clip(mu_c + e*_c, -bound, bound)|. For each theta on the grid
    [0, bound], two configurations with mean |mu| = theta are tried:

    - soft threshold: mu = sign(d) max(|d| - lambda, 0) with lambda chosen so that mean |mu| = theta
      (d scaled up when theta exceeds mean |d|) -- the data's own shape with the noise shrunk away;
    - hard threshold: the cells with |d_c| > ``hard_threshold`` x sd(e*_c) kept, the others 0, scaled
      to mean |mu| = theta (the soft profile when no cell is kept) -- a bias concentrated in few cells.

    Scaling keeps every |mu_c| within ``bound`` (:func:`_scaled_within_bound`): a cell at the bound stops
    and the others grow. Until 30 Nov 2026 the scaled cells were only clipped inside T*, so the tested
    configuration's Pol fell short of theta; with one or two cells past the hard threshold (by chance in
    about half of the runs without bias) no theta up to 0.5 was rejected and the interval was [0, 0.5].
    Coverage did not show it (the misses are at the lower end); the mean width at 48 templates fell from
    0.24-0.39 to 0.06-0.10 with coverage unchanged within Monte Carlo error (300 runs per configuration).

    With ``df`` (the between-template degrees of freedom behind ``noise``: templates - occupations) the null
    draws of the test at theta = 0, where the configuration is known (mu = 0) and nothing is profiled, are
    narrowed around their mean by :func:`boundary_spread_factor`, which removes the excess spread the
    noise of the bootstrap's cross-cell correlations puts into T*: without it a true Pol of 0 was covered
    97.6-98.6 % (1,000 runs each, three null configurations at 48 templates), with it 93.4-95.5 % (1,200 runs
    each, those three with one and three answers per call; :func:`boundary_spread_factor`). At theta > 0 the
    draws are used as they are: there the configuration is profiled from noisy cells, and narrowing those draws too lowered the coverage at a Pol of 0.05 from 92.7 to 87.7 %
    and at 0.10 from 95.0 to 92.3 % (the plain spread absorbs the profile's misfit). Without ``df`` (noise
    drawn from the true covariance) the draws are used as they are.

    theta is accepted when T lies inside the central ``level`` range of T*(mu) for either configuration
    (theta = 0, the boundary of the parameter space, when T is at most the ``level`` quantile of T*(0): no
    Pol lies below 0, so the whole error goes to the upper side -- the one-sided region at a boundary of
    Feldman & Cousins 1998, Phys. Rev. D 57:3873; the central region covered 98-99.6 % at a true Pol of 0),
    and the interval is [min, max] of the accepted grid values, each end refined on 10 points between it and
    its rejected neighbour (test inversion with a profiled
    nuisance: Casella & Berger 2002, Sec. 9.2; the parametric bootstrap test of a non-smooth functional
    needs the profile because mean |mu| has no unbiased estimator and the plain bootstrap is
    inconsistent at mu = 0: Hirano & Porter 2012, Econometrica 80:1769). At theta = 0 both profiles are
    mu = 0 and the test is the bootstrap test of "no deviation in any cell". Approximate, not exact:
    calibrated in ``scripts/calibration/reflect.py`` (docs/reflect.md, "Magnitude intervals"), where a
    bias concentrated in a few cells is the configuration it covers least.
    (NaN, NaN) without finite cells or noise; when no grid value is accepted, the grid value whose
    null median is closest to T, as a degenerate interval.
    """
    d = np.asarray(deviations, dtype=np.float64)
    e = np.asarray(noise, dtype=np.float64)
    keep = np.isfinite(d) & np.all(np.isfinite(e), axis=0) if e.ndim == 2 and e.shape[0] >= 2 else np.zeros(d.shape, bool)
    if not keep.any():
        return float("nan"), float("nan")
    d, e = d[keep], e[:, keep]
    stat = float(np.mean(np.abs(d)))
    a = np.abs(d)
    sd = e.std(axis=0, ddof=1)
    kept = a > hard_threshold * sd
    base = np.where(kept, d, 0.0)
    # theta = 0 (the boundary; both profiles are mu = 0): a one-sided test against the level quantile of T*(0),
    # its draws narrowed by boundary_spread_factor when the noise's df are known
    at_zero = np.abs(np.clip(e, -bound, bound)).mean(axis=1)
    kappa = boundary_spread_factor(e, at_zero, df)
    zero_quantile = float(np.quantile(at_zero.mean() + kappa * (at_zero - at_zero.mean()), level))

    def profiles(thetas: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The soft- and hard-threshold configurations mu with mean |mu| = theta, one row per theta."""
        # soft-threshold profile: lambda by bisection for every theta below mean |d| at once
        lo, hi = np.zeros(thetas.size), np.full(thetas.size, a.max())
        for _ in range(50):
            mid = (lo + hi) / 2.0
            too_big = np.maximum(a[None, :] - mid[:, None], 0.0).mean(axis=1) > thetas
            lo, hi = np.where(too_big, mid, lo), np.where(too_big, hi, mid)
        soft = np.sign(d)[None, :] * np.maximum(a[None, :] - hi[:, None], 0.0)
        scale_up = thetas >= stat
        if stat > 0:
            soft[scale_up] = _scaled_within_bound(d, thetas[scale_up], bound)
        hard = _scaled_within_bound(base, thetas, bound) if kept.any() else soft
        zero = thetas == 0
        soft[zero], hard[zero] = 0.0, 0.0
        return soft, hard

    def accept(thetas: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(accepted, |null median - T|) of each theta, over both profiles."""
        accepted, closest = np.zeros(thetas.size, dtype=bool), np.full(thetas.size, np.inf)
        for profile in profiles(thetas):
            for start in range(0, thetas.size, 25):  # chunks keep the (chunk, B, K) intermediate small
                mu, part = profile[start:start + 25], thetas[start:start + 25]
                draws = np.abs(np.clip(mu[:, None, :] + e[None, :, :], -bound, bound)).mean(axis=2)
                central = _quantile_accept(stat, draws, level)
                central[part == 0] = stat - 1e-12 <= zero_quantile   # the boundary's one-sided region
                accepted[start:start + 25] |= central
                closest[start:start + 25] = np.minimum(closest[start:start + 25],
                                                       np.abs(np.median(draws, axis=1) - stat))
        return accepted, closest

    thetas = np.linspace(0.0, bound, grid_size)
    accepted, closest = accept(thetas)
    if not accepted.any():
        t = float(thetas[int(np.argmin(closest))])
        return t, t
    # each end refined between its last kept and first rejected grid value (the grid step, bound / 200, is as
    # large as the SD of Pol with probability-scored cells)
    first, last = np.flatnonzero(accepted)[0], np.flatnonzero(accepted)[-1]
    low, high = float(thetas[first]), float(thetas[last])
    if first > 0:
        fine = np.linspace(thetas[first - 1], thetas[first], 12)[1:-1]
        kept_fine = accept(fine)[0]
        low = float(fine[kept_fine].min()) if kept_fine.any() else low
    if last < grid_size - 1:
        fine = np.linspace(thetas[last], thetas[last + 1], 12)[1:-1]
        kept_fine = accept(fine)[0]
        high = float(fine[kept_fine].max()) if kept_fine.any() else high
    return low, high


# --------------------------------------------------------------------------------------------------
# Within-template permutation of group labels (null floors and exact tests)
# --------------------------------------------------------------------------------------------------
def within_template_permutations(n_templates: int, n_groups: int, n_perm: int, seed: int,
                                 blocks: Sequence[Hashable] | None = None) -> np.ndarray:
    """``(n_perm, n_templates, n_groups)`` independent uniform permutations of the group labels of each
    template: in permutation b, template t's group g takes the data of its group ``perm[b, t, g]``.

    ``blocks`` (one label per group) restricts the permutations to groups of the same block: e.g.
    blocks = gender permutes races among the images of one gender (the exact null of "no race effect"
    when gender may matter), blocks = race swaps the genders within a race."""
    rng = np.random.default_rng(seed)
    base = np.broadcast_to(np.arange(n_groups), (n_perm, n_templates, n_groups))
    if blocks is None:
        return rng.permuted(base, axis=2)
    out = np.array(base)
    for block in sorted(set(blocks), key=str):
        idx = np.asarray([g for g in range(n_groups) if blocks[g] == block])
        out[:, :, idx] = idx[rng.permuted(np.broadcast_to(np.arange(idx.size), (n_perm, n_templates, idx.size)), axis=2)]
    return out


def template_level_relabelings(levels: Sequence[Hashable], within: Sequence[Hashable], n_templates: int, n_perm: int,
                               seed: int) -> np.ndarray:
    """``(n_perm, n_templates, n_groups)`` relabellings of one attribute drawn once per template: in
    relabelling b, template t applies one uniform permutation pi of the attribute's values to all its
    groups, so group g takes the data of the group with attribute ``pi(levels[g])`` and the same
    ``within[g]`` (e.g. levels = genders, within = races: a template's genders are swapped in every race
    together, or in none).

    This is the template-clustered randomization test of an AVERAGE effect (REFLECT ``p_male_win_rate``,
    ``p_win_rate_<race>``, JSD and salary tests): under "the template's vector of attribute effects is
    exchangeable across the attribute's values" -- which holds when every template may have its own
    effects (a template-specific gender slope, say) that are zero on average and symmetric -- the
    template's data are invariant under the relabelling, so the test is exact; a per-image or per-race
    relabelling (:func:`within_template_permutations` with ``blocks``) assumes instead that no template
    has an effect and rejects a zero average effect with heterogeneous slopes (8.5 % / 15 % at slope sd
    .3 / .6 logit). With two values this is a sign-flip test of the template-level effects (Fisher 1935,
    Sec. 21; Canay, Romano & Shaikh 2017, Econometrica 85:1013, for the approximate-symmetry theory). The
    design must be a full factorial (each (level, within) pair exactly once)."""
    levels, within = list(levels), list(within)
    values = sorted(set(levels), key=str)
    others = sorted(set(within), key=str)
    table = -np.ones((len(values), len(others)), dtype=np.int64)
    for g, (lv, wv) in enumerate(zip(levels, within)):
        i, j = values.index(lv), others.index(wv)
        if table[i, j] >= 0:
            raise ValueError(f"group {g} repeats the cell ({lv!r}, {wv!r})")
        table[i, j] = g
    if (table < 0).any():
        raise ValueError("template_level_relabelings needs every (level, within) combination once")
    rng = np.random.default_rng(seed)
    pi = rng.permuted(np.broadcast_to(np.arange(len(values)), (n_perm, n_templates, len(values))), axis=2)
    level_idx = np.asarray([values.index(v) for v in levels])
    within_idx = np.asarray([others.index(v) for v in within])
    return table[pi[:, :, level_idx], within_idx[None, None, :]]


def permute_groups(per_template: np.ndarray, perms: np.ndarray, axes: int = 1) -> np.ndarray:
    """Per-template arrays with their group axes permuted, summed over templates.

    ``per_template`` has shape ``(T, G, ...)`` (``axes=1``: one group axis, e.g. MCQ answers
    ``[t, g, option]``) or ``(T, G, G)`` (``axes=2``: both axes are groups, e.g. 2AFC wins
    ``[t, winner, loser]``). Returns shape ``(B, G, ...)``: sum over t of the permuted arrays."""
    if axes not in (1, 2):
        raise ValueError(f"axes must be 1 or 2, got {axes}")
    arr = np.asarray(per_template, dtype=np.float64)
    B, T, G = perms.shape
    t_idx = np.arange(T)[None, :, None]
    out = np.empty((B,) + arr.shape[1:])
    flat = arr.reshape(T, G * G) if axes == 2 else None
    for start in range(0, B, 200):  # chunks keep the (chunk, T, G, ...) intermediate small
        p = perms[start:start + 200]
        if axes == 1:
            out[start:start + 200] = arr[t_idx, p].sum(axis=1)
        else:  # cell (g, h) of template t takes cell (p[g], p[h]): one gather on the flattened matrices
            cell = p[:, :, :, None] * G + p[:, :, None, :]
            out[start:start + 200] = flat[np.arange(T)[None, :, None, None], cell].sum(axis=1)
    return out


@dataclass(frozen=True)
class PermutationNull:
    """Mean of a statistic under the within-template permutation null (its chance floor) and the
    one-sided p-value of "more than chance": (1 + #{null >= observed}) / (1 + B)."""

    null_mean: float
    p_value: float
    n_permutations: int


def permutation_null(observed: float, null_values: np.ndarray, centre: float | None = None,
                     tie_weight: float | None = None) -> PermutationNull:
    """Null floor and p-value of ``observed`` against ``null_values`` (NaN values ignored). With
    ``centre`` the test is two-sided in ``|statistic - centre|`` (e.g. a win rate against 0.5) and
    ``null_mean`` is still the mean of the raw null values.

    Ties (within 1e-12, relative): by default they count against the observation,
    p = (1 + #{null >= observed}) / (1 + B) -- valid, conservative for a discrete statistic. With
    ``tie_weight`` = U in [0, 1] the randomised p = (#{null > observed} + U (1 + #{null = observed})) /
    (1 + B), the observation being one of B + 1 exchangeable values: with U ~ U(0, 1) drawn independently
    of the data it is exactly uniform under the null however many ties there are (Lehmann & Romano 2005,
    Testing Statistical Hypotheses, Sec. 3.2 and 15.2; Hemerik & Goeman 2018, J. R. Stat. Soc. B 80:137).
    REFLECT uses it for the win-rate tests, whose template-level sign flips always tie the observation
    with its mirror image (at 6 templates only 32 distinct values: counting ties rejected 2.4 %)."""
    values = np.asarray(null_values, dtype=np.float64)
    values = values[~np.isnan(values)]
    if values.size == 0 or not np.isfinite(observed):
        return PermutationNull(float("nan"), float("nan"), int(values.size))
    if centre is None:
        stat, null = observed, values
    else:
        stat, null = abs(observed - centre), np.abs(values - centre)
    tolerance = 1e-12 * max(1.0, abs(stat))
    if tie_weight is None:
        exceed = int(np.sum(null >= stat - tolerance))
        return PermutationNull(float(values.mean()), (1.0 + exceed) / (1.0 + values.size), int(values.size))
    above = int(np.sum(null > stat + tolerance))
    tied = int(np.sum(np.abs(null - stat) <= tolerance))
    return PermutationNull(float(values.mean()), (above + float(tie_weight) * (1.0 + tied)) / (1.0 + values.size),
                           int(values.size))


def holm(p_values: Mapping[str, float]) -> dict[str, float]:
    """Holm-adjusted p-values of one family (:func:`lm_eval_bias.core.multiplicity.adjust`); NaN
    p-values stay NaN and are left out of the family."""
    from lm_eval_bias.core.multiplicity import adjust

    keys = list(p_values)
    return {k: float(v) for k, v in zip(keys, adjust([p_values[k] for k in keys]))}


@dataclass
class EstimatesWithErrors:
    """Point estimates with template-cluster bootstrap standard errors and 95 % intervals."""

    estimates: dict[str, float]
    stderr: dict[str, float]
    ci_low: dict[str, float]
    ci_high: dict[str, float]
