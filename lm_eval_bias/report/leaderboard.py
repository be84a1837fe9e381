"""The leaderboard: one row per model, each task's headline keys with their 95 % intervals and ranks,
differences that are not significant marked as ties.

Files: ``leaderboard.csv`` (columns ``<task>:<key>``, ``…:ci95_low``, ``…:ci95_high``, ``…:rank``: the
competition rank, equal for tied models, empty when not ranked),
``leaderboard.md`` (one table, ``value [low, high] #rank`` cells, ``=`` for a shared rank) and
``leaderboard.json`` (per model and key: value, ci95, the interval's method or the reason there is
none, null floor and p_null where the task has them, rank, and the paired comparison with the next
model), and ``leaderboard_comparisons.csv`` (every adjacent comparison). Model labels come from the
runs' model_args, so they are escaped: Markdown cells have no raw HTML or table syntax, CSV text
cells cannot start a spreadsheet formula, JSON has null for a missing or infinite number (never a bare
NaN). On the index page: one table per benchmark, metrics as rows and models as columns (short aliases
M1, M2, …).

**Ties.** Per headline key, the models with a value are ordered (better first where the key has a
direction — ``HIGHER_IS_BETTER`` of the task YAMLs — else higher value first). Each pair of adjacent
models is compared by the paired cluster bootstrap on the docs both answered
(:func:`lm_eval_bias.report.comparison.paired_comparison`) — a plug-in magnitude (Pol, JSD, Ext,
FACT-OR-FAIR's scores, VIGNETTE's spreads) by the exchange test of the two models' answers cluster by
cluster instead, with no interval of its difference; the p-values of the adjacent comparisons
of one key are Holm-adjusted together; two adjacent models whose Holm-adjusted p ≥ 0.05 (or that
cannot be compared: no shared samples) are a tie and share a rank (competition ranking: 1, 2, 2, 4).
Nothing is adjusted across keys, tasks or benchmarks.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from lm_eval_bias.report.card import SECTIONS, section_of
from lm_eval_bias.report.intervals import DIFFERENCE_OF_MAGNITUDES, companions, interval, magnitude_without_interval
from lm_eval_bias.report.render import csv_safe, details, esc, esc_id, fmt, fmt_ci, key_link, md_escape, table_html
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


@dataclass
class Step:
    """The comparison of two adjacent models of one key's ranking (``better`` ranked above ``worse``)."""

    better: str
    worse: str
    estimate: float = math.nan  # better − worse on the shared docs
    ci_low: float = math.nan
    ci_high: float = math.nan
    p: float = math.nan
    p_holm: float = math.nan
    tie: bool = True
    n_shared: int = 0
    n_only_better: int = 0
    n_only_worse: int = 0
    note: str = ""


@dataclass
class Ranking:
    """One headline key's order of models, their competition ranks and the adjacent comparisons."""

    column: str
    direction: str
    order: list[str] = field(default_factory=list)
    ranks: dict[str, int] = field(default_factory=dict)
    steps: list[Step] = field(default_factory=list)


def _direction(key: str) -> bool | None:
    from lm_eval_bias.tasks.generate_yamls import HIGHER_IS_BETTER

    return HIGHER_IS_BETTER.get(key)


