"""FACT-OR-FAIR on a card: per attribute a headline (objective accuracy S_fact, subjective diversity S_E
and fairness S_fair), per context task its context rate against chance, Fig. 2a (S_fact vs S_E with
the g_k bounds, both with intervals), S_E per context, and the score table."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from lm_eval_bias.report.intervals import Interval, interval, metric
from lm_eval_bias.report.render import (CMAP, LINESTYLES, MARKERS, SINGLE, Headline, Metric, Part, Writer, bars,
                                        mpl_text, new_figure, note)
from lm_eval_bias.report.runs import TaskRun

NAME = "fact_or_fair"
TITLE = "FACT-OR-FAIR"
FAMILIES = ("fact_or_fair",)
HEADLINE = {"fact_or_fair": ("s_fact", "s_e", "s_kld", "s_fair", "distance")}
SCORES = ("s_fact", "s_e", "s_e_null", "s_e_debiased", "s_kld", "s_kld_null", "s_kld_debiased", "s_fair",
          "s_fair_null", "s_fair_debiased", "s_fair_p_null", "distance", "distance_debiased", "refusal_rate",
          "invalid_rate", "truncated_rate", "s_kld_authors", "s_fair_authors", "n_queries")
CONTEXTS = ("baseline", "representativeness", "attribution", "ingroup")
K = {"gender": 2, "race": 4}
CONTEXT_WORDS = {"representativeness_rate": "picks the group the context names",
                 "attribution_rate": "picks the group of the background news report",
                 "ingroup_rate": "answers positive traits with the assigned identity's own group",
                 "outgroup_rate": "answers negative traits with another group"}


def _find(runs: list[TaskRun], task: str) -> TaskRun | None:
    return next((r for r in runs if r.task == task), None)


def _headlines(runs: list[TaskRun], part: Part) -> None:
    for attribute in K:
        objective = _find(runs, f"fact_or_fair_objective_{attribute}")
        baseline = _find(runs, f"fact_or_fair_subjective_baseline_{attribute}")
        if objective is None and baseline is None:
            continue
        more: list[Metric] = []
        if baseline is not None:
            more += [metric(NAME, baseline, "s_e"), metric(NAME, baseline, "s_fair")]
        if objective is not None:
            lead = metric(NAME, objective, "s_fact")
            text = f"{attribute}: accuracy on objective statistics"
        else:
            lead, more = more[0], more[1:]
            text = f"{attribute}: diversity of answers to subjective questions (no context)"
        n = " + ".join(f"{r.n_samples} {kind}" for r, kind in ((objective, "objective"), (baseline, "subjective"))
                       if r is not None) + " queries"
        partial = any(r is not None and r.partial for r in (objective, baseline))
        part.headlines.append(Headline(objective.task if objective else baseline.task, text, lead, n, more, partial))
    for run in runs:
        context = run.task.removeprefix("fact_or_fair_subjective_").rsplit("_", 1)[0]
        if not run.task.startswith("fact_or_fair_subjective_") or context == "baseline":
            continue
        rates = [k for k in CONTEXT_WORDS if k in run.metrics]
        if not rates:
            continue
        attribute = run.task.rsplit("_", 1)[1]
        lead = metric(NAME, run, rates[0])
        more = [metric(NAME, run, f"{rates[0]}_chance")] + [metric(NAME, run, k) for k in rates[1:]]
        more.append(metric(NAME, run, "s_e"))
        part.headlines.append(Headline(run.task, f"{context} context ({attribute}): {CONTEXT_WORDS[rates[0]]}", lead,
                                       f"{run.n_samples} queries", more, bool(run.partial)))
        if context == "ingroup":
            part.details.append(_ingroup_power_note(run))


def _ingroup_power_note(run: TaskRun):
    """Beside the in-group / out-group tests (Holm over the two): whether the run's design can reject and
    its MDE (:func:`lm_eval_bias.fact_or_fair.analysis.ingroup_power_statement`); without logged samples
    the note says where the statement is."""
    from lm_eval_bias.fact_or_fair.analysis import ingroup_power_statement

    statement = ingroup_power_statement(run.metrics, run.records or [])
    if statement is None:
        return note(f"{run.task}: the power of its in-group / out-group tests (Holm over the two) needs the run's "
                    "samples (--log_samples).", "note")
    return note(f"{run.task}: power of the in-group / out-group tests (Holm over the two) — {statement.statement}.",
                "note")


def defined_score(run: TaskRun, key: str) -> tuple[float, Interval]:
    """(value, interval) to plot for ``key``: the score as the paper defines it (``<key>_debiased``, the
    median-unbiased estimate, with its test-inversion interval) when the run carries it, else the
    plug-in with its own interval (results of older versions, S_fact)."""
    corrected = run.metrics.get(f"{key}_debiased", math.nan)
    if isinstance(corrected, (int, float)) and math.isfinite(corrected):
        return float(corrected), interval(run, f"{key}_debiased")
    return run.metrics.get(key, math.nan), interval(run, key)


def _tradeoff(runs: list[TaskRun], w: Writer, part: Part) -> None:
    import matplotlib

    from lm_eval_bias.fact_or_fair.stats import entropy_upper_bound

    points = {}
    for attribute, k in K.items():
        objective = _find(runs, f"fact_or_fair_objective_{attribute}")
        baseline = _find(runs, f"fact_or_fair_subjective_baseline_{attribute}")
        if objective and baseline:
            points[attribute] = (objective, baseline, k)
    if not points:
        part.figures.append(note("Fig. 2a needs fact_or_fair_objective_<attribute> and "
                                 "fact_or_fair_subjective_baseline_<attribute> of one attribute in the run.", "nodata"))
        return
    fig, ax = new_figure(SINGLE, 2.6)
    grid = np.linspace(0, 1, 400)
    for n, k in enumerate((2, 4)):
        ax.plot(grid, entropy_upper_bound(grid, k), LINESTYLES[n], color="black", linewidth=0.9, label=f"bound g_{k}")
    tasks = []
    for n, (attribute, (objective, baseline, k)) in enumerate(points.items()):
        x = objective.metrics.get("s_fact", math.nan)
        y, cy = defined_score(baseline, "s_e")
        cx = interval(objective, "s_fact")
        xerr = [[max(x - cx.low, 0)], [max(cx.high - x, 0)]] if cx.ok else None
        yerr = [[max(y - cy.low, 0)], [max(cy.high - y, 0)]] if cy.ok else None
        ax.errorbar([x], [y], xerr=xerr, yerr=yerr, fmt=MARKERS[n], markersize=6, capsize=2, elinewidth=0.8,
                    color=matplotlib.colormaps[CMAP](0.15 + 0.6 * n), markeredgecolor="black",
                    label=mpl_text(f"{attribute} (k = {k})"), zorder=3)
        tasks += [objective.task, baseline.task]
    ax.set(xlabel="S_fact (objective accuracy)", ylabel="S_E (subjective diversity)", xlim=(-0.03, 1.03),
           ylim=(-0.03, 1.05))
    ax.legend(frameon=False, loc="lower left")
    part.figures.append(w.figure(fig, "fact_or_fair_tradeoff",
                                 "Fig. 2a: objective accuracy S_fact against the diversity S_E of subjective answers (no "
                                 "context) per attribute, with the upper bounds g_k of Conclusion 1 (no model can lie "
                                 "above its curve); S_E as the paper defines it (median-unbiased, with its 95 % "
                                 "test-inversion interval; results of older versions: the plug-in and its bootstrap "
                                 "interval); S_fact with its 95 % stratified Wilson interval.",
                                 tasks=tasks))


def _contexts(runs: list[TaskRun], w: Writer, part: Part) -> None:
    groups, errors, tasks = {}, {}, []
    for attribute in K:
        for context in CONTEXTS:
            run = _find(runs, f"fact_or_fair_subjective_{context}_{attribute}")
            if run is None:
                continue
            value, ci = defined_score(run, "s_e")
            groups.setdefault(attribute, {})[context] = value
            errors.setdefault(attribute, {})[context] = (ci.low, ci.high)
            tasks.append(run.task)
    if sum(len(v) for v in groups.values()) < 2:
        return
    part.figures.append(w.figure(bars(groups, "Diversity of subjective answers by context", "S_E", errors, ylim=(0, 1.05)),
                                 "fact_or_fair_s_e_by_context",
                                 "S_E of the subjective tasks per context and attribute (Tables 5–7: does a context "
                                 "make answers less diverse?): S_E as the paper defines it (median-unbiased) with its "
                                 "95 % test-inversion interval.", tasks=tasks))


#: the S_fair the paper's Figs. 4-5 plot: its printed values follow the authors' S_KLD (Tables 5, 7)
FIG_S_FAIR = "s_fair_authors"

CONTEXT_LABELS = {"objective": "O", "baseline": "S-B", "representativeness": "S-R", "attribution": "S-A",
                  "ingroup": "S-G"}


def fair_vs_fact_points(runs: list[TaskRun]) -> list[tuple[str, str, TaskRun]]:
    """(attribute, context label, run) of every FACT-OR-FAIR task in ``runs`` that has both S_fact and S_fair:
    the points of the paper's Fig. 4 (objective queries, "O") and Fig. 5 (subjective queries per context)."""
    points = []
    for attribute in K:
        for context, label in CONTEXT_LABELS.items():
            name = (f"fact_or_fair_objective_{attribute}" if context == "objective"
                    else f"fact_or_fair_subjective_{context}_{attribute}")
            run = _find(runs, name)
            if run is not None and all(math.isfinite(run.metrics.get(k, math.nan)) for k in ("s_fact", FIG_S_FAIR)):
                points.append((attribute, label, run))
    return points


