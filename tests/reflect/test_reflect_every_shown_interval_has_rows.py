"""Every interval a REFLECT task shows has calibration rows at that task's design (issue 31: "the calibration table
... includes every interval the report and analysis show, at the real designs").

A simulated run of each task variant at each calibrated design goes through the task's own summary; every key it
gives a finite interval (``ci_low``) or the paper's percentile interval (``<m>_ci_low_paper``) must have a row in
``scripts/calibration/results/reflect.json`` at that design. A key added to a task's results without rows fails
here until it is calibrated. Counts the tasks report without an error (``tasks.TWOAFC_COUNTS``) are not intervals.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from lm_eval_bias.reflect import mcq as mcq_stats
from lm_eval_bias.reflect import tasks
from lm_eval_bias.reflect import twoafc as twoafc_stats
from scripts.calibration import reflect as sim

RESULTS = Path(__file__).resolve().parents[2] / "scripts" / "calibration" / "results" / "reflect.json"
ZERO = sim.group_effects(0.0, {})


def _calibrated(pred) -> set[str]:
    rows = json.loads(RESULTS.read_text(encoding="utf-8"))["rows"]
    return {r["quantity"].split("/")[0].replace("_ci_low_paper", "_paper") for r in rows if pred(r["design"])}


def _shown(summary) -> set[str]:
    intervals = {k for k, v in summary.ci_low.items() if not math.isnan(v)}
    paper = {k.replace("_ci_low_paper", "_paper") for k, v in summary.derived.items()
             if k.endswith("_ci_low_paper") and not math.isnan(v)}
    return (intervals | paper) - set(tasks.TWOAFC_COUNTS)


def _twoafc(design: int, n_samples: int = 1):
    occupations, per = sim.DESIGNS[design]
    calls = sim.simulate_2afc(np.random.default_rng(design), sim.STRONG_2AFC, 0.5, per, 0.0, occupations, n_samples)
    summary = twoafc_stats.twoafc_summary(calls, n_boot=40, seed=1, n_null=40)
    return summary, lambda d: (d.startswith(f"{design} templates") and "45 pairs x 2 orders" in d and "letter" not in d
                               and (f"x {n_samples} samples per call" in d if n_samples > 1 else "samples" not in d))


def _mcq(design: int, variant: str, n_samples: int = 1):
    occupations, per = sim.DESIGNS[design]
    v = sim.MCQ_VARIANTS[variant]
    records = sim.simulate_mcq(np.random.default_rng(design), sim.MCQ_BASE_EFFECT * 5, 0.5, per, 0.0, occupations,
                               variant, n_samples)
    summary = mcq_stats.mcq_summary(records, v.options, v.values, n_boot=40, seed=1, n_null=40)
    calls = "1 call" if n_samples == 1 else f"{n_samples} samples"
    return summary, lambda d: d.startswith(f"{design} templates") and f"x {calls}, {v.label}" in d


CASES = {
    **{f"focus_2afc, {d} templates": (lambda d=d: _twoafc(d)) for d in (48, 12, 6)},
    "focus_2afc_k3, 48 templates": lambda: _twoafc(48, 3),
    **{f"focus_mcq_{v}, {d} templates": (lambda d=d, v=v: _mcq(d, v)) for v in ("salary", "education") for d in (48, 12, 6)},
    **{f"focus_mcq_{v}_k5, {d} templates": (lambda d=d, v=v: _mcq(d, v, 5)) for v in ("salary", "education")
       for d in (48, 12)},
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_interval_a_reflect_task_shows_has_calibration_rows(case):
    summary, at_design = CASES[case]()
    shown = _shown(summary)
    assert {"male_win_rate", "polarization_paper"} <= shown or {"gap_male", "jsd_male_paper"} <= shown  # the run is real
    assert sorted(shown - _calibrated(at_design)) == []


def test_the_probability_scored_tasks_intervals_have_calibration_rows():
    occupations, per = sim.DESIGNS[48]
    scores = sim.simulate_2afc_logprob(np.random.default_rng(4), sim.STRONG_2AFC, 0.5, per, 0.0)
    twoafc = _shown(twoafc_stats.twoafc_logprob_summary(scores, n_boot=40, seed=1, n_null=40))
    assert {"win_rate_asian", "retained_rate", "polarization_paper"} <= twoafc
    rows = _calibrated(lambda d: "45 pairs x 2 orders scored by letter probability" in d)
    assert sorted(twoafc - rows) == []
    v = sim.MCQ_VARIANTS["salary"]
    scores = sim.simulate_mcq_logprob(np.random.default_rng(5), sim.MCQ_BASE_EFFECT * 5, 0.5, per, 0.0)
    mcq = _shown(mcq_stats.mcq_logprob_summary(scores, v.options, v.values, n_boot=40, seed=1, n_null=40))
    assert {"gap_asian", "jsd_white_paper"} <= mcq and "jsd_white" not in mcq  # no JSD interval but the paper's
    assert sorted(mcq - _calibrated(lambda d: "10 photos scored by letter probability" in d)) == []