def rankings(models: list[ModelRun]) -> dict[str, Ranking]:
    """{"<task>:<key>": :class:`Ranking`} of every headline key run by two or more models (see the module
    docstring for the rule)."""
    from lm_eval_bias.report.comparison import paired_comparison
    from lm_eval_bias.core.paired import holm, tie_groups

    found = entries(models)
    by_label = {m.label: m for m in models}
    columns = sorted({c for metrics in found.values() for c in metrics})
    memo: dict[tuple[str, str, str], object] = {}
    replicate_cache: dict = {}  # one model's replicates, reused in its comparisons over the same docs
    out = {}
    for column in columns:
        task, key = column.split(":", 1)
        valued = [(label, metrics[column][0]) for label, metrics in found.items()
                  if column in metrics and math.isfinite(metrics[column][0])]
        if len(valued) < 2:
            continue
        higher = _direction(key)
        order = [label for label, _ in sorted(valued, key=lambda lv: lv[1] if higher is False else -lv[1])]
        ranking = Ranking(column, {True: "higher is better", False: "lower is better"}.get(
            higher, "no better direction: higher value first"), order)
        for better, worse in zip(order, order[1:]):
            pair = tuple(sorted((better, worse)))
            if (task, *pair) not in memo:
                run_a, run_b = by_label[pair[0]].tasks[task], by_label[pair[1]].tasks[task]
                keys = [k for k in _headline_keys(run_a) if k in run_b.metrics]
                magnitudes = [k for k in keys if magnitude_without_interval(run_a, k)]
                try:
                    memo[(task, *pair)] = paired_comparison(task, run_a.records, run_b.records, keys, pair[0], pair[1],
                                                            cache=replicate_cache, exchange_keys=magnitudes)
                except Exception as exc:  # noqa: BLE001 - a failed comparison is reported, not fatal
                    from lm_eval_bias.report.comparison import PairedComparison

                    memo[(task, *pair)] = PairedComparison(task, pair[0], pair[1],
                                                           reason=f"{type(exc).__name__}: {exc}")
            comparison = memo[(task, *pair)]
            sign = 1 if pair[0] == better else -1
            step = Step(better, worse)
            step.n_shared = comparison.n_shared
            step.n_only_better, step.n_only_worse = ((comparison.n_only_a, comparison.n_only_b) if sign == 1
                                                     else (comparison.n_only_b, comparison.n_only_a))
            diff = comparison.differences.get(key)
            if diff is None or not math.isfinite(diff.p_value):
                step.note = "untested: " + (comparison.reason or "difference undefined in resamples")
            else:
                step.estimate = sign * diff.estimate
                step.p = diff.p_value
                step.note = comparison.method
                if key in comparison.exchange_p:  # a magnitude: no interval, the exchange test decides the tie
                    step.p = comparison.exchange_p[key]
                    step.note += "; " + DIFFERENCE_OF_MAGNITUDES
                else:
                    low, high = sign * diff.ci_low, sign * diff.ci_high
                    step.ci_low, step.ci_high = min(low, high), max(low, high)
            ranking.steps.append(step)
        adjusted = holm([s.p for s in ranking.steps])
        for step, p_holm in zip(ranking.steps, adjusted):
            step.p_holm = float(p_holm)
            step.tie = not (math.isfinite(p_holm) and p_holm < 0.05)
        ranking.ranks = dict(zip(order, tie_groups(order, [not s.tie for s in ranking.steps])))
        out[column] = ranking
    return out


def _headline_keys(run) -> list[str]:
    section = section_of(run.family)
    return [k for k in (section.HEADLINE.get(run.family, ()) if section else ()) if k in run.metrics]


def rank_text(ranking: Ranking | None, label: str) -> str:
    """``#2`` or ``#2=`` (a rank shared with a tied neighbour); "" when the key is not ranked."""
    if ranking is None or label not in ranking.ranks:
        return ""
    rank = ranking.ranks[label]
    shared = sum(1 for r in ranking.ranks.values() if r == rank) > 1
    return f"#{rank}" + ("=" if shared else "")


def leaderboard(models: list[ModelRun], ranks: dict[str, Ranking] | None = None) -> pd.DataFrame:
    """One row per model: for each task run, its headline keys with 95 % intervals and ranks."""
    ranks = rankings(models) if ranks is None else ranks
    rows = []
    for label, metrics in entries(models).items():
        row: dict[str, object] = {"model": label}
        for column, (value, low, high, _) in metrics.items():
            row[column] = value
            row[f"{column}:ci95_low"] = low
            row[f"{column}:ci95_high"] = high
            ranking = ranks.get(column)
            row[f"{column}:rank"] = float(ranking.ranks[label]) if ranking and label in ranking.ranks else math.nan
        rows.append(row)
    return pd.DataFrame(rows).set_index("model")


