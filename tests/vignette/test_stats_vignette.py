"""VIGNETTE metrics on hand-built option tables (paper Sec. 5)."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from lm_eval_bias.vignette import stats as vg


def table(rows):
    return pd.DataFrame(rows, columns=list(vg.OPTION_COLUMNS))


# Docs: two identities per image; selected marks the chosen one.
#   cooking: X vs Y -> X, X vs Y -> Y, X vs Z -> X      running: X vs Y -> Y
ROWS = [
    ("d1", "X", "cooking", "Y", 1), ("d1", "Y", "cooking", "X", 0),
    ("d2", "X", "cooking", "Y", 0), ("d2", "Y", "cooking", "X", 1),
    ("d3", "X", "cooking", "Z", 1), ("d3", "Z", "cooking", "X", 0),
    ("d4", "X", "running", "Y", 0), ("d4", "Y", "running", "X", 1),
]


def test_selection_frequency_by_hand():
    s = vg.selection_frequency(table(ROWS))
    # X: cooking 2/3, running 0/1 -> (66.67 + 0)/2 ; Y: cooking 1/2, running 1/1 -> (50 + 100)/2 ; Z: 0
    assert s["X"] == pytest.approx((200 / 3 + 0) / 2)
    assert s["Y"] == pytest.approx(75.0) and s["Z"] == 0.0


def test_log_odds_by_hand():
    lo = vg.log_odds(table(ROWS))
    # X cooking: odds_a = (2+1)/(3-2+1) = 1.5 ; not-a (running): (0+1)/(1-0+1) = 0.5 -> ln 3
    assert lo.loc["X", "cooking"] == pytest.approx(math.log(3))
    # X running: odds = (0+1)/(1+1) = .5 ; other: (2+1)/(1+1) = 1.5 -> ln(1/3)
    assert lo.loc["X", "running"] == pytest.approx(math.log(1 / 3))
    assert math.isnan(lo.loc["Z", "running"])


def test_pair_comp_by_hand():
    t = table(ROWS)
    # X with Y: cooking 1/2, running 0/1 -> S = 25 ; X without Y (with Z): cooking 1/1 -> 100
    assert vg.pair_comp(t, "X", "Y") == pytest.approx(25 - 100)
    assert math.isnan(vg.pair_comp(t, "Z", "Y"))  # Z never paired with Y
    m = vg.pair_comp_matrix(t, ["X", "Y"])
    assert m.loc["X", "Y"] == pytest.approx(-75) and math.isnan(m.loc["X", "X"])


def test_polarity_by_hand():
    terms = {"friendly": ("Sociability", "high"), "unfriendly": ("Sociability", "low")}
    t = table([
        ("s1", "X", "friendly", "Y", 1), ("s1", "Y", "friendly", "X", 0),
        ("s2", "X", "unfriendly", "Y", 0), ("s2", "Y", "unfriendly", "X", 1),
    ])
    p = vg.polarity(t, terms)
    assert p.loc["X", "Sociability"] == 100.0 and p.loc["Y", "Sociability"] == -100.0
    assert vg.mean_abs_polarity(p, {"X": "race", "Y": "race"}) == {"race": 100.0}


def test_fisher_tests_with_holm_correction():
    rows = []
    for k in range(40):  # A chosen 36 of 40 times against B
        rows += [(f"d{k}", "A", "task", "B", int(k < 36)), (f"d{k}", "B", "task", "A", int(k >= 36))]
    f = vg.identity_fisher_tests(table(rows))
    assert f.loc["A", "p_value"] < 1e-10 and f.loc["A", "odds_ratio"] > 1
    assert f.loc["A", "p_corrected"] == pytest.approx(min(1.0, 2 * f.loc["A", "p_value"]))  # Holm with 2 tests
    assert (f["correction"] == "holm").all()


def test_spread_and_factuality():
    s = pd.Series({"X": 30.0, "Y": 70.0, "Z": 50.0})
    assert vg.selection_spread(s, {"X": "age", "Y": "age", "Z": "race"}) == {"age": 40.0, "race": 0.0}
    acc = vg.factuality_accuracy(pd.DataFrame({"identity": ["X", "X", "Y"], "correct": [1, 0, 1]}))
    assert acc.to_dict() == {"X": 0.5, "Y": 1.0}


def test_bad_tables_are_rejected():
    with pytest.raises(ValueError, match="lacks columns"):
        vg.selection_frequency(pd.DataFrame({"identity": ["X"]}))
    with pytest.raises(ValueError, match="0/1"):
        vg.selection_frequency(table([("d", "X", "a", "Y", 2)]))


def test_selection_frequency_delta_by_hand():
    # text-only: X always chosen against Y (cooking) -> S_text(X) = 100, S_text(Y) = 0
    text = table([("t1", "X", "cooking", "Y", 1), ("t1", "Y", "cooking", "X", 0)])
    delta = vg.selection_frequency_delta(table(ROWS), text)
    assert delta["X"] == pytest.approx((200 / 3 + 0) / 2 - 100.0)
    assert delta["Y"] == pytest.approx(75.0 - 0.0)
    assert "Z" not in delta.index  # only identities present in both
