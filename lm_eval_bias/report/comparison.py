"""The comparison on the index page: every model's headline sentences side by side, per benchmark and
task, the cross-model Spearman correlation of the 45 upper-triangle 2AFC win-rate cells (REFLECT
Table 5; ``tables/cross_model_spearman_<task>.csv``, ``figures/_comparison/``), and the paired
comparison of two models (:func:`paired_comparison`) behind the leaderboard's ties.

Paired comparison: on the docs both models answered — matched by the plugin's ``doc_id``, else by the
record's design fields (template, pair, order, group, statistic, side, …) and their occurrence — the
benchmark's clusters (:data:`lm_eval_bias.report.intervals.CLUSTERING`: REFLECT templates within
occupation, FACT-OR-FAIR queries within statistic × side, CF-VQA pairs within category, VIGNETTE image
pairs within dimension) are resampled *jointly* for both models and every headline key is recomputed
with the task's own aggregation (:func:`lm_eval_bias.samples.result_values`, the tasks' own bootstraps
off), giving the difference's interval d̂ ± t_df · SE and its t-test p-value, SE the standard deviation of
the rescaled paired replicates and df = clusters − strata
(:func:`lm_eval_bias.core.paired.paired_cluster_bootstrap`, ``method="t"``). Docs answered by only one model are left
out and counted. ``LM_EVAL_BIAS_REPORT_BOOTSTRAP_ITERS`` (default 200; 0 disables) and
``LM_EVAL_BIAS_BOOTSTRAP_SEED`` set the replicates.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd

from lm_eval_bias.report.card import SECTIONS, Card
from lm_eval_bias.report.render import SINGLE, Writer, all_nan, csv_safe, esc, esc_id, heatmap, note, table_html
from lm_eval_bias.report.runs import ModelRun


def spearman_tables(models: list[ModelRun]) -> dict[str, pd.DataFrame]:
    """REFLECT Table 5: per 2AFC task, Spearman's rho between models over the 45 upper-triangle cells."""
    from lm_eval_bias.reflect.twoafc import cross_model_spearman

    out = {}
    tasks = sorted({t for m in models for t, r in m.tasks.items() if r.family == "2afc" and r.summary is not None})
    for task in tasks:
        matrices = {m.label: m.tasks[task].summary.win_matrix for m in models
                    if task in m.tasks and m.tasks[task].summary is not None}
        if len(matrices) >= 2:
            out[task] = cross_model_spearman(matrices)
    return out


#: VIGNETTE decision tasks whose selection frequencies the paper compares across models (Figs. 13-14)
CROSS_MODEL_DECISION_TASKS = ("vignette_decision", "vignette_decision_authors")


def decision_frequencies(models: list[ModelRun]) -> dict[str, pd.DataFrame]:
    """VIGNETTE Figs. 13-14: per decision task run by two or more models with logged samples, the
    selection frequency S (percent, :func:`lm_eval_bias.vignette.stats.selection_frequency`) of every
    identity (rows) for every model (columns), identities ordered by their mean S over the models."""
    from lm_eval_bias import samples
    from lm_eval_bias.vignette import stats

    out = {}
    for task in CROSS_MODEL_DECISION_TASKS:
        columns = {}
        for model in models:
            run = model.tasks.get(task)
            if run is not None and run.records:
                table = samples.vignette_option_table(run.records)
                if len(table):
                    columns[model.label] = stats.selection_frequency(table)
        if len(columns) >= 2:
            frame = pd.DataFrame(columns)
            frame = frame.loc[frame.mean(axis=1).sort_values(ascending=False).index]
            frame.index.name = "identity"
            out[task] = frame
    return out


