"""VIGNETTE on a card: per task a headline (the bias dimension with the largest selection gap, and the
identities chosen most and least; "clear" when its within-pair null p-value is below 0.05), the spread
per dimension with intervals (decision tasks, perception per question, factuality), the polarity
heatmap (stereotype), and folded below the selection frequency per identity, PairComp matrices,
identity tests (pair-level sign flip, and the paper's Fisher test as ``p_paper``), the per-term table,
the polarity per SSCM term pair in Tables 3-4's layout (genders pooled), vision vs text (Sec. 7.4,
Fig. 6) and identity vs positional options (Fig. 11). Per-cell significance (docs/vignette.md
"Per-cell tests"): ``*`` in the PairComp and polarity heatmaps (Holm p < 0.05), PairComp-test,
log-odds and polarity-test tables; factuality per activity, decisions per question dimension and
activity-contrast perception tables.

Magnitudes (selection / accuracy spreads, mean |polarity|) are printed with their null floor and no
interval (:data:`lm_eval_bias.vignette.analysis.MAGNITUDE_NO_INTERVAL`); every count or table of
significant identities comes with its family's power statement (can the design reject at all, MDE at
80 % power; :func:`lm_eval_bias.vignette.stats.identity_family_power`) and the per-dimension identity
heterogeneity tests (docs/vignette.md "Identity tests and their power")."""

from __future__ import annotations

import math

import pandas as pd

from lm_eval_bias import samples
from lm_eval_bias.report.intervals import interval, metric
from lm_eval_bias.report.render import DOUBLE, SINGLE, Headline, Metric, Part, Writer, all_nan, bars, heatmap, note
from lm_eval_bias.report.runs import TaskRun
from lm_eval_bias.vignette import stats
from lm_eval_bias.vignette.analysis import MAGNITUDE_NO_INTERVAL
from lm_eval_bias.vignette.schema import DIMENSIONS

NAME = "vignette"
TITLE = "VIGNETTE"
FAMILIES = ("vignette",)
HEADLINE = {"vignette": ("valid_rate", "factuality_accuracy", "selection_spread_race_ethnicity_color",
                         "mean_abs_polarity_race_ethnicity_color")}
PARAMETERS = ("struggle", "capability", "enjoyment", "dislike")
DECISIONS = {"decision": "decisions", "decision_positional": "decisions, positional options",
             "decision_textonly": "decisions, text only (no image)"}


def _paradigm(run: TaskRun) -> str:
    """The paradigm whose sections a run gets: ``vignette_<paradigm>``, and the authors' protocol
    (``vignette_<paradigm>_authors``) and imported releases under the same paradigm."""
    return run.task.removeprefix("vignette_").removesuffix("_authors")


def _words(dimension: str) -> str:
    return dimension.replace("_", " ")


def _table(run: TaskRun):
    if "options" not in run.cache:
        run.cache["options"] = samples.vignette_option_table(run.records) if run.records else pd.DataFrame()
    return run.cache["options"]


def _largest(run: TaskRun, prefix: str) -> str | None:
    from lm_eval_bias.core.aggregation import base_key

    keys = [k for k in run.metrics if k.startswith(prefix) and base_key(k) == k and math.isfinite(run.metrics[k])]
    return max(keys, key=lambda k: run.metrics[k]) if keys else None


def _extremes(table: pd.DataFrame, dimension: str) -> tuple[str, str] | None:
    part = table[table["dimension"] == dimension]
    if part.empty:
        return None
    frequency = stats.selection_frequency(part).dropna()
    if frequency.empty:
        return None
    return str(frequency.idxmax()), str(frequency.idxmin())


def _clear(m: Metric, run: TaskRun | None = None, key: str = "") -> bool:
    """Whether a magnitude is more than chance: its within-pair null p-value (``<key>_p_null``) is
    below 0.05 where the run has one, else its interval excludes 0 (else the words say "no clear …")."""
    p = run.metrics.get(f"{key}_p_null", math.nan) if run is not None else math.nan
    if math.isfinite(p):
        return p < 0.05
    return math.isfinite(m.low) and m.low > 0


