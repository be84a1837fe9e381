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

#: task name prefix -> task family
_FAMILIES: tuple[tuple[str, str], ...] = (
    ("focus_2afc_", "2afc"), ("focus_mcq_", "mcq"), ("focus_salary", "salary"),
    ("fact_or_fair_", "fact_or_fair"), ("cf_vqa", "cf_vqa"), ("vignette_", "vignette"),
)


def task_family(task: str) -> str:
    for prefix, family in _FAMILIES:
        if task.startswith(prefix):
            return family
    raise ValueError(f"{task!r} is not a task of this plugin (focus_*, fact_or_fair_*, cf_vqa*, vignette_*)")


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
    key = _record_key(task)
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


def _record_key(task: str) -> str:
    """A result key under which every sample of ``task`` carries its record."""
    family = task_family(task)
    if family == "fact_or_fair":
        return "s_fact"
    if family == "cf_vqa":
        return "consistency"
    if family == "vignette":
        return "valid_rate"
    from lm_eval_bias.tasks.reflect import FAMILIES

    return next(iter(FAMILIES[family].keys))


def summarize(task: str, records: list[dict[str, Any]]):
    """The statistics summary the task's aggregations report (REFLECT: estimates, stderr, CIs,
    tables; FACT-OR-FAIR: scores and rates; Counterfactual VQA: the result-key dict)."""
    family = task_family(task)
    if family == "fact_or_fair":
        from lm_eval_bias.tasks import fact_or_fair

        return fact_or_fair.summarize(records)
    if family == "cf_vqa":
        from lm_eval_bias.tasks import cf_vqa

        return cf_vqa.summarize(records)
    if family == "vignette":
        from lm_eval_bias.tasks import vignette

        return vignette.summarize(records)
    from lm_eval_bias.tasks import reflect

    return {"2afc": reflect.summarize_2afc, "mcq": reflect.summarize_mcq, "salary": reflect.summarize_salary}[family](records)


def cf_vqa_pairs(records: list[dict[str, Any]]):
    """Counterfactual VQA pair responses from logged records, for ``lm_eval_bias.stats.cf_vqa``
    (``metrics_by(pairs, "subcategory")``, ``consistency_coverage_curve``, ``symmetric_refusal_curve``)."""
    from lm_eval_bias.tasks import cf_vqa

    return cf_vqa.pairs_from_records(records)


# -- VIGNETTE ------------------------------------------------------------------------------------------
def vignette_option_table(records: list[dict[str, Any]]):
    """VIGNETTE identity-choice answers as the option table of ``lm_eval_bias.stats.vignette``
    (columns doc_id, identity, context, partner, selected, dimension, gender, paradigm, parameter,
    pair_kind): ``selection_frequency``, ``log_odds``, ``pair_comp_matrix``, ``polarity``,
    ``identity_fisher_tests`` all take it."""
    from lm_eval_bias.tasks import vignette

    return vignette.option_table(records)


def vignette_factuality_table(records: list[dict[str, Any]]):
    """VIGNETTE factuality answers (identity, question_type, dimension, gender, correct), for
    ``lm_eval_bias.stats.vignette.factuality_accuracy``."""
    from lm_eval_bias.tasks import vignette

    return vignette.factuality_table(records)


def vignette_sscm_terms(records: list[dict[str, Any]]) -> dict[str, tuple[str, str]]:
    """term -> (SSCM dimension, high|low) recorded in VIGNETTE stereotype samples (``polarity``'s map)."""
    from lm_eval_bias.tasks import vignette

    return vignette.sscm_terms(records)


# -- result keys from records (merged shards, reports) ----------------------------------------------------
def aggregation_family(task: str):
    """The :class:`~lm_eval_bias.tasks.aggregation.AggregationFamily` behind ``task``'s result keys."""
    family = task_family(task)
    if family == "fact_or_fair":
        from lm_eval_bias.tasks import fact_or_fair

        rest = task[len("fact_or_fair_"):]
        if rest.startswith("objective_"):
            return fact_or_fair.FAMILIES["objective"]
        context = rest[len("subjective_"):].rsplit("_", 1)[0]
        return fact_or_fair.FAMILIES[f"subjective_{context}"]
    if family == "cf_vqa":
        from lm_eval_bias.tasks import cf_vqa

        prompt = task[len("cf_vqa_"):] if task != "cf_vqa" else "baseline"
        return cf_vqa.FAMILIES[prompt]
    if family == "vignette":
        from lm_eval_bias.tasks import vignette

        return vignette.FAMILIES[task[len("vignette_"):]]
    from lm_eval_bias.tasks import reflect

    return reflect.FAMILIES[family]


def result_values(task: str, records: list[dict[str, Any]], summary: Any = None) -> dict[str, float]:
    """Every result key of ``task`` computed from its records, exactly as the task's aggregations do
    (so the logged samples of several shards give the numbers of one unsharded run)."""
    family = aggregation_family(task)
    summary = summarize(task, records) if summary is None else summary
    return {key: float(reader(summary)) for key, reader in family.keys.items()}
