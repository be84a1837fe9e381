"""``lm-eval-bias replicate RUN_DIR``: a run's numbers beside the papers' printed ones.

For every result key of the run's tasks that a paper prints (``lm_eval_bias/<benchmark>/
reference_values.csv``, read by :mod:`lm_eval_bias.core.reference`), one line::

    cf_vqa  consistency_demography  Table 2 · o3 · Demography Cons.  paper: 66.7 · yours: 58.0 [52.0, 64.0]

in the paper's unit and rounding (the run's value is ``ours / scale``; the interval is the key's
``_ci_low`` / ``_ci_high`` where the task reports one). The paper's values are those of the same
model — the run's model name (``pretrained=`` / ``model=``), or ``--model-name`` — matched by
:func:`lm_eval_bias.core.reference.same_model`; for a model the paper did not evaluate, every model's
printed value is listed as context (``--model-name`` picks one). The run is read as the report reads
it (:func:`lm_eval_bias.report.runs.load_runs`: values recomputed from the logged samples, else the
results JSON).
"""

from __future__ import annotations

import math
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from lm_eval_bias.core import reference

#: result-key suffixes of an interval
CI_LOW, CI_HIGH = "_ci_low", "_ci_high"


@dataclass(frozen=True)
class Comparison:
    """One printed cell beside the run's value of the same key (``yours`` in the paper's unit)."""

    model: str          # the run's model
    task: str
    ref: reference.ReferenceValue
    same_model: bool    # the paper's value is of this run's model (else: context)
    yours: float
    low: float
    high: float

    @property
    def difference(self) -> float:
        return self.yours - self.ref.value

    def _fmt(self, x: float) -> str:
        if not math.isfinite(x):
            return "n/a"
        digits = self.ref.rounding if self.ref.rounding is not None else 3
        return f"{x:.{max(digits, 1)}f}"

    def text(self) -> str:
        """"paper: 66.7 · yours: 58.0 [52.0, 64.0]" (with the paper's model when it is context)."""
        paper = f"paper: {self.ref.printed}" if self.same_model else f"paper ({self.ref.model or 'pooled'}): {self.ref.printed}"
        interval = f" [{self._fmt(self.low)}, {self._fmt(self.high)}]" if math.isfinite(self.low) and math.isfinite(self.high) else ""
        note = f" ({self.ref.note})" if self.ref.note else ""
        return f"{paper} · yours: {self._fmt(self.yours)}{interval}{note}"


def _model_name(label: str) -> str:
    """A report label without its marks (" [guided]", " [lenient]", " [logprob]")."""
    return re.sub(r"( \[[a-z]+\])+$", "", label)


def compare(model: str, metrics_by_task: dict[str, dict[str, float]], model_name: str | None = None,
            values: list[reference.ReferenceValue] | None = None) -> list[Comparison]:
    """Every reference value whose task and key the run reports, beside the run's value: those of the
    same model (``model_name`` or the run's ``model``) when the paper printed any for that key, else
    every model's (as context). Ordered as the reference files list them."""
    values = reference.load() if values is None else values
    name = model_name or _model_name(model)
    by_key: dict[tuple[str, str], list[reference.ReferenceValue]] = {}
    for ref in values:
        if ref.key and ref.task in metrics_by_task and ref.key in metrics_by_task[ref.task]:
            by_key.setdefault((ref.task, ref.key), []).append(ref)
    out = []
    for (task, key), refs in by_key.items():
        metrics = metrics_by_task[task]
        same = [r for r in refs if r.model and reference.same_model(r.model, name)]
        for ref in same or refs:
            scale = ref.scale or 1.0
            ours = float(metrics.get(key, math.nan))
            low, high = (float(metrics.get(key + s, math.nan)) for s in (CI_LOW, CI_HIGH))
            out.append(Comparison(model, task, ref, bool(same), ours / scale, low / scale, high / scale))
    return out


def comparison_table(comparisons: list[Comparison]):
    """The comparisons as a pandas DataFrame (one row each), for the report and ``--output``."""
    import pandas as pd

    rows = [{"model": c.model, "task": c.task, "key": c.ref.key, "paper": c.ref.paper, "table": c.ref.table,
             "section": c.ref.section, "row": c.ref.row, "column": c.ref.column, "paper model": c.ref.model,
             "same model": c.same_model, "printed": c.ref.printed, "paper value": c.ref.value, "yours": c.yours,
             "yours 95 % CI low": c.low, "yours 95 % CI high": c.high, "difference": c.difference,
             "note": c.ref.note} for c in comparisons]
    return pd.DataFrame(rows)


def render_text(comparisons: list[Comparison]) -> str:
    """One aligned line per comparison, grouped by model."""
    lines = []
    for model in dict.fromkeys(c.model for c in comparisons):
        mine = [c for c in comparisons if c.model == model]
        same = any(c.same_model for c in mine)
        lines.append(f"{model}: " + ("the papers' values for this model" if same else
                                     "not a model of the papers: every model's printed values as context"))
        width_key = max(len(f"{c.task} {c.ref.key}") for c in mine)
        width_ref = max(len(c.ref.label()) for c in mine)
        for c in mine:
            lines.append(f"  {(c.task + ' ' + c.ref.key):<{width_key}}  {c.ref.label():<{width_ref}}  {c.text()}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """``lm-eval-bias replicate RUN_DIR [--model-name NAME] [--output FILE.csv]``."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="lm-eval-bias replicate",
        description="Print a run's values beside the numbers the papers print for the same keys "
                    "(paper: X · yours: Y [95 % interval]), in the paper's units.")
    parser.add_argument("run_dir", help="an lm-eval --output_path folder (results JSON, --log_samples files)")
    parser.add_argument("--model-name", help="the paper's name of the run's model, when the run's own name "
                                             "(pretrained= / model=) does not match it (e.g. 'GPT-4o-2024-08-06')")
    parser.add_argument("--output", help="also write the comparison as CSV to this file")
    args = parser.parse_args(argv)
    from lm_eval_bias.report.runs import load_runs

    try:
        models = load_runs([args.run_dir])
        values = reference.load()
    except (FileNotFoundError, ValueError) as exc:
        print(f"error: replicate: {exc}", file=sys.stderr)
        return 2
    for model in models:  # suspicious but usable inputs (duplicated or truncated samples, fallbacks), as the report says
        for text in model.warnings:
            print(f"warning: {model.label}: {text}", file=sys.stderr)
    comparisons = []
    for model in models:
        comparisons += compare(model.label, {t: r.metrics for t, r in model.tasks.items()}, args.model_name, values)
    if not comparisons:
        tasks = sorted({t for m in models for t in m.tasks})
        print(f"no result key of {', '.join(tasks) or 'this run'} is printed in the papers "
              "(docs/paper-map.md lists which tasks reproduce which table)")
        return 0
    print(render_text(comparisons))
    if args.output:
        out = Path(args.output)
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
            tmp = out.with_name(out.name + ".tmp")
            comparison_table(comparisons).to_csv(tmp, index=False)
            os.replace(tmp, out)
        except OSError as exc:
            print(f"error: replicate: cannot write {out}: {exc.strerror or exc}", file=sys.stderr)
            return 2
        print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