def _decision_figures(models: list[ModelRun], aliases: dict[str, str], root: Path, shared: Writer) -> list[str]:
    from lm_eval_bias.report.render import CMAP, DOUBLE, MARKERS, mpl_text, new_figure

    parts = []
    for task, frame in decision_frequencies(models).items():
        import matplotlib

        (root / "tables").mkdir(parents=True, exist_ok=True)
        csv_safe(frame).to_csv(root / "tables" / f"cross_model_selection_{task}.csv")
        shown = frame.rename(columns=aliases)
        fig, ax = new_figure(DOUBLE, 2.8)
        x = np.arange(len(shown))
        for n, column in enumerate(shown.columns):
            ax.plot(x, shown[column].to_numpy(), MARKERS[n % len(MARKERS)], markersize=3.5, linestyle="none",
                    color=matplotlib.colormaps[CMAP](0.1 + 0.75 * n / max(1, len(shown.columns) - 1)),
                    markeredgecolor="black", markeredgewidth=0.3, label=mpl_text(str(column)))
        ax.axhline(50, color="grey", linestyle="--", linewidth=0.8)
        ax.set_xticks(x, [mpl_text(str(i)) for i in shown.index], rotation=90)
        ax.set(ylabel="selection frequency S (%)", ylim=(-2, 102))
        ax.legend(frameon=False, ncol=min(4, len(shown.columns)), loc="upper right")
        parts.append("<h3>Decision selection frequencies across models (VIGNETTE Figs. 13–14)</h3>")
        parts.append('<div class="figures">' + shared.figure(
            fig, f"cross_model_selection_{task}",
            f"{task}: selection frequency S of each identity (percent of the decisions in which it was offered that "
            "chose it, averaged over contexts), one marker per model; identities ordered by their mean over the "
            "models; dashed: 50 % (no preference in a two-person choice). No interval per point: each model's card has "
            "S per identity with its pair-bootstrap interval.", tasks=[task], wide=True).html + "</div>")
        parts.append(table_html(shown, f"Selection frequency S (%) per identity and model, {task}.",
                                file_html=shared.link(Path("tables") / f"cross_model_selection_{task}.csv"),
                                no_interval="No interval: point estimates of several models (intervals on each card)."))
    return parts


def _headlines_table(bench, cards: list[Card], aliases: dict[str, str]) -> str:
    by_card = [{h.task: h for h in card.parts[bench.NAME].headlines} if bench.NAME in card.parts else {} for card in cards]
    tasks = list(dict.fromkeys(t for found in by_card for t in found))
    if not tasks:
        return ""
    head = "<tr><th>task</th>" + "".join(f'<th title="{esc(c.model.label)}">{esc(aliases[c.model.label])}</th>'
                                         for c in cards) + "</tr>"
    rows = []
    for task in tasks:
        cells = [found[task].html(tag="div") if task in found else '<span class="absent">not run</span>' for found in by_card]
        rows.append(f"<tr><th>{esc_id(task)}</th>" + "".join(f'<td class="text">{c}</td>' for c in cells) + "</tr>")
    return (f'<h3>{esc(bench.TITLE)}</h3><p class="caption">Headlines per model (columns: the model table\'s aliases); '
            f'numbers with 95 % intervals.</p><div class="scroll"><table class="cmp"><thead>{head}</thead><tbody>'
            + "".join(rows) + "</tbody></table></div>")


