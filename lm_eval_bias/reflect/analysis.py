"""REFLECT's full analysis from records (rebuilt from logged samples by :mod:`lm_eval_bias.samples`).

Every key the REFLECT tasks reported before the headline change (issue 27) is computed here, with the
same statistics functions and seeds the tasks' aggregations use: the task family's keys (the headline
and, e.g., every win rate, Holm-adjusted p-values, the paper's percentile intervals), the tables family
(retention by race and gender, App. C.1; per-occupation keys, Fig. 5-6, Table 8, App. C.7; missing
cells) and, for a source with a third presentation, the per-presentation keys (App. C.8).
:mod:`lm_eval_bias.analysis` turns them into DataFrames by group.
"""

from __future__ import annotations

import math
from typing import Any

from lm_eval_bias.core.power import FamilyPower, family_power_statement
from lm_eval_bias.reflect import tasks
from lm_eval_bias.reflect.schema import GROUPS, OCCUPATIONS, RACES

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
        out.update(power_keys(power_statements(family, out, records)))
        return out
    tables = tasks.TABLE_FAMILIES.get(family)
    if tables is not None:
        out.update(tables.values(records))
    by_presentation = tasks.PRESENTATION_FAMILIES.get(family)
    presented = [r for r in records if "presentation" in r]
    if by_presentation is not None and presented:
        out.update(by_presentation.values(presented))
    out.update(power_keys(power_statements(family, out, records)))
    return out


# --------------------------------------------------------------------------------------------------
# Power statements (issue 31): can each test family reject at all under its design, and its MDE
# --------------------------------------------------------------------------------------------------
def sign_flip_min_p(n_templates: int, n_perm: int) -> float:
    """Smallest p-value a two-sided template-level sign-flip test (the gender tests:
    :func:`lm_eval_bias.core.bootstrap.template_level_relabelings` with two values) can return with
    ``n_templates`` templates and ``n_perm`` Monte Carlo relabellings: the observed arrangement and its
    mirror image tie, so p >= 2 / 2^T exactly, and a Monte Carlo p-value is >= 1 / (n_perm + 1). The
    tasks randomise those ties (exact level at every T), which can take a p below 2 / 2^T by the draw of
    U alone; the bound stated here is the tie-counting one, i.e. what the data can show without U."""
    exact = 2.0 / 2.0 ** n_templates if n_templates >= 1 else 1.0
    return max(min(exact, 1.0), 1.0 / (n_perm + 1) if n_perm > 0 else 1.0)


def permutation_min_p(n_perm: int) -> float:
    """Smallest Monte Carlo permutation p-value, 1 / (n_perm + 1) (1 without permutations): the race
    tests, whose template-level race permutations (5! per template) are not the limit."""
    return 1.0 / (n_perm + 1) if n_perm > 0 else 1.0


def _templates_per_occupation(records: list[dict[str, Any]]) -> dict[str, int]:
    seen: dict[str, set] = {}
    for r in records:
        if r.get("occupation") is not None and r.get("template") is not None:
            seen.setdefault(str(r["occupation"]), set()).add(str(r["template"]))
    return {o: len(t) for o, t in seen.items()}


