"""REFLECT / FOCUS section: Fig. 4a-f, Tables 1, 2, 6, 13 and Figs. 5-6 from the tasks' summaries."""

from __future__ import annotations

import numpy as np
import pandas as pd

from lm_eval_bias.focus_schema import GROUPS, RACES
from lm_eval_bias.report.headline import headline_table, interval
from lm_eval_bias.report.page import Block, Writer, bars, heatmap, note
from lm_eval_bias.report.runs import TaskRun
from lm_eval_bias.stats import twoafc

FAMILIES = ("2afc", "mcq", "salary")
TITLE = "REFLECT / FOCUS"
HEADLINE = {
    "2afc": ("male_win_rate", "polarization", "extreme_cell_rate", "retained_rate"),
    "mcq": ("gap_male", "jsd_male", "valid_rate"),
    "salary": ("gap_pct_male", "gap_pct_black", "valid_rate"),
}
GROUP_LABELS = [f"{g.race} {g.gender}" for g in GROUPS]


def _twoafc(run: TaskRun, w: Writer) -> list[Block]:
    s = run.summary
    scenario = run.task.removeprefix("focus_2afc_")
    blocks = [w.figure(heatmap(s.win_matrix, GROUP_LABELS, GROUP_LABELS, f"2AFC win rates, {scenario}", 0, 1,
                               label="row group's win rate"), f"{run.task}_win_matrix",
                       f"Fig. 4a-c: share of swap-consistent comparisons won by the row group against the column group "
                       f"({scenario}; {s.n_templates} templates; grey = no retained comparison).")]
    blocks.append(w.table(pd.DataFrame(s.win_matrix, index=GROUP_LABELS, columns=GROUP_LABELS), f"{run.task}_win_matrix",
                          "Win-rate matrix (rows beat columns), as in the heatmap."))
    within = {g: twoafc.race_win_rates_within_gender(s.wins, g) for g in ("woman", "man")}
    male = twoafc.male_win_rate_by_race(s.wins)
    groups = {f"within {g}": {r: within[g].get(r, np.nan) for r in RACES} for g in within}
    groups["male vs female, same race"] = {r: male.get(r, np.nan) for r in RACES}
    blocks.append(w.figure(bars(groups, f"Race and gender win rates, {scenario}", "win rate", reference=0.5),
                           f"{run.task}_race_gender",
                           "Fig. 4d-f: each race's win rate against the other races within one gender (hatched per "
                           "gender), and the male image's win rate against the female image of the same race; dashed: 0.5."))
    table1 = headline_table(run, ["polarization", "extreme_cell_rate"])
    blocks.append(w.table(table1, f"{run.task}_pol_ext", "Table 1: polarization and extreme-cell rate with 95 % "
                                                         "template-cluster bootstrap intervals."))
    table6 = headline_table(run, ["retained_rate", "swap_inconsistent_rate", "refusal_rate", "invalid_rate",
                                  "first_position_rate"])
    blocks.append(w.table(table6, f"{run.task}_retention", "Table 6: retained (swap-consistent) and discarded pairs, "
                                                           "shares of pairs (position bias: first_position_rate)."))
    return blocks


def _mcq(run: TaskRun, w: Writer) -> list[Block]:
    variant = run.task.removeprefix("focus_mcq_")
    keys = [k for k in ("gap_male", "gap_asian", "gap_black", "gap_latino", "gap_middle_eastern") if k in run.metrics]
    values = {k.removeprefix("gap_"): run.metrics[k] for k in keys}
    errors = {k.removeprefix("gap_"): interval(run, k)[:2] for k in keys}
    blocks = [w.figure(bars({variant: values}, f"MCQ relative mean gaps, {variant}", "relative gap",
                            {variant: errors}, reference=0.0), f"{run.task}_gaps",
                       "Fig. 5: relative mean gap of each group's answer mean against its reference group (male vs "
                       "female; each race vs White), bars with 95 % template-cluster bootstrap intervals.")]
    jsd = headline_table(run, [k for k in run.metrics if k.startswith("jsd_") and not k.endswith("_stderr")])
    blocks.append(w.table(jsd, f"{run.task}_jsd", "Table 2: Jensen-Shannon divergence (base 2) of each group's answer "
                                                  "distribution from the pooled distribution, 95 % intervals."))
    dist = pd.DataFrame({g: np.asarray(v, dtype=float) for g, v in run.summary.distributions.items()}).T
    blocks.append(w.table(dist, f"{run.task}_distributions", "Answer distribution per group (share of valid answers per option)."))
    return blocks


def _salary(run: TaskRun, w: Writer) -> list[Block]:
    gaps = run.summary.gaps_by_occupation
    if "occupation" in gaps.columns:
        gaps = gaps.set_index("occupation")
    blocks = [w.table(gaps, f"{run.task}_gaps_by_occupation", "Salary gap (%) per occupation (Fig. 6 values).")]
    numeric = gaps.select_dtypes("number")
    gap_cols = [c for c in numeric.columns if "gap" in str(c)]
    if gap_cols:
        series = {str(c): {str(o): float(v) for o, v in numeric[c].items()} for c in gap_cols}
        blocks.insert(0, w.figure(bars(series, "Salary recommendation gaps by occupation", "Gap %", reference=0.0),
                                  f"{run.task}_gaps_by_occupation",
                                  "Fig. 6: mean recommended salary of each group relative to its reference group (%), per "
                                  "occupation; hatch per comparison; dashed: no gap."))
    blocks.append(w.table(run.summary.tests_by_occupation, f"{run.task}_tests",
                          "Table 13: cluster-robust tests of race, gender and race x gender per occupation (App. C.6)."))
    return blocks


def render(runs: list[TaskRun], w: Writer) -> list[Block]:
    blocks = []
    for run in runs:
        if run.summary is None:
            blocks.append(note(f"{run.task}: figures need --log_samples output with answers ({'; '.join(run.notes) or 'no summary'})."))
            continue
        try:
            blocks += {"2afc": _twoafc, "mcq": _mcq, "salary": _salary}[run.family](run, w)
        except Exception as exc:  # noqa: BLE001 - partial runs (e.g. --limit, no valid answer) must not crash
            blocks.append(note(f"{run.task}: figures could not be drawn from this run ({type(exc).__name__}: {exc})."))
    return blocks
