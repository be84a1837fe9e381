"""The full analysis of a run, from lm-eval's logged samples, as pandas DataFrames and paste-ready tables.

lm-eval's results hold each task's *headline* (its paper's primary metrics, the valid / refusal /
invalid rates, their intervals and null floors). Everything else the tasks compute — per occupation,
identity, question and category, the paper's and the authors' variants, Holm columns, null floors, cell
tests — is computed here from the samples lm-eval logged with ``--log_samples``: each sample's record is
rebuilt from its doc and response (:func:`lm_eval_bias.samples.sample_record`) and handed to the same
statistics functions, with the same seeds, so every headline value is reproduced exactly and every other
key is the value the tasks reported before (issue 27).

In the spirit of Fairlearn's ``MetricFrame`` (one object per analysis, ``.overall``, ``.by_group``)::

    from lm_eval_bias import analysis
    run = analysis.analyze("results/")                 # {task: TaskAnalysis} for every task logged there
    a = run["focus_2afc_income"]
    a.overall                                           # quantities about the whole task
    a.by_group("win_rate")                              # one row per group: estimate, ci_low, ci_high, n, ...
    print(a.to_latex("win_rate"))                       # booktabs table for a paper
    a.values["male_win_rate_ci_low"]                    # any key, by its result-key name
    analysis.from_results(lm_eval.simple_evaluate(..., log_samples=True))   # the same, in memory

Columns of the long table (:attr:`TaskAnalysis.frame`, one row per quantity): ``quantity`` (the result
key of the estimate), ``metric`` and ``group`` (the quantity split into what is measured and about whom,
``group`` empty for the whole task), ``estimate``, then whichever companions the quantity has —
``stderr``, ``ci_low``, ``ci_high`` (95 % interval), ``null`` and ``p_null`` (permutation null floor and
its p-value), ``holm``, ``ci_low_paper``/``ci_high_paper`` (the paper's percentile interval) … — ``n``
(docs behind the quantity: all the task's docs, or those involving the group), ``section`` (of the
paper) and ``where`` (``results``: in lm-eval's results too; ``analysis``: only here).

Command: ``lm-eval-bias analyze RUN_DIR --output DIR [--tasks T1,T2] [--run STAMP]`` writes, per task,
``<task>.csv`` (the long table), ``<task>.json`` (every key's value and the table's rows) and
``<task>.tex`` (the overall table and one table per grouped metric, booktabs).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
import tempfile
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: companion columns in the order they are shown (derived-key suffix without its underscore)
COMPANIONS: tuple[str, ...] = ("stderr", "ci_low", "ci_high", "null", "p_null", "p_null_holm", "holm", "ci_low_paper",
                               "ci_high_paper")
#: digits shown in the LaTeX tables (estimates and intervals; p-values; counts are integers)
DIGITS = 3


def _benchmark(task: str):
    """The per-benchmark analysis module of ``task``."""
    from lm_eval_bias.samples import task_family

    family = task_family(task)
    if family == "fact_or_fair":
        from lm_eval_bias.fact_or_fair import analysis as module
    elif family == "cf_vqa":
        from lm_eval_bias.cf_vqa import analysis as module
    elif family == "vignette":
        from lm_eval_bias.vignette import analysis as module
    else:
        from lm_eval_bias.reflect import analysis as module
    return module


def task_values(task: str, records: list[dict[str, Any]], summary: Any = None) -> dict[str, float]:
    """Every key of ``task`` (headline and analysis) computed from its records."""
    return _benchmark(task).values(task, records, summary)


def headline_keys(task: str) -> tuple[str, ...]:
    """The keys ``task`` reports in lm-eval's results."""
    from lm_eval_bias.samples import aggregation_family

    return aggregation_family(task).headline


def _split(key: str) -> tuple[str, str]:
    """(quantity, companion) of a result key: ``win_rate_asian_ci_low`` -> (``win_rate_asian``, ``ci_low``)."""
    from lm_eval_bias.core.aggregation import base_key

    base = base_key(key)
    return base, key[len(base):].lstrip("_")


