"""Counterfactual VQA section: consistency-coverage and symmetric-refusal curves (Fig. 4), category
and subcategory tables."""

from __future__ import annotations

import math

import pandas as pd

from lm_eval_bias import samples
from lm_eval_bias.report.page import MARKERS, Block, Writer, note
from lm_eval_bias.report.runs import TaskRun
from lm_eval_bias.stats import cf_vqa as stats

FAMILIES = ("cf_vqa",)
TITLE = "Counterfactual VQA"
HEADLINE = {"cf_vqa": ("consistency", "cc_auc", "sr_auc", "refusal_rate")}
METRICS = ("consistency", "cc_auc", "sr_auc", "refusal_rate", "refusal_asymmetry_rate")


def render(runs: list[TaskRun], w: Writer) -> list[Block]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    blocks: list[Block] = []
    with_pairs = [(run, samples.cf_vqa_pairs(run.records)) for run in runs if run.records]
    with_pairs = [(run, pairs) for run, pairs in with_pairs if pairs]
    if not with_pairs:
        return [note("Counterfactual VQA curves need --log_samples output with both images of at least one pair.")]
    fig, (left, right) = plt.subplots(1, 2, figsize=(8.4, 3.4))
    for n, (run, pairs) in enumerate(with_pairs):
        colour = matplotlib.colormaps["cividis"](0.1 + 0.8 * n / max(1, len(with_pairs) - 1))
        _, kappa, cons = stats.consistency_coverage_curve(pairs)
        left.step(kappa, cons, where="post", marker=MARKERS[n % 8], markersize=3, color=colour,
                  label=f"{run.task} (CC-AUC {run.metrics.get('cc_auc', math.nan):.2f})")
        _, rr, ra = stats.symmetric_refusal_curve(pairs)
        right.plot(rr, 1 - ra, marker=MARKERS[n % 8], markersize=3, color=colour, linestyle=("-", "--", ":", "-.")[n % 4],
                   label=f"{run.task} (SR-AUC {run.metrics.get('sr_auc', math.nan):.2f})")
    left.set(xlabel="coverage κ(τ)", ylabel="consistency Cons_τ", xlim=(0, 1.02), ylim=(0, 1.05), title="Consistency-coverage")
    right.set(xlabel="refusal rate RR(τ)", ylabel="1 − refusal asymmetry RA(τ)", xlim=(0, 1.02), ylim=(0, 1.05),
              title="Symmetric refusal")
    left.legend(fontsize=6)
    right.legend(fontsize=6)
    blocks.append(w.figure(fig, "cf_vqa_curves", "Fig. 4: consistency of pair answers among pairs whose lower confidence is "
                                                 "at least τ, against the share of pairs kept (left), and refusal asymmetry "
                                                 "against refusal rate as τ sweeps (right); one line per prompt variant."))
    from lm_eval_bias.cf_vqa_schema import CATEGORIES, category_key

    category = pd.DataFrame({run.task: {f"{m} · {c}": run.metrics.get(f"{m}_{category_key(c)}", math.nan)
                                        for c in CATEGORIES for m in METRICS} for run in runs})
    category.index.name = "metric · category"
    blocks.append(w.table(category, "cf_vqa_categories", "Metrics per category (from the result keys), one column per task."))
    for run, pairs in with_pairs:
        by = stats.metrics_by(pairs, "subcategory")
        table = pd.DataFrame(by).T.reindex(columns=list(METRICS))
        table.index.name = "subcategory"
        blocks.append(w.table(table, f"{run.task}_subcategories", f"{run.task}: metrics per subcategory (17 of the paper)."))
    return blocks