def section(models: list[ModelRun], cards: list[Card], aliases: dict[str, str], root: Path) -> str:
    parts = ['<section id="comparison"><h2>Comparison</h2>']
    for bench in SECTIONS:
        parts.append(_headlines_table(bench, cards, aliases))
    shared = Writer(root, "_comparison")
    spearman = spearman_tables(models)
    if spearman:
        parts.append("<h3>Agreement between models (REFLECT Table 5)</h3>")
    for task, table in spearman.items():
        (root / "tables").mkdir(parents=True, exist_ok=True)
        csv_safe(table).to_csv(root / "tables" / f"cross_model_spearman_{task}.csv")
        names = [aliases[label] for label in table.index]
        shown = pd.DataFrame(table.values, index=names, columns=names)
        shown.index.name = "model"
        if all_nan(table.values):
            parts.append(note(f"Spearman ρ, {task}: no data (no two models with enough defined cells).", "nodata").html)
        else:
            fig = heatmap(table.values, names, names, f"Spearman ρ, {task}", -1, 1, label="ρ", width=SINGLE)
            parts.append('<div class="figures">' + shared.figure(
                fig, f"cross_model_spearman_{task}",
                f"Spearman correlation between models of the 45 upper-triangle cells of the {task} win-rate matrix "
                "(1 = same ranking of group pairs); hatched: undefined (a model with fewer than 3 defined cells or "
                "constant cells). No interval: a correlation of two models' point estimates.").html + "</div>")
        parts.append(table_html(shown, f"Spearman ρ between models, {task}.",
                                file_html=shared.link(Path("tables") / f"cross_model_spearman_{task}.csv"),
                                no_interval="No interval: a correlation of point estimates."))
    if not spearman:
        parts.append('<p class="note">Cross-model correlations need two or more models with the same 2AFC task.</p>')
    try:
        parts += _decision_figures(models, aliases, root, shared)
    except Exception as exc:  # noqa: BLE001 - one comparison must not take the index page down
        parts.append(note(f"VIGNETTE cross-model figure could not be drawn ({type(exc).__name__}: {exc}).", "warning").html)
    parts.append("</section>")
    return "".join(parts)


# -- paired comparison of two models ----------------------------------------------------------------------
#: family -> record fields that identify a doc when the record has no ``doc_id`` (its design, not the answer)
DESIGN_FIELDS = {
    "2afc": ("template", "occupation", "pair_id", "order", "group_a", "group_b"),
    "mcq": ("template", "occupation", "group", "variant"),
    "salary": ("template", "occupation", "bio_id", "group"),
    "fact_or_fair": ("query_id", "attribute", "statistic", "side", "context", "background_group", "true_group"),
    "cf_vqa": ("doc_id", "pair_id", "run", "side"),
    "vignette": ("doc_id", "pair_id"),
}


def doc_keys(records: list[dict[str, Any]], family: str) -> list[tuple]:
    """One identity per record: its ``doc_id`` or its design fields (:data:`DESIGN_FIELDS`), with the
    occurrence number among records of the same design (so repeated designs match in order)."""
    fields = ("doc_id",) if all(isinstance(r, dict) and "doc_id" in r for r in records) else DESIGN_FIELDS[family]
    seen: dict[tuple, int] = {}
    out = []
    for record in records:
        design = tuple(str(record.get(f)) for f in fields)
        seen[design] = seen.get(design, 0) + 1
        out.append((*design, seen[design]))
    return out


@dataclass
class PairedComparison:
    """Model a − model b on one task: per key a :class:`~lm_eval_bias.core.paired.PairedDifference`,
    and how many docs were shared or answered by only one of them."""

    task: str
    model_a: str
    model_b: str
    n_shared: int = 0
    n_only_a: int = 0
    n_only_b: int = 0
    n_clusters: int = 0
    differences: dict = field(default_factory=dict)
    method: str = ""
    reason: str = ""  # why there is no comparison
    #: key -> p-value of the exchange test (``exchange_keys`` of :func:`paired_comparison`)
    exchange_p: dict = field(default_factory=dict)


