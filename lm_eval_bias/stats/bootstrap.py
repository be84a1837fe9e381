"""Template-cluster bootstrap and leave-one-template-out (REFLECT App. C.3).

"We treat each template (occupation x source photo) as the resampling unit": a replicate draws, within
each occupation (stratum), as many templates as it has, with replacement, and recomputes the metric on
the drawn templates' data. Every REFLECT metric is a function of per-template *counts*, so a replicate
is a weighted sum of per-template count arrays (weight = how often a template was drawn); this module
produces those weights and summarises replicates.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Hashable, Mapping, Sequence

import numpy as np


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
    members: dict[Hashable, list[int]] = {}
    for k, stratum in enumerate(strata):
        members.setdefault(stratum, []).append(k)
    rows = np.arange(n_boot)[:, None]
    for stratum in sorted(members, key=str):
        idx = np.asarray(members[stratum])
        draws = rng.integers(0, len(idx), size=(n_boot, len(idx)))
        np.add.at(weights, (np.broadcast_to(rows, draws.shape), idx[draws]), 1)
    return weights


def leave_one_out_weights(n_clusters: int) -> np.ndarray:
    """``(n, n)`` weights: row ``k`` drops cluster ``k`` and keeps every other cluster once (LOTO)."""
    return np.ones((n_clusters, n_clusters), dtype=np.int64) - np.eye(n_clusters, dtype=np.int64)


def weighted_replicates(
    per_cluster_counts: Mapping[str, np.ndarray],
    weights: np.ndarray,
    metric_fn: Callable[[dict[str, np.ndarray]], Mapping[str, float]],
) -> dict[str, np.ndarray]:
    """Evaluate ``metric_fn`` on the weighted sum of per-cluster counts for every weight row.

    ``per_cluster_counts[name]`` has the cluster axis first (shape ``(T, ...)``); ``weights`` is
    ``(B, T)``. Returns ``{metric: array of B values}``.
    """
    summed = {name: np.tensordot(weights, np.asarray(arr, dtype=np.float64), axes=(1, 0))
              for name, arr in per_cluster_counts.items()}
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


def template_bootstrap(
    per_cluster_counts: Mapping[str, np.ndarray],
    strata: Sequence[Hashable],
    metric_fn: Callable[[dict[str, np.ndarray]], Mapping[str, float]],
    keys: Sequence[str],
    n_boot: int,
    seed: int,
    level: float = 0.95,
) -> tuple[dict[str, float], dict[str, float], dict[str, float]]:
    """(stderr, ci_low, ci_high) per metric key from a stratified cluster bootstrap of counts.

    ``n_boot = 0`` or no clusters give NaN for every key.
    """
    replicates: dict[str, np.ndarray] = {}
    if n_boot and len(strata):
        replicates = weighted_replicates(per_cluster_counts, cluster_bootstrap_weights(strata, n_boot, seed), metric_fn)
    stderr, ci_low, ci_high = {}, {}, {}
    for key in keys:
        s = summarize_replicates(replicates.get(key, np.array([])), level)
        stderr[key], ci_low[key], ci_high[key] = s.stderr, s.ci_low, s.ci_high
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


@dataclass
class EstimatesWithErrors:
    """Point estimates with template-cluster bootstrap standard errors and 95 % intervals."""

    estimates: dict[str, float]
    stderr: dict[str, float]
    ci_low: dict[str, float]
    ci_high: dict[str, float]
