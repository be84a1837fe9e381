"""``lm-eval-bias report RUN_DIR [RUN_DIR ...] --output REPORT_DIR``: HTML bias cards and a leaderboard.

Reads lm-eval output folders (results JSON + ``--log_samples`` files, :mod:`.runs`), and writes

- ``index.html``: one bias card per model, a section per benchmark present (headline numbers with
  95 % intervals, sample and valid/refusal/invalid counts, the papers' figures and tables), the
  cross-model comparison and the leaderboard; every figure embedded, no network needed;
- ``figures/<model>/*.png`` and ``tables/<model>/*.csv``: the same figures and tables as files;
- ``leaderboard.csv`` / ``.md`` / ``.json``: one row per model, headline metrics with 95 % intervals
  (model labels come from the runs' model_args, so they are escaped: Markdown cells have no raw HTML
  or table syntax, CSV text cells cannot start a spreadsheet formula, JSON has null for a missing or
  infinite number, never a bare NaN; ``index.html`` escapes every label);
- ``tables/cross_model_spearman_<task>.csv``: Spearman correlation of the 45 2AFC win-rate cells
  between models (REFLECT Table 5), when two or more models ran the task.

A benchmark's section is one module with ``FAMILIES``, ``TITLE``, ``HEADLINE`` and ``render`` (see
:mod:`.reflect`); add it to :data:`SECTIONS`. Statistics come from :mod:`lm_eval_bias.stats` and
:mod:`lm_eval_bias.samples`; nothing is recomputed here.
"""

from __future__ import annotations

import html
import json
import math
from pathlib import Path

import pandas as pd

from lm_eval_bias.report import cf_vqa, fact_or_fair, reflect, vignette
from lm_eval_bias.report.headline import counts_table, headline_table, interval
from lm_eval_bias.report.page import Block, Writer, csv_safe, fmt, heatmap, md_escape, note, slugify, table_html
from lm_eval_bias.report.runs import ModelRun, TaskRun, load_runs

SECTIONS = (reflect, fact_or_fair, cf_vqa, vignette)
CSS = """body{font-family:sans-serif;max-width:1200px;margin:2em auto;color:#111;line-height:1.4}
h1,h2,h3{font-weight:600}figure{margin:1em 0}figure img{max-width:100%}figcaption,caption{font-size:.85em;color:#333;
text-align:left;caption-side:top;margin:.3em 0}table{border-collapse:collapse;margin:1em 0;font-size:.8em}
td,th{border:1px solid #999;padding:2px 6px;text-align:right}th{background:#eee}.note{background:#fff3cd;padding:.4em;
border-left:4px solid #8a6d3b}.file{color:#777;font-size:.85em}nav a{margin-right:1em}"""


def model_slug(label: str) -> str:
    """File-system name of a model's folder: readable prefix + hash (long labels stay distinct)."""
    import hashlib

    return f"{slugify(label)[:50]}-{hashlib.sha256(label.encode()).hexdigest()[:8]}"


def _section_of(family: str):
    return next((s for s in SECTIONS if family in s.FAMILIES), None)


def _model_card(model: ModelRun, writer: Writer) -> str:
    parts = [f'<h2 id="{model_slug(model.label)}">{html.escape(model.label)}</h2>']
    parts.append(table_html(counts_table(list(model.tasks.values())), "Samples and answer status per task (valid / refusal "
                                                                      "/ invalid answers; notes on partial runs)."))
    for section in SECTIONS:
        runs = [r for r in model.tasks.values() if r.family in section.FAMILIES]
        parts.append(f"<h3>{section.TITLE}</h3>")
        if not runs:
            parts.append(note(f"No {section.TITLE} task in this run.").html)
            continue
        for run in runs:
            caption = (f"{run.task}: result keys with 95 % intervals ({run.n_samples if run.n_samples is not None else '?'} "
                       "samples).")
            parts.append(writer.table(headline_table(run), f"{run.task}_headline", caption).html)
        parts += [block.html for block in section.render(runs, writer)]
    return "\n".join(parts)


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


def leaderboard(models: list[ModelRun]) -> pd.DataFrame:
    """One row per model: for each task run, its headline keys with 95 % intervals."""
    rows = []
    for model in models:
        row: dict[str, object] = {"model": model.label}
        for task, run in sorted(model.tasks.items()):
            section = _section_of(run.family)
            for key in section.HEADLINE.get(run.family, ()) if section else ():
                if key not in run.metrics:
                    continue
                low, high, _ = interval(run, key)
                row[f"{task}:{key}"] = run.metrics[key]
                row[f"{task}:{key}:ci95_low"] = low
                row[f"{task}:{key}:ci95_high"] = high
        rows.append(row)
    return pd.DataFrame(rows).set_index("model")