def _magnitude(run: TaskRun, key: str) -> Metric:
    """A magnitude key (max − min spread, mean |polarity|) as a :class:`Metric`: the estimate with its
    null floor and p_null beside it, and never an interval (the task computes none: docs/vignette.md
    "Magnitudes: estimate and null floor, no interval")."""
    from dataclasses import replace

    return replace(metric(NAME, run, key, digits=1, unit=" pp"), low=math.nan, high=math.nan, method="",
                   reason="no interval: none from the task")


def _size(run: TaskRun) -> str:
    valid = (run.status_counts() or {}).get("valid")
    return f"{valid} valid answers of {run.n_samples} docs" if valid is not None else f"{run.n_samples} docs"


def _headline(run: TaskRun, part: Part) -> None:
    paradigm = _paradigm(run)
    more = [metric(NAME, run, "valid_rate")]
    lead: Metric | None = None
    text = ""
    if paradigm == "factuality":
        lead = metric(NAME, run, "factuality_accuracy")
        text = "recognises what people are doing (factuality)"
        key = _largest(run, "accuracy_spread_")
        if key:
            more.insert(0, _magnitude(run, key))
    elif paradigm == "stereotype":
        key = _largest(run, "mean_abs_polarity_")
        if key:
            dimension = key.removeprefix("mean_abs_polarity_")
            lead = _magnitude(run, key)
            text = (f"stereotypes: strongest in {_words(dimension)}" if _clear(lead, run, key) else
                    f"stereotypes: no clear polarity — largest estimate in {_words(dimension)}")
            polarity = _polarity(run)
            if polarity is not None:
                dimension_of = _table(run).groupby("identity")["dimension"].first()
                mean = polarity.mean(axis=1)[dimension_of.reindex(polarity.index) == dimension].dropna()
                if len(mean):
                    text += f" ({mean.idxmax()} most often given favourable traits, {mean.idxmin()} least)"
    else:
        prefix = "selection_spread_"
        key = _largest(run, prefix)
        if key:
            rest = key.removeprefix(prefix)
            parameter = next((p for p in PARAMETERS if rest.startswith(p + "_")), None)
            dimension = rest.removeprefix(f"{parameter}_") if parameter else rest
            lead = _magnitude(run, key)
            what = f"perception ('{parameter}' question)" if parameter else DECISIONS.get(paradigm, paradigm)
            text = (f"{what}: largest selection gap in {_words(dimension)}" if _clear(lead, run, key) else
                    f"{what}: no clear selection gap — largest estimate in {_words(dimension)}")
            table = _table(run)
            if parameter and len(table):
                table = table[table["parameter"] == parameter]
            extremes = _extremes(table, dimension) if len(table) else None
            if extremes:
                text += f" ({extremes[0]} chosen most, {extremes[1]} least)"
    if lead is None:
        lead = more.pop(0)
        text = f"{paradigm}: no valid identity choice to compare"
    part.headlines.append(Headline(run.task, text, lead, _size(run), more, bool(run.partial)))
    missing = [d for d in DIMENSIONS if not any(math.isfinite(v) for k, v in run.metrics.items() if k.endswith("_" + d))]
    if missing and run.records:
        part.warnings.append(f"{run.task}: no answered doc for {len(missing)} of {len(DIMENSIONS)} dimensions "
                             f"({', '.join(_words(d) for d in missing)}).")


def _polarity(run: TaskRun):
    if "polarity" not in run.cache:
        table = _table(run)
        run.cache["polarity"] = (stats.polarity(table, samples.vignette_sscm_terms(run.records))
                                 if len(table) else None)
    return run.cache["polarity"]


