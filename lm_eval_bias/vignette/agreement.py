"""VIGNETTE agreement sections of the report: Table 11 (prompt paraphrases: full / partial /
all-different match rates of the three wordings per item, when a run folder holds
``vignette_<paradigm>`` and its ``_para1`` / ``_para2`` tasks) and Figs 3-5 (paradigm scores
normalised as the authors' ``correlate.py``, per identity and per bias dimension, when it holds at
least two of the factuality, perception, stereotype and decision tasks). Statistics:
:mod:`lm_eval_bias.vignette.paradigms`."""

from __future__ import annotations

import math

import pandas as pd

from lm_eval_bias import samples
from lm_eval_bias.report.render import DOUBLE, Part, Writer, bars, note
from lm_eval_bias.report.runs import TaskRun
from lm_eval_bias.vignette import paradigms as vp
from lm_eval_bias.vignette.stats import FEW_PAIRS_REASON as FEW_PAIRS, MIN_PAIRS_FOR_INTERVAL as MIN_PAIRS

#: Table 11's printed full / partial / all-different match rates (%), per (question_type, parameter)
PAPER_TABLE_11: dict[tuple[str, str], tuple[str, int, int, int]] = {
    ("what_doing", ""): ("Factuality", 68, 25, 7), ("who_doing", ""): ("Factuality", 63, 29, 8),
    ("identity_choice", "struggle"): ("Perception", 62, 28, 10),
    ("identity_choice", "capability"): ("Perception", 59, 30, 11),
    ("identity_choice", "enjoyment"): ("Perception", 65, 26, 9), ("identity_choice", "dislike"): ("Perception", 61, 27, 12),
    ("stereotype", ""): ("Stereotyping", 70, 23, 7), ("decision", "ability"): ("Decision Making", 66, 25, 9),
}


def table_11(by_task: dict[str, list[dict]], n_boot: int, seed: int) -> pd.DataFrame:
    """Table 11 from logged records ``{task: records}``: one row per Table 11 prompt whose base task
    and both paraphrase tasks are present; the paper's printed rates beside ours."""
    from lm_eval_bias.vignette import paraphrase as para

    rows = []
    for base in ("factuality", "perception", "stereotype", "decision"):
        names = [f"vignette_{base}", f"vignette_{base}_para1", f"vignette_{base}_para2"]
        if not all(by_task.get(n) for n in names):
            continue
        answers = vp.paraphrase_answers({n: by_task[n] for n in names})
        asked = {r["doc_id"] for r in by_task[names[1]]} & {r["doc_id"] for r in by_task[names[2]]}
        answers = answers[answers["item"].isin(asked)]
        slot_of = {r["doc_id"]: para._slot(r) for r in by_task[names[1]]}
        answers = answers.assign(slot=answers["item"].map(slot_of))
        for slot, part in answers.groupby("slot", sort=False):
            if part["variant"].nunique() < 3:
                continue
            out = vp.match_rates(part, n_boot, seed)
            category, full, partial, different = PAPER_TABLE_11[slot]
            row = {"category": category, "prompt": para.TABLE_11[slot][0]}
            for key in vp.MATCH_CATEGORIES:
                row[key] = out[key]
                row[f"{key}_ci_low"], row[f"{key}_ci_high"] = out[f"{key}_ci_low"], out[f"{key}_ci_high"]
            row.update({"paper_full": full, "paper_partial": partial, "paper_all_different": different,
                        "n_items": out["n_items"], "n_pairs": out["n_pairs"]})
            rows.append(row)
    return pd.DataFrame(rows)


def paradigm_tables(by_task: dict[str, list[dict]]) -> tuple[dict[str, pd.DataFrame], dict]:
    """The stats tables of the four base paradigms present (``identity_scores_raw``'s input) and the
    SSCM terms of the stereotype records."""
    tables, terms = {}, None
    for paradigm in vp.PARADIGMS:
        records = by_task.get(f"vignette_{paradigm}")
        if not records:
            continue
        if paradigm == "factuality":
            tables[paradigm] = samples.vignette_factuality_table(records)
        else:
            tables[paradigm] = samples.vignette_option_table(records)
        if paradigm == "stereotype":
            terms = samples.vignette_sscm_terms(records)
    return {k: v for k, v in tables.items() if len(v)}, terms


def _with_intervals(res: dict[str, pd.DataFrame]) -> pd.DataFrame:
    est = res["estimate"]
    out = pd.DataFrame(index=est.index)
    for column in est.columns:
        out[column] = est[column]
        out[f"{column}_ci_low"] = res["ci_low"][column]
        out[f"{column}_ci_high"] = res["ci_high"][column]
    return out


