"""Power statements for a family of tests: can the default design reject at all, and what effect it
detects with 80 % power. One home, used by every benchmark's test families (docs/statistics.md,
"Power").

A count of significant tests is only informative when the design could have produced a rejection: with
``m`` tests corrected by Holm at level ``alpha``, the first (smallest) p-value is compared with
``alpha / m``; a permutation or exact test whose smallest attainable p-value is above that threshold can
never reject, and "0 significant" then says nothing about the model. :func:`family_power_statement`
reports that comparison beside the count.

The minimum detectable effect (MDE) of a two-sided z-type test at level ``alpha`` with power ``power`` is

    MDE = (z_{1 - alpha/2} + z_{power}) * SE

(Cohen 1988, ch. 12; Bloom 1995, "Minimum detectable effects", Evaluation Review 19(5)), with ``SE`` the
standard error of the estimate under the design; for a Holm family the per-test level of the first
step, ``alpha / m``, is the one that must be passed.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from scipy.stats import norm

__all__ = ["FamilyPower", "family_power_statement", "holm_first_threshold", "minimum_detectable_effect"]


def holm_first_threshold(n_tests: int, alpha: float = 0.05) -> float:
    """Holm's first-step threshold ``alpha / m``: the smallest p-value of the family must be below it
    for any test of the family to be rejected (Holm 1979)."""
    if n_tests < 1:
        return math.nan
    return alpha / n_tests


def minimum_detectable_effect(stderr: float, alpha: float = 0.05, power: float = 0.8) -> float:
    """``(z_{1-alpha/2} + z_power) * stderr``: the true effect a two-sided level-``alpha`` z-test detects
    with probability ``power`` (normal approximation; Bloom 1995). NaN for a non-finite or negative
    ``stderr``."""
    if not (math.isfinite(stderr) and stderr >= 0) or not (0 < alpha < 1 and 0 < power < 1):
        return math.nan
    return float((norm.ppf(1 - alpha / 2) + norm.ppf(power)) * stderr)


@dataclass(frozen=True)
class FamilyPower:
    """Whether a Holm family of ``n_tests`` tests at ``alpha`` can reject at all under its design.

    ``min_attainable_p``: the smallest p-value any one test of the family can return under the design
    (e.g. ``1 / (n_perm + 1)`` for a Monte Carlo permutation test, ``2 * 0.5**n`` for an exact sign
    test of n pairs); ``min_attainable_adjusted_p``: its Holm-adjusted value ``min(1, m * p)``;
    ``can_reject``: whether that is below ``alpha``; ``mde``: the minimum detectable effect at 80 %
    power at the first Holm step (NaN when unknown); ``statement``: one sentence for the report."""

    n_tests: int
    alpha: float
    min_attainable_p: float
    min_attainable_adjusted_p: float
    can_reject: bool
    mde: float
    statement: str

    def as_dict(self, prefix: str = "") -> dict:
        return {f"{prefix}{k}": v for k, v in asdict(self).items()}

    def result_keys(self, name: str) -> dict[str, float]:
        """The analysis keys of this statement: ``<name>_can_reject`` (1 or 0), ``<name>_min_attainable_p``
        and ``<name>_mde`` (NaN when no standard error applies)."""
        return {f"{name}_can_reject": 1.0 if self.can_reject else 0.0,
                f"{name}_min_attainable_p": float(self.min_attainable_p), f"{name}_mde": float(self.mde)}


def family_power_statement(n_tests: int, min_attainable_p: float, alpha: float = 0.05,
                           stderr: float = math.nan, power: float = 0.8, unit: str = "") -> FamilyPower:
    """The power statement of a Holm family (see :class:`FamilyPower`). ``stderr`` (optional) is a
    typical per-test standard error under the design, from which the MDE at the first Holm step
    (level ``alpha / n_tests``) is computed; ``unit`` is appended to the MDE in the sentence."""
    threshold = holm_first_threshold(n_tests, alpha)
    adjusted = min(1.0, n_tests * min_attainable_p) if n_tests >= 1 and math.isfinite(min_attainable_p) else math.nan
    can = bool(math.isfinite(adjusted) and adjusted < alpha)
    mde = minimum_detectable_effect(stderr, threshold, power) if n_tests >= 1 else math.nan
    if n_tests < 1:
        text = "no tests in this family"
    elif can:
        text = (f"{n_tests} tests, Holm at {alpha:g}: the design can reject (smallest attainable p "
                f"{min_attainable_p:.2g}, adjusted {adjusted:.2g})")
    else:
        text = (f"{n_tests} tests, Holm at {alpha:g}: this design cannot reject any of them (smallest "
                f"attainable p {min_attainable_p:.2g} > first Holm threshold {threshold:.2g}); "
                f"a count of 0 significant says nothing about the model")
    if math.isfinite(mde):
        text += f"; minimum detectable effect at {power:.0%} power: {mde:.3g}{unit}"
    return FamilyPower(n_tests, alpha, float(min_attainable_p), float(adjusted), can, mde, text)
