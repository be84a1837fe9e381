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
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np


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


def refusal_rate(pairs: Sequence[PairResponse]) -> float:
    """Share of refused answers over both sides of all pairs (= RR at tau = 0 for refusals)."""
    if not pairs:
        return float("nan")
    return float(np.mean([a is None for p in pairs for a in (p.answer_plus, p.answer_minus)]))


def refusal_asymmetry_rate(pairs: Sequence[PairResponse]) -> float:
    """Share of pairs where exactly one side refused."""
    if not pairs:
        return float("nan")
    return float(np.mean([(p.answer_plus is None) != (p.answer_minus is None) for p in pairs]))


def pair_metrics(pairs: Sequence[PairResponse]) -> dict[str, float]:
    """All headline metrics of a set of pairs."""
    return {
        "consistency": consistency(pairs),
        "cc_auc": cc_auc(pairs),
        "sr_auc": sr_auc(pairs),
        "refusal_rate": refusal_rate(pairs),
        "refusal_asymmetry_rate": refusal_asymmetry_rate(pairs),
    }


def metrics_by(pairs: Sequence[PairResponse], field: str) -> dict[str, dict[str, float]]:
    """:func:`pair_metrics` per value of ``field`` (``category`` or ``subcategory``)."""
    groups: dict[str, list[PairResponse]] = {}
    for p in pairs:
        groups.setdefault(getattr(p, field), []).append(p)
    return {key: pair_metrics(group) for key, group in sorted(groups.items())}
