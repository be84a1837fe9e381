"""REFLECT / FOCUS on a card: headlines, Fig. 4a–f, Fig. 5, Fig. 6 and the detailed tables (win matrix,
group win rates, Table 2, Table 13, answer distributions, LOTO).

Magnitudes that are positive without bias (Pol, JSD) are shown as the paper's plug-in value, then
"bias-corrected x [lo, hi]" (the interval for the parameter, ``<m>_ci_low``/``_ci_high``), then the null
floor and p-value (:func:`lm_eval_bias.report.intervals.metric`).

Per 2AFC scenario the headline names the group with the highest win rate against the other nine —
``win_rate_<race>_<gender>``, the share of retained comparisons involving the group that it won,
derived here from the win matrix with the same template-cluster bootstrap as the task's keys — and
says "prefers" only when its interval lies above 0.5.
"""

from __future__ import annotations

import math
from dataclasses import asdict

import numpy as np
import pandas as pd

from lm_eval_bias.reflect.schema import GROUPS, RACES
from lm_eval_bias.reflect.tables import MEAN_ABS_NO_INTERVAL
from lm_eval_bias.report.intervals import checked_interval, interval, metric
from lm_eval_bias.report.render import (DOUBLE, Headline, Metric, Part, Writer, all_nan, bars, fmt_ci, heatmap, note,
                                        plural)
from lm_eval_bias.report.runs import TaskRun

NAME = "reflect"
TITLE = "REFLECT / FOCUS"
FAMILIES = ("2afc", "mcq", "salary")
#: result keys in the leaderboard, per family
HEADLINE = {
    "2afc": ("male_win_rate", "polarization", "extreme_cell_rate", "retained_rate"),
    "mcq": ("gap_male", "jsd_male", "valid_rate"),
    "salary": ("gap_pct_male", "gap_pct_black", "valid_rate"),
}
SCENARIOS = {"income": "income", "education": "education", "safety": "perceived-safety"}
ANSWERS = {"salary": "salary brackets", "education": "education levels"}
GROUP_LABELS = [f"{g.race.replace('_', ' ')} {g.gender}" for g in GROUPS]
PLURAL = {"man": "men", "woman": "women"}


def _group_name(group) -> str:
    return f"{group.race.replace('_', ' ')} {PLURAL[group.gender]}"


def _scenario(task: str) -> str:
    name = task.removeprefix("focus_2afc_").removeprefix("focus_mcq_").removesuffix("_logprob")
    return SCENARIOS.get(name, name)


def _rate_metrics(counts: dict) -> dict[str, float]:
    """Group win rates against the other nine groups and the Fig. 4d–f shares, from summed counts."""
    from lm_eval_bias.reflect import twoafc

    wins = np.asarray(counts["wins"], dtype=float)
    out = {}
    for k, group in enumerate(GROUPS):
        won, lost = wins[k].sum() - wins[k, k], wins[:, k].sum() - wins[k, k]
        out[f"win_rate_{group.key}"] = won / (won + lost) if won + lost > 0 else math.nan
    for gender in ("woman", "man"):
        for race, value in twoafc.race_win_rates_within_gender(wins, gender).items():
            out[f"within_{gender}:{race}"] = value
    for race, value in twoafc.male_win_rate_by_race(wins).items():
        out[f"male_vs_female:{race}"] = value
    return out


def _rate_trials(counts: dict) -> dict[str, float]:
    """{key: retained comparisons} of :func:`_rate_metrics` from summed counts: each of its rates is a share
    of these comparisons (a group against the other nine; a race against the other races of one gender; a
    race's man against its woman)."""
    both = np.asarray(counts["wins"], dtype=float)
    both = both + both.T
    out = {f"win_rate_{group.key}": float(both[k].sum() - both[k, k]) for k, group in enumerate(GROUPS)}
    for gender in ("woman", "man"):
        keep = [k for k, g in enumerate(GROUPS) if g.gender == gender]
        for k in keep:
            out[f"within_{gender}:{GROUPS[k].race.lower()}"] = float(sum(both[k, j] for j in keep if j != k))
    for race in RACES:
        man, woman = (next(k for k, g in enumerate(GROUPS) if g.race == race and g.gender == s) for s in ("man", "woman"))
        out[f"male_vs_female:{race.lower()}"] = float(both[man, woman])
    return out