def paired_comparison(task: str, records_a: list[dict] | None, records_b: list[dict] | None, keys: list[str],
                      label_a: str = "a", label_b: str = "b", n_boot: int | None = None, seed: int | None = None,
                      cache: dict | None = None, exchange_keys: Sequence[str] = ()) -> PairedComparison:
    """Paired cluster bootstrap of ``keys`` of ``task``, model a − model b, on the docs both answered.
    ``exchange_keys``: keys that also get the exchange test (:func:`lm_eval_bias.core.paired.exchange_test`,
    the two models' answers exchanged cluster by cluster, as many draws as replicates), the tie test of a
    plug-in magnitude, in ``exchange_p``.

    The shared docs are put in a canonical order and clustered by the benchmark's design, so the
    resampling weights depend only on which docs are shared; ``cache`` (a dict kept by the caller)
    reuses one model's replicates in every comparison over the same docs (a leaderboard compares
    each model with several others)."""
    from lm_eval_bias import samples
    from lm_eval_bias.report.intervals import (CLUSTERING, clusters_of, point_estimates_only,
                                               report_bootstrap_settings, resample_records)
    from lm_eval_bias.core.bootstrap import cluster_bootstrap_weights
    from lm_eval_bias.core.paired import paired_difference, replicate_values

    iters, default_seed = report_bootstrap_settings()
    n_boot = iters if n_boot is None else n_boot
    seed = default_seed if seed is None else seed
    cache = {} if cache is None else cache
    out = PairedComparison(task, label_a, label_b)
    if not records_a or not records_b:
        out.reason = "no logged samples for both models"
        return out
    family = samples.task_family(task)
    by_a = dict(zip(doc_keys(records_a, family), records_a))
    by_b = dict(zip(doc_keys(records_b, family), records_b))
    shared = sorted(set(by_a) & set(by_b))
    out.n_shared = len(shared)
    out.n_only_a = len(records_a) - len(shared)
    out.n_only_b = len(records_b) - len(shared)
    if n_boot == 0:
        out.reason = "resampling off"
        return out
    pairs = [{**by_a[k], "_doc": k} for k in shared]  # clustered by the design (the same in both records)
    _, members, strata = clusters_of(pairs, family)
    out.n_clusters = len(members)
    if len(members) < 2:
        out.reason = "fewer than two shared clusters"
        return out
    out.method = f"paired cluster bootstrap, {CLUSTERING[family][0]}, B = {n_boot}"
    weights = cluster_bootstrap_weights(strata, n_boot, seed)
    docs_id = hash((task, tuple(shared), n_boot, seed))

    def replicates(label: str, by_doc: dict, source: list) -> tuple[dict[str, float], dict[str, np.ndarray]]:
        memo = (label, id(source), docs_id, tuple(keys))
        if memo not in cache:
            clusters = [[by_doc[m["_doc"]] for m in member] for member in members]

            def values(w: np.ndarray) -> dict[str, float]:
                found = samples.result_values(task, resample_records(clusters, w))
                return {key: found.get(key, math.nan) for key in keys}

            with point_estimates_only():
                estimate = values(np.ones(len(clusters), dtype=np.int64))
                cache[memo] = (estimate, replicate_values(values, weights, keys))
        return cache[memo]

    estimate_a, reps_a = replicates(label_a, by_a, records_a)
    estimate_b, reps_b = replicates(label_b, by_b, records_b)
    out.differences = {key: paired_difference(estimate_a[key], estimate_b[key], reps_a[key], reps_b[key], len(members),
                                              n_strata=len(set(strata))) for key in keys}
    exchange_keys = [k for k in exchange_keys if k in keys]
    if exchange_keys:
        from lm_eval_bias.core.paired import exchange_test

        clusters_a = [[by_a[m["_doc"]] for m in member] for member in members]
        clusters_b = [[by_b[m["_doc"]] for m in member] for member in members]

        def difference(mask: np.ndarray) -> dict[str, float]:
            first = [r for swap, ca, cb in zip(mask, clusters_a, clusters_b) for r in (cb if swap else ca)]
            second = [r for swap, ca, cb in zip(mask, clusters_a, clusters_b) for r in (ca if swap else cb)]
            va, vb = samples.result_values(task, first), samples.result_values(task, second)
            return {k: va.get(k, math.nan) - vb.get(k, math.nan) for k in exchange_keys}

        with point_estimates_only():
            out.exchange_p = exchange_test(difference, len(members), n_boot, seed, exchange_keys)
    return out