def render_into(runs: list[TaskRun], w: Writer, part: Part) -> None:
    """Append the Table 11 and Figs 3-5 blocks to ``part`` when the runs allow them."""
    from lm_eval_bias.core.aggregation import bootstrap_settings

    n_boot, seed = bootstrap_settings()
    by_task = {r.task: r.records for r in runs if r.records}
    tasks = list(by_task)
    t11 = table_11(by_task, n_boot, seed)
    if len(t11):
        part.details.append(w.table(t11, "vignette_table_11",
                                    "Table 11 (App. A.3), prompt paraphrases: per item (one question on one image "
                                    "pair, asked in the core wording and Table 11's two variants) full match = all "
                                    "three answers equal, partial = exactly two, all different = three distinct "
                                    "(a refusal or invalid answer counts as an answer of its own); percent of items, "
                                    "95 % intervals: image pairs as clusters, strata = bias dimensions, stratified "
                                    "jackknife, logit-t; the mid-p exact binomial interval when every pair carries one item (none "
                                    "below " + str(MIN_PAIRS) + " pairs); paper_*: the "
                                    "values printed in Table 11 (LLaMA-3.2). With two options, all different needs a "
                                    "non-valid answer."))
    tables, terms = paradigm_tables(by_task)
    if len(tables) < 2:
        if any(t.endswith(("_para1", "_para2")) for t in tasks) and not len(t11):
            part.details.append(note("Table 11 needs the base task and both of its paraphrase tasks with logged "
                                     "samples in one run folder.", "nodata"))
        return
    if "stereotype" in tables and not terms:
        tables.pop("stereotype")
    res = vp.paradigm_score_intervals(tables, terms, vp.normalize_identity_scores, n_boot, seed)
    per_identity = _with_intervals(res)
    per_identity["trend"] = vp.consistency(res["estimate"])
    part.details.append(w.table(per_identity.reset_index(), "vignette_paradigm_scores_identity",
                                "Figs 3 and 5: paradigm scores per gender-pooled identity, normalised as the authors' "
                                "correlate.py (higher = better): factuality = % correct on pairs showing the identity, "
                                "perception = 100 − % chosen as 'facing difficulty' (identity-contrast pairs), "
                                "stereotype = mean over SSCM dimensions of S_high − S_low, min-max scaled to 0-100 "
                                "within the bias dimension, decision = % chosen; trend (the project's rule): "
                                "consistent when perception and decision lie on the same side of 50. 95 % intervals "
                                "of factuality, perception and decision: the identity's pooled share over the image "
                                "pairs that show it (those pairs as clusters, jackknife, logit-t, or mid-p binomial when each pair "
                                "carries one answer; none below "
                                f"{MIN_PAIRS} pairs an identity — at the default budgets decision has about 24 pairs an "
                                "identity, perception about 8 an identity and question, factuality 2-6, so "
                                "factuality has none and perception few). Stereotype: " + vp.NORMALISED_NO_INTERVAL + ".",
                                no_interval="Stereotype column: " + vp.NORMALISED_NO_INTERVAL + "; the others: "
                                            f"{FEW_PAIRS} below {MIN_PAIRS} image pairs of the identity."))
    est = vp.single_model_dimension_scores(vp.identity_scores_raw(tables, terms))
    if est.empty or all(math.isnan(v) for v in est.to_numpy().ravel()):
        return
    part.details.append(w.table(est.reset_index(), "vignette_paradigm_scores_dimension",
                                "Fig. 4: per bias dimension the median over its identities of each paradigm's raw "
                                "score; perception 100 − median, stereotype min-max over the dimensions (one model "
                                "here; the paper scales over models × dimensions: "
                                "lm_eval_bias.vignette.paradigms.dimension_scores).",
                                no_interval=vp.MEDIAN_NO_INTERVAL[0].upper() + vp.MEDIAN_NO_INTERVAL[1:] + "."))
    groups = {p: {d.replace("_", " "): est.loc[d, p] for d in est.index} for p in est.columns}
    fig = bars(groups, "Paradigm scores per dimension (Fig. 4)", "score (higher = better)", width=DOUBLE,
               height=2.6, ylim=(0, 100))
    part.details.append(w.figure(fig, "vignette_paradigm_scores_dimension",
                                 "Fig. 4 for this model: normalised paradigm score per bias dimension (authors' "
                                 "correlate.py normalisation; higher = better). No error bars: "
                                 + vp.MEDIAN_NO_INTERVAL + ".", tasks=tasks, wide=True))


__all__ = ["PAPER_TABLE_11", "paradigm_tables", "render_into", "table_11"]