def _metric_group(quantity: str, vocabulary: list[str]) -> tuple[str, str]:
    """``quantity`` split at its longest group suffix (``win_rate_asian`` -> (``win_rate``, ``asian``);
    ``male_win_rate_ceo`` -> (``male_win_rate``, ``ceo``)); (quantity, "") without one."""
    for group in vocabulary:
        if quantity.endswith("_" + group) and len(quantity) > len(group) + 1:
            return quantity[: -len(group) - 1], group
    return quantity, ""


def _section(metric: str, sections: tuple[tuple[str, str], ...]) -> str:
    return next((section for prefix, section in sections if metric.startswith(prefix)), "")


def long_table(task: str, values: dict[str, float], records: list[dict[str, Any]]):
    """The long DataFrame of ``values`` (module docstring: one row per quantity)."""
    import pandas as pd

    module = _benchmark(task)
    vocabulary = module.group_vocabulary(records)
    sizes = module.group_sizes(records)
    headline = set(headline_keys(task))
    rows: dict[str, dict[str, Any]] = {}
    for key, value in values.items():
        quantity, companion = _split(key)
        if quantity not in values:  # a key whose base is not a key itself (e.g. p_race_paper): its own quantity
            quantity, companion = key, ""
        row = rows.get(quantity)
        if row is None:
            metric, group = _metric_group(quantity, vocabulary)
            row = rows[quantity] = {"quantity": quantity, "metric": metric, "group": group}
        row["estimate" if not companion else companion] = value
    frame = pd.DataFrame(list(rows.values()))
    extra = [c for c in frame.columns if c not in ("quantity", "metric", "group", "estimate", *COMPANIONS)]
    columns = ["quantity", "metric", "group", "estimate", *[c for c in COMPANIONS if c in frame.columns], *extra]
    frame = frame.reindex(columns=columns)
    frame["n"] = [sizes.get(g, 0) if g else len(records) for g in frame["group"]]
    frame["section"] = [_section(m, module.SECTIONS) for m in frame["metric"]]
    in_results = {q for q in frame["quantity"] if q in headline}
    in_results |= {_split(k)[0] for k in headline if _split(k)[0] in rows}  # a companion in the headline
    frame["where"] = ["results" if q in in_results else "analysis" for q in frame["quantity"]]
    return frame.reset_index(drop=True)