def group_rate_intervals(counts: dict, strata, n_boot: int, seed: int
                         ) -> tuple[dict[str, float], dict[str, float], dict[str, float]]:
    """(estimates, ci_low, ci_high) of :func:`_rate_metrics` from per-template counts: each rate is a share of
    its retained comparisons (:func:`_rate_trials`), so its interval is the Wilson interval at the template
    bootstrap's effective sample size with Korn & Graubard's degrees-of-freedom factor
    (:func:`lm_eval_bias.core.bootstrap.effective_size_wilson_interval`, Korn & Graubard 1998), as every
    other share of REFLECT. The design-t interval (estimate ± t_df SE) used before collapsed to a point
    when one side won every comparison of a template-cluster bootstrap (about 6 man-vs-woman comparisons of a
    race at 12 templates): ``male_vs_female:<race>`` covered 79-93 % there (scripts/calibration/reflect.py,
    ``run_2afc_groups``)."""
    from lm_eval_bias.core.bootstrap import template_bootstrap

    totals = {k: np.asarray(v).sum(axis=0) for k, v in counts.items()}
    estimates = _rate_metrics(totals)
    _, low, high = template_bootstrap(counts, strata, _rate_metrics, list(estimates), n_boot, seed,
                                      bounds=(0.0, 1.0), trials=_rate_trials(totals))
    return estimates, low, high


def group_rates(run: TaskRun) -> tuple[dict[str, float], dict[str, tuple[float, float]], int]:
    """(estimates, {key: (low, high)}, templates) of :func:`_rate_metrics` with the task's
    template-cluster bootstrap; memoised on the run."""
    if "group_rates" in run.cache:
        return run.cache["group_rates"]
    from lm_eval_bias.reflect import twoafc
    from lm_eval_bias.core.aggregation import bootstrap_settings

    if run.task.endswith("_logprob"):
        table = twoafc.twoafc_logprob_count_table([twoafc.TwoAFCScore.from_dict(r) for r in run.records])
    else:
        from lm_eval_bias.reflect.tasks import expand_samples  # K samples per doc (App. C.5): one call each

        table = twoafc.twoafc_count_table([twoafc.TwoAFCCall.from_dict(r) for r in expand_samples(run.records)])
    iters, seed = bootstrap_settings()
    estimates, low, high = group_rate_intervals(table.counts, table.strata, iters, seed)
    bounds = {k: (low[k], high[k]) for k in estimates}
    run.cache["group_rates"] = (estimates, bounds, len(table.templates))
    return run.cache["group_rates"]


def _derived(key: str, estimates: dict, bounds: dict, templates: int) -> Metric:
    value = estimates.get(key, math.nan)
    low, high = bounds.get(key, (math.nan, math.nan))
    if not math.isfinite(value):
        return Metric(NAME, key, value, reason="no data")
    if templates < 2:
        return Metric(NAME, key, value, reason="no interval: 1 template")
    if not (math.isfinite(low) and math.isfinite(high)):
        return Metric(NAME, key, value, reason="no interval: undefined in resamples")
    ci = checked_interval(value, low, high, "Wilson interval at the template-cluster bootstrap's effective sample size")
    return Metric(NAME, key, value, ci.low, ci.high, ci.method, ci.reason)


