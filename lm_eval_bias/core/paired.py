"""Paired comparison of two models on the same docs: a paired cluster bootstrap of the difference.

Two models answered the same docs (templates, image pairs, queries). Their metric values are not
independent — a hard template is hard for both — so the difference is resampled *jointly*: each
replicate draws the benchmark's clusters (within strata) once and recomputes the metric of both models
on the same drawn clusters (the stratified cluster bootstrap of REFLECT App. C.3, applied to the
pair of models; Efron & Tibshirani 1993, §16.4 for the bootstrap test).

With ``d̂ = θ̂_a − θ̂_b`` on the shared clusters and ``d*_1 … d*_B`` the replicate differences:

- small-sample rescaling: a stratified bootstrap that draws ``m_h`` of a stratum's ``m_h`` clusters has
  ``(m_h − 1) / m_h`` times the unbiased variance, so the replicate deviations are scaled by
  ``sqrt(n / (n − H))`` (``n`` clusters in ``H`` strata; exact for equal strata; the rescaling idea
  of Rao & Wu 1988): ``d*_b ← d̂ + sqrt(n / (n − H)) (d*_b − d̂)``;
- standard error: the standard deviation of ``d*`` (ddof = 1), ``SE``;
- interval (default ``method="t"``): ``d̂ ± t_{df, 0.975} SE``, the normal-theory bootstrap interval
  with Student's t (Efron & Tibshirani 1993, Sec. 12.2 and 13.2; Davison & Hinkley 1997, Sec. 5.2),
  ``df = n − H`` (``n − 1`` without strata; the stratified design's degrees of freedom, Korn &
  Graubard 1999, Sec. 5.2); two-sided p-value of H0 ``θ_a = θ_b``: ``2 P(T_df ≥ |d̂| / SE)``.
  Why not the percentile interval (``method="percentile"``, kept: the 2.5 / 97.5 % percentiles of
  ``d*``, ``p = (1 + #{b: |d*_b − d̂| ≥ |d̂|}) / (B + 1)``): with the report's 200 replicates a 2.5 %
  quantile rests on 5 draws (Efron & Tibshirani 1993, Sec. 19.3: ~1,000 replicates for percentile
  intervals, 200 suffice for a standard error), and for a plug-in of few answers per stratum (FACT-OR-
  FAIR's S_fair, 3 queries per statistic × side) the replicates are shrunk toward 0 (resampling 3 of 3
  queries loses diversity in both models alike) while their SD is right: the percentile interval
  covered 99.7 % for identical models (test 1.3 %) and 92 % for a real difference, the t interval
  94 % / 96 % (test 6 %); CF-VQA consistency 93 % → 94 % (``scripts/calibration/paired.py``).

Replicates in which the metric is undefined (NaN) for either model are dropped; with fewer than half
of them (or fewer than 10) usable the result is NaN. Fewer than two clusters: NaN (nothing varies).
Pure numpy; the harness glue (:mod:`lm_eval_bias.report.comparison`) supplies the statistics.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Hashable, Mapping, Sequence

import numpy as np

from lm_eval_bias.core.bootstrap import cluster_bootstrap_weights

#: metric values of one model from cluster multiplicities: (n_clusters,) ints -> {key: value}
Statistic = Callable[[np.ndarray], Mapping[str, float]]


@dataclass(frozen=True)
class PairedDifference:
    """``estimate`` = metric of model a − metric of model b on the shared clusters."""

    estimate: float
    ci_low: float
    ci_high: float
    stderr: float
    p_value: float
    n_replicates: int  # usable replicates
    n_clusters: int

    @property
    def significant(self) -> bool:
        return math.isfinite(self.p_value) and self.p_value < 0.05


PAIRED_METHODS = ("t", "percentile")


def paired_difference(estimate_a: float, estimate_b: float, replicates_a, replicates_b, n_clusters: int,
                      level: float = 0.95, n_strata: int = 0, method: str = "t") -> PairedDifference:
    """The :class:`PairedDifference` from both models' estimates and their replicates on the *same*
    resampled clusters (``replicates_a[b]`` and ``replicates_b[b]`` come from draw ``b``); ``n_strata``
    > 0 rescales the replicate deviations by ``sqrt(n_clusters / (n_clusters − n_strata))``.
    ``method``: "t" (default: ``d̂ ± t_df SE`` and the t-test p, df = n_clusters − n_strata, or
    n_clusters − 1 without strata) or "percentile" (the replicates' percentiles and the centred
    bootstrap p); see the module docstring. A zero SE (replicates all equal) gives the point interval
    and the centred bootstrap p."""
    if method not in PAIRED_METHODS:
        raise ValueError(f"method must be one of {PAIRED_METHODS}, got {method!r}")
    a = np.asarray(replicates_a, dtype=float)
    b = np.asarray(replicates_b, dtype=float)
    if a.shape != b.shape:
        raise ValueError(f"replicates of the two models differ in shape: {a.shape} vs {b.shape}")
    estimate = float(estimate_a) - float(estimate_b)
    draws = (a - b)[np.isfinite(a) & np.isfinite(b)]
    nan = PairedDifference(estimate, math.nan, math.nan, math.nan, math.nan, int(draws.size), n_clusters)
    if n_clusters < 2 or not math.isfinite(estimate) or draws.size < max(10, 0.5 * a.size):
        return nan
    if 0 < n_strata < n_clusters:
        draws = estimate + math.sqrt(n_clusters / (n_clusters - n_strata)) * (draws - estimate)
    alpha = (1.0 - level) / 2
    stderr = float(np.std(draws, ddof=1))
    exceed = np.count_nonzero(np.abs(draws - estimate) >= abs(estimate) - 1e-12 * max(1.0, abs(estimate)))
    p = (1 + exceed) / (draws.size + 1)
    if method == "percentile":
        low, high = np.quantile(draws, [alpha, 1 - alpha])
    elif stderr > 0:
        from scipy.stats import t as student_t

        from lm_eval_bias.core.bootstrap import design_t_interval

        df = n_clusters - n_strata if 0 < n_strata < n_clusters else n_clusters - 1
        low, high = design_t_interval(estimate, stderr, df, level)
        p = float(2 * student_t.sf(abs(estimate) / stderr, df))
    else:
        low = high = estimate
    return PairedDifference(estimate, float(low), float(high), stderr, float(min(1.0, p)), int(draws.size), n_clusters)


def paired_cluster_bootstrap(statistic_a: Statistic, statistic_b: Statistic, strata: Sequence[Hashable],
                             n_boot: int, seed: int, keys: Sequence[str] | None = None, batched: bool = False,
                             level: float = 0.95, method: str = "t") -> dict[str, PairedDifference]:
    """Paired cluster bootstrap of ``statistic_a − statistic_b`` for every key.

    ``strata[k]`` is the stratum of shared cluster ``k`` (clusters are resampled within strata);
    ``statistic_x(w)`` gives model x's metric values when cluster ``k`` enters ``w[k]`` times
    (``w`` all ones: the estimate). With ``batched=True`` the statistics take the whole ``(B, n)``
    weight matrix and return ``{key: array of B values}`` (vectorised simulations). Both models see
    the same weight rows: that is what makes the bootstrap paired. ``method``: :func:`paired_difference`.
    """
    n = len(strata)
    ones = np.ones(n, dtype=np.int64)
    if batched:
        full_a = {k: float(np.asarray(v)[0]) for k, v in statistic_a(ones[None, :]).items()}
        full_b = {k: float(np.asarray(v)[0]) for k, v in statistic_b(ones[None, :]).items()}
    else:
        full_a = {k: float(v) for k, v in statistic_a(ones).items()}
        full_b = {k: float(v) for k, v in statistic_b(ones).items()}
    keys = list(keys) if keys is not None else [k for k in full_a if k in full_b]
    weights = cluster_bootstrap_weights(strata, n_boot if n >= 2 else 0, seed)
    reps_a = replicate_values(statistic_a, weights, keys, batched)
    reps_b = replicate_values(statistic_b, weights, keys, batched)
    n_strata = len(set(strata))
    return {k: paired_difference(full_a.get(k, math.nan), full_b.get(k, math.nan), reps_a[k], reps_b[k], n, level,
                                 n_strata, method) for k in keys}


def replicate_values(statistic: Statistic, weights: np.ndarray, keys: Sequence[str],
                     batched: bool = False) -> dict[str, np.ndarray]:
    """``{key: array of B values}`` of one model's statistic on each weight row (NaN where undefined).
    Computed once per model, it pairs with any other model's replicates on the same ``weights``."""
    out = {k: np.full(len(weights), np.nan) for k in keys}
    if not len(weights):
        return out
    if batched:
        found = statistic(weights)
        return {k: np.asarray(found.get(k, out[k]), dtype=float) for k in keys}
    for row, w in enumerate(weights):
        found = _safe(statistic, w)
        for k in keys:
            out[k][row] = found.get(k, math.nan)
    return out