@dataclass
class TaskAnalysis:
    """The full analysis of one task run (module docstring). ``values``: every key by its result-key
    name; ``frame``: the long table; ``records``: the per-doc records it was computed from."""

    task: str
    records: list[dict[str, Any]]
    values: dict[str, float]
    frame: Any = field(repr=False)

    @classmethod
    def from_records(cls, task: str, records: list[dict[str, Any]]) -> "TaskAnalysis":
        values = task_values(task, records)
        return cls(task, records, values, long_table(task, values, records))

    @property
    def headline(self) -> dict[str, float]:
        """The values lm-eval's results hold for this task (recomputed: equal to them)."""
        return {k: self.values[k] for k in headline_keys(self.task) if k in self.values}

    @property
    def overall(self):
        """Quantities about the whole task (no group), indexed by quantity."""
        part = self.frame[self.frame["group"] == ""]
        return self._tidy(part).set_index("quantity")

    @property
    def metrics_by_group(self) -> list[str]:
        """Metrics reported for more than one group (each a :meth:`by_group` table)."""
        grouped = self.frame[self.frame["group"] != ""].groupby("metric", sort=False)["group"].nunique()
        return [m for m, n in grouped.items() if n > 1]

    def by_group(self, metric: str):
        """One row per group of ``metric`` (indexed by group): estimate, its companions, n, section."""
        part = self.frame[(self.frame["metric"] == metric) & (self.frame["group"] != "")]
        if part.empty:
            known = ", ".join(self.metrics_by_group) or "none"
            raise KeyError(f"{self.task}: no metric {metric!r} by group (metrics by group: {known})")
        return self._tidy(part).set_index("group").drop(columns=["metric"])

    def tables(self) -> dict[str, Any]:
        """``overall`` and one by-group table per grouped metric, by name."""
        out = {"overall": self.overall}
        out.update({metric: self.by_group(metric) for metric in self.metrics_by_group})
        return out

    @staticmethod
    def _tidy(part):
        """Companion columns that are empty for every row of ``part`` left out."""
        keep = [c for c in part.columns if c not in COMPANIONS or part[c].notna().any()]
        return part[keep]

    def to_latex(self, metric: str | None = None, caption: str | None = None) -> str:
        """A booktabs table (pandas ``Styler.to_latex``) of :attr:`overall` or of :meth:`by_group`
        ``metric``: estimates, intervals and p-values to 3 decimals, n as an integer, NaN as "--"."""
        table = (self.overall if metric is None else self.by_group(metric)).reset_index()
        table = table.drop(columns=[c for c in ("section", "where", "metric", "group" if metric is None else "quantity")
                                    if c in table.columns])

        def number(v, digits):
            if v is None or (isinstance(v, float) and math.isnan(v)):
                return "--"
            return f"{v:.{digits}f}" if digits else f"{int(v):d}"

        import pandas as pd

        formats = {c: (lambda v, d=(0 if c == "n" else DIGITS): number(v, d))
                   for c in table.columns if pd.api.types.is_numeric_dtype(table[c])}
        styler = table.style.format(formats).format(escape="latex", subset=[c for c in table.columns if c not in formats])
        styler = styler.hide(axis="index").format_index(escape="latex", axis=1)
        label = re.sub(r"[^A-Za-z0-9]+", "-", f"{self.task}-{metric or 'overall'}")
        what = f"{metric} by group" if metric else "overall"
        return styler.to_latex(hrules=True, caption=caption or f"{self.task}: {what}".replace("_", r"\_"),
                               label=f"tab:{label}", position_float="centering")

    def to_json(self) -> dict[str, Any]:
        """Every key's value and the long table's rows (NaN as null)."""
        def clean(v):
            return None if isinstance(v, float) and not math.isfinite(v) else v

        rows = [{k: clean(v) for k, v in row.items()} for row in self.frame.to_dict(orient="records")]
        return {"task": self.task, "n_docs": len(self.records), "headline": list(headline_keys(self.task)),
                "values": {k: clean(v) for k, v in self.values.items()}, "rows": rows}


def from_results(results: dict[str, Any], tasks: list[str] | None = None) -> dict[str, TaskAnalysis]:
    """:class:`TaskAnalysis` of every task (or of ``tasks``) of an in-memory ``lm_eval.simple_evaluate``
    output run with ``log_samples=True`` (its ``samples``), as :func:`analyze` reads them from files."""
    from lm_eval_bias import samples
    from lm_eval_bias.samples import task_family

    logged = results.get("samples") or {}
    names = tasks or [t for t in logged if _is_plugin_task(t)]
    out = {}
    for task in names:
        if task not in logged:
            raise KeyError(f"{task}: no logged samples in these results (run with log_samples=True)")
        task_family(task)
        records = [samples.sample_record(task, json.loads(json.dumps(s, default=str)), f"sample {k}")
                   for k, s in enumerate(logged[task])]
        out[task] = TaskAnalysis.from_records(task, records)
    return out


def _is_plugin_task(task: str) -> bool:
    from lm_eval_bias.samples import task_family

    try:
        task_family(task)
    except ValueError:
        return False
    return True


def logged_tasks(path: str | os.PathLike) -> list[str]:
    """The tasks of this plugin with logged samples under ``path`` (``samples_<task>_<stamp>.jsonl``)."""
    from lm_eval_bias.samples import task_family

    path = Path(path)
    files = [path] if path.is_file() else sorted(path.rglob("samples_*.jsonl"))
    found = set()
    for file in files:
        name = file.name[len("samples_"):-len(".jsonl")] if file.name.startswith("samples_") else file.stem
        task = re.sub(r"_\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}(?:\.\d+)?$", "", name)
        try:
            task_family(task)
        except ValueError:
            continue
        found.add(task)
    return sorted(found)