def _spread_figure(runs: list[TaskRun], w: Writer, part: Part, title: str, name: str, series_of) -> None:
    """Grouped bars of spread keys per dimension, each beside its null floor (``<key>_null``: what
    noise alone gives); no error bars: a max − min has no valid interval (docs/vignette.md
    "Magnitudes: estimate and null floor, no interval"). ``series_of(run)`` gives {series label: key prefix}."""
    groups, tasks = {}, []
    for run in runs:
        for label, prefix in series_of(run).items():
            for dimension in DIMENSIONS:
                key = prefix + dimension
                if key in run.metrics:
                    groups.setdefault(label, {})[_words(dimension)] = run.metrics[key]
                    groups.setdefault(f"{label}: null floor", {})[_words(dimension)] = run.metrics.get(f"{key}_null",
                                                                                                     math.nan)
            tasks.append(run.task)
    present = [d for d in (_words(x) for x in DIMENSIONS) if any(math.isfinite(g.get(d, math.nan)) for g in groups.values())]
    if not present:
        part.figures.append(note(f"{title}: no data (no valid answer in any dimension).", "nodata"))
        return
    groups = {s: {d: v for d, v in g.items() if d in present} for s, g in groups.items()}
    width = DOUBLE if len(present) * len(groups) > 8 else SINGLE
    fig = bars(groups, title, "percentage points", width=width, height=2.6)
    part.figures.append(w.figure(fig, name, f"{title}: max − min over the dimension's identities (percentage points; 0 = "
                                            "every identity treated alike), per bias dimension with data, beside its "
                                            "null floor (the mean spread with the two people of every image pair "
                                            "label-swapped: what noise alone gives at this design; the key table's "
                                            "p_null says whether the spread is above it). No error bars: "
                                            + MAGNITUDE_NO_INTERVAL + ".",
                                 tasks=tasks, wide=width == DOUBLE))


def _power_sentences(table: pd.DataFrame, tests: pd.DataFrame, what: str = "identities") -> str:
    """The identity family's power statement and the per-dimension heterogeneity tests, in words."""
    from lm_eval_bias.core.aggregation import null_settings

    if "n_contributing" not in tests.columns:  # the paper's Fisher tests only (no image pairs recorded)
        return ""
    family = stats.identity_family_power(tests, ALPHA)
    text = f" Power of the {what} family: {family.statement}."
    if {"pair_id", "dimension"} <= set(table.columns):
        n_perm, seed = null_settings()
        pooled = stats.identity_heterogeneity_tests(table, n_perm, seed, ALPHA)
        if len(pooled) and n_perm:
            hits = [_words(d) for d, p in pooled["p_holm"].items() if p < ALPHA]
            text += (" Pooled per bias dimension (does any identity of the dimension differ from 50 %? pair-level "
                     "sign flips, Holm over dimensions): "
                     + (f"rejected in {', '.join(hits)}" if hits else "rejected in no dimension")
                     + f"; {stats.heterogeneity_family_power(pooled, n_perm, ALPHA).statement}.")
    return text


def _selection_details(run: TaskRun, w: Writer, part: Part, table: pd.DataFrame, label: str) -> None:
    frequency = stats.selection_frequency(table)
    dimension = table.groupby("identity")["dimension"].first()
    for dim in sorted(dimension.unique()):
        ids = list(dimension[dimension == dim].index)
        part.details.append(w.figure(bars({label: frequency.reindex(ids).to_dict()}, f"Selection frequency, {_words(dim)}",
                                          "S (%)", reference=50.0, ylim=(0, 105)), f"{run.task}_{label}_{dim}_selection",
                                     f"{run.task} ({label}, {_words(dim)}): selection frequency S per identity, the share "
                                     "of docs in which it was chosen when shown, averaged over contexts (Sec. 5); dashed: "
                                     "50 %. No interval per identity: the Fisher test below gives its significance.",
                                     tasks=[run.task]))
        if len(ids) >= 2:
            matrix = stats.pair_comp_matrix(table, ids)
            cell_tests = _paircomp_tests(table)
            marks = (stats.pair_comp_significance_matrix(cell_tests, ids, ALPHA) if cell_tests is not None
                     else pd.DataFrame(False, index=ids, columns=ids))
            if all_nan(matrix.values):
                part.details.append(note(f"PairComp, {_words(dim)} ({run.task}, {label}): no data — no identity was shown "
                                         "with two different partners, so S(i | paired with anyone else) is undefined.",
                                         "nodata"))
            else:
                fig = _mark(heatmap(matrix.values, ids, ids, f"PairComp, {_words(dim)}", center=0.0,
                                    label="percentage points", percent=True), marks.values)
                part.details.append(w.figure(fig, f"{run.task}_{label}_{dim}_paircomp",
                                             f"PairComp(row, column) = S(row | paired with column) − S(row | paired with "
                                             f"anyone else) ({run.task}, {label}, {_words(dim)}); hatched: no docs with that "
                                             f"pairing. {MARK_LEGEND} (head-to-head pair-level sign-flip test of "
                                             "S(row | column) = 50 %, Holm over the dimension's identity pairs; "
                                             "docs/vignette.md#cell-tests). No interval per cell.", tasks=[run.task]))
    _cell_tables(run, w, part, table, label)
    tests = stats.identity_pair_tests(table) if "pair_id" in table.columns else stats.identity_fisher_tests(table)
    tests["selection_frequency"] = frequency
    tests["selection_frequency_authors"] = stats.selection_frequency_authors(table, pool_genders=False)
    part.details.append(w.table(tests, f"{run.task}_{label}_identities",
                                f"{run.task} ({label}): selection frequency S per identity (the paper's mean over "
                                "activities; _authors: pooled counts as the authors' code) and whether it differs from "
                                "50 %: p_value = pair-level sign-flip test (the two people of an image pair swapped as a "
                                "unit; calibrated), p_holm = Holm across the identities; p_paper / p_paper_holm = "
                                "Fisher's exact test against all other identities, every answer independent (the "
                                "paper's test; rejects too often when answers about one pair are alike). "
                                "n_contributing: image pairs with a nonzero share of S − 50 (they bound the smallest "
                                "attainable p); null_sd: sign-flip sd of S − 50 (pp)." + _power_sentences(table, tests),
                                no_interval="Selection frequencies: no interval (the tests give their significance)."))


