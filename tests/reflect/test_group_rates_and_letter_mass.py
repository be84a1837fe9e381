"""Two intervals of REFLECT's report, as calibrated on 1-2 Dec 2026 (scripts/calibration/reflect.py):

- the per-group win rates and Fig. 4d-f's shares (``report.group_rate_intervals``) are shares of their
  retained comparisons, so they take the Wilson interval at the template bootstrap's effective sample size
  (the design-t interval collapsed to a point when one side won every comparison: 79-93 % coverage of
  ``male_vs_female:<race>`` at 12 templates);
- ``letter_mass`` of the probability-scored tasks has no interval (``twoafc.LETTER_MASS_NO_INTERVAL``)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import norm
from scipy.stats import t as student_t

from lm_eval_bias.core.jackknife import wilson_t_interval
from lm_eval_bias.reflect import mcq, report, twoafc
from lm_eval_bias.reflect.schema import GROUPS


def _index(race: str, gender: str) -> int:
    return next(k for k, g in enumerate(GROUPS) if g.race == race and g.gender == gender)


def test_rate_trials_are_the_denominators_of_each_rate():
    wins = np.zeros((10, 10))
    man, woman = _index("White", "man"), _index("White", "woman")
    black_man = _index("Black", "man")
    wins[man, woman], wins[woman, man] = 3.0, 1.0       # 4 within-race man-vs-woman comparisons, man won 3
    wins[man, black_man], wins[black_man, man] = 2.0, 2.0  # 4 cross-race comparisons between two men
    trials = report._rate_trials({"wins": wins})
    rates = report._rate_metrics({"wins": wins})
    assert trials["male_vs_female:white"] == 4.0 and rates["male_vs_female:white"] == 0.75
    assert trials["within_man:white"] == 4.0 and rates["within_man:white"] == 0.5
    assert trials["within_man:black"] == 4.0 and trials["within_woman:white"] == 0.0
    assert trials[f"win_rate_{GROUPS[man].key}"] == 8.0 and rates[f"win_rate_{GROUPS[man].key}"] == 5.0 / 8.0
    for key, rate in rates.items():  # every rate is wins / trials: an integer number of wins
        if math.isfinite(rate):
            assert rate * trials[key] == pytest.approx(round(rate * trials[key]))


def test_a_share_won_every_time_keeps_a_width():
    """Two occupations of 4 templates; in every template the White man beats the White woman once: the
    template bootstrap's SE is 0, so the design-t interval was the point 1; the Wilson interval at the 8
    comparisons times Korn & Graubard's factor (t_7 / t_6)^2 (df = 8 - 2) is the one computed by hand."""
    T = 8
    wins = np.zeros((T, 10, 10))
    man, woman = _index("White", "man"), _index("White", "woman")
    wins[:, man, woman] = 1.0
    wins[:, _index("Asian", "woman"), woman] = [1, 0, 1, 0, 1, 1, 0, 1]  # a rate with between-template variance
    wins[:, woman, _index("Asian", "woman")] = [0, 1, 0, 1, 0, 0, 1, 0]
    strata = ["a"] * 4 + ["b"] * 4
    estimates, low, high = report.group_rate_intervals({"wins": wins}, strata, 200, 3)
    assert estimates["male_vs_female:white"] == 1.0
    n_df = 8.0 * (student_t.ppf(0.975, 7) / student_t.ppf(0.975, T - 2)) ** 2
    assert n_df == pytest.approx(7.47, abs=0.01)
    z2 = norm.ppf(0.975) ** 2
    expected = (1.0 / (1.0 + z2 / n_df), 1.0)  # Wilson at p = 1: lower end n / (n + z^2)
    assert (low["male_vs_female:white"], high["male_vs_female:white"]) == pytest.approx(expected)
    # narrower than the t_6 quantile at the 8 trials used until 1 Dec 2026
    assert low["male_vs_female:white"] > wilson_t_interval(1.0, 8.0, T - 2)[0] + 0.05
    assert 0.5 < low["male_vs_female:white"] < 0.8 and high["male_vs_female:white"] == pytest.approx(1.0)
    assert low["within_woman:asian"] < estimates["within_woman:asian"] < high["within_woman:asian"]


def test_letter_mass_has_no_interval_in_either_summary_or_the_report():
    scores = []
    for t in ("a/1", "a/2", "a/3", "b/1", "b/2", "b/3"):
        for g in range(10):
            mass = 0.99 if t != "b/3" else 0.4
            scores.append(mcq.MCQScore(t, t[0], g, (0.25, 0.25, 0.25, 0.25), mass))
    s = mcq.mcq_logprob_summary(scores, "ABCD", mcq.EDUCATION_CODES, n_boot=50, seed=1, n_null=0)
    assert s.estimates["letter_mass"] == pytest.approx((5 * 0.99 + 0.4) / 6)
    assert all(math.isnan(part["letter_mass"]) for part in (s.stderr, s.ci_low, s.ci_high))
    assert math.isfinite(s.stderr["gap_male"])  # the other keys keep theirs
    calls = []
    for t in ("a/1", "a/2", "a/3", "b/1", "b/2", "b/3"):
        for order, p in (("AB", 0.7), ("BA", 0.4)):
            a, b = (0, 1) if order == "AB" else (1, 0)
            calls.append(twoafc.TwoAFCScore(t, t[0], "p01", order, a, b, p, 0.9))
    s2 = twoafc.twoafc_logprob_summary(calls, n_boot=50, seed=1, n_null=0)
    assert s2.estimates["letter_mass"] == pytest.approx(0.9)
    assert all(math.isnan(part["letter_mass"]) for part in (s2.stderr, s2.ci_low, s2.ci_high))
    from lm_eval_bias.reflect.tasks import HEADLINES

    assert "letter_mass" in HEADLINES["mcq_logprob"] and "letter_mass_stderr" not in HEADLINES["mcq_logprob"]
    assert "letter_mass_stderr" not in HEADLINES["2afc_logprob"]
    from types import SimpleNamespace

    from lm_eval_bias.report import intervals

    for family in ("mcq_logprob", "2afc_logprob"):
        run = SimpleNamespace(family=family, metrics={"letter_mass": 0.9, "letter_mass_stderr": float("nan")})
        assert intervals._designed_reason(run, "letter_mass") == twoafc.LETTER_MASS_NO_INTERVAL
