"""FACT-OR-FAIR section: S_fact vs S_E with the g_k upper bounds (Fig. 2a) and the score tables."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from lm_eval_bias.report.page import MARKERS, Block, Writer, note
from lm_eval_bias.report.runs import TaskRun
from lm_eval_bias.stats.fact_or_fair import entropy_upper_bound

FAMILIES = ("fact_or_fair",)
TITLE = "FACT-OR-FAIR"
HEADLINE = {"fact_or_fair": ("s_fact", "s_e", "s_kld", "s_fair", "distance")}
SCORES = ("s_fact", "s_e", "s_kld", "s_fair", "distance", "refusal_rate", "invalid_rate")


def render(runs: list[TaskRun], w: Writer) -> list[Block]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    table = pd.DataFrame([{**{k: run.metrics.get(k, math.nan) for k in SCORES},
                           **{k: v for k, v in run.metrics.items() if k.endswith("_rate") and k not in SCORES}}
                          for run in runs], index=[run.task for run in runs])
    table.index.name = "task"
    blocks = [w.table(table, "fact_or_fair_scores", "Scores per task (Tables 4-7; Defs. 1-4, d = distance to the "
                                                     "trade-off curve; subjective tasks also report the context rates).")]
    points = {}
    for attribute, k in (("gender", 2), ("race", 4)):
        objective = next((r for r in runs if r.task == f"fact_or_fair_objective_{attribute}"), None)
        subjective = next((r for r in runs if r.task == f"fact_or_fair_subjective_baseline_{attribute}"), None)
        if objective and subjective:
            points[attribute] = (objective.metrics.get("s_fact", math.nan), subjective.metrics.get("s_e", math.nan), k)
    if not points:
        blocks.append(note("Fig. 2a needs fact_or_fair_objective_<attribute> and fact_or_fair_subjective_baseline_<attribute> "
                           "of one attribute in the run."))
        return blocks
    fig, ax = plt.subplots(figsize=(4.6, 3.6))
    grid = np.linspace(0, 1, 400)
    for n, (k, style) in enumerate(((2, "-"), (4, "--"), (5, ":"))):
        ax.plot(grid, entropy_upper_bound(grid, k), style, color="black", linewidth=1, label=f"g_{k} (k = {k})")
    for n, (attribute, (s_fact, s_e, k)) in enumerate(points.items()):
        ax.scatter([s_fact], [s_e], marker=MARKERS[n], s=60, color=matplotlib.colormaps["cividis"](0.2 + 0.6 * n),
                   edgecolor="black", label=f"{attribute} (k = {k})", zorder=3)
    ax.set_xlabel("S_fact (objective accuracy)")
    ax.set_ylabel("S_E (subjective entropy)")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1.05)
    ax.legend(fontsize=7)
    blocks.insert(0, w.figure(fig, "fact_or_fair_tradeoff",
                              "Fig. 2a: objective accuracy S_fact against subjective diversity S_E (baseline context) per "
                              "attribute, with the upper bounds g_k of Conclusion 1; no model can lie above its curve."))
    return blocks