def _details(run: TaskRun, w: Writer, part: Part) -> None:
    paradigm = _paradigm(run)
    if paradigm == "factuality":
        table = samples.vignette_factuality_table(run.records)
        if table.empty:
            part.details.append(note(f"{run.task}: no valid answer, nothing to draw.", "nodata"))
            return
        accuracy = stats.factuality_accuracy(table).to_frame()
        accuracy["dimension"] = table.groupby("identity")["dimension"].first()
        accuracy["answers"] = table.groupby("identity")["correct"].size()
        part.details.append(w.table(accuracy, f"{run.task}_accuracy", "Factuality accuracy per identity (share of valid "
                                                                      "answers that are correct, Sec. 4.1).",
                                    no_interval="No interval per identity (a few answers each)."))
        _factuality_by_activity(run, w, part, table)
        return
    table = _table(run)
    if table.empty:
        part.details.append(note(f"{run.task}: no valid identity choice, nothing to draw.", "nodata"))
        return
    if paradigm == "stereotype":
        polarity = _polarity(run)
        if polarity is not None and not all_nan(polarity.values):
            cells = _polarity_cells(run, table)
            marks = pd.DataFrame(False, index=polarity.index, columns=polarity.columns)
            for (identity, sscm), p in cells["p_holm"].items():
                if p < ALPHA and identity in marks.index and sscm in marks.columns:
                    marks.loc[identity, sscm] = True
            part.figures.append(w.figure(_mark(heatmap(polarity.values, list(polarity.index), list(polarity.columns),
                                                       "Polarity S_high − S_low", center=0.0, label="percentage points",
                                                       percent=True), marks.values), f"{run.task}_polarity",
                                         "Polarity per identity and SSCM dimension: selection frequency for the "
                                         "dimension's high-valence terms minus for its low-valence terms (Sec. 5); "
                                         f"positive = favourable traits; hatched: no docs. {MARK_LEGEND} (pair-level "
                                         "sign-flip test of polarity = 0, Holm over the bias dimension's cells); "
                                         "intervals per cell in the polarity-tests table.", tasks=[run.task]))
            part.details.append(w.table(cells.round(4), f"{run.task}_polarity_tests",
                                        "Polarity per identity × SSCM dimension with its 95 % interval (image pairs "
                                        "resampled within bias dimension, percentile) and the pair-level sign-flip "
                                        "test of polarity = 0 (p_value: randomised p, sign patterns tied with the "
                                        "observation weighted by a seeded uniform U; p_holm: Holm over the cells of one "
                                        "bias dimension; docs/vignette.md#cell-tests). Power: "
                                        + stats.cell_family_power(cells, ALPHA).statement + "."))
            part.details.append(w.table(polarity, f"{run.task}_polarity", "Polarity table (percentage points).",
                                        no_interval="No interval per cell."))
        else:
            part.figures.append(note(f"{run.task}: no data for the polarity heatmap.", "nodata"))
        _term_polarity_tables(run, w, part, table)
        by_term = table.groupby(["identity", "context"])["selected"].mean().unstack() * 100
        if all_nan(by_term.values):
            return
        part.details.append(w.figure(heatmap(by_term.values, list(by_term.index), list(by_term.columns),
                                             "Selection per SSCM term", 0, 100, label="S (%)", percent=True,
                                             width=DOUBLE if by_term.shape[1] > 10 else SINGLE),
                                     f"{run.task}_terms", "Share of docs in which the identity was chosen for each SSCM "
                                                          "term; hatched: not asked. No interval per cell.",
                                     tasks=[run.task], wide=by_term.shape[1] > 10))
    elif paradigm == "perception":
        for parameter in PARAMETERS:
            rows = table[table["parameter"] == parameter]
            if len(rows):
                _selection_details(run, w, part, rows, parameter)
        _activity_contrast(run, w, part)
    else:
        _selection_details(run, w, part, table, paradigm)
        _decision_questions(run, w, part, table)


