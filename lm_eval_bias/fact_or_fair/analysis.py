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
    out = tasks.FAMILIES[family_of(task)].values(records, summary)
    out.update(ingroup_power(out, records))
    return out


def ingroup_power_statement(out: dict[str, float], records: list[dict[str, Any]]):
    """Power of the in-group task's Holm family {in-group, out-group} (Table 3;
    :func:`lm_eval_bias.core.power.family_power_statement`), or None for other tasks: the smallest
    attainable p is the smaller of the two exact one-sided binomial tests' smallest p-values, chance^n
    with n the valid answers behind the rate; the MDE is the rate above chance detected with 80 % power
    at the first Holm step from the binomial standard error at chance (the two tests' mean)."""
    import math

    from lm_eval_bias.core.power import family_power_statement
    from lm_eval_bias.fact_or_fair import stats

    rates = ("ingroup_rate", "outgroup_rate")
    if not records or not all(f"{r}_p_null" in out for r in rates):
        return None
    attributes = {r.get("attribute") for r in records}
    if len(attributes) != 1 or next(iter(attributes)) not in tasks.CLASSES:
        return None
    table = stats.tabulate([stats.FactOrFairRecord.from_dict(r) for r in records], tasks.CLASSES[attributes.pop()])
    smallest, errors = [], []
    for rate in rates:
        chance = stats.RATE_CHANCE[rate](table.k)
        _, n = stats._rate_successes(table, rate)
        if n:
            smallest.append(chance ** n)
            errors.append(math.sqrt(chance * (1 - chance) / n))
    if not smallest:
        return None
    return family_power_statement(len(rates), min(smallest), stderr=sum(errors) / len(errors), unit=" (rate above chance)")


def ingroup_power(out: dict[str, float], records: list[dict[str, Any]]) -> dict[str, float]:
    """The keys of :func:`ingroup_power_statement`: ``ingroup_family_can_reject`` (1 / 0),
    ``ingroup_family_min_attainable_p`` and ``ingroup_family_mde``. Empty for other tasks."""
    statement = ingroup_power_statement(out, records)
    if statement is None:
        return {}
    return statement.result_keys("ingroup_family")


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
