"""Confidence intervals for reported numbers (used by the bias report and the leaderboard).

- :func:`normal_interval`: estimate ± z · SE (z = 1.96 for 95 %), for metrics reported with a
  bootstrap standard error (``<metric>_stderr``) but no percentile interval.
- :func:`proportion_interval`: Wilson score interval of k successes out of n
  (``statsmodels.stats.proportion.proportion_confint(method="wilson")``), for plain rates
  (valid / refusal / invalid shares) that carry no standard error.
"""

from __future__ import annotations

import math


def normal_interval(estimate: float, stderr: float, level: float = 0.95) -> tuple[float, float]:
    from scipy.stats import norm

    if not (math.isfinite(estimate) and math.isfinite(stderr)):
        return math.nan, math.nan
    z = float(norm.ppf(0.5 + level / 2))
    return estimate - z * stderr, estimate + z * stderr


def proportion_interval(successes: float, n: int, level: float = 0.95) -> tuple[float, float]:
    from statsmodels.stats.proportion import proportion_confint

    if n <= 0 or not math.isfinite(successes):
        return math.nan, math.nan
    low, high = proportion_confint(round(successes), n, alpha=1 - level, method="wilson")
    return float(low), float(high)
