"""FACT-OR-FAIR's full analysis from records (rebuilt from logged samples by :mod:`lm_eval_bias.samples`):
every key the tasks reported before the headline change (issue 27), with the same functions and seeds
(:func:`lm_eval_bias.fact_or_fair.tasks.summarize`); :mod:`lm_eval_bias.analysis` makes DataFrames."""

from __future__ import annotations

from typing import Any

from lm_eval_bias.fact_or_fair import tasks


def family_of(task: str) -> str:
    rest = task[len("fact_or_fair_"):]
    if rest.startswith("objective_"):
        return "objective"
    return "subjective_" + rest[len("subjective_"):].rsplit("_", 1)[0]


def values(task: str, records: list[dict[str, Any]], summary: Any = None) -> dict[str, float]:
    return tasks.FAMILIES[family_of(task)].values(records, summary)


def group_vocabulary(records: list[dict[str, Any]]) -> list[str]:
    return []  # the scores are about the whole attribute (gender or race), not one group


def group_sizes(records: list[dict[str, Any]]) -> dict[str, int]:
    return {}


SECTIONS: tuple[tuple[str, str], ...] = (
    ("s_fact", "Sec. 3.2 (Def. 1)"), ("s_e", "Sec. 3.2 (Def. 2)"), ("s_kld", "Sec. 3.2 (Def. 3)"),
    ("s_fair", "Sec. 3.2 (Def. 4)"), ("distance", "Sec. 3.2 (Fig. 2)"), ("representativeness_rate", "Sec. 6.1"),
    ("attribution_rate", "Sec. 6.1"), ("ingroup_rate", "Sec. 6.1"), ("outgroup_rate", "Sec. 6.1"),
    ("refusal_rate", "Sec. 5"), ("invalid_rate", "Sec. 5"), ("truncated_rate", "docs/fact-or-fair.md"), ("n_", "counts"),
)
