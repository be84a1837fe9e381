"""REFLECT's full analysis from records (rebuilt from logged samples by :mod:`lm_eval_bias.samples`).

Every key the REFLECT tasks reported before the headline change (issue 27) is computed here, with the
same statistics functions and seeds the tasks' aggregations use: the task family's keys (the headline
and, e.g., every win rate, Holm-adjusted p-values, the paper's percentile intervals), the tables family
(retention by race and gender, App. C.1; per-occupation keys, Fig. 5-6, Table 8, App. C.7; missing
cells) and, for a source with a third presentation, the per-presentation keys (App. C.8).
:mod:`lm_eval_bias.analysis` turns them into DataFrames by group.
"""

from __future__ import annotations

from typing import Any

from lm_eval_bias.reflect import tasks
from lm_eval_bias.reflect.schema import GROUPS, RACES

#: task name prefix -> task family (``_logprob`` appended for the probability-scored tasks)
_PREFIXES = (("focus_2afc_", "2afc"), ("focus_mcq_", "mcq"), ("focus_salary", "salary"))


def family_of(task: str) -> str:
    """The family of a REFLECT task (2afc, mcq, salary, 2afc_logprob, mcq_logprob)."""
    for prefix, family in _PREFIXES:
        if task.startswith(prefix):
            return family + ("_logprob" if task.endswith("_logprob") else "")
    raise ValueError(f"{task!r} is not a REFLECT task")


def values(task: str, records: list[dict[str, Any]], summary: Any = None) -> dict[str, float]:
    """Every key of ``task`` from its records: the family's keys, then (generated tasks) the tables
    family's and, when records carry a presentation (App. C.8), the per-presentation family's."""
    family = family_of(task)
    out = tasks.FAMILIES[family].values(records, summary)
    if family.endswith("_logprob"):
        return out
    tables = tasks.TABLE_FAMILIES.get(family)
    if tables is not None:
        out.update(tables.values(records))
    by_presentation = tasks.PRESENTATION_FAMILIES.get(family)
    presented = [r for r in records if "presentation" in r]
    if by_presentation is not None and presented:
        out.update(by_presentation.values(presented))
    return out


#: The groups a key may be about, longest first when matched as a key suffix (races, genders, occupations
#: of the paper; presentations and their pairs, App. C.8).
def group_vocabulary(records: list[dict[str, Any]]) -> list[str]:
    from lm_eval_bias.reflect.presentation import PAIR_NAMES, PRESENTATIONS

    names = {r.lower() for r in RACES} | {"male", "female"} | set(PRESENTATIONS) | set(PAIR_NAMES)
    names |= set(tasks.PER_OCCUPATION_KEY_OCCUPATIONS) | {str(r.get("occupation")) for r in records if r.get("occupation")}
    return sorted(names, key=len, reverse=True)


def group_sizes(records: list[dict[str, Any]]) -> dict[str, int]:
    """Docs (model calls) that involve each group: a race, a gender (``male``/``female``) or an
    occupation; a 2AFC call involves the groups of both images."""
    sizes: dict[str, int] = {}

    def add(name: str) -> None:
        sizes[name] = sizes.get(name, 0) + 1

    for r in records:
        indices = {r["group_a"], r["group_b"]} if "group_a" in r else {r.get("group")}
        names = set()
        for g in indices:
            if g is not None and 0 <= int(g) < len(GROUPS):
                group = GROUPS[int(g)]
                names |= {group.race.lower(), "male" if group.gender == "man" else "female"}
        if r.get("presentation"):
            names.add(str(r["presentation"]))
        if r.get("occupation"):
            names.add(str(r["occupation"]))
        for name in names:
            add(name)
    return sizes


#: metric (the key without its group) prefix -> the paper's section (first match)
SECTIONS: tuple[tuple[str, str], ...] = (
    ("retained_rate_", "App. C.1 (retention by group)"),
    ("male_win_rate_", "Sec. 4.1, per occupation"),
    ("letter_mass", "beyond the paper (docs/probability-scoring.md)"),
    ("retained_rate", "Sec. 4.1"), ("refusal_rate", "Sec. 4.1-4.3"), ("invalid_rate", "Sec. 4.1-4.3"),
    ("valid_rate_", "App. C.8"), ("mean_answer_", "App. C.8"), ("n_calls_", "App. C.8"), ("n_valid_", "App. C.8"),
    ("n_matched_", "App. C.8"),
    ("valid_rate", "Sec. 4.2-4.3"), ("swap_inconsistent_rate", "Sec. 4.1"), ("first_position_rate", "Sec. 4.1"),
    ("win_rate", "Sec. 4.1 (Fig. 3)"), ("male_win_rate", "Sec. 4.1"), ("p_win_rate", "Sec. 4.1 (tests)"),
    ("p_male_win_rate", "Sec. 4.1 (tests)"), ("polarization", "Sec. 4.1 (Pol)"), ("extreme_cell_rate", "Sec. 4.1 (Ext)"),
    ("n_defined_cells", "Sec. 4.1"), ("jsd", "Sec. 4.2 (Fig. 4)"), ("gap_pct", "Sec. 4.3 (Fig. 6)"),
    ("mean_abs_gap_pct", "Sec. 4.3 (Fig. 6)"), ("gap", "Sec. 4.2 (Fig. 5)"), ("p_race", "Sec. 4.3, App. C.6"),
    ("p_gender", "Sec. 4.3, App. C.6"), ("n_missing_images", "data"), ("n_", "counts"),
)