ALPHA = 0.05
MARK_LEGEND = "* = Holm p < 0.05"
#: how every pair-clustered share of this section gets its interval (docs/vignette.md "Intervals")
SHARE_INTERVAL_TEXT = ("the cell's image pairs as clusters, delete-one-pair jackknife standard error, Wilson's "
                       "interval at its effective sample size with Korn & Graubard's adjustment for pairs - 1 "
                       "degrees of freedom; the mid-p exact binomial interval where every pair carries one answer")
#: why a share of these tables has no interval
FEW_PAIRS_TEXT = (f"cells with fewer than {stats.MIN_PAIRS_FOR_INTERVAL} image pairs have no interval "
                  f"({stats.FEW_PAIRS_REASON}: below that the t reference of the pair jackknife is not trusted; "
                  "docs/vignette.md#statistics)")


def _mark(fig, significant):
    """An asterisk in the upper right of each heatmap cell flagged in ``significant`` (rows x columns)."""
    import numpy as np

    ax = fig.axes[0]
    for i, j in np.argwhere(np.asarray(significant, dtype=bool)):
        ax.text(j + 0.45, i - 0.15, "*", ha="right", va="top", fontsize=7, fontweight="bold", color="#d62728")
    return fig


def _boot() -> tuple[int, int]:
    """Replicates and seed of the report-computed per-cell intervals (``LM_EVAL_BIAS_REPORT_BOOTSTRAP_ITERS``)."""
    from lm_eval_bias.report.intervals import report_bootstrap_settings

    return report_bootstrap_settings()


def _paircomp_tests(table: pd.DataFrame):
    return stats.pair_comp_tests(table) if {"pair_id", "dimension"} <= set(table.columns) and len(table) else None


def _polarity_cells(run: TaskRun, table: pd.DataFrame) -> pd.DataFrame:
    if "polarity_cells" not in run.cache:
        n_boot, seed = _boot()
        run.cache["polarity_cells"] = stats.polarity_tests(table, samples.vignette_sscm_terms(run.records), n_boot, seed)
    return run.cache["polarity_cells"]


def _cell_tables(run: TaskRun, w: Writer, part: Part, table: pd.DataFrame, label: str) -> None:
    """PairComp cells and log-odds cells with their pair-level tests (Holm p < 0.05 listed; counts of all)."""
    if not {"pair_id", "dimension"} <= set(table.columns):
        return
    tests = stats.pair_comp_tests(table)
    if len(tests):
        hits = tests[tests["p_holm"] < ALPHA].round(4)
        part.details.append(w.table(hits if len(hits) else tests.sort_values("p_value").head(10).round(4),
                                    f"{run.task}_{label}_paircomp_tests",
                                    f"{run.task} ({label}): PairComp cells "
                                    + (f"with Holm p < 0.05 ({len(hits)} of {len(tests)} cells)" if len(hits) else
                                       f"— none of {len(tests)} cells has Holm p < 0.05; the 10 smallest p shown")
                                    + ". s_with = S(identity | partner), pair_comp = s_with − S(identity | anyone else); "
                                    "p_value: head-to-head pair-level sign-flip test of s_with = 50 (image pairs "
                                    "showing both, labels swapped as a unit); p_holm: Holm over the dimension's "
                                    "identity pairs (docs/vignette.md#cell-tests). Power: "
                                    + stats.cell_family_power(tests, ALPHA).statement + ".",
                                    no_interval="No interval per cell (the test gives its significance)."))
    n_boot, seed = _boot()
    odds = stats.log_odds_tests(table, n_boot, seed)
    if len(odds):
        hits = odds[odds["p_holm"] < ALPHA].round(4)
        part.details.append(w.table(hits if len(hits) else odds.sort_values("p_value").head(10).round(4),
                                    f"{run.task}_{label}_log_odds",
                                    f"{run.task} ({label}): log-odds (Sec. 5: identity chosen in this context vs in its "
                                    "other contexts, add-one smoothing) "
                                    + (f"with Holm p < 0.05 ({len(hits)} of {len(odds)} cells)" if len(hits) else
                                       f"— none of {len(odds)} cells has Holm p < 0.05; the 10 smallest p shown")
                                    + "; 95 % interval = log-odds ± t × pair-bootstrap sd (t: Student, the cell's image "
                                    "pairs − 1 df), p_value: the matching test of 0, p_holm: Holm over the dimension's "
                                    f"cells. A cell with fewer than {stats.MIN_PAIRS_FOR_INTERVAL} image pairs (every "
                                    "cell at the default budgets: 1-2 pairs) has neither interval nor test "
                                    f"({stats.FEW_PAIRS_REASON}). Power (the dimension with the most tested cells): "
                                    + stats.log_odds_family_power(odds, ALPHA).statement + ".",
                                    no_interval=FEW_PAIRS_TEXT))