def _safe(statistic: Statistic, weights: np.ndarray) -> Mapping[str, float]:
    """A replicate in which the statistic cannot be computed (nothing answered) has no values."""
    try:
        return statistic(weights)
    except (ValueError, ZeroDivisionError, KeyError, IndexError):
        return {}


def holm(p_values: Sequence[float]) -> np.ndarray:
    """Holm-adjusted p-values (:func:`lm_eval_bias.core.multiplicity.adjust`); NaN entries stay NaN and
    do not count towards the family size."""
    from lm_eval_bias.core.multiplicity import adjust

    return adjust(p_values)


def tie_groups(order: Sequence[str], significant: Sequence[bool]) -> list[int]:
    """Competition ranks (1, 2, 2, 4 …) of models sorted best first: model ``i + 1`` shares model
    ``i``'s rank when their difference is not significant (``significant[i]`` is False) — a tie."""
    ranks = []
    for i, _ in enumerate(order):
        ranks.append(1 if i == 0 else (ranks[-1] if not significant[i - 1] else i + 1))
    return ranks


def exchange_masks(n_clusters: int, n_draws: int, seed: int) -> np.ndarray:
    """``(n_draws, n_clusters)`` 0/1 matrix: in draw b, cluster k's answers of the two models are exchanged
    where the entry is 1 (each cluster independently with probability 1/2, from ``seed``)."""
    return np.random.default_rng([seed, 0x5EA]).integers(0, 2, size=(n_draws, n_clusters), dtype=np.int8)


