"""The papers' printed numbers as data: ``lm_eval_bias/<benchmark>/reference_values.csv``.

Every number printed in a paper's tables is transcribed once, one row per cell, with the columns

- ``paper`` (title and public reference), ``table`` ("Table 2"), ``section`` (a row group or panel),
  ``row``, ``column``, ``model`` (the model the value belongs to, "" when the table pools models or
  names none);
- ``value`` (a number), ``printed`` (the cell as printed: "< 0.001", "↑8.91", "1,871"), ``rounding``
  (decimals as printed; "" for bounds and fractions), ``note`` (what the cell means where the header
  does not say it; known misprints start with ``MISPRINT``);
- ``task``, ``key``, ``scale``: where the cell is a result key of one of this project's tasks, that
  task, key and the factor from the paper's unit to ours (``ours = printed value × scale``: the
  papers print percentages where the tasks report fractions, scale 0.01); empty otherwise.

This module reads those files; it knows no benchmark (each benchmark folder holds its own file). The
comparison with a run is :mod:`lm_eval_bias.replicate`.
"""

from __future__ import annotations

import csv
import math
import re
from dataclasses import dataclass
from pathlib import Path

#: the columns of every reference_values.csv, in order
COLUMNS = ("paper", "table", "section", "row", "column", "model", "value", "printed", "rounding", "note", "task", "key",
           "scale")
PACKAGE = Path(__file__).resolve().parents[1]
FILE_NAME = "reference_values.csv"


@dataclass(frozen=True)
class ReferenceValue:
    """One printed cell of a paper's table (see the module docstring for the fields)."""

    benchmark: str
    paper: str
    table: str
    section: str
    row: str
    column: str
    model: str
    value: float
    printed: str
    rounding: int | None
    note: str
    task: str
    key: str
    scale: float | None

    @property
    def is_misprint(self) -> bool:
        return self.note.startswith("MISPRINT")

    @property
    def ours(self) -> float:
        """The value in the task's unit (``value × scale``); NaN when the cell maps to no key."""
        return self.value * self.scale if self.scale is not None else math.nan

    def label(self) -> str:
        """"Table 2 · o3 · Demography Cons." (section, row and column where they add something)."""
        parts = [self.table, self.section, self.row, self.column]
        return " · ".join(p for k, p in enumerate(parts) if p and (k == 0 or p not in parts[:k]))


def reference_files() -> dict[str, Path]:
    """benchmark folder name -> its reference_values.csv, for every benchmark folder that has one."""
    return {path.parent.name: path for path in sorted(PACKAGE.glob(f"*/{FILE_NAME}"))}


def _row(benchmark: str, raw: dict[str, str], where: str) -> ReferenceValue:
    missing = [c for c in COLUMNS if raw.get(c) is None]
    if missing:
        raise ValueError(f"{where}: missing columns {missing}")
    try:
        value = float(raw["value"])
        rounding = int(raw["rounding"]) if raw["rounding"].strip() else None
        scale = float(raw["scale"]) if raw["scale"].strip() else None
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from None
    if bool(raw["key"].strip()) != bool(raw["task"].strip()) or bool(raw["key"].strip()) != (scale is not None):
        raise ValueError(f"{where}: task, key and scale are given together or not at all")
    return ReferenceValue(benchmark, raw["paper"], raw["table"], raw["section"], raw["row"], raw["column"], raw["model"],
                          value, raw["printed"], rounding, raw["note"], raw["task"].strip(), raw["key"].strip(), scale)


def load(benchmark: str | None = None, path: str | Path | None = None) -> list[ReferenceValue]:
    """The reference values of one benchmark (its folder name, e.g. ``"cf_vqa"``), of a given
    ``path``, or of every benchmark (both None). A malformed row raises ValueError naming file and line."""
    if path is not None:
        files = {benchmark or Path(path).parent.name: Path(path)}
    else:
        files = reference_files()
        if benchmark is not None:
            if benchmark not in files:
                raise ValueError(f"no reference values for {benchmark!r} (have: {', '.join(files) or 'none'})")
            files = {benchmark: files[benchmark]}
    out: list[ReferenceValue] = []
    for name, file in files.items():
        with open(file, encoding="utf-8", newline="") as handle:
            reader = csv.DictReader(handle)
            if tuple(reader.fieldnames or ()) != COLUMNS:
                raise ValueError(f"{file}: columns {reader.fieldnames} are not {list(COLUMNS)}")
            out += [_row(name, raw, f"{file}:{line}") for line, raw in enumerate(reader, 2)]
    return out


def normalize_model(name: str) -> str:
    """Lower-case letters and digits only ("GPT-4o-2024-08-06" -> "gpt4o20240806"), for matching a
    run's model name to the names the papers print."""
    return re.sub(r"[^a-z0-9]", "", name.lower())


def same_model(paper_model: str, run_model: str) -> bool:
    """Whether a paper's model name and a run's model name (``pretrained=`` or ``--model-name``) name
    the same model: equal after :func:`normalize_model`, or one contains the other (a run of
    ``openai/gpt-4o-2024-08-06`` is the paper's "GPT-4o-2024-08-06"; the paper's short "GPT-4o" names
    it too). Names of fewer than three characters match only exactly."""
    a, b = normalize_model(paper_model), normalize_model(run_model)
    if not a or not b:
        return False
    if a == b:
        return True
    return min(len(a), len(b)) >= 3 and (a in b or b in a)


def tables(values: list[ReferenceValue]) -> dict[str, set[str]]:
    """benchmark -> the tables with at least one value."""
    out: dict[str, set[str]] = {}
    for v in values:
        out.setdefault(v.benchmark, set()).add(v.table)
    return out