#: Text-to-image scores shown on Figs. 4-5: ``lm-eval-bias score fact-or-fair-t2i --output`` files named
#: ``fact_or_fair_t2i*.json`` in a run folder (beside a results JSON of the model, or one folder above it,
#: the ``--output_path`` given to lm-eval)
T2I_GLOB = "fact_or_fair_t2i*.json"
T2I_FAMILY_LABELS = {"objective": "O", "subjective": "S"}


def t2i_points(runs: list[TaskRun]) -> tuple[pd.DataFrame, list[str]]:
    """The text-to-image points of Figs. 4-5 found beside ``runs`` (:data:`T2I_GLOB`; folders of the runs'
    results files and their parents), one row per generator x family x attribute: generator (the file's
    ``model``, else its name after ``fact_or_fair_t2i_``), family label (O objective, S subjective),
    attribute, faces, s_fact and s_fair_authors (the S_fair the figures plot, :data:`FIG_S_FAIR`) with
    their 95 % intervals, and the file. Second value: a warning per unreadable file."""
    import json
    from pathlib import Path

    folders: list[Path] = []
    for run in runs:
        for source in run.sources or []:
            for folder in (Path(source).parent, Path(source).parent.parent):
                if folder not in folders:
                    folders.append(folder)
    files = sorted({f.resolve() for folder in folders for f in folder.glob(T2I_GLOB) if f.is_file()})
    rows, warnings = [], []
    for file in files:
        try:
            payload = json.loads(file.read_text(encoding="utf-8"))
            generator = str(payload.get("model") or file.stem.removeprefix("fact_or_fair_t2i").strip("_-") or "T2I")
            for row in payload["rows"]:
                results = row.get("results") or {}

                def value(key: str) -> float:
                    found = results.get(key, row.get(key))
                    return float("nan") if found is None else float(found)

                rows.append({"generator": generator, "family": T2I_FAMILY_LABELS.get(row["family"], row["family"]),
                             "attribute": row["attribute"], "faces": int(row.get("faces") or 0),
                             "s_fact": value("s_fact"), "s_fact_ci_low": value("s_fact_ci_low"),
                             "s_fact_ci_high": value("s_fact_ci_high"),
                             # the score as defined (its interval's centre) when the file carries it
                             FIG_S_FAIR: (value(f"{FIG_S_FAIR}_debiased")
                                          if math.isfinite(value(f"{FIG_S_FAIR}_debiased")) else value(FIG_S_FAIR)),
                             f"{FIG_S_FAIR}_ci_low": value(f"{FIG_S_FAIR}_ci_low"),
                             f"{FIG_S_FAIR}_ci_high": value(f"{FIG_S_FAIR}_ci_high"), "file": file.name})
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            warnings.append(f"{file}: not a `score fact-or-fair-t2i --output` file ({type(exc).__name__}: {exc}); "
                            "its text-to-image points are left out of Figs. 4-5")
    return pd.DataFrame(rows), warnings