def _twoafc(run: TaskRun, w: Writer, part: Part) -> None:
    s = run.summary
    scenario = _scenario(run.task)
    estimates, bounds, templates = group_rates(run)
    ranked = sorted((k for k, g in enumerate(GROUPS) if math.isfinite(estimates[f"win_rate_{g.key}"])),
                    key=lambda k: estimates[f"win_rate_{GROUPS[k].key}"])
    n_cells = int(run.metrics.get("n_defined_cells", 0) or 0)
    retained = int(np.nansum(s.wins))
    size = f"{n_cells} of 45 group pairs × {plural(s.n_templates, 'template')}, {retained} retained comparisons"
    more = [metric(NAME, run, "male_win_rate"), metric(NAME, run, "polarization")]
    if ranked:
        top, bottom = GROUPS[ranked[-1]], GROUPS[ranked[0]]
        best = _derived(f"win_rate_{top.key}", estimates, bounds, templates)
        if best.low > 0.5:
            text = f"prefers {_group_name(top)} in {scenario} judgments"
        elif math.isfinite(best.low):
            text = f"no clear preference in {scenario} judgments (highest win rate: {_group_name(top)})"
        else:
            text = f"highest win rate in {scenario} judgments: {_group_name(top)}"
        more.insert(0, _derived(f"win_rate_{bottom.key}", estimates, bounds, templates))
    else:
        best = Metric(NAME, "retained_rate", run.metrics.get("retained_rate", math.nan),
                      *_ci(run, "retained_rate"))
        text = f"no retained comparison in {scenario} judgments (every pair refused, invalid or swap-inconsistent)"
    part.headlines.append(Headline(run.task, text, best, size, more, bool(run.partial)))
    if n_cells < 45:
        part.warnings.append(f"{run.task}: {45 - n_cells} of 45 group-pair cells have no retained comparison "
                             "(hatched in Fig. 4a–c; left out of polarization and extreme_cell_rate).")

    abbrevs = [g.abbrev for g in GROUPS]
    if all_nan(s.win_matrix):
        part.figures.append(note(f"{run.task}: no data for Fig. 4a–c (no retained comparison).", "nodata"))
    else:
        fig = heatmap(s.win_matrix, abbrevs, abbrevs, f"Win rates, {scenario} ({run.task})", 0, 1,
                      label="row group's win rate")
        part.figures.append(w.figure(fig, f"{run.task}_win_matrix",
                                     f"Fig. 4a–c ({scenario}): share of retained comparisons won by the row group "
                                     f"against the column group; {plural(s.n_templates, 'template')}. Groups: race "
                                     "(A Asian, B Black, L Latino, ME Middle Eastern, W White) × gender (M man, F "
                                     "woman); hatched: the diagonal and cells without a retained comparison. No "
                                     "interval per cell: cells are shares of a few comparisons each; the group win "
                                     "rates (folded table) carry intervals.",
                                     tasks=[run.task]))
    series = {"within women": "within_woman", "within men": "within_man", "man vs woman, same race": "male_vs_female"}
    races = [r.lower() for r in RACES]
    groups = {label: {r.replace("_", " "): estimates.get(f"{prefix}:{r}", math.nan) for r in races}
              for label, prefix in series.items()}
    errors = {label: {r.replace("_", " "): bounds.get(f"{prefix}:{r}", (math.nan, math.nan)) for r in races}
              for label, prefix in series.items()}
    fig4 = pd.DataFrame({f"{label}": groups[label] for label in series})
    fig4.index.name = "race"
    if templates < 2:
        errors = None
    if all_nan(fig4.values):
        part.figures.append(note(f"{run.task}: no data for Fig. 4d–f (no retained comparison).", "nodata"))
    else:
        part.figures.append(w.figure(bars(groups, f"Race and gender win rates, {scenario}", "win rate", errors,
                                          reference=0.5, ylim=(0, 1.05)), f"{run.task}_race_gender",
                                     "Fig. 4d–f: each race's win rate against the other races among women and among "
                                     "men, and the man's win rate against the woman of the same race; error bars: "
                                     "95 % template-cluster bootstrap intervals"
                                     + ("" if errors else " (none: one template only)") + "; dashed: 0.5 (parity).",
                                     tasks=[run.task]))
    long = []
    for label, prefix in series.items():
        for r in races:
            low, high = bounds.get(f"{prefix}:{r}", (math.nan, math.nan))
            long.append({"series": label, "race": r, "win_rate": estimates.get(f"{prefix}:{r}", math.nan),
                         "ci95_low": low, "ci95_high": high})
    part.details.append(w.table(pd.DataFrame(long), f"{run.task}_race_gender",
                                f"Fig. 4d–f data ({scenario}) with 95 % template-cluster bootstrap intervals."))
    rows = []
    for group, label in zip(GROUPS, GROUP_LABELS):
        m = _derived(f"win_rate_{group.key}", estimates, bounds, templates)
        rows.append({"group": label, "key": m.key, "win_rate": m.value, "ci95_low": m.low, "ci95_high": m.high,
                     "interval": m.method or m.reason})
    part.details.append(w.table(pd.DataFrame(rows).set_index("group"), f"{run.task}_group_win_rates",
                                f"Win rate of each group against the other nine ({scenario}), 95 % intervals."))
    matrix = pd.DataFrame(s.win_matrix, index=GROUP_LABELS, columns=GROUP_LABELS)
    matrix.index.name = "row beats column"
    part.details.append(w.table(matrix, f"{run.task}_win_matrix", f"Win-rate matrix ({scenario}), as Fig. 4a–c.",
                                no_interval="No interval per cell (shares of a few comparisons each)."))
    power = _power_note(run, "2afc")
    if power is not None:
        part.details.append(power)
    loto = getattr(s, "loto", None) or {}
    if loto:
        table = pd.DataFrame({effect: asdict(summary) for effect, summary in loto.items()}).T
        table.index.name = "effect"
        part.details.append(w.table(table, f"{run.task}_loto", f"Leave-one-template-out sign stability ({scenario}; "
                                                               "App. C.3, Table 9).",
                                    no_interval="No interval: a robustness check over left-out templates."))


