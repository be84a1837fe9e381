"""Counterfactual VQA pair metrics (paper: ``counterfactual_vqa_decision_boundaries.txt``, Sec. 3.4).

Each pair asks one question on two images that differ only in a question-irrelevant attribute
(b+ and b-). Per side the model gives an answer y and a confidence c in [0, 1]; a refusal is encoded
as y = None (the paper's empty answer) and c = 0.

- Eq. 3:  Cons = 1/|P| sum 1[y(b+) = y(b-)]          (two refusals are identical empty answers)
- Eq. 4-7: P_tau = pairs with c(b+) >= tau and c(b-) >= tau, kappa(tau) = |P_tau|/|P|,
  Cons_tau = consistency over P_tau, CC-AUC = integral of Cons_tau d kappa(tau)
- Eq. 8-12: r+-(tau) = 1[c <= tau], RR(tau) = mean of r+ and r- over pairs, RA(tau) = share of pairs
  with r+ != r-, SR-AUC = 1/(1 - RR_min) * integral of (1 - RA) dRR, RR_min = min over tau of RR.

Discretisation (the paper gives the integrals only):
- CC: thresholds are the distinct positive values of min(c+, c-); a pair belongs to P_tau exactly
  when its smaller confidence is >= tau, so the curve is a step function of kappa, integrated exactly
  (right-continuous steps from kappa = 0 up to the coverage of non-refused pairs). Thresholds start
  above 0, so pairs with a refusal (c = 0) are never evaluated, as the paper requires. Ties in
  confidence share one step.
- SR: thresholds 0, every distinct confidence, and 1; the points (RR, 1 - RA) are joined linearly
  (trapezoid rule) from RR_min to RR(1) = 1 and the area divided by 1 - RR_min. When every answer is
  a refusal (RR_min = 1) the curve is the single point (1, 1 - RA(0)) and SR-AUC is defined as
  1 - RA(0) = 1 (refusals are perfectly symmetric).
- Option orders: Cons is averaged over runs (the paper's three option orders); the curves and AUCs
  pool the pairs of all runs ("computed from the aggregated response distribution over all runs").

Uncertainty (beyond the paper, which reports point estimates only): :func:`pair_summary` gives a
design-based interval with the image pair as the cluster (both images and all option orders of a pair
move together), strata = categories: the stratified delete-one-pair jackknife standard error and a
logit-scale Student-t interval with pairs - strata degrees of freedom (:func:`logit_t_interval`; the
response-status rates, rare events, get Wilson's interval at the effective sample size,
:func:`~lm_eval_bias.core.jackknife.effective_n_wilson_interval`; no interval below
:data:`MIN_PAIRS_FOR_INTERVAL` pairs), and a permutation null that moves each pair's b-
responses to another pair of the same category (the "chance" level of Cons, CC-AUC and SR-AUC for a
model whose two answers are unrelated).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from lm_eval_bias.core.jackknife import (design_df, design_effect, effective_n_wilson_interval, jackknife_stderr,
                                         logit_t_interval, pooled_strata, ratio_jackknife)


@dataclass(frozen=True)
class PairResponse:
    """One counterfactual pair in one option-order run; ``answer_*`` None means refusal (c = 0)."""

    pair_id: str
    answer_plus: str | None
    answer_minus: str | None
    conf_plus: float
    conf_minus: float
    run: int = 0
    category: str = ""
    subcategory: str = ""
    #: who wrote the question (the manifest's optional ``question_source``; Table 11), "" when unknown
    source: str = ""

    def __post_init__(self) -> None:
        for side, answer, conf in (("b+", self.answer_plus, self.conf_plus), ("b-", self.answer_minus, self.conf_minus)):
            if not 0.0 <= conf <= 1.0:
                raise ValueError(f"{self.pair_id} {side}: confidence {conf} outside [0, 1]")
            if answer is None and conf != 0.0:
                raise ValueError(f"{self.pair_id} {side}: a refusal must have confidence 0, got {conf}")


def _arrays(pairs: Sequence[PairResponse]):
    same = np.asarray([p.answer_plus == p.answer_minus for p in pairs], dtype=bool)
    cp = np.asarray([p.conf_plus for p in pairs], dtype=np.float64)
    cm = np.asarray([p.conf_minus for p in pairs], dtype=np.float64)
    return same, cp, cm


def consistency(pairs: Sequence[PairResponse]) -> float:
    """Eq. 3 averaged over option-order runs (each run's Cons over its pairs)."""
    if not pairs:
        return float("nan")
    runs = sorted({p.run for p in pairs})
    values = [float(np.mean([p.answer_plus == p.answer_minus for p in pairs if p.run == r])) for r in runs]
    return float(np.mean(values))


def consistency_coverage_curve(pairs: Sequence[PairResponse]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(tau, kappa(tau), Cons_tau) at the thresholds of the module docstring, tau ascending."""
    same, cp, cm = _arrays(pairs)
    level = np.minimum(cp, cm)
    taus = np.unique(level[level > 0])
    n = len(pairs)
    kappa = np.asarray([(level >= t).sum() / n for t in taus])
    cons = np.asarray([same[level >= t].mean() for t in taus])
    return taus, kappa, cons


def cc_auc(pairs: Sequence[PairResponse]) -> float:
    """Eq. 7 with the step integration of the module docstring; 0 when no pair is free of refusals."""
    if not pairs:
        return float("nan")
    _, kappa, cons = consistency_coverage_curve(pairs)
    if kappa.size == 0:
        return 0.0
    next_kappa = np.append(kappa[1:], 0.0)
    return float(np.sum(cons * (kappa - next_kappa)))


def symmetric_refusal_curve(pairs: Sequence[PairResponse]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(tau, RR(tau), RA(tau)) at tau = 0, every distinct confidence, and 1 (Eq. 8-10)."""
    _, cp, cm = _arrays(pairs)
    taus = np.unique(np.concatenate([[0.0, 1.0], cp, cm]))
    rr = np.asarray([((cp <= t).sum() + (cm <= t).sum()) / (2 * len(pairs)) for t in taus])
    ra = np.asarray([((cp <= t) != (cm <= t)).mean() for t in taus])
    return taus, rr, ra


def sr_auc(pairs: Sequence[PairResponse]) -> float:
    """Eq. 12: area under (RR, 1 - RA), trapezoid rule, normalised by 1 - RR_min."""
    if not pairs:
        return float("nan")
    _, rr, ra = symmetric_refusal_curve(pairs)
    rr_min = float(rr.min())
    if rr_min >= 1.0:
        return float(1.0 - ra[0])
    order = np.argsort(rr, kind="stable")
    x, y = rr[order], 1.0 - ra[order]
    return float(np.sum((x[1:] - x[:-1]) * (y[1:] + y[:-1]) / 2.0) / (1.0 - rr_min))


def empty_answer_rate(pairs: Sequence[PairResponse]) -> float:
    """Share of empty answers (y = None, c = 0) over both sides of all pairs: refusals, and whatever
    the task glue encodes as the empty answer (invalid or truncated responses, by option)."""
    if not pairs:
        return float("nan")
    return float(np.mean([a is None for p in pairs for a in (p.answer_plus, p.answer_minus)]))


def refusal_asymmetry_rate(pairs: Sequence[PairResponse]) -> float:
    """Share of pairs where exactly one side is the empty answer (RA at tau = 0 for refusals)."""
    if not pairs:
        return float("nan")
    return float(np.mean([(p.answer_plus is None) != (p.answer_minus is None) for p in pairs]))


def pair_metrics(pairs: Sequence[PairResponse]) -> dict[str, float]:
    """All headline metrics of a set of pairs."""
    return {
        "consistency": consistency(pairs),
        "cc_auc": cc_auc(pairs),
        "sr_auc": sr_auc(pairs),
        "empty_answer_rate": empty_answer_rate(pairs),
        "refusal_asymmetry_rate": refusal_asymmetry_rate(pairs),
    }


def metrics_by(pairs: Sequence[PairResponse], field: str) -> dict[str, dict[str, float]]:
    """:func:`pair_metrics` per value of ``field`` (``category`` or ``subcategory``)."""
    groups: dict[str, list[PairResponse]] = {}
    for p in pairs:
        groups.setdefault(getattr(p, field), []).append(p)
    return {key: pair_metrics(group) for key, group in sorted(groups.items())}


def metrics_by_cell(pairs: Sequence[PairResponse], fields: Sequence[str], n_boot: int, seed: int,
                    level: float = 0.95, human: dict[str, float] | None = None
                    ) -> dict[tuple[str, ...], dict[str, float]]:
    """The pair metrics per cell of ``fields`` (e.g. ``("subcategory",)`` for Tables 6-10), each with its
    ``_stderr``/``_ci_low``/``_ci_high`` (:func:`pair_summary` with the cell as the scope: the pairs of
    the cell are the clusters; NaN below :data:`MIN_PAIRS_FOR_INTERVAL` pairs, or rated pairs for the
    human keys, or when ``n_boot`` is 0) and ``n_pairs``, ``n_rated_pairs``. ``human`` (pair id ->
    share of workers answering both images alike) adds ``human_consistency`` and
    ``consistency_minus_human``. Pairs with an empty value in any field are left out."""
    import dataclasses

    sep = "\x1f"
    tagged = [dataclasses.replace(p, category=sep.join(str(getattr(p, f)) for f in fields)) for p in pairs
              if all(getattr(p, f) for f in fields)]
    if not tagged:
        return {}
    summary = pair_summary(pair_grid(tagged, human=human), n_boot, 0, seed, level)
    return {tuple(scope.split(sep)): values for scope, values in summary.items() if scope is not None}


def metrics_by_source(pairs: Sequence[PairResponse], n_boot: int, seed: int,
                      level: float = 0.95) -> dict[tuple[str, str], dict[str, float]]:
    """Table 11 (App.): Cons, CC-AUC and SR-AUC per category x question source (the model that wrote the
    question, e.g. o3 / Sonnet 4), each with its pair-bootstrap interval (:func:`metrics_by_cell`) and
    ``n_pairs``. Pairs without a source are left out; ``{}`` when no pair has one."""
    return metrics_by_cell(pairs, ("category", "source"), n_boot, seed, level)


# -- arrays, cluster bootstrap and permutation null (vectorised) ----------------------------------------------
#
# The resampling unit is the image pair: both images and all option-order runs of a pair move together.
# A set of pair responses is laid out as a (pairs x runs) grid; every metric above is a function of
# per-threshold histograms of that grid, so a bootstrap replicate (pair multiplicities) or a permutation
# replicate (b- responses moved to another pair) is evaluated with a few bincounts, not a Python loop.

REFUSED = -1  # letter code of the empty answer (refusal, c = 0)
MISSING = -2  # letter code of a side that is absent from the grid


@dataclass(frozen=True)
class PairGrid:
    """Pair responses as arrays of shape (P pairs, R runs).

    ``letter_*``: presented option index of the answer (``REFUSED`` for the empty answer, ``MISSING``
    where the run has no usable response on that side); ``same``: the two sides' answers are equal
    (option text, which within a run is equivalent to the letter: both images share the option order);
    ``rank_*``: index of the confidence in ``grid`` (sorted distinct confidences with 0 and 1);
    ``stratum``: category index per pair (``strata`` names them); ``human``: per-pair human consistency
    (NaN when absent).
    """

    pair_ids: tuple[str, ...]
    strata: tuple[str, ...]
    stratum: np.ndarray
    letter_plus: np.ndarray
    letter_minus: np.ndarray
    same: np.ndarray
    rank_plus: np.ndarray
    rank_minus: np.ndarray
    grid: np.ndarray
    human: np.ndarray
    letters_known: bool = True

    @property
    def valid(self) -> np.ndarray:
        return (self.letter_plus != MISSING) & (self.letter_minus != MISSING)


def pair_grid(pairs: Sequence[PairResponse], human: dict[str, float] | None = None,
              letters: dict[tuple[str, int], tuple[int, int]] | None = None) -> PairGrid:
    """Lay ``pairs`` out as a :class:`PairGrid` (strata = ``category``).

    ``letters[(pair_id, run)] = (letter index b+, letter index b-)`` gives the presented option
    positions needed by the permutation null; without it the answers are coded by their text within
    each pair-run (enough for every estimate and the bootstrap, not for the null)."""
    pair_ids = tuple(sorted({p.pair_id for p in pairs}))
    runs = sorted({p.run for p in pairs})
    pi = {p: i for i, p in enumerate(pair_ids)}
    ri = {r: j for j, r in enumerate(runs)}
    shape = (len(pair_ids), max(1, len(runs)))
    lp = np.full(shape, MISSING, dtype=np.int64)
    lm = np.full(shape, MISSING, dtype=np.int64)
    same = np.zeros(shape, dtype=bool)
    cp = np.zeros(shape)
    cm = np.zeros(shape)
    category = {}
    known = letters is not None
    for p in pairs:
        i, j = pi[p.pair_id], ri[p.run]
        category.setdefault(p.pair_id, p.category)
        if letters is not None and (p.pair_id, p.run) in letters:
            a, b = letters[(p.pair_id, p.run)]
        else:  # text coding: 0 for b+'s answer, 0/1 for b-'s (no permutation null possible)
            a, b = 0, (0 if p.answer_minus == p.answer_plus else 1)
            known = False
        lp[i, j] = REFUSED if p.answer_plus is None else a
        lm[i, j] = REFUSED if p.answer_minus is None else b
        same[i, j] = p.answer_plus == p.answer_minus
        cp[i, j], cm[i, j] = p.conf_plus, p.conf_minus
    grid = np.unique(np.concatenate([[0.0, 1.0], cp.ravel(), cm.ravel()]))
    strata = tuple(sorted(set(category.values()), key=str))
    si = {s: k for k, s in enumerate(strata)}
    human = human or {}
    return PairGrid(pair_ids, strata, np.asarray([si[category[p]] for p in pair_ids], dtype=np.int64), lp, lm, same,
                    np.searchsorted(grid, cp), np.searchsorted(grid, cm), grid,
                    np.asarray([human.get(p, np.nan) for p in pair_ids], dtype=np.float64), known)


def _hist(index: np.ndarray, weights: np.ndarray, n_rows: int, n_bins: int) -> np.ndarray:
    """Row-wise weighted histogram: ``index`` and ``weights`` (B, n) -> (B, n_bins)."""
    rows = np.arange(n_rows)[:, None] * n_bins
    flat = (rows + index).ravel()
    return np.bincount(flat, weights=np.broadcast_to(weights, index.shape).ravel(), minlength=n_rows * n_bins
                       ).reshape(n_rows, n_bins)


def _curves_from_hists(h: dict[str, np.ndarray], n: np.ndarray) -> dict[str, np.ndarray]:
    """CC-AUC, SR-AUC and refusal asymmetry from per-threshold weighted histograms (B, T) of the
    pooled pair-runs: ``level`` (min of the two confidence ranks), ``hits`` (same, consistent units),
    ``plus`` / ``minus`` (each side's rank), ``low`` / ``high`` (min / max rank), and ``asym`` (B,) the
    weight of units with exactly one empty answer; ``n`` (B,) the total weight.

    Eq. 4-12 with the discretisation of the module docstring: CC-AUC = sum over positive levels t of
    Cons(level >= t) x (share of units whose level is exactly t); SR-AUC the trapezoid area under
    (RR, 1 - RA) over the threshold grid divided by 1 - RR(0) (1 - RA(0) when RR(0) = 1)."""
    count, hits = h["level"], h["hits"]
    at_least = np.cumsum(count[:, ::-1], axis=1)[:, ::-1]
    hits_at_least = np.cumsum(hits[:, ::-1], axis=1)[:, ::-1]
    with np.errstate(invalid="ignore", divide="ignore"):
        cons_t = np.where(at_least > 0, hits_at_least / np.where(at_least > 0, at_least, 1), 0.0)
        cc = (cons_t[:, 1:] * count[:, 1:]).sum(axis=1) / n  # bin 0 is confidence 0: refusals never count
        rr = np.cumsum(h["plus"] + h["minus"], axis=1) / (2 * n[:, None])
        ra = (np.cumsum(h["low"], axis=1) - np.cumsum(h["high"], axis=1)) / n[:, None]
        y = 1.0 - ra
        area = ((rr[:, 1:] - rr[:, :-1]) * (y[:, 1:] + y[:, :-1]) / 2.0).sum(axis=1)
        rr0 = rr[:, 0]
        sr = np.where(rr0 >= 1.0, y[:, 0], area / np.where(rr0 >= 1.0, 1.0, 1.0 - rr0))
        asym = h["asym"] / n
    empty = n <= 0
    for arr in (cc, sr, asym):
        arr[empty] = np.nan
    return {"cc_auc": cc, "sr_auc": sr, "refusal_asymmetry_rate": asym}


def _unit_hists(same, rank_p, rank_m, lp, lm, w, n_rows: int, n_bins: int) -> dict[str, np.ndarray]:
    """Histograms of :func:`_curves_from_hists` from unit arrays (rows, n) and unit weights ``w``."""
    shape = (n_rows, max(np.shape(w)[1], np.shape(same)[1]))
    rank_p, rank_m = np.broadcast_to(rank_p, shape), np.broadcast_to(rank_m, shape)
    w = np.broadcast_to(np.asarray(w, dtype=np.float64), shape)
    low, high = np.minimum(rank_p, rank_m), np.maximum(rank_p, rank_m)
    one_empty = (np.broadcast_to(lp, shape) == REFUSED) != (np.broadcast_to(lm, shape) == REFUSED)
    level = _hist(low, w, n_rows, n_bins)  # the CC level is the lower of the two confidences
    return {"level": level, "hits": _hist(low, w * np.broadcast_to(same, shape), n_rows, n_bins),
            "plus": _hist(rank_p, w, n_rows, n_bins), "minus": _hist(rank_m, w, n_rows, n_bins),
            "low": level, "high": _hist(high, w, n_rows, n_bins), "asym": (w * one_empty).sum(axis=1)}


def _mean_over_runs(hits: np.ndarray, units: np.ndarray) -> np.ndarray:
    """Eq. 3 averaged over runs: (B, R) consistent and evaluated weights -> (B,); runs without units
    are skipped."""
    used = units > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        per_run = np.where(used, hits / np.where(used, units, 1), 0.0)
        return np.where(used.any(axis=1), per_run.sum(axis=1) / np.maximum(used.sum(axis=1), 1), np.nan)


def grid_metrics(g: PairGrid, pair_weights: np.ndarray | None = None,
                 minus_from: np.ndarray | None = None, jackknife: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """Cons, CC-AUC, SR-AUC, refusal asymmetry, the share of empty answers (and model Cons / human
    consistency over pairs with a human rating) per row of ``pair_weights`` (B, P) (default one row of
    ones).

    ``minus_from`` (B, P): replicate b takes pair i's b- responses (all runs) from pair
    ``minus_from[b, i]`` (the permutation null). Without ``minus_from`` every histogram is a
    per-pair matrix, so a replicate is one matrix product (pair weights x per-pair counts).
    ``jackknife`` (stratum code per pair, instead of ``pair_weights``): the P leave-one-pair-out
    replicates of :func:`~lm_eval_bias.core.jackknife.jackknife_weights`, each product in closed form (:func:`_jackknife_product`)."""
    p, r = g.letter_plus.shape
    t = len(g.grid)
    has_human = ~np.isnan(g.human)
    out: dict[str, np.ndarray] = {}
    if minus_from is None:
        if jackknife is not None:
            def prod(x):
                return _jackknife_product(jackknife, x)
        else:
            w = np.ones((1, p)) if pair_weights is None else np.asarray(pair_weights, dtype=np.float64)
            # bootstrap multiplicities and counts are integers: integer products stay exact and avoid
            # BLAS thread start-up, which dominates these small products on a busy machine
            wi = w.astype(np.int64) if np.array_equal(w, np.round(w)) else w

            def prod(x):
                x = np.asarray(x)
                if wi.dtype == np.int64 and (x.dtype.kind in "biu" or np.array_equal(x, np.rint(x))):
                    return (wi @ np.rint(x).astype(np.int64)).astype(np.float64)
                return wi @ np.asarray(x, dtype=np.float64)
        valid = g.valid
        unit = valid.astype(np.float64)
        per_pair = _unit_hists(g.same.reshape(p, r), g.rank_plus, g.rank_minus, g.letter_plus, g.letter_minus,
                               unit, p, t)  # rows = pairs: per-pair histograms (counts)
        hists = {k: prod(v) for k, v in per_pair.items()}
        n = prod(valid.sum(axis=1))
        out["consistency"] = _mean_over_runs(prod(g.same & valid), prod(valid))
        empty = (((g.letter_plus == REFUSED) & valid).sum(axis=1) + ((g.letter_minus == REFUSED) & valid).sum(axis=1))
        with np.errstate(invalid="ignore", divide="ignore"):
            out["empty_answer_rate"] = np.where(n > 0, prod(empty) / (2 * np.where(n > 0, n, 1)), np.nan)
        if has_human.any():
            rated = has_human[:, None]
            out["consistency_with_human"] = _mean_over_runs(prod(g.same & valid & rated), prod(unit * rated))
            tot = prod(has_human.astype(np.float64))
            with np.errstate(invalid="ignore", divide="ignore"):
                out["human_consistency"] = np.where(tot > 0, prod(np.nan_to_num(g.human)) / np.where(tot > 0, tot, 1),
                                                    np.nan)
    else:
        w = np.ones((1, p)) if pair_weights is None else np.asarray(pair_weights, dtype=np.float64)
        lp = g.letter_plus[None]
        lm, rm = g.letter_minus[minus_from], g.rank_minus[minus_from]
        same = lp == lm
        valid = (lp != MISSING) & (lm != MISSING)
        b = max(w.shape[0], valid.shape[0])
        w = np.broadcast_to(w, (b, p))
        unit_w = (w[:, :, None] * valid).reshape(b, p * r)
        hists = _unit_hists(same.reshape(b, -1), g.rank_plus.reshape(1, -1), rm.reshape(b, -1), lp.reshape(1, -1),
                            lm.reshape(b, -1), unit_w, b, t)
        n = unit_w.sum(axis=1)
        out["consistency"] = _mean_over_runs(np.einsum("bp,bpr->br", w, same & valid),
                                             np.einsum("bp,bpr->br", w, valid.astype(np.float64)))
        if has_human.any():
            wh = w * has_human[None, :]
            tot = wh.sum(axis=1)
            with np.errstate(invalid="ignore", divide="ignore"):
                out["human_consistency"] = np.where(tot > 0, wh @ np.nan_to_num(g.human) / np.where(tot > 0, tot, 1),
                                                    np.nan)
    out.update(_curves_from_hists(hists, n))
    return out


def _jackknife_product(strata: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``jackknife_weights(strata, all) @ x`` in closed form, O(P) instead of O(P^2): the row of pair i
    (stratum h of m_h pairs) is X - X_h + m_h / (m_h - 1) (X_h - x_i), X the total of ``x`` over pairs,
    X_h over stratum h (x: one row per pair)."""
    x = np.asarray(x, dtype=np.float64)
    strata = np.asarray(strata)
    sizes = np.bincount(strata).astype(np.float64)
    m = sizes[strata]
    factor = np.where(m > 1, m / np.maximum(m - 1, 1), 1.0).reshape((-1,) + (1,) * (x.ndim - 1))
    flat = x.reshape(len(strata), -1)
    by_stratum = np.zeros((len(sizes), flat.shape[1]))
    np.add.at(by_stratum, strata, flat)
    x_h = by_stratum[strata].reshape(x.shape)
    return x.sum(axis=0)[None] - x_h + factor * (x_h - x)


def permuted_minus(strata: np.ndarray, n_perm: int, seed: int) -> np.ndarray:
    """(n_perm, P) donor indices: within each stratum, pair i receives the b- responses of pair
    ``perm[i]`` (a uniform random permutation of the stratum's pairs per replicate)."""
    rng = np.random.default_rng(seed)
    out = np.tile(np.arange(len(strata)), (n_perm, 1))
    for s in np.unique(strata):
        idx = np.flatnonzero(strata == s)
        out[:, idx] = rng.permuted(np.tile(idx, (n_perm, 1)), axis=1)
    return out


def null_p_value(observed: float, null: np.ndarray, tie_weight: float | None = None) -> float:
    """One-sided Monte Carlo permutation p-value for "more than chance":
    :func:`lm_eval_bias.core.bootstrap.permutation_null` (the project's one home for it).

    Default: (1 + #{null >= observed}) / (1 + n), draws tied with the observation counted against it
    (valid, conservative for a discrete statistic). ``tie_weight`` = U in [0, 1]: the randomised p
    (#{null > observed} + U (1 + #{null = observed})) / (1 + n), the observation being one of the
    n + 1 exchangeable values; with U ~ U(0, 1) independent of the data it is exactly uniform under
    the null however many ties there are (Lehmann & Romano 2005, Sec. 3.2 and 15.2; Hemerik & Goeman
    2018, "exact testing with random permutations"). NaN without an observation or a null."""
    from lm_eval_bias.core.bootstrap import permutation_null

    return permutation_null(observed, null, tie_weight=tie_weight).p_value


def null_tie_weights(seed: int, n: int) -> np.ndarray:
    """The U of :func:`null_p_value` for :func:`pair_summary`'s ``n`` scope x metric tests, one
    uniform each from the generator seeded ``[seed + 1, 3]`` (the permutations use ``seed + 1``)."""
    return np.random.default_rng([seed + 1, 3]).random(n)


#: Fewer image pairs than this in a scope (all pairs, a category, a report table's cell; for the human
#: keys: fewer *rated* pairs) give no interval (NaN; the task logs a warning, the report prints
#: :data:`FEW_PAIRS_REASON`). Chosen from the calibration (scripts/calibration/cf_vqa.py, "smallest
#: scope" rows): from 20 pairs on, the interval of every metric covers at least 93 % on the truth grid
#: (the few rows above 97 %, rare rates and a Cons of exactly 1, and why: docs/statistics.md); below,
#: the jackknife variance has too few degrees of freedom (and a handful of pairs too few distinct values) for the t reference to hold, e.g. the model - human difference at 10 rated pairs.
MIN_PAIRS_FOR_INTERVAL = 20
#: the report's short reason for a missing interval below :data:`MIN_PAIRS_FOR_INTERVAL` pairs
FEW_PAIRS_REASON = "no interval: too few pairs"
#: keys computed over the pairs with a human rating only (their interval needs that many *rated* pairs)
HUMAN_KEYS = ("human_consistency", "consistency_minus_human", "consistency_with_human")
#: keys that are differences (range [-1, 1]): plain design-t interval instead of the logit-t one
DIFFERENCE_KEYS = ("consistency_minus_human",)
#: Shares of a response status over binary units (empty answers over responses, one-sided refusals over
#: pair-runs), with the number of units per valid pair-run: rates of rare events, whose interval is
#: :func:`~lm_eval_bias.core.jackknife.effective_n_wilson_interval` (as the per-response rates of
#: :func:`response_rates`)
STATUS_SHARE_UNITS = {"empty_answer_rate": 2.0, "refusal_asymmetry_rate": 1.0}
#: Metrics that are positive for a model whose two answers of a pair are unrelated: they get a null
#: floor (``_null``) and a "more than chance" permutation p-value (``_p_null``).
NULL_METRICS = ("consistency", "cc_auc", "sr_auc")
RATE_NAMES = ("refusal", "invalid", "truncated")


# -- design-based intervals: stratified jackknife over pairs, logit-t interval (one home: core.jackknife) -------
def difference_t_interval(estimate: float, stderr: float, df: int, level: float = 0.95) -> tuple[float, float]:
    """estimate -+ t_{df} SE, clipped to [-1, 1] (a difference of two shares):
    :func:`lm_eval_bias.core.bootstrap.design_t_interval`."""
    from lm_eval_bias.core.bootstrap import design_t_interval

    if not np.isfinite(stderr):
        return float("nan"), float("nan")
    return design_t_interval(estimate, stderr, df, level, bounds=(-1.0, 1.0))


#: Shares of binary units whose interval at a bound (0 or 1) borrows the design effect of the enclosing
#: scope (:func:`~lm_eval_bias.core.jackknife.boundary_interval`), with the number of units per valid
#: pair-run: Cons (a pair-run consistent or not) and the status shares of :data:`STATUS_SHARE_UNITS`
BORROWING_UNITS = {"consistency": 1.0, **STATUS_SHARE_UNITS}


def _interval(key: str, estimate: float, stderr: float, df: int, n_clusters: float, n_pair_runs: float,
              level: float, borrowed_design_effect: float | None = None) -> tuple[float, float]:
    if key in DIFFERENCE_KEYS:
        return difference_t_interval(estimate, stderr, df, level)
    if key in STATUS_SHARE_UNITS:
        return effective_n_wilson_interval(estimate, stderr, df, STATUS_SHARE_UNITS[key] * n_pair_runs, n_clusters,
                                           level, borrowed_design_effect=borrowed_design_effect)
    units = BORROWING_UNITS.get(key, 0.0) * n_pair_runs
    return logit_t_interval(estimate, stderr, df, n_clusters, level, units or None, borrowed_design_effect)


def scope_design_effects(result: dict[str, float]) -> dict[str, float]:
    """The design effect (:func:`~lm_eval_bias.core.jackknife.design_effect`) of each :data:`BORROWING_UNITS`
    share of one scope's :func:`pair_summary` result (NaN where it cannot be estimated): what its cells
    borrow at a bound."""
    return {k: design_effect(result.get(k, float("nan")), result.get(f"{k}_stderr", float("nan")),
                             units * result.get("n_pair_runs", 0.0)) for k, units in BORROWING_UNITS.items()}


def _jackknife(sub: PairGrid, strata: np.ndarray, keys: Sequence[str]) -> dict[str, float]:
    """Stratified jackknife standard error of every ``keys`` metric of :func:`_scoped` over the pairs of
    ``sub`` (``strata``: pooled stratum code per pair)."""
    loo = _scoped(sub, None, jackknife=strata)
    return {k: jackknife_stderr(loo[k], strata) if k in loo else float("nan") for k in keys}


def _chunks(n: int, size: int = 250):
    for start in range(0, n, size):
        yield slice(start, min(n, start + size))


def _scoped(g: PairGrid, rows: np.ndarray | None, minus_from=None, jackknife=None) -> dict[str, np.ndarray]:
    """:func:`grid_metrics` plus model - human consistency."""
    out = grid_metrics(g, rows, minus_from, jackknife)
    if "human_consistency" in out and "consistency_with_human" in out:
        out["consistency_minus_human"] = out["consistency_with_human"] - out["human_consistency"]
    return out


def _subgrid(g: PairGrid, idx: np.ndarray) -> PairGrid:
    """The pairs ``idx`` of ``g`` (same confidence grid, so histograms keep their bins)."""
    return PairGrid(tuple(g.pair_ids[i] for i in idx), g.strata, g.stratum[idx], g.letter_plus[idx], g.letter_minus[idx],
                    g.same[idx], g.rank_plus[idx], g.rank_minus[idx], g.grid, g.human[idx], g.letters_known)


def pair_summary(g: PairGrid, n_boot: int, n_perm: int, seed: int, level: float = 0.95,
                 categories: Sequence[str] | None = None) -> dict[str | None, dict[str, float]]:
    """Estimates, design-based intervals and permutation null floors, overall (scope ``None``) and per
    category (scope = category name).

    - Intervals (computed when ``n_boot`` > 0; ``LM_EVAL_BIAS_BOOTSTRAP_ITERS=0`` turns them off): image
      pairs are the clusters (both images and every option-order run move together), categories the
      strata (one stratum in a category's scope). ``<m>_stderr`` is the stratified delete-one-pair
      jackknife standard error (:func:`~lm_eval_bias.core.jackknife.jackknife_weights`, :func:`jackknife_stderr`: every metric is a
      smooth function of per-pair histograms, for which the jackknife variance is consistent; Shao &
      Tu 1995, The Jackknife and Bootstrap, Ch. 2) and ``<m>_ci_low`` / ``_ci_high`` the logit-t
      interval expit(logit(m) -+ t_{df} SE / (m (1 - m))) with df = pairs - strata
      (:func:`logit_t_interval`; Korn & Graubard 1999, Sec. 5.2; at m = 0 or 1 the t-Wilson interval
      over the pairs, :func:`~lm_eval_bias.core.jackknife.wilson_t_interval`, except that in a category's
      scope Cons and the status shares at a bound borrow the design effect of all pairs: Wilson's interval
      at pair-runs / deff, :func:`~lm_eval_bias.core.jackknife.boundary_interval`); the status shares
      :data:`STATUS_SHARE_UNITS` (empty answers, refusal asymmetry) get Wilson's interval at the
      effective sample size instead (:func:`~lm_eval_bias.core.jackknife.effective_n_wilson_interval`,
      at most the number of responses / pair-runs), as the rates of :func:`response_rates`;
      ``consistency_minus_human`` (a difference) gets m -+ t_{df} SE (:func:`difference_t_interval`). The human keys use the rated pairs as the
      clusters (df = rated pairs - strata with rated pairs). NaN with fewer than
      :data:`MIN_PAIRS_FOR_INTERVAL` pairs (rated pairs) in the scope. The percentile interval of the
      pair bootstrap it replaces covered 87-91 % for rare response rates in cells of 50-150 pairs
      (scripts/calibration/cf_vqa.py); ``seed`` does not enter the interval (the jackknife is
      deterministic).
    - Null floor (Cons, CC-AUC, SR-AUC): within each category, the b- responses of every pair (all its
      runs, answers as presented letters with their confidences) are moved to another pair by a
      uniform permutation. This keeps each side's answer, refusal and confidence distribution,
      position preferences and run structure, and breaks only the link between the two images of a
      pair. ``<m>_null`` = mean over permutations, ``<m>_p_null`` = the randomised permutation p
      (#{null > observed} + U (1 + #{null = observed})) / (1 + n) of :func:`null_p_value`, exact under
      "the b- responses are exchangeable across the pairs of a category" (Cons is a count: ~0.5-1 % of
      draws tie with it at the paper's design, which counting ties against it turns into a
      conservative test). The permutations use ``seed + 1``, the tie weights U
      :func:`null_tie_weights` (one per scope and metric, in scope order: all pairs, then categories).
    - Human consistency (pairs whose row carries one): ``human_consistency`` = mean over those pairs,
      ``consistency_minus_human`` = model Cons over the same pairs minus it.

    ``categories`` limits the per-category scopes (default: every category).
    """
    donors = permuted_minus(g.stratum, n_perm, seed + 1) if n_perm else np.zeros((0, len(g.pair_ids)), dtype=np.int64)
    can_permute = g.letters_known
    scopes: dict[str | None, np.ndarray] = {None: np.arange(len(g.pair_ids))}
    for k, name in enumerate(g.strata):
        if categories is None or name in categories:
            scopes[name] = np.flatnonzero(g.stratum == k)
    out: dict[str | None, dict[str, float]] = {}
    tie_weights = null_tie_weights(seed, (len(g.strata) + 1) * len(NULL_METRICS)).reshape(-1, len(NULL_METRICS))
    scope_row = {None: 0, **{name: k + 1 for k, name in enumerate(g.strata)}}
    borrowed: dict[str, float] = {}  # the design effects of the scope of all pairs, which its cells borrow at a bound
    for scope, idx in scopes.items():
        sub, sub_donors = g, donors
        if scope is not None:  # a category: its own pairs (donors stay within category)
            local = np.full(len(g.pair_ids), -1)
            local[idx] = np.arange(len(idx))
            sub = _subgrid(g, idx)
            sub_donors = local[donors[:, idx]]
        n_scope = len(idx)
        est = {k: float(v[0]) for k, v in _scoped(sub, None).items()}
        result = dict(est)
        result.update(_intervals(sub, est, n_boot > 0, level, borrowed))  # empty for the scope of all pairs, computed first
        nulls: dict[str, list[np.ndarray]] = {}
        if sub_donors.shape[0] and can_permute:
            for part in _chunks(sub_donors.shape[0]):
                for k, v in _scoped(sub, None, minus_from=sub_donors[part]).items():
                    if k in NULL_METRICS:
                        nulls.setdefault(k, []).append(v)
        for m, k in enumerate(NULL_METRICS):
            null = np.concatenate(nulls[k]) if k in nulls else np.array([])
            result[f"{k}_null"] = float(np.nanmean(null)) if null.size and np.any(~np.isnan(null)) else float("nan")
            result[f"{k}_p_null"] = null_p_value(est.get(k, float("nan")), null, float(tie_weights[scope_row[scope], m]))
        result["n_pairs"] = float(n_scope)
        result["n_rated_pairs"] = float((~np.isnan(sub.human)).sum())
        result["n_pair_runs"] = float(sub.valid.sum())
        if scope is None:
            borrowed = scope_design_effects(result)
        out[scope] = result
    return out


def _intervals(sub: PairGrid, est: dict[str, float], on: bool, level: float,
               borrowed: dict[str, float] | None = None) -> dict[str, float]:
    """``<k>_stderr``, ``<k>_ci_low``, ``<k>_ci_high`` of every estimate ``est`` of the pairs of ``sub``
    (:func:`pair_summary`, "Intervals"); NaN when ``on`` is false or the scope is too small. ``borrowed``:
    the enclosing scope's design effects (:func:`scope_design_effects`), used by a share at a bound."""
    result = {f"{k}{suffix}": float("nan") for k in est for suffix in ("_stderr", "_ci_low", "_ci_high")}
    if not on:
        return result
    rated = np.flatnonzero(~np.isnan(sub.human))
    groups = [([k for k in est if k not in HUMAN_KEYS], np.arange(len(sub.pair_ids))),
              ([k for k in est if k in HUMAN_KEYS], rated)]
    for keys, members in groups:
        if not keys or len(members) < MIN_PAIRS_FOR_INTERVAL:
            continue
        part = sub if len(members) == len(sub.pair_ids) else _subgrid(sub, members)
        strata = pooled_strata(part.stratum)
        df = design_df(strata)
        errors = _jackknife(part, strata, keys)
        n_pair_runs = float(part.valid.sum())
        for k in keys:
            low, high = _interval(k, est[k], errors[k], df, float(len(members)), n_pair_runs, level,
                                  (borrowed or {}).get(k))
            result[f"{k}_stderr"], result[f"{k}_ci_low"], result[f"{k}_ci_high"] = errors[k], low, high
    return result


def response_rates(strata: Sequence[str], counts: dict[str, np.ndarray], n_boot: int, seed: int,
                   level: float = 0.95) -> dict[str | None, dict[str, float]]:
    """Per-response rates ``<name>_rate`` = sum of ``counts[name]`` / sum of ``counts["responses"]``
    (per-pair counts, one entry per pair, ``strata`` its category), overall (scope ``None``) and per
    category, with the interval of :func:`pair_summary`: the stratified delete-one-pair jackknife
    standard error of the ratio (:func:`ratio_jackknife`) and Wilson's interval at the effective sample
    size (:func:`effective_n_wilson_interval`: n_eff = rate (1 - rate) / SE^2, at most the number n of
    responses, times Korn & Graubard's 1998 adjustment (t_{n-1} / t_{df})^2 with df = pairs - strata;
    the t-Wilson interval over the pairs at a rate of 0 or 1 over all pairs, and in a category at 0 or 1
    Wilson's at responses / deff with the rate's design effect over all pairs,
    :func:`~lm_eval_bias.core.jackknife.boundary_interval`); NaN below :data:`MIN_PAIRS_FOR_INTERVAL`
    pairs or when ``n_boot`` is 0 (``seed`` is not used: the jackknife is deterministic)."""
    strata = np.asarray([str(s) for s in strata], dtype=object)
    names = [k for k in counts if k != "responses"]
    out: dict[str | None, dict[str, float]] = {}
    borrowed: dict[str, float] = {}  # each rate's design effect over all pairs, which a category borrows at 0 or 1
    for scope in [None, *sorted(set(strata.tolist()), key=str)]:
        idx = np.arange(len(strata)) if scope is None else np.flatnonzero(strata == scope)
        codes = pooled_strata(strata[idx])
        responses = np.asarray(counts["responses"], dtype=np.float64)[idx]
        total = responses.sum()
        result: dict[str, float] = {}
        for name in names:
            hits = np.asarray(counts[name], dtype=np.float64)[idx]
            rate = float(hits.sum() / total) if total > 0 else float("nan")
            result[f"{name}_rate"] = rate
            se = low = high = float("nan")
            if n_boot and len(idx) >= MIN_PAIRS_FOR_INTERVAL and total > 0:
                se = ratio_jackknife(hits, responses, codes)
                low, high = effective_n_wilson_interval(rate, se, design_df(codes), total, float(len(idx)), level,
                                                        borrowed_design_effect=borrowed.get(name))
                if scope is None:
                    borrowed[name] = design_effect(rate, se, total)
            result[f"{name}_rate_stderr"], result[f"{name}_rate_ci_low"], result[f"{name}_rate_ci_high"] = se, low, high
        out[scope] = result
    return out