def analyze_task(path: str | os.PathLike, task: str, run: Any = None) -> TaskAnalysis:
    """The :class:`TaskAnalysis` of ``task``'s run under ``path`` (one run, or the shards of one run;
    see :func:`lm_eval_bias.samples.load_records` for how a run is chosen)."""
    from lm_eval_bias import samples

    records = samples.load_records(path, task, run=run)
    if not records:
        raise ValueError(f"{task}: no logged samples under {path}")
    return TaskAnalysis.from_records(task, records)


def analyze(path: str | os.PathLike, tasks: list[str] | None = None, run: Any = None) -> dict[str, TaskAnalysis]:
    """:class:`TaskAnalysis` of every task (or of ``tasks``) logged under ``path``."""
    names = tasks or logged_tasks(path)
    if not names:
        raise FileNotFoundError(f"no samples_<task>_*.jsonl of this plugin's tasks under {path} "
                                "(was lm-eval run with --log_samples?)")
    return {task: analyze_task(path, task, run) for task in names}


# -- command ---------------------------------------------------------------------------------------------
def _write(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically (temporary file in the same folder, then ``os.replace``)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_outputs(result: TaskAnalysis, output: Path) -> list[Path]:
    """``<task>.csv``, ``<task>.json`` and ``<task>.tex`` of one task under ``output``."""
    output.mkdir(parents=True, exist_ok=True)
    csv = output / f"{result.task}.csv"
    _write(csv, result.frame.to_csv(index=False))
    js = output / f"{result.task}.json"
    _write(js, json.dumps(result.to_json(), indent=1, allow_nan=False) + "\n")
    tex = output / f"{result.task}.tex"
    parts = [f"% {result.task}: the full analysis from logged samples (lm-eval-bias analyze); needs \\usepackage{{booktabs}}",
             result.to_latex()]
    parts += [result.to_latex(metric) for metric in result.metrics_by_group]
    _write(tex, "\n".join(parts))
    return [csv, js, tex]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lm-eval-bias analyze",
        description="The full analysis of a run from lm-eval's logged samples (--log_samples): every key of every "
                    "task (by group, with estimate, interval, n and the paper's section) as CSV, JSON and LaTeX.")
    parser.add_argument("run_dir", metavar="RUN_DIR", help="lm-eval's --output_path of a run with --log_samples")
    parser.add_argument("--output", required=True, metavar="DIR", help="folder to write <task>.csv/.json/.tex into")
    parser.add_argument("--tasks", default=None, help="comma-separated tasks (default: every task logged in RUN_DIR)")
    parser.add_argument("--run", default=None, metavar="STAMP",
                        help="the run to analyse when RUN_DIR holds several (lm-eval's stamp or a samples file)")
    return parser


def main(argv: list[str] | None = None) -> int:
    """``lm-eval-bias analyze RUN_DIR --output DIR``; errors are one line ``error: <what>: <why>``, exit 2."""
    args = _parser().parse_args(argv)
    run_dir = Path(args.run_dir)
    if not run_dir.exists():
        print(f"error: analyze: {run_dir} does not exist: pass lm-eval's --output_path of a run with --log_samples",
              file=sys.stderr)
        return 2
    tasks = [t.strip() for t in args.tasks.split(",") if t.strip()] if args.tasks else None
    try:
        if tasks:
            from lm_eval_bias.samples import task_family

            for task in tasks:
                task_family(task)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            results = analyze(run_dir, tasks, args.run)
        output = Path(args.output)
        written = [p for result in results.values() for p in write_outputs(result, output)]
    except (FileNotFoundError, ValueError, KeyError, OSError) as exc:
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        print(f"error: analyze: {message}", file=sys.stderr)
        return 2
    for warning in caught:
        print(f"warning: {str(warning.message).splitlines()[0]}", file=sys.stderr)
    for task, result in results.items():
        grouped = len(result.metrics_by_group)
        print(f"{task}: {len(result.records)} docs, {len(result.values)} keys, {len(result.frame)} quantities "
              f"({grouped} metrics by group)")
    print(f"wrote {len(written)} files to {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