def _power_note(run: TaskRun, family: str):
    """The power statements of the run's test families (issue 31: a count of significant tests is never
    shown without whether the design could reject and its minimum detectable effect), as one note:
    :func:`lm_eval_bias.reflect.analysis.power_statements` on the run's keys and summary."""
    from lm_eval_bias.reflect.analysis import power_statements

    s = run.summary
    metrics = dict(run.metrics)
    for key, value in (getattr(s, "stderr", None) or {}).items():
        metrics.setdefault(f"{key}_stderr", value)
    derived = getattr(s, "derived", None) or {}
    metrics.setdefault("n_templates", float(derived.get("n_templates", getattr(s, "n_templates", math.nan))))
    statements = power_statements(family, metrics, run.records or [])
    if not statements:
        return None
    text = "; ".join(f"{name.replace('_', ' ')}: {st.statement}" for name, st in statements.items())
    return note(f"{run.task}: power of the tests at this design — {text}.", "note")


def _ci(run: TaskRun, key: str) -> tuple[float, float, str, str]:
    ci = interval(run, key)
    return ci.low, ci.high, ci.method, ci.reason


def _sign_text(m: Metric, positive: str, negative: str, none: str, plain: str) -> str:
    if not (math.isfinite(m.low) and math.isfinite(m.high)):
        return plain
    if m.low > 0:
        return positive
    if m.high < 0:
        return negative
    return none


def as_percent(m: Metric) -> Metric:
    """A relative gap (a fraction, e.g. the MCQ's ``gap_male``) shown in percent, the unit of the salary
    gaps (``gap_pct_*``) on the neighbouring lines: value, interval, null floor and bias-corrected value
    x 100, one decimal, " %"."""
    import dataclasses

    return dataclasses.replace(m, value=m.value * 100, low=m.low * 100, high=m.high * 100, null=m.null * 100,
                               chance=m.chance * 100, corrected=m.corrected * 100, digits=1, unit=" %")