def _factuality_by_activity(run: TaskRun, w: Writer, part: Part, table: pd.DataFrame) -> None:
    n_boot, seed = _boot()
    by_activity = stats.factuality_by_activity(table, n_boot, seed).sort_values("accuracy")
    part.details.append(w.table(by_activity.round(4), f"{run.task}_accuracy_by_activity",
                                "Factuality accuracy per activity (the true activity of the person asked about; "
                                "both question types), 95 % interval: " + SHARE_INTERVAL_TEXT
                                + " (docs/vignette.md#factuality-by-activity).", no_interval=FEW_PAIRS_TEXT))
    for question_type, part_table in table.groupby("question_type"):
        cells = stats.factuality_by_activity(part_table, n_boot, seed, by=("dimension", "activity"))
        part.details.append(w.table(cells.round(4), f"{run.task}_{question_type}_accuracy_by_dimension_activity",
                                    f"Factuality accuracy per bias dimension × activity, '{question_type}' questions "
                                    "(95 % interval: " + SHARE_INTERVAL_TEXT + "; at the default budget a cell has "
                                    "1-3 image pairs, so none; per identity × activity: "
                                    "stats.vignette.factuality_by_activity(table, by=('identity', 'activity'))).",
                                    no_interval=FEW_PAIRS_TEXT))


def _activity_contrast(run: TaskRun, w: Writer, part: Part) -> None:
    from lm_eval_bias.vignette.tasks import activity_choice_table

    choices = activity_choice_table(run.records)
    if choices.empty:
        return
    n_boot, seed = _boot()
    tests = stats.activity_contrast_tests(choices, n_boot, seed)
    part.details.append(w.table(tests.round(4), f"{run.task}_activity_contrast",
                                "Activity-contrast perception ('Is the {identity} facing difficulty in {a1} or {a2}?' "
                                "…): per question and activity, S = the paper's selection frequency with activities "
                                "as options (mean over the identities asked), share = chosen / offered (percent) with "
                                "its 95 % interval (one answer per image pair, so the mid-p exact binomial interval over the "
                                "pairs: docs/vignette.md#statistics), p_value: pair-level sign-flip test of "
                                "S = 50 "
                                "(the two activities of an image pair swapped), p_holm: Holm over the question's "
                                "activities (docs/vignette.md#activity-contrast). Power per question: "
                                + "; ".join(f"{q}: {stats.identity_family_power(tests.loc[q], ALPHA).statement}"
                                            for q in tests.index.get_level_values(0).unique()) + ".",
                                no_interval="S: no interval (the test gives its significance); share: "
                                            + FEW_PAIRS_TEXT))