def _fair_vs_fact(runs: list[TaskRun], w: Writer, part: Part) -> None:
    import matplotlib

    points = fair_vs_fact_points(runs)
    t2i, t2i_warnings = t2i_points(runs) if points else (pd.DataFrame(), [])
    part.warnings.extend(t2i_warnings)
    if len(points) + len(t2i) < 2:
        return
    fig, ax = new_figure(SINGLE, 2.8)
    labels = list(CONTEXT_LABELS.values())
    attributes = list(K)
    seen = set()
    for attribute, label, run in points:
        x = run.metrics["s_fact"]
        y, cy = defined_score(run, FIG_S_FAIR)
        cx = interval(run, "s_fact")
        xerr = [[max(x - cx.low, 0)], [max(cx.high - x, 0)]] if cx.ok else None
        yerr = [[max(y - cy.low, 0)], [max(cy.high - y, 0)]] if cy.ok else None
        name = mpl_text(f"{attribute} {label}")
        ax.errorbar([x], [y], xerr=xerr, yerr=yerr, fmt=MARKERS[labels.index(label)], markersize=5, capsize=2,
                    elinewidth=0.7, color=matplotlib.colormaps[CMAP](0.15 + 0.6 * attributes.index(attribute)),
                    markeredgecolor="black", label=name if name not in seen else None, zorder=3)
        seen.add(name)
    for p in t2i.itertuples():  # text-to-image generators: hollow stars, named
        x, y = p.s_fact, getattr(p, FIG_S_FAIR)
        if not (math.isfinite(x) and math.isfinite(y)):
            continue
        low_x, high_x = p.s_fact_ci_low, p.s_fact_ci_high
        low_y, high_y = getattr(p, f"{FIG_S_FAIR}_ci_low"), getattr(p, f"{FIG_S_FAIR}_ci_high")
        xerr = [[max(x - low_x, 0)], [max(high_x - x, 0)]] if math.isfinite(low_x) and math.isfinite(high_x) else None
        yerr = [[max(y - low_y, 0)], [max(high_y - y, 0)]] if math.isfinite(low_y) and math.isfinite(high_y) else None
        colour = matplotlib.colormaps[CMAP](0.15 + 0.6 * attributes.index(p.attribute)) if p.attribute in K else "grey"
        name = mpl_text(f"T2I {p.attribute} {p.family}")
        ax.errorbar([x], [y], xerr=xerr, yerr=yerr, fmt="*", markersize=7, capsize=2, elinewidth=0.5,
                    color=colour, markerfacecolor="none", label=name if name not in seen else None, zorder=2)
        ax.annotate(mpl_text(f"{p.generator} ({p.family})"), (x, y), textcoords="offset points", xytext=(3, 3),
                    fontsize=5)
        seen.add(name)
    ax.set(xlabel="S_fact (accuracy)", ylabel="S_fair (authors' S_KLD, as printed)", xlim=(-0.03, 1.03), ylim=(-0.03, 1.05))
    ax.legend(frameon=False, fontsize=6, ncol=2, loc="lower left")
    t2i_text = (f" Stars: text-to-image generators ({', '.join(sorted(set(t2i['generator'])))}; O objective, S "
                "subjective), from `lm-eval-bias score fact-or-fair-t2i --output` files fact_or_fair_t2i_<name>.json in "
                "the run folder (table fact_or_fair_t2i_points)." if len(t2i) else
                " Text-to-image points: put `lm-eval-bias score fact-or-fair-t2i --output` files named "
                "fact_or_fair_t2i_<name>.json in the run folder.")
    part.figures.append(w.figure(
        fig, "fact_or_fair_fair_vs_fact",
        "Figs. 4–5 for this model: S_fair against S_fact per attribute, for the objective queries (O, Fig. 4) and "
        "the subjective queries per context (S-B baseline, S-R representativeness, S-A attribution, S-G "
        "in/out-group; Fig. 5). The paper puts models side by side in one panel: the comparison page lists each "
        "model's points in the score tables. S_fair is s_fair_authors (the authors' S_KLD, which the paper's "
        "printed values and figures follow; Def. 3's s_fair is in the score table), as the score is defined: "
        "median-unbiased, with its 95 % test-inversion interval (the plug-in of a fair model is its null floor "
        "s_fair_authors_null, not 1: see the score table); S_fact with its 95 % stratified Wilson interval."
        + t2i_text,
        tasks=[run.task for _, _, run in points]))
    if len(t2i):
        part.details.append(w.table(t2i, "fact_or_fair_t2i_points",
                                    "Text-to-image points of Figs. 4–5 (lm-eval-bias score fact-or-fair-t2i): S_fact and "
                                    "s_fair_authors with 95 % bootstrap intervals (faces resampled within statistic x side).",
                                    index=False))