def _mcq(run: TaskRun, w: Writer, part: Part) -> None:
    variant = run.task.removeprefix("focus_mcq_").removesuffix("_logprob")
    answers = ANSWERS.get(variant, f"{variant} answers")
    gap = as_percent(metric(NAME, run, "gap_male"))
    text = _sign_text(gap, f"assigns men higher {answers} than women", f"assigns women higher {answers} than men",
                      f"no clear gender gap in {answers}", f"men's mean {answers} relative to women's")
    races = [k for k in (f"gap_{r.lower()}" for r in RACES if r != "White") if math.isfinite(run.metrics.get(k, math.nan))]
    more = []
    if races:
        more.append(as_percent(metric(NAME, run, max(races, key=lambda k: abs(run.metrics[k])))))
    more.append(metric(NAME, run, "jsd_male"))
    templates = getattr(run.summary, "n_templates", None)
    size = f"{run.n_samples} images" + (f", {plural(templates, 'template')}" if templates else "")
    part.headlines.append(Headline(run.task, text, gap, size, more, bool(run.partial)))
    missing = [k.removeprefix("gap_") for k in ("gap_male", *(f"gap_{r.lower()}" for r in RACES if r != "White"))
               if not math.isfinite(run.metrics.get(k, math.nan))]
    if missing:
        part.warnings.append(f"{run.task}: no gap for {', '.join(missing)} (a group without valid answers).")
    keys = [k for k in ("gap_male", *(f"gap_{r.lower()}" for r in RACES if r != "White")) if k in run.metrics]
    values = {k.removeprefix("gap_").replace("_", " "): run.metrics[k] for k in keys}
    cis = {k: interval(run, k) for k in keys}
    errors = {k.removeprefix("gap_").replace("_", " "): (cis[k].low, cis[k].high) for k in keys}
    part.figures.append(w.figure(bars({variant: values}, f"MCQ relative mean gaps, {variant}", "relative gap",
                                      {variant: errors}, reference=0.0), f"{run.task}_gaps",
                                 f"Fig. 5 ({variant}): relative gap of each group's mean answer against its reference "
                                 "group (male vs female; each race vs White); error bars: 95 % template-cluster "
                                 "bootstrap intervals; dashed: no gap.", tasks=[run.task]))
    distributions = getattr(run.summary, "distributions", None) or {}
    if distributions:
        dist = pd.DataFrame({g: np.asarray(v, dtype=float) for g, v in distributions.items()}).T
        dist.index.name = "group"
        dist.columns = [chr(ord("A") + i) for i in range(dist.shape[1])]
        part.details.append(w.table(dist, f"{run.task}_distributions",
                                    f"Answer distribution per group ({variant}; share of answers per option; Table 2 "
                                    "compares them by JSD).",
                                    no_interval="No interval: descriptive shares (the JSD keys carry intervals)."))
    power = _power_note(run, "mcq")
    if power is not None:
        part.details.append(power)
    _presentations(run, w, part)


def _presentations(run: TaskRun, w: Writer, part: Part) -> None:
    """App. C.8: the MCQ by gender presentation, when the source has ``<Race>_androgynous`` images."""
    keys = ([f"{m}_{p}" for p in ("man", "woman", "androgynous") for m in ("valid_rate", "mean_answer")]
            + [f"{m}_{a}_vs_{b}" for a, b in (("man", "androgynous"), ("woman", "androgynous"), ("man", "woman"))
               for m in ("gap", "jsd")])
    keys = [k for k in keys if k in run.metrics]
    if not keys:
        return
    rows = {}
    for key in keys:
        ci = interval(run, key)
        rows[key] = {"value": run.metrics[key], "95 % CI": fmt_ci(ci.low, ci.high) if ci.ok else f"n/a ({ci.reason})",
                     "null floor": run.metrics.get(f"{key}_null", math.nan),
                     "p_null": run.metrics.get(f"{key}_p_null", math.nan)}
    table = pd.DataFrame(rows).T
    table.index.name = "key"
    part.details.append(w.table(table, f"{run.task}_presentations",
                                "App. C.8 (androgynous presentation): valid rate and mean answer per presentation, and "
                                "between presentations the relative mean gap (μ_a − μ_b) / μ_b and the JSD of the answer "
                                "distributions on the (template, race) cells with both images; JSD with its null floor "
                                "(presentation labels swapped within a cell) and p-value; 95 % template-cluster "
                                "bootstrap intervals."))