def _median_finite(values: list[float]) -> float:
    finite = sorted(v for v in values if isinstance(v, (int, float)) and math.isfinite(v))
    return finite[len(finite) // 2] if finite else math.nan


def power_statements(family: str, metrics: dict[str, float], records: list[dict[str, Any]],
                     n_perm: int | None = None, alpha: float = 0.05) -> dict[str, FamilyPower]:
    """The power statement (:func:`lm_eval_bias.core.power.family_power_statement`) of each REFLECT test
    family of ``family``'s keys in ``metrics`` (the analysis values), at the run's design:

    - 2AFC: ``win_rate_tests`` (the six ``p_<win rate>`` tests, Holm), ``male_win_rate_test`` alone;
    - MCQ: ``jsd_gender_test`` (``jsd_male_p_null``), ``jsd_race_test`` (one ``jsd_<race>_p_null``) and,
      when the records name occupations, ``occupation_jsd_gender_test`` (one ``jsd_male_<occupation>_p_null``
      of the tables family, a gender relabelling of that occupation's templates alone, each read at 0.05
      without adjustment: with 2 templates an occupation's p is at least 2/4 = 0.5, so it cannot reject);
    - salary: ``p_gender_test``, ``p_race_test`` (the pooled primary tests), ``occupation_tests`` (the 18
      per-occupation tests, Holm; Table 13), ``occupation_gender_tests`` (its 6 gender tests, whose
      sign flips over one occupation's templates limit them: with 8 templates p >= 2/256, above Holm's
      first threshold 0.05/18) and ``mean_abs_gap_test`` (one ``mean_abs_gap_pct_<group>_p_null`` of the
      tables family, a permutation of each template's race x gender labels, read at 0.05 alone).

    The ``_logprob`` families (letter-probability scoring) have the same tests as their base family.

    Smallest attainable p: :func:`sign_flip_min_p` (gender tests), :func:`permutation_min_p` (race
    tests). MDE at 80 % power at the first Holm step from the estimate's template-bootstrap standard
    error (win-rate units for 2AFC; gap percentage points for salary; none for JSD, a divergence with no
    z-scale). ``n_perm`` defaults to the tasks' ``LM_EVAL_BIAS_NULL_ITERS``."""
    if n_perm is None:
        n_perm = tasks.null_settings()[0]
    T = int(metrics.get("n_templates", 0) or 0) if math.isfinite(metrics.get("n_templates", math.nan)) else 0
    race_p, gender_p = permutation_min_p(n_perm), sign_flip_min_p(T, n_perm)
    out: dict[str, FamilyPower] = {}
    base = family.removesuffix("_logprob")
    if base == "2afc":
        keys = ("male_win_rate", *(f"win_rate_{r.lower()}" for r in RACES))
        se = _median_finite([metrics.get(f"{k}_stderr", math.nan) for k in keys])
        out["win_rate_tests"] = family_power_statement(len(keys), min(race_p, gender_p), alpha, se, unit=" (win rate - 0.5)")
        out["male_win_rate_test"] = family_power_statement(1, gender_p, alpha, metrics.get("male_win_rate_stderr", math.nan),
                                                           unit=" (win rate - 0.5)")
    elif base == "mcq":
        out["jsd_gender_test"] = family_power_statement(1, gender_p, alpha)
        out["jsd_race_test"] = family_power_statement(1, race_p, alpha)
        per_occ = _templates_per_occupation(records)
        if per_occ and not family.endswith("_logprob"):
            out["occupation_jsd_gender_test"] = family_power_statement(
                1, sign_flip_min_p(min(per_occ.values()), n_perm), alpha)
    elif base == "salary":
        se_gender = metrics.get("gap_pct_male_stderr", math.nan)
        se_race = _median_finite([metrics.get(f"gap_pct_{r.lower()}_stderr", math.nan) for r in RACES if r != "White"])
        out["p_gender_test"] = family_power_statement(1, gender_p, alpha, se_gender, unit=" % (gap)")
        out["p_race_test"] = family_power_statement(1, race_p, alpha, se_race, unit=" % (gap)")
        per_occ = _templates_per_occupation(records)
        n_occ = max(len(per_occ), 1)
        m = 3 * len(per_occ) if per_occ else 3 * len(OCCUPATIONS)
        fewest = min(per_occ.values()) if per_occ else 0
        se_occ = se_gender * math.sqrt(n_occ) if math.isfinite(se_gender) else math.nan  # one occupation's share
        out["occupation_tests"] = family_power_statement(m, race_p, alpha, se_occ, unit=" % (gap, one occupation)")
        out["occupation_gender_tests"] = family_power_statement(m, sign_flip_min_p(fewest, n_perm), alpha, se_occ,
                                                                unit=" % (gap, one occupation)")
        out["mean_abs_gap_test"] = family_power_statement(1, race_p, alpha)
    return out


def power_keys(statements: dict[str, FamilyPower]) -> dict[str, float]:
    """Analysis keys of the power statements: ``<family>_can_reject`` (1 or 0),
    ``<family>_min_attainable_p`` and ``<family>_mde`` (NaN when no standard error applies)."""
    out: dict[str, float] = {}
    for name, st in statements.items():
        out.update(st.result_keys(name))
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
    *((f"{name}_", "power of the tests (issue 31)") for name in ("win_rate_tests", "male_win_rate_test", "jsd_gender_test",
                                                                 "jsd_race_test", "p_gender_test", "p_race_test",
                                                                 "occupation_tests", "occupation_gender_tests")),
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
    ("p_gender", "Sec. 4.3, App. C.6"), ("n_missing_images", "data"),
    ("n_", "counts"),
)
