"""Read lm-eval ``--log_samples`` output back into the records the statistics work on.

Every REFLECT doc's logged sample carries its per-doc record under each result key (see
:mod:`lm_eval_bias.tasks.reflect`), so everything the paper reports — the full 10x10 win-rate
matrix, LOTO sign stability, per-occupation salary gaps, answer distributions — can be recomputed
from the samples files alone, with the same library functions the tasks use::

    from lm_eval_bias import samples
    records = samples.load_records("results/", "focus_2afc_income")
    summary = samples.summarize("focus_2afc_income", records)
    summary.win_matrix, summary.loto
"""

from __future__ import annotations

import glob
import json
import os
from pathlib import Path
from typing import Any

#: task name prefix -> task family of lm_eval_bias.tasks.reflect
_FAMILIES: tuple[tuple[str, str], ...] = (("focus_2afc_", "2afc"), ("focus_mcq_", "mcq"), ("focus_salary", "salary"))


def task_family(task: str) -> str:
    for prefix, family in _FAMILIES:
        if task.startswith(prefix):
            return family
    raise ValueError(f"{task!r} is not a REFLECT task (expected focus_2afc_*, focus_mcq_* or focus_salary)")


def sample_files(path: str | os.PathLike, task: str) -> list[Path]:
    """``samples_<task>_*.jsonl`` files under ``path`` (a file, or an lm-eval output folder searched
    recursively). Several files (e.g. shards) are all returned, sorted."""
    path = Path(path)
    if path.is_file():
        return [path]
    files = sorted(Path(p) for p in glob.glob(str(path / "**" / f"samples_{task}_*.jsonl"), recursive=True))
    if not files:
        raise FileNotFoundError(f"no samples_{task}_*.jsonl under {path} (was lm-eval run with --log_samples?)")
    return files


def load_records(path: str | os.PathLike, task: str) -> list[dict[str, Any]]:
    """Per-doc records of ``task`` from its logged samples (one per doc, in file order)."""
    from lm_eval_bias.tasks.reflect import FAMILIES

    key = next(iter(FAMILIES[task_family(task)].keys))
    records = []
    for file in sample_files(path, task):
        with open(file, encoding="utf-8") as handle:
            for line_no, line in enumerate(handle, 1):
                if not line.strip():
                    continue
                sample = json.loads(line)
                if key not in sample:
                    raise ValueError(f"{file}:{line_no}: sample has no {key!r} record (not a {task} sample?)")
                records.append(sample[key])
    return records


def summarize(task: str, records: list[dict[str, Any]]):
    """The statistics summary the task's aggregations report (estimates, stderr, CIs, tables)."""
    from lm_eval_bias.tasks import reflect

    return {"2afc": reflect.summarize_2afc, "mcq": reflect.summarize_mcq, "salary": reflect.summarize_salary}[
        task_family(task)
    ](records)