def _salary(run: TaskRun, w: Writer, part: Part) -> None:
    gap = metric(NAME, run, "gap_pct_male", digits=1, unit=" %")
    text = _sign_text(gap, "recommends higher salaries to men than women", "recommends higher salaries to women than men",
                      "no clear gender gap in recommended salaries", "salary recommended to men relative to women")
    races = [f"gap_pct_{r.lower()}" for r in RACES if r != "White"]
    races = [k for k in races if math.isfinite(run.metrics.get(k, math.nan))]
    more = []
    if races:
        more.append(metric(NAME, run, max(races, key=lambda k: abs(run.metrics[k])), digits=1, unit=" %"))
    for key in ("p_gender", "p_race"):
        if key in run.metrics:
            more.append(metric(NAME, run, key))
    part.headlines.append(Headline(run.task, text, gap, f"{run.n_samples} prompts", more, bool(run.partial)))
    gaps = run.summary.gaps_by_occupation
    if "occupation" in gaps.columns:
        gaps = gaps.set_index("occupation")
    gap_cols = [c for c in gaps.select_dtypes("number").columns if "gap" in str(c)]
    if gap_cols and not all_nan(gaps[gap_cols].values):
        series = {str(c).removeprefix("gap_pct_").replace("_", " "): {str(o): float(v) for o, v in gaps[c].items()}
                  for c in gap_cols}
        part.figures.append(w.figure(bars(series, "Salary recommendation gaps by occupation", "gap (%)", reference=0.0,
                                          width=DOUBLE, height=2.6), f"{run.task}_gaps_by_occupation",
                                     "Fig. 6: mean recommended salary of each group relative to its reference group "
                                     "(%; races vs White, male vs female), per occupation; hatch per comparison; dashed: "
                                     "no gap. No interval per occupation: the pooled gaps in the headline carry "
                                     "template-cluster intervals.", tasks=[run.task], wide=True))
    else:
        part.figures.append(note(f"{run.task}: no data for Fig. 6 (no valid salary answer).", "nodata"))
    part.details.append(w.table(gaps, f"{run.task}_gaps_by_occupation", "Salary gap (%) per occupation (Fig. 6 values).",
                                no_interval="No interval per occupation (pooled gaps carry intervals)."))
    tests = run.summary.tests_by_occupation
    if "occupation" in tests.columns:
        tests = tests.set_index("occupation")
    part.details.append(w.table(tests, f"{run.task}_tests", "Table 13: tests of race, gender and race × gender per "
                                                           "occupation. p_*: within-template permutation of portrait "
                                                           "labels (default); p_*_holm: Holm-adjusted over the 18 "
                                                           "per-occupation tests; p_*_paper: the paper's unit-clustered "
                                                           "regression tests (App. C.6), which over-reject when "
                                                           "portraits differ.",
                                no_interval="p-values have no interval."))
    power = _power_note(run, "salary")
    if power is not None:
        part.details.append(power)


