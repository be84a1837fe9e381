"""Counterfactual VQA's full analysis from records (rebuilt from logged samples by
:mod:`lm_eval_bias.samples`): every key the tasks reported before the headline change (issue 27) —
overall and per category (Table 2), human agreement, Holm columns, counts — with the same functions and
seeds (:func:`lm_eval_bias.cf_vqa.tasks.summarize`); :mod:`lm_eval_bias.analysis` makes DataFrames."""

from __future__ import annotations

from typing import Any

from lm_eval_bias.cf_vqa import tasks
from lm_eval_bias.cf_vqa.schema import CATEGORIES, category_key


def family_of(task: str) -> str:
    return task[len("cf_vqa_"):] if task != "cf_vqa" else "baseline"


def values(task: str, records: list[dict[str, Any]], summary: Any = None) -> dict[str, float]:
    out = tasks.FAMILIES[family_of(task)].values(records, summary)
    out.update(category_power(out))
    return out


def category_power_statements(out: dict[str, float]) -> dict[str, Any]:
    """The power statement (:class:`lm_eval_bias.core.power.FamilyPower`) of each per-category Holm
    family with a test in ``out`` (the analysis keys): for Cons, CC-AUC and SR-AUC, the categories with
    a finite ``<metric>_<category>_p_null``, the smallest attainable permutation p-value
    1 / (LM_EVAL_BIAS_NULL_ITERS + 1) and the mean per-category bootstrap standard error (the MDE above
    the null floor at the first Holm step, 80 % power). Metric -> statement; none without permutations."""
    import math

    import numpy as np

    from lm_eval_bias.core.aggregation import null_settings
    from lm_eval_bias.core.power import family_power_statement

    n_perm, _ = null_settings()
    statements: dict[str, Any] = {}
    for metric in ("consistency", "cc_auc", "sr_auc"):
        tested = [category_key(c) for c in CATEGORIES
                  if math.isfinite(float(out.get(f"{metric}_{category_key(c)}_p_null", math.nan)))]
        if not tested or n_perm <= 0:
            continue
        errors = [float(out.get(f"{metric}_{c}_stderr", math.nan)) for c in tested]
        stderr = float(np.nanmean(errors)) if np.isfinite(errors).any() else math.nan
        statements[metric] = family_power_statement(len(tested), 1.0 / (n_perm + 1), stderr=stderr)
    return statements


def category_power(out: dict[str, float]) -> dict[str, float]:
    """Power of each per-category Holm family (:func:`category_power_statements`): for Cons, CC-AUC and
    SR-AUC, ``<m>_categories_can_reject`` (1 / 0: whether the smallest attainable permutation p-value,
    1 / (LM_EVAL_BIAS_NULL_ITERS + 1), Holm-adjusted over the categories with a test, is below 0.05),
    ``<m>_categories_min_attainable_p`` and ``<m>_categories_mde`` (the effect above the null floor
    detected with 80 % power at the first Holm step, from the mean per-category bootstrap standard
    error)."""
    power: dict[str, float] = {}
    for metric, statement in category_power_statements(out).items():
        power.update(statement.result_keys(f"{metric}_categories"))
    return power


def group_vocabulary(records: list[dict[str, Any]]) -> list[str]:
    return sorted((category_key(c) for c in CATEGORIES), key=len, reverse=True)


def group_sizes(records: list[dict[str, Any]]) -> dict[str, int]:
    """Responses (docs) per category."""
    sizes: dict[str, int] = {}
    for r in records:
        if r.get("category"):
            key = category_key(r["category"])
            sizes[key] = sizes.get(key, 0) + 1
    return sizes


SECTIONS: tuple[tuple[str, str], ...] = (
    ("consistency_minus_human", "Sec. 5 (human agreement)"), ("human_consistency", "Sec. 5 (human agreement)"),
    ("consistency", "Sec. 4, Table 2 (Cons)"), ("cc_auc", "Sec. 4, Table 2 (CC)"), ("sr_auc", "Sec. 4, Table 2 (SR)"),
    ("refusal_asymmetry_rate", "Sec. 4"), ("refusal_rate", "Sec. 4"), ("invalid_rate", "docs/cf-vqa.md"),
    ("truncated_rate", "docs/cf-vqa.md"), ("malformed_confidence_rate", "docs/cf-vqa.md"), ("n_", "counts"),
)