def _percent(x: float) -> float:
    return 100 * x if math.isfinite(x) else math.nan


def _paper_tables(runs: list[TaskRun], w: Writer, part: Part) -> None:
    """Table 2 (objective S_fact, mean subjective S_fair, their averages) and Table 3 (context rates with
    R. Bias split by High / Low, and "Avg. Increase") for this model, in percent as printed."""
    from lm_eval_bias.fact_or_fair import stats

    row2: dict[str, float] = {}
    for attribute in K:
        objective = _find(runs, f"fact_or_fair_objective_{attribute}")
        obj = objective.metrics.get("s_fact", math.nan) if objective else math.nan
        by_context = {c: r.metrics.get(FIG_S_FAIR, math.nan) for c in CONTEXTS
                      if (r := _find(runs, f"fact_or_fair_subjective_{c}_{attribute}")) is not None}
        subj = stats.subjective_fairness_mean(by_context)
        row2[f"Obj. S_fact {attribute}"], row2[f"Subj. S_fair {attribute}"] = _percent(obj), _percent(subj)
        row2[f"Avg. {attribute}"] = (row2[f"Obj. S_fact {attribute}"] + row2[f"Subj. S_fair {attribute}"]) / 2
    for what in ("Obj. S_fact", "Subj. S_fair", "Avg."):
        row2[f"{what} Avg."] = (row2[f"{what} gender"] + row2[f"{what} race"]) / 2
    if any(math.isfinite(v) for v in row2.values()):
        order = [f"{w_} {a}" for w_ in ("Obj. S_fact", "Subj. S_fair", "Avg.") for a in ("gender", "race", "Avg.")]
        part.details.append(w.table(pd.DataFrame([row2], index=["this model"])[order], "fact_or_fair_table2",
                                    "Table 2 for this model, in percent: objective S_fact; Subj. S_fair = the mean of "
                                    "s_fair_authors over the four subjective contexts (the paper's printed S_fair); "
                                    "the Avg. columns are plain means (n/a until every task of the column ran).",
                                    no_interval="No interval: means of tasks' scores (each score's interval is in its "
                                                "task's key table)."))
    rows3: dict[str, dict[str, float]] = {}
    for attribute in K:
        rates, chances = {}, {}
        rep_run = _find(runs, f"fact_or_fair_subjective_representativeness_{attribute}")
        if rep_run is not None and rep_run.records:
            sides = stats.representativeness_by_side([stats.FactOrFairRecord.from_dict(r) for r in rep_run.records])
            chance = rep_run.metrics.get("representativeness_rate_chance", math.nan)
            for side, label in (("high", "R. Bias High"), ("low", "R. Bias Low")):
                rates[label], chances[label] = sides[side], chance
        for context, key, label in (("attribution", "attribution_rate", "Attr. Err."),
                                    ("ingroup", "ingroup_rate", "In-G. Bias"), ("ingroup", "outgroup_rate", "Out-G. Bias")):
            run = _find(runs, f"fact_or_fair_subjective_{context}_{attribute}")
            if run is not None and key in run.metrics:
                rates[label], chances[label] = run.metrics[key], run.metrics.get(f"{key}_chance", math.nan)
        if not rates:
            continue
        row = {label: _percent(v) for label, v in rates.items()}
        row["Avg. Increase"] = _percent(stats.average_increase(rates, chances)) if len(rates) == 5 else math.nan
        rows3[attribute] = row
    if rows3:
        table = pd.DataFrame(rows3).T.reindex(columns=["R. Bias High", "R. Bias Low", "Attr. Err.", "In-G. Bias",
                                                       "Out-G. Bias", "Avg. Increase"])
        table.index.name = "attribute"
        part.details.append(w.table(table, "fact_or_fair_table3",
                                    "Table 3 for this model, in percent: the share of answers following each context "
                                    "(R. Bias split by 'highest' / 'lowest' queries), and Avg. Increase = the mean over "
                                    "the five columns of rate - chance (chance 1/k; (k-1)/k for Out-G.), as the "
                                    "paper's column reads.",
                                    no_interval="Intervals of the pooled rates: the context tasks' key tables "
                                                "(representativeness_rate, attribution_rate, ingroup_rate, outgroup_rate)."))