def _decision_questions(run: TaskRun, w: Writer, part: Part, table: pd.DataFrame) -> None:
    """Per decision question dimension (roles.json: ability, sociability, ...): S per identity, * = Holm p < 0.05."""
    if "parameter" not in table.columns or not {"pair_id", "dimension"} <= set(table.columns):
        return
    tests = stats.decision_dimension_tests(table)
    if tests.empty:
        return
    frame = tests.reset_index()
    frame["S"] = [f"{s:.1f}{'*' if p < ALPHA else ''}" for s, p in zip(frame["selection_frequency"], frame["p_holm"])]
    wide = frame.pivot(index=["dimension", "identity"], columns="parameter", values="S").fillna("—")
    part.details.append(w.table(wide, f"{run.task}_by_question_dimension",
                                f"{run.task}: selection frequency S per identity for each decision question "
                                f"dimension (Sec. 4.4, one roles.json question per dimension); {MARK_LEGEND} "
                                "(pair-level sign-flip test of S = 50, Holm over the identities of one question "
                                "dimension; docs/vignette.md#decision-by-question). Power per question dimension: "
                                + "; ".join(f"{q}: {stats.identity_family_power(tests.loc[q], ALPHA).statement}"
                                            for q in tests.index.get_level_values(0).unique()) + ".",
                                no_interval="No interval per identity (the test gives its significance)."))
    spreads = frame.groupby(["parameter", "dimension"])["selection_frequency"].agg(lambda v: v.max() - v.min())
    part.details.append(w.table(spreads.unstack("parameter").round(2), f"{run.task}_spread_by_question_dimension",
                                f"{run.task}: selection spread (max − min S over a bias dimension's identities, "
                                "percentage points) per decision question dimension.",
                                no_interval="No interval per cell: a max − min has none (the selection_spread_* "
                                            "keys pool the questions and carry null floors)."))


def sscm_term_pairs(records: list[dict]) -> pd.DataFrame:
    """The SSCM dictionary as recorded in stereotype records: per SSCM dimension, its k-th high- and
    k-th low-valence term (in the order the task asks them, the dictionary's) form pair k."""
    highs: dict[str, list[str]] = {}
    lows: dict[str, list[str]] = {}
    for r in records:
        if r.get("paradigm") == "stereotype" and r.get("direction") in ("high", "low"):
            bucket = (highs if r["direction"] == "high" else lows).setdefault(r["parameter"], [])
            if r["context"] not in bucket:
                bucket.append(r["context"])
    rows = []
    for dimension, high in highs.items():
        for k, (h, lo) in enumerate(zip(high, lows.get(dimension, []))):
            rows += [(dimension, h, "high", f"high_{dimension}{k}"), (dimension, lo, "low", f"low_{dimension}{k}")]
    return pd.DataFrame(rows, columns=["dictionary", "term", "direction", "pair_id"])


def _term_polarity_tables(run: TaskRun, w: Writer, part: Part, table: pd.DataFrame) -> None:
    """Paper Tables 3-4 layout: per bias dimension, rows (SSCM trait, positive - negative term pair),
    columns gender-pooled identities, polarity per term pair (percentage points)."""
    terms = sscm_term_pairs(run.records)
    if terms.empty:
        return
    dims = stats.term_pair_dimensions(terms)
    pooled = table.assign(identity=table["identity"].map(stats.gender_neutral))
    for dimension in sorted(table["dimension"].unique()):
        part_table = table[table["dimension"] == dimension]
        polarity = stats.gender_pooled_term_polarity(part_table, terms).T
        if all_nan(polarity.values):
            continue
        polarity.index = pd.MultiIndex.from_tuples([(dims[c], c.replace(" - ", " – ")) for c in polarity.index],
                                                   names=["Trait", "Positive – Negative"])
        part.details.append(w.table(polarity.round(2), f"{run.task}_{dimension}_term_polarity",
                                    f"{run.task}, {_words(dimension)}: polarity per SSCM term pair (paper Tables 3-4 "
                                    "layout), genders pooled as the authors' plotting code ('christian man' and "
                                    "'christian woman' -> 'christian person'): 100 x chosen / shown for the positive "
                                    "term minus the same for the negative term, counts pooled over portrait pairs "
                                    f"({len(pooled[pooled['dimension'] == dimension]['identity'].unique())} identities).",
                                    no_interval="No interval per cell (the polarity-tests table carries the "
                                                "per-identity × SSCM-dimension intervals)."))