#: how :func:`exchange_test` counts exchanged differences that tie with the observation
EXCHANGE_TIES = ("mid", "count", "random")


def exchange_test(difference: Callable[[np.ndarray], Mapping[str, float]], n_clusters: int, n_draws: int, seed: int,
                  keys: Sequence[str], batched: bool = False, ties: str = "mid") -> dict[str, float]:
    """Two-sided p-value per key of "the two models are the same model" by exchanging their answers
    cluster by cluster: ``difference(mask)`` gives metric(a') − metric(b') where a' takes model b's
    answers in the clusters with ``mask`` 1 and b' model a's (``mask`` all 0: the observed difference;
    ``batched``: ``difference`` takes the whole ``(B, n)`` mask matrix and returns arrays of B values).

    Under the null the two models' answers to a cluster are exchangeable (the same model answered both
    times, each cluster independently), so every exchanged arrangement is as likely as the observed one and
    the Monte Carlo p of :func:`lm_eval_bias.core.bootstrap.permutation_null` on |d|, with the observation
    one of B + 1 exchangeable values, holds its level whatever the statistic: a plug-in magnitude (Pol, Ext,
    a spread) included, where the bootstrap t-test of the difference is conservative near 0 (its replicates
    of |·| spread too wide). Exchanged differences that tie with the observation (``ties``): "mid" (the
    default) counts half of them and the observation, p = (#{|d*| > |d|} + (1 + #{|d*| = |d|}) / 2) / (B + 1),
    Lancaster's (1961) mid-p: the randomised p's expectation given the data, so its level is 5 % on average
    over a discrete statistic's atoms (Ext moves in steps of 1/45), and two models with the same constant
    value (Ext = 0 everywhere) get p = 1/2, never a difference; "count" counts them all against the
    observation ((1 + #{|d*| >= |d|}) / (B + 1): valid, conservative for a discrete statistic, 3.4 % for Ext
    at the strong profile); "random" breaks them with one uniform from ``seed`` (exactly uniform, Lehmann &
    Romano 2005, Sec. 3.2), which a leaderboard does not use: it would tell two identical constant values
    apart by a coin. The paired randomisation test of Fisher (1935, The Design of Experiments, Sec. 21) over
    clusters; Lehmann & Romano 2005, Sec. 15.2 (Monte Carlo version). Fewer than two clusters or no draws:
    NaN."""
    from lm_eval_bias.core.bootstrap import permutation_null

    if ties not in EXCHANGE_TIES:
        raise ValueError(f"ties must be one of {EXCHANGE_TIES}, got {ties!r}")
    keys = list(keys)
    if n_clusters < 2 or n_draws < 1:
        return {k: math.nan for k in keys}
    masks = exchange_masks(n_clusters, n_draws, seed)
    if batched:
        observed = {k: float(np.asarray(v)[0]) for k, v in difference(np.zeros((1, n_clusters), dtype=np.int8)).items()}
        null = {k: np.asarray(v, dtype=float) for k, v in difference(masks).items()}
    else:
        observed = {k: float(v) for k, v in difference(np.zeros(n_clusters, dtype=np.int8)).items()}
        rows = [difference(m) for m in masks]
        null = {k: np.array([r.get(k, math.nan) for r in rows], dtype=float) for k in keys}
    tie_weight = {"mid": 0.5, "count": None, "random": float(np.random.default_rng([seed, 0x71E]).random())}[ties]
    return {k: permutation_null(observed.get(k, math.nan), null.get(k, np.array([])), centre=0.0,
                                tie_weight=tie_weight).p_value for k in keys}
