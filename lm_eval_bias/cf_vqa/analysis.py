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
    return tasks.FAMILIES[family_of(task)].values(records, summary)


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