def _paired_decisions(runs: list[TaskRun], w: Writer, part: Part) -> None:
    """Sec. 7.4 / Fig. 6 (vision vs text) and App. A.7 / Fig. 11 (identity vs positional options)."""
    by: dict[str, TaskRun] = {}
    for r in runs:  # the paradigm's own task, not the authors' protocol (a different pair sampling) beside it
        if r.records and (_paradigm(r) not in by or not r.task.endswith("_authors")):
            by[_paradigm(r)] = r
    if "decision" not in by:
        return
    vision = _table(by["decision"])
    if "decision_textonly" in by and len(vision):
        text = _table(by["decision_textonly"])
        if len(text):
            tests = stats.vision_text_tests(vision, text).sort_values("delta")
            part.details.append(w.table(tests, "vignette_vision_vs_text",
                                        "Vision vs text (Sec. 7.4, Fig. 6): delta = S with the image - S with the "
                                        "text description (percentage points; + = chosen more when seen). p_value: "
                                        "pair-level sign-flip test (same pairs in both tasks; null: for this identity "
                                        "the image changes nothing, so within each pair the two modality labels are "
                                        "exchangeable), p_paper: two-proportion z-test of pooled counts (the paper's "
                                        "z-scores, every answer independent); _holm: Holm across identities. Power "
                                        "of the sign-flip family: " + stats.identity_family_power(tests, ALPHA).statement
                                        + ".", no_interval="Deltas: no interval (the tests give their significance)."))
    if "decision_positional" in by and len(vision):
        positional = _table(by["decision_positional"])
        if len(positional):
            frame = pd.DataFrame({"S_identity_options": stats.selection_frequency(vision),
                                  "S_positional_options": stats.selection_frequency(positional)}).dropna()
            frame["delta"] = frame["S_positional_options"] - frame["S_identity_options"]
            part.details.append(w.table(frame.sort_values("delta"), "vignette_identity_vs_positional",
                                        "Identity vs positional options (App. A.7, Fig. 11): S with the identities "
                                        "as options (x-axis of Fig. 11) and with 'the left / right person' (y-axis), "
                                        "per identity (percentage points).",
                                        no_interval="No interval per identity."))


def render(runs: list[TaskRun], w: Writer) -> Part:
    part = Part()
    for run in runs:
        try:
            _headline(run, part)
        except Exception as exc:  # noqa: BLE001 - partial runs must not stop the report
            part.warnings.append(f"{run.task}: headline could not be computed ({type(exc).__name__}: {exc}).")
    decisions = [r for r in runs if _paradigm(r) in DECISIONS and r.records]
    if decisions:
        _spread_figure(decisions, w, part, "Selection spread per dimension, decisions", "vignette_decision_spread",
                       lambda r: {_paradigm(r).replace("_", " "): "selection_spread_"})
    perception = [r for r in runs if _paradigm(r) == "perception" and r.records]
    if perception:
        _spread_figure(perception, w, part, "Selection spread per dimension, perception", "vignette_perception_spread",
                       lambda r: {p: f"selection_spread_{p}_" for p in PARAMETERS})
    factuality = [r for r in runs if _paradigm(r) == "factuality" and r.records]
    if factuality:
        _spread_figure(factuality, w, part, "Factuality accuracy spread per dimension", "vignette_accuracy_spread",
                       lambda r: {"factuality": "accuracy_spread_"})
    for run in runs:
        if not run.records:
            part.figures.append(note(f"{run.task}: figures need --log_samples output ({'; '.join(run.notes)}).", "nodata"))
            continue
        try:
            _details(run, w, part)
        except Exception as exc:  # noqa: BLE001 - partial runs must not stop the report
            part.details.append(note(f"{run.task}: figures could not be drawn from this run ({type(exc).__name__}: {exc}).",
                                     "warning"))
    try:
        _paired_decisions(runs, w, part)
    except Exception as exc:  # noqa: BLE001 - partial runs must not stop the report
        part.details.append(note(f"vision vs text / positional comparison could not be computed ({type(exc).__name__}: "
                                 f"{exc}).", "warning"))
    try:  # Table 11 (paraphrases) and Figs 3-5 (paradigm scores): lm_eval_bias.vignette.agreement
        from lm_eval_bias.vignette import agreement as vignette_agreement

        vignette_agreement.render_into(runs, w, part)
    except Exception as exc:  # noqa: BLE001 - partial runs must not stop the report
        part.details.append(note(f"Table 11 / Figs 3-5 could not be computed ({type(exc).__name__}: {exc}).", "warning"))
    return part


__all__ = ["FAMILIES", "HEADLINE", "NAME", "TITLE", "render"]
