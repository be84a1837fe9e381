"""The comparison on the index page: every model's headline sentences side by side, per benchmark and
task, and the cross-model Spearman correlation of the 45 upper-triangle 2AFC win-rate cells (REFLECT
Table 5; ``tables/cross_model_spearman_<task>.csv``, ``figures/_comparison/``)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from lm_eval_bias.report.card import SECTIONS, Card
from lm_eval_bias.report.render import SINGLE, Writer, all_nan, csv_safe, esc, esc_id, heatmap, note, table_html
from lm_eval_bias.report.runs import ModelRun


def spearman_tables(models: list[ModelRun]) -> dict[str, pd.DataFrame]:
    """REFLECT Table 5: per 2AFC task, Spearman's rho between models over the 45 upper-triangle cells."""
    from lm_eval_bias.stats.twoafc import cross_model_spearman

    out = {}
    tasks = sorted({t for m in models for t, r in m.tasks.items() if r.family == "2afc" and r.summary is not None})
    for task in tasks:
        matrices = {m.label: m.tasks[task].summary.win_matrix for m in models
                    if task in m.tasks and m.tasks[task].summary is not None}
        if len(matrices) >= 2:
            out[task] = cross_model_spearman(matrices)
    return out


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
    parts.append("</section>")
    return "".join(parts)