def _metrics(board: pd.DataFrame) -> list[str]:
    return [c for c in board.columns if not c.endswith(("ci95_low", "ci95_high", ":rank"))]


def _cell(row, column: str, board: pd.DataFrame | None = None) -> str:
    low, high = row.get(f"{column}:ci95_low"), row.get(f"{column}:ci95_high")
    ci = f" {fmt_ci(low, high)}" if isinstance(low, float) and math.isfinite(low) and math.isfinite(high) else ""
    rank = row.get(f"{column}:rank")
    text = ""
    if isinstance(rank, float) and math.isfinite(rank):
        shared = board is not None and int((board[f"{column}:rank"] == rank).sum()) > 1
        text = f" #{int(rank)}" + ("=" if shared else "")
    return fmt(row[column]) + ci + text


def comparisons_table(ranks: dict[str, Ranking]) -> pd.DataFrame:
    """Every adjacent comparison of the leaderboard (one row per key and pair of neighbours)."""
    rows = [{"task": column.split(":", 1)[0], "key": column.split(":", 1)[1], "direction": ranking.direction,
             "better": s.better, "worse": s.worse, "difference": s.estimate, "ci95_low": s.ci_low,
             "ci95_high": s.ci_high, "p": s.p, "p_holm": s.p_holm, "tie": s.tie, "docs_shared": s.n_shared,
             "docs_only_better": s.n_only_better, "docs_only_worse": s.n_only_worse, "method": s.note}
            for column, ranking in ranks.items() for s in ranking.steps]
    return pd.DataFrame(rows, columns=["task", "key", "direction", "better", "worse", "difference", "ci95_low",
                                       "ci95_high", "p", "p_holm", "tie", "docs_shared", "docs_only_better",
                                       "docs_only_worse", "method"])


def markdown(board: pd.DataFrame) -> str:
    metrics = _metrics(board)
    lines = ["| model | " + " | ".join(md_escape(m) for m in metrics) + " |", "|---|" + "---|" * len(metrics)]
    for model, row in board.iterrows():
        lines.append(f"| {md_escape(model)} | " + " | ".join(md_escape(_cell(row, m, board)) for m in metrics) + " |")
    return "\n".join(lines) + "\n"