def _leaderboard_markdown(board: pd.DataFrame) -> str:
    metrics = [c for c in board.columns if not c.endswith(("ci95_low", "ci95_high"))]
    lines = ["| model | " + " | ".join(md_escape(m) for m in metrics) + " |", "|---|" + "---|" * len(metrics)]
    for model, row in board.iterrows():
        cells = []
        for m in metrics:
            value, low, high = row[m], row.get(f"{m}:ci95_low"), row.get(f"{m}:ci95_high")
            ci = f" [{fmt(low)}, {fmt(high)}]" if low is not None and isinstance(low, float) and math.isfinite(low) else ""
            cells.append(md_escape(fmt(value) + ci))
        lines.append(f"| {md_escape(model)} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _leaderboard_display(board: pd.DataFrame) -> pd.DataFrame:
    """Metrics as rows, models as columns, "value [low, high]" cells (for the HTML page)."""
    metrics = [c for c in board.columns if not c.endswith(("ci95_low", "ci95_high"))]
    cells = {}
    for model, row in board.iterrows():
        column = {}
        for m in metrics:
            low = row.get(f"{m}:ci95_low")
            ci = f" [{fmt(low)}, {fmt(row.get(f'{m}:ci95_high'))}]" if isinstance(low, float) and math.isfinite(low) else ""
            column[m] = fmt(row[m]) + ci
        cells[model] = column
    frame = pd.DataFrame(cells)
    frame.index.name = "task:metric"
    return frame


def _short(label: str, width: int = 32) -> str:
    return label if len(label) <= width else label[: width - 1] + "…"


def _json_number(value) -> float | None:
    """A finite float, else None (JSON has no NaN or Infinity)."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _write_leaderboard(board: pd.DataFrame, root: Path) -> None:
    csv_safe(board).to_csv(root / "leaderboard.csv")
    (root / "leaderboard.md").write_text(_leaderboard_markdown(board), encoding="utf-8")
    records = []
    for model, row in board.iterrows():
        metrics = {}
        for column in board.columns:
            if column.endswith(("ci95_low", "ci95_high")):
                continue
            low, high = _json_number(row.get(f"{column}:ci95_low")), _json_number(row.get(f"{column}:ci95_high"))
            metrics[column] = {"value": _json_number(row[column]),
                               "ci95": None if low is None and high is None else [low, high]}
        records.append({"model": str(model), "metrics": metrics})
    (root / "leaderboard.json").write_text(json.dumps(records, indent=2, allow_nan=False), encoding="utf-8")


def build_report(run_dirs: list[str | Path], output: str | Path) -> Path:
    """Write the report for every model under ``run_dirs`` into ``output``; returns index.html."""
    import matplotlib

    matplotlib.use("Agg")
    root = Path(output)
    root.mkdir(parents=True, exist_ok=True)
    models = load_runs(run_dirs)
    if not models:
        raise FileNotFoundError(f"no lm-eval-bias task results under {', '.join(map(str, run_dirs))}")
    cards = [_model_card(model, Writer(root, model_slug(model.label))) for model in models]
    comparison: list[str] = []
    shared = Writer(root, "_comparison")
    for task, table in spearman_tables(models).items():
        csv_safe(table).to_csv(root / "tables" / f"cross_model_spearman_{task}.csv")
        short = [_short(label) for label in table.index]
        fig = heatmap(table.values, short, short, f"Spearman ρ, {task}", -1, 1, label="ρ")
        comparison.append(shared.figure(fig, f"cross_model_spearman_{task}",
                                        f"REFLECT Table 5: Spearman correlation between models of the 45 upper-triangle "
                                        f"cells of the {task} win-rate matrix.").html)
        comparison.append(table_html(table, f"Spearman ρ between models, {task}.",
                                     rel=f"tables/cross_model_spearman_{task}.csv"))
    if not comparison:
        comparison.append(note("Cross-model correlations need two or more models with the same 2AFC task.").html)
    board = leaderboard(models)
    _write_leaderboard(board, root)
    nav = " ".join(f'<a href="#{model_slug(m.label)}">{html.escape(m.label)}</a>' for m in models)
    page = (f"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>lm-eval-bias report</title>"
            f"<style>{CSS}</style></head><body><h1>Bias report</h1><p>{len(models)} model(s) from "
            f"{html.escape(', '.join(map(str, run_dirs)))}. Intervals are 95 %.</p><nav>{nav}</nav>"
            "<h2>Leaderboard</h2>" + table_html(_leaderboard_display(board), "Headline metrics per model, value [95 % "
                                                "interval] (files: leaderboard.csv / .md / .json).")
            + "<h2>Across models</h2>" + "\n".join(comparison) + "\n".join(cards) + "</body></html>")
    index = root / "index.html"
    index.write_text(page, encoding="utf-8")
    return index


__all__ = ["Block", "ModelRun", "SECTIONS", "TaskRun", "build_report", "leaderboard", "load_runs", "spearman_tables"]