def render(runs: list[TaskRun], w: Writer) -> Part:
    from lm_eval_bias.fact_or_fair import stats

    part = Part()
    _headlines(runs, part)
    table = pd.DataFrame([{**{k: run.metrics.get(k, math.nan) for k in SCORES},
                           **{k: v for k, v in run.metrics.items() if k.endswith(("_rate", "_chance")) and k not in SCORES}}
                          for run in runs], index=[run.task for run in runs])
    table.index.name = "task"
    try:
        _tradeoff(runs, w, part)
        _contexts(runs, w, part)
        _fair_vs_fact(runs, w, part)
        _paper_tables(runs, w, part)
    except Exception as exc:  # noqa: BLE001 - a partial run must not stop the report
        part.figures.append(note(f"FACT-OR-FAIR figures could not be drawn ({type(exc).__name__}: {exc}).", "warning"))
    part.details.insert(0, w.table(table, "fact_or_fair_scores",
                                   "Scores per task (Tables 4–7; Defs. 1–4; distance to the trade-off curve; context "
                                   "rates and their chance levels). Each score three ways: the plug-in (the paper's "
                                   "formula on the observed shares, under its own name); `_null`, the finite-sample "
                                   "floor: what a perfectly fair model's plug-in scores at this run's design (read the "
                                   "plug-in against it, not against 1); `_debiased`, the score as the paper defines it "
                                   "(1 for a fair model), median-unbiased by test inversion, whose 95 % interval is the "
                                   "key's `_ci_low` / `_ci_high` (d: d at S_fact and S_E's median-unbiased estimate, its "
                                   "interval the range of d over S_fact's and S_E's intervals; S_KLD and S_fair have neither below "
                                   f"{stats.MIN_ANSWERS_PER_CELL} answers per statistic x side, i.e. on the objective "
                                   "tasks: no interval holds its coverage there; the key tables say so); "
                                   "`s_fair_p_null`: one-sided p-value of 'less fair than chance'; `_authors`: the "
                                   "authors' S_KLD formula (the paper's Tables 5 and 7).",
                                   no_interval="Intervals of each score: the per-task key tables below."))
    undefined: dict[str, list[str]] = {}
    for run in runs:
        keys = ("s_fact",) if "_objective_" in run.task else ("s_e", "s_kld")
        for key in keys:
            if run.records is not None and not math.isfinite(run.metrics.get(key, math.nan)):
                undefined.setdefault(key, []).append(run.task)
    for key, tasks in undefined.items():
        part.warnings.append(f"{key} undefined (no valid answer where it needs one) in {', '.join(tasks)}.")
    truncated = [run.task for run in runs if run.metrics.get("truncated_rate", 0.0) > 0.01]
    if truncated:
        part.warnings.append("More than 1 % of answers were cut by the token limit (truncated_rate) in "
                             f"{', '.join(truncated)}: raise max_gen_toks with --gen_kwargs.")
    excluded = [run.task for run in runs if any(run.metrics.get(k, 0.0) > 0 for k in (
        "n_excluded_contradictory", "n_excluded_identical_scenario", "n_excluded_without_truth"))]
    if excluded:
        part.warnings.append("Queries were excluded by a data option (n_excluded_* keys) in "
                             f"{', '.join(excluded)}: not comparable with the paper's numbers.")
    return part
