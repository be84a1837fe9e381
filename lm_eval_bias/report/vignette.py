"""VIGNETTE section: selection frequency by identity per dimension, polarity heatmaps (identity x SSCM
term pair), PairComp matrices, factuality accuracy, Fisher tests."""

from __future__ import annotations

import pandas as pd

from lm_eval_bias import samples
from lm_eval_bias.report.page import Block, Writer, bars, heatmap, note
from lm_eval_bias.report.runs import TaskRun
from lm_eval_bias.stats import vignette as stats

FAMILIES = ("vignette",)
TITLE = "VIGNETTE"
HEADLINE = {"vignette": ("valid_rate", "factuality_accuracy", "selection_spread_race_ethnicity_color",
                         "mean_abs_polarity_race_ethnicity_color")}


def _selection(run: TaskRun, w: Writer, table: pd.DataFrame, label: str) -> list[Block]:
    blocks = []
    frequency = stats.selection_frequency(table)
    dimension = table.groupby("identity")["dimension"].first()
    for dim in sorted(dimension.unique()):
        ids = dimension[dimension == dim].index
        blocks.append(w.figure(bars({label: frequency.reindex(ids).to_dict()}, f"{run.task}: selection frequency, {dim}",
                                    "S (%)", reference=50.0), f"{run.task}_{label}_{dim}_selection",
                               f"Selection frequency S per identity ({dim}; {label}): percentage of docs in which the identity "
                               f"was chosen when shown, averaged over contexts (Sec. 5); dashed: 50 % (no preference)."))
        if len(ids) >= 2:
            matrix = stats.pair_comp_matrix(table, list(ids))
            blocks.append(w.figure(heatmap(matrix.values, list(ids), list(ids), f"PairComp, {dim} ({label})", center=0.0,
                                           label="percentage points"), f"{run.task}_{label}_{dim}_paircomp",
                                   f"PairComp(row, column) = S(row | paired with column) − S(row | paired with anyone else) "
                                   f"({dim}; {label}); grey: no docs with that pairing."))
    fisher = stats.identity_fisher_tests(table)
    fisher["selection_frequency"] = frequency
    blocks.append(w.table(fisher, f"{run.task}_{label}_identities", f"{run.task} ({label}): selection frequency per identity "
                                                                    "and Fisher's exact test against all other identities "
                                                                    "(two-sided), Holm-corrected."))
    return blocks


def render(runs: list[TaskRun], w: Writer) -> list[Block]:
    blocks: list[Block] = []
    for run in runs:
        if not run.records:
            blocks.append(note(f"{run.task}: figures need --log_samples output ({'; '.join(run.notes)})."))
            continue
        paradigm = run.task.removeprefix("vignette_")
        try:
            if paradigm == "factuality":
                table = samples.vignette_factuality_table(run.records)
                if table.empty:
                    blocks.append(note(f"{run.task}: no valid answer, nothing to draw."))
                    continue
                accuracy = stats.factuality_accuracy(table).to_frame()
                accuracy["dimension"] = table.groupby("identity")["dimension"].first()
                blocks.append(w.table(accuracy, f"{run.task}_accuracy", "Factuality accuracy per identity (share of valid "
                                                                       "answers that are correct, Sec. 4.1)."))
                continue
            table = samples.vignette_option_table(run.records)
            if table.empty:
                blocks.append(note(f"{run.task}: no valid identity choice, nothing to draw."))
                continue
            if paradigm == "stereotype":
                terms = samples.vignette_sscm_terms(run.records)
                polarity = stats.polarity(table, terms)
                blocks.append(w.figure(heatmap(polarity.values, list(polarity.index), list(polarity.columns),
                                               "Polarity S_high − S_low", center=0.0, label="percentage points"),
                                       f"{run.task}_polarity", "Polarity per identity and SSCM dimension: selection frequency "
                                                               "for the dimension's high-valence terms minus for its low-valence "
                                                               "terms (Sec. 5); positive = favourable traits."))
                blocks.append(w.table(polarity, f"{run.task}_polarity", "Polarity table (percentage points)."))
                by_term = table.groupby(["identity", "context"])["selected"].mean().unstack() * 100
                blocks.append(w.figure(heatmap(by_term.values, list(by_term.index), list(by_term.columns),
                                               "Selection per SSCM term", 0, 100, label="S (%)"), f"{run.task}_terms",
                                       "Share of docs in which the identity was chosen for each SSCM term (all 60 terms "
                                       "of the 30 pairs when present)."))
            elif paradigm == "perception":
                for parameter in ("struggle", "capability", "enjoyment", "dislike"):
                    part = table[table["parameter"] == parameter]
                    if len(part):
                        blocks += _selection(run, w, part, parameter)
            else:
                blocks += _selection(run, w, table, paradigm)
        except Exception as exc:  # noqa: BLE001 - partial runs must not stop the report
            blocks.append(note(f"{run.task}: figures could not be drawn from this run ({type(exc).__name__}: {exc})."))
    return blocks
