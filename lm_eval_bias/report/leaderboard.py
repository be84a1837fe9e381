"""The leaderboard: one row per model, each task's headline keys with their 95 % intervals.

Files: ``leaderboard.csv`` (columns ``<task>:<key>``, ``…:ci95_low``, ``…:ci95_high``), ``leaderboard.md``
(one table, ``value [low, high]`` cells) and ``leaderboard.json`` (per model and key: value, ci95,
and the interval's method or the reason there is none). Model labels come from the runs' model_args,
so they are escaped: Markdown cells have no raw HTML or table syntax, CSV text cells cannot start a
spreadsheet formula, JSON has null for a missing or infinite number (never a bare NaN). On the index
page: one table per benchmark, metrics as rows and models as columns (short aliases M1, M2, …).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd

from lm_eval_bias.report.card import SECTIONS, section_of
from lm_eval_bias.report.intervals import interval
from lm_eval_bias.report.render import csv_safe, details, esc, esc_id, fmt, fmt_ci, key_link, md_escape
from lm_eval_bias.report.runs import ModelRun


def entries(models: list[ModelRun]) -> dict[str, dict[str, tuple[float, float, float, str]]]:
    """{model: {"<task>:<key>": (value, low, high, method or reason)}} for every headline key."""
    out: dict[str, dict[str, tuple[float, float, float, str]]] = {}
    for model in models:
        row = out.setdefault(model.label, {})
        for task, run in sorted(model.tasks.items()):
            section = section_of(run.family)
            for key in section.HEADLINE.get(run.family, ()) if section else ():
                if key in run.metrics:
                    ci = interval(run, key)
                    row[f"{task}:{key}"] = (run.metrics[key], ci.low, ci.high, ci.method or ci.reason)
    return out


def leaderboard(models: list[ModelRun]) -> pd.DataFrame:
    """One row per model: for each task run, its headline keys with 95 % intervals."""
    rows = []
    for label, metrics in entries(models).items():
        row: dict[str, object] = {"model": label}
        for column, (value, low, high, _) in metrics.items():
            row[column] = value
            row[f"{column}:ci95_low"] = low
            row[f"{column}:ci95_high"] = high
        rows.append(row)
    return pd.DataFrame(rows).set_index("model")


def _metrics(board: pd.DataFrame) -> list[str]:
    return [c for c in board.columns if not c.endswith(("ci95_low", "ci95_high"))]


def _cell(row, column: str) -> str:
    low, high = row.get(f"{column}:ci95_low"), row.get(f"{column}:ci95_high")
    ci = f" {fmt_ci(low, high)}" if isinstance(low, float) and math.isfinite(low) and math.isfinite(high) else ""
    return fmt(row[column]) + ci


def markdown(board: pd.DataFrame) -> str:
    metrics = _metrics(board)
    lines = ["| model | " + " | ".join(md_escape(m) for m in metrics) + " |", "|---|" + "---|" * len(metrics)]
    for model, row in board.iterrows():
        lines.append(f"| {md_escape(model)} | " + " | ".join(md_escape(_cell(row, m)) for m in metrics) + " |")
    return "\n".join(lines) + "\n"


def _json_number(value) -> float | None:
    """A finite float, else None (JSON has no NaN or Infinity)."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def write(models: list[ModelRun], root: Path) -> pd.DataFrame:
    """Write leaderboard.csv / .md / .json under ``root``; returns the board."""
    board = leaderboard(models)
    found = entries(models)
    csv_safe(board).to_csv(root / "leaderboard.csv")
    (root / "leaderboard.md").write_text(markdown(board), encoding="utf-8")
    records = []
    for model, row in board.iterrows():
        metrics = {}
        for column in _metrics(board):
            low, high = _json_number(row.get(f"{column}:ci95_low")), _json_number(row.get(f"{column}:ci95_high"))
            how = found.get(str(model), {}).get(column, (0, 0, 0, "not run"))[3]
            metrics[column] = {"value": _json_number(row[column]),
                               "ci95": None if low is None and high is None else [low, high], "interval": how}
        records.append({"model": str(model), "metrics": metrics})
    (root / "leaderboard.json").write_text(json.dumps(records, indent=2, allow_nan=False), encoding="utf-8")
    return board


def alias_header(aliases: dict[str, str], label: str) -> str:
    return f'<th title="{esc(label)}">{esc(aliases[label])}</th>'


def section(models: list[ModelRun], aliases: dict[str, str]) -> str:
    """The leaderboard on the index page: per benchmark, headline keys (rows) × models (columns)."""
    found = entries(models)
    labels = [m.label for m in models]
    parts = ['<section id="leaderboard"><h2>Leaderboard</h2><p>Headline keys of every task, value and 95 % interval '
             "per model (columns: the aliases of the model table). Files: <code>leaderboard.csv</code>, "
             "<code>leaderboard.md</code>, <code>leaderboard.json</code>.</p>"]
    for bench in SECTIONS:
        columns = sorted({c for m in found.values() for c in m if section_of(_family(c)) is bench})
        if not columns:
            continue
        rows = []
        for column in columns:
            task, key = column.split(":", 1)
            cells = []
            for label in labels:
                value = found.get(label, {}).get(column)
                if value is None:
                    cells.append('<td class="text">—</td>')
                    continue
                v, low, high, how = value
                if math.isfinite(low) and math.isfinite(high):
                    text = esc(f"{fmt(v)} {fmt_ci(low, high)}")
                else:
                    text = f'{esc(fmt(v))} <a class="no-ci" href="#no-interval">({esc(how)})</a>'
                cells.append(f'<td class="text">{text}</td>')
            rows.append(f"<tr><th>{esc_id(task)}</th><th>{key_link(bench.NAME, key)}</th>{''.join(cells)}</tr>")
        head = "<tr><th>task</th><th>key</th>" + "".join(alias_header(aliases, label) for label in labels) + "</tr>"
        table = (f'<p class="caption">{esc(bench.TITLE)}: value [95 % interval] per model.</p><div class="scroll">'
                 f"<table class=\"board\"><thead>{head}</thead><tbody>{''.join(rows)}</tbody></table></div>")
        parts.append(details(f"{bench.TITLE} ({len(columns)} keys)", table, "board"))
    parts.append("</section>")
    return "".join(parts)


def _family(column: str) -> str:
    from lm_eval_bias import samples

    return samples.task_family(column.split(":", 1)[0])