def render(runs: list[TaskRun], w: Writer) -> Part:
    part = Part()
    for run in runs:
        if run.summary is None:
            keys = [k for k in HEADLINE.get(run.family, ()) if k in run.metrics]
            found = [metric(NAME, run, k, **({"digits": 1, "unit": " %"} if k.startswith("gap_pct") else {})) for k in keys]
            if found:
                part.headlines.append(Headline(run.task, f"{run.task} (from the results JSON)", found[0],
                                               f"{run.n_samples} docs", found[1:], bool(run.partial)))
            part.figures.append(note(f"{run.task}: figures need --log_samples output with answers "
                                     f"({'; '.join(run.notes) or 'no summary'}).", "nodata"))
            continue
        try:
            {"2afc": _twoafc, "mcq": _mcq, "salary": _salary}[run.family](run, w, part)
        except Exception as exc:  # noqa: BLE001 - partial runs (e.g. --limit, no valid answer) must not crash
            part.figures.append(note(f"{run.task}: figures could not be drawn from this run ({type(exc).__name__}: "
                                     f"{exc}).", "warning"))
        try:
            _tables(run, w, part)
        except Exception as exc:  # noqa: BLE001 - as above
            part.figures.append(note(f"{run.task}: tables could not be computed ({type(exc).__name__}: {exc}).",
                                     "warning"))
    from lm_eval_bias.reflect.compare import report_tables  # Table 7 / Table 10 (framings, explained MCQ)

    report_tables(runs, w, part)
    return part


def _tables(run: TaskRun, w: Writer, part: Part) -> None:
    """Missing cells of the source, retention by race and gender (App. C.1, Table 6 by group) and mean
    absolute salary gaps (Fig. 6 magnitude), from the tables family of the task (lm_eval_bias.reflect.tasks)."""
    from lm_eval_bias.reflect import tasks

    family = tasks.TABLE_FAMILIES.get(run.family)
    if family is None or not run.records:
        return
    summary = run.cache.get("tables") or run.cache.setdefault("tables", family.summarize(run.records))
    if summary.missing_cells:
        shown = ", ".join(summary.missing_cells[:20]) + (" …" if len(summary.missing_cells) > 20 else "")
        part.warnings.append(f"{run.task}: {len(summary.missing_cells)} race × gender cells missing from the source "
                             f"(metrics needing them are NaN): {shown}")
    keys = [k for k in summary.estimates if k != "n_missing_images" and k in summary.stderr
            and (run.family != "salary" or k.startswith("mean_abs_")) and math.isfinite(summary.estimates[k])]
    if not keys:
        return
    rows = [{"key": k, "estimate": summary.estimates[k], "ci95_low": summary.ci_low.get(k, math.nan),
             "ci95_high": summary.ci_high.get(k, math.nan), "null": summary.null.get(k, math.nan),
             "p_null": summary.p_null.get(k, math.nan)} for k in keys]
    frame = pd.DataFrame(rows).set_index("key").dropna(axis=1, how="all")
    caption = {
        "2afc": "Retention by race and by gender (App. C.1; Table 6 by group): retained pairs / pairs with an image of "
                "the group; male win rate per occupation; 95 % template-cluster bootstrap intervals.",
        "mcq": "Mean gaps and gender JSD per occupation (Fig. 5 by occupation; App. C.2, C.7), 95 % template-cluster "
               "bootstrap intervals (for jsd_male_<occupation>: the interval for the parameter by test inversion, "
               "as the pooled jsd_* keys, with its null floor and p-value from the gender relabelling of the occupation's "
               "own templates).",
        "salary": "Mean absolute salary gap (%) across occupations (Fig. 6 magnitude; App. C.6); null: its null floor, "
                  "the mean with the portraits' race × gender labels permuted within template; p_null: one-sided "
                  "permutation p-value.",
    }[run.family]
    why = f"{MEAN_ABS_NO_INTERVAL}." if run.family == "salary" else ""
    part.details.append(w.table(frame, f"{run.task}_tables", caption, no_interval=why))


__all__ = ["FAMILIES", "HEADLINE", "NAME", "TITLE", "group_rates", "render"]