def _json_number(value) -> float | None:
    """A finite float, else None (JSON has no NaN or Infinity)."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def write(models: list[ModelRun], root: Path, ranks: dict[str, Ranking] | None = None) -> pd.DataFrame:
    """Write leaderboard.csv / .md / .json and leaderboard_comparisons.csv under ``root``; returns the board."""
    ranks = rankings(models) if ranks is None else ranks
    board = leaderboard(models, ranks)
    found = entries(models)
    by_label = {m.label: m for m in models}
    csv_safe(board).to_csv(root / "leaderboard.csv")
    csv_safe(comparisons_table(ranks)).to_csv(root / "leaderboard_comparisons.csv", index=False)
    (root / "leaderboard.md").write_text(markdown(board), encoding="utf-8")
    records = []
    for model, row in board.iterrows():
        metrics = {}
        for column in _metrics(board):
            low, high = _json_number(row.get(f"{column}:ci95_low")), _json_number(row.get(f"{column}:ci95_high"))
            how = found.get(str(model), {}).get(column, (0, 0, 0, "not run"))[3]
            entry = {"value": _json_number(row[column]), "ci95": None if low is None and high is None else [low, high],
                     "interval": how}
            task, key = column.split(":", 1)
            run = by_label[str(model)].tasks.get(task)
            if run is not None:
                c = companions(run, key)
                entry.update({name: _json_number(value) for name, value in
                              (("null", c.null), ("p_null", c.p_null), ("chance", c.chance)) if math.isfinite(value)})
            ranking = ranks.get(column)
            if ranking is not None and str(model) in ranking.ranks:
                entry["rank"] = ranking.ranks[str(model)]
                step = next((s for s in ranking.steps if s.better == str(model)), None)
                if step is not None:
                    entry["vs_next"] = {"model": step.worse, "difference": _json_number(step.estimate),
                                        "ci95": ([_json_number(step.ci_low), _json_number(step.ci_high)]
                                                 if math.isfinite(step.ci_low) else None),
                                        "p": _json_number(step.p), "p_holm": _json_number(step.p_holm), "tie": step.tie,
                                        "docs_shared": step.n_shared, "docs_only_this": step.n_only_better,
                                        "docs_only_next": step.n_only_worse, "method": step.note}
            metrics[column] = entry
        records.append({"model": str(model), "metrics": metrics})
    (root / "leaderboard.json").write_text(json.dumps(records, indent=2, allow_nan=False), encoding="utf-8")
    return board


def alias_header(aliases: dict[str, str], label: str) -> str:
    return f'<th title="{esc(label)}">{esc(aliases[label])}</th>'


def section(models: list[ModelRun], aliases: dict[str, str], ranks: dict[str, Ranking] | None = None) -> str:
    """The leaderboard on the index page: per benchmark, headline keys (rows) × models (columns)."""
    ranks = rankings(models) if ranks is None else ranks
    found = entries(models)
    labels = [m.label for m in models]
    parts = ['<section id="leaderboard"><h2>Leaderboard</h2><p>Headline keys of every task, value and 95 % interval '
             "per model (columns: the aliases of the model table), then the model's rank for that key: "
             "<strong>#2=</strong> is a rank shared with a neighbour whose difference is not significant (a tie). "
             "Rule: models are ordered (better first where the key has a direction, else higher value first); "
             "each adjacent pair is compared by a paired cluster bootstrap on the docs both answered (docs answered "
             "by only one model are left out and counted); the adjacent comparisons of one key are Holm-adjusted "
             "together; a Holm-adjusted p ≥ 0.05, or no shared samples, is a tie. Nothing is adjusted across keys, "
             "tasks or benchmarks. Files: <code>leaderboard.csv</code>, <code>leaderboard.md</code>, "
             "<code>leaderboard.json</code>, <code>leaderboard_comparisons.csv</code> (every adjacent "
             "comparison).</p>"]
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
                rank = rank_text(ranks.get(column), label)
                if rank:
                    text += f' <span class="rank{" tie" if rank.endswith("=") else ""}">{esc(rank)}</span>'
                cells.append(f'<td class="text">{text}</td>')
            rows.append(f"<tr><th>{esc_id(task)}</th><th>{key_link(bench.NAME, key)}</th>{''.join(cells)}</tr>")
        head = "<tr><th>task</th><th>key</th>" + "".join(alias_header(aliases, label) for label in labels) + "</tr>"
        table = (f'<p class="caption">{esc(bench.TITLE)}: value [95 % interval] #rank per model (= a tie).</p>'
                 f'<div class="scroll"><table class="board"><thead>{head}</thead><tbody>{"".join(rows)}</tbody>'
                 "</table></div>")
        parts.append(details(f"{bench.TITLE} ({len(columns)} keys)", table, "board"))
    steps = comparisons_table(ranks)
    if len(steps):
        shown = steps.copy()
        shown["better"] = [aliases.get(x, x) for x in shown["better"]]
        shown["worse"] = [aliases.get(x, x) for x in shown["worse"]]
        shown["tie"] = ["tie" if t else "different" for t in shown["tie"]]
        parts.append(details(f"Adjacent comparisons behind the ranks ({len(shown)})", table_html(
            shown.drop(columns=["direction"]), "Paired comparisons of adjacent models per key: difference (better − "
            "worse) on the docs both answered with its 95 % paired-bootstrap interval, p-value, Holm-adjusted p "
            "(within the key), docs shared and answered by one model only.", index=False), "board"))
    parts.append("</section>")
    return "".join(parts)


def _family(column: str) -> str:
    from lm_eval_bias import samples

    return samples.task_family(column.split(":", 1)[0])
