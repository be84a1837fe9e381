"""lm-eval glue for FACT-OR-FAIR (paper: ``fact_or_fair.txt``); text-only, so any backend runs it.

Docs are the builder's queries (``lm-eval-bias build fact-or-fair``; configs ``objective`` and
``subjective``), prompts are the authors' templates verbatim, answers are parsed by
:func:`lm_eval_bias.core.parsing.parse_json_answer`, and scores, intervals and null floors come from
:func:`lm_eval_bias.fact_or_fair.stats.fact_or_fair_results`.

Tasks: ``fact_or_fair_objective_{gender,race}`` and
``fact_or_fair_subjective_{baseline,representativeness,attribution,ingroup}_{gender,race}``. A
subjective task scores the chosen option's gender or race.

Options (``--metadata``; each recorded in every sample record and in count keys of the results):

- ``contradictory_truth``: ``keep`` (default, the paper: its 108 objective race queries include
  Homelessness Rate, scored against the table's Asian on both sides) or ``drop`` (objective queries
  on a statistic x attribute whose highest = lowest group are removed; subjective ones lose their
  ground truth for that attribute);
- ``fairness_statistics``: ``all`` (default, the paper's 19 statistics x 2 sides = 38 topics and the
  authors' ``subj_analysis.py``: S_E and S_KLD need no ground truth) or ``with_truth`` (subjective
  statistics whose truth for the scored attribute is unknown are left out entirely);
- ``identical_scenarios``: ``keep`` (default, as the paper) or ``exclude`` (drop the subjective
  low-side queries whose scenario is word-for-word the high-side one, flagged by the builder).
"""

from __future__ import annotations

import json
import logging
from typing import Any, Callable

from lm_eval_bias.core import data
from lm_eval_bias.core.parsing import ResponseStatus, parse_json_answer
from lm_eval_bias.core.extraction import is_lenient, mode_of, tag_docs
from lm_eval_bias.fact_or_fair import stats as fof
from lm_eval_bias.core.aggregation import HeadlineFamily, RecordCodec, bootstrap_settings, null_settings

_LOG = logging.getLogger("lm_eval_bias")

ATTRIBUTES = ("gender", "race")
CONTEXTS = ("baseline", "representativeness", "attribution", "ingroup")
#: Response classes per attribute (the paper's option groups).
CLASSES: dict[str, tuple[str, ...]] = {"gender": ("male", "female"), "race": ("Asian", "Black", "White", "Hispanic")}
CONTEXT_RATES: dict[str, tuple[str, ...]] = {
    "baseline": (),
    "representativeness": ("representativeness_rate",),
    "attribution": ("attribution_rate",),
    "ingroup": ("ingroup_rate", "outgroup_rate"),
}
OPTIONS: dict[str, tuple[str, ...]] = {
    "contradictory_truth": ("keep", "drop"),
    "fairness_statistics": ("all", "with_truth"),
    "identical_scenarios": ("keep", "exclude"),
}
#: Scores with an interval (``_stderr``, ``_ci_low``, ``_ci_high``).
INTERVAL_KEYS = ("s_fact", "s_e", "s_kld", "s_fair", "distance", "s_kld_authors", "s_fair_authors",
                 "refusal_rate", "invalid_rate")
#: Counts of what the options removed or kept (constant over a task's docs, carried by each doc).
EXCLUSION_KEYS = ("n_excluded_contradictory", "n_excluded_identical_scenario", "n_excluded_without_truth",
                  "n_without_truth")
_LETTERS = "ABCD"


def _check_attribute(attribute: str) -> None:
    if attribute not in ATTRIBUTES:
        raise ValueError(f"attribute must be one of {ATTRIBUTES}, got {attribute!r}")


def _option(name: str, value: str | None) -> str:
    value = OPTIONS[name][0] if value is None else str(value)
    if value not in OPTIONS[name]:
        raise ValueError(f"{name} must be one of {OPTIONS[name]}, got {value!r}")
    return value


def _dataset(docs: list[dict[str, Any]], shard: str | None, answer_extraction: str | None, tags: dict[str, Any]):
    import datasets

    from lm_eval_bias.core.sharding import select_shard

    for doc in docs:
        doc.update(tags)
    docs = tag_docs(select_shard(docs, shard, lambda d: d["query_id"]), answer_extraction)
    return {"test": datasets.Dataset.from_list(docs)}


def contradictory_statistics(rows: list[dict[str, Any]], truth_of: Callable[[dict], str | None]) -> set[str]:
    """Statistics whose highest and lowest true group (per ``truth_of``) are the same group."""
    sides: dict[str, dict[str, str | None]] = {}
    for r in rows:
        sides.setdefault(r["statistic"], {})[r["side"]] = truth_of(r)
    return {s for s, t in sides.items() if t.get("highest") is not None and t.get("highest") == t.get("lowest")}


def load_objective_docs(attribute: str, hub_id: str | None = None, shard: str | None = None,
                        answer_extraction: str | None = None, contradictory_truth: str | None = None, **_: Any):
    """Objective queries on ``attribute`` (each statistic x side x 3 rounds)."""
    _check_attribute(attribute)
    contradictory_truth = _option("contradictory_truth", contradictory_truth)
    rows = [r for r in data.load_split("fact_or_fair", hub_id, config="objective") if r["attribute"] == attribute]
    contradictory = contradictory_statistics(rows, lambda r: r["true_group"])
    if contradictory:
        _LOG.warning("fact_or_fair_objective_%s: highest = lowest true group for %s (upstream data error); "
                     "contradictory_truth=%s", attribute, sorted(contradictory), contradictory_truth)
    kept = [r for r in rows if contradictory_truth == "keep" or r["statistic"] not in contradictory]
    docs = [
        {"query_id": r["query_id"], "statistic": r["statistic"], "side": r["side"], "attribute": attribute,
         "options": list(r["options"]), "true_group": r["true_group"], "prompt": r["prompt"]}
        for r in kept
    ]
    tags = {"contradictory_truth": contradictory_truth, "fairness_statistics": "all", "identical_scenarios": "keep",
            "n_excluded_contradictory": len(rows) - len(kept), "n_excluded_identical_scenario": 0,
            "n_excluded_without_truth": 0, "n_without_truth": 0}
    return _dataset(docs, shard, answer_extraction, tags)


def load_subjective_docs(context: str, attribute: str, hub_id: str | None = None, shard: str | None = None,
                         answer_extraction: str | None = None, contradictory_truth: str | None = None,
                         fairness_statistics: str | None = None, identical_scenarios: str | None = None, **_: Any):
    """Subjective queries of ``context`` scored on ``attribute`` (options: module docstring)."""
    _check_attribute(attribute)
    if context not in CONTEXTS:
        raise ValueError(f"context must be one of {CONTEXTS}, got {context!r}")
    contradictory_truth = _option("contradictory_truth", contradictory_truth)
    fairness_statistics = _option("fairness_statistics", fairness_statistics)
    identical_scenarios = _option("identical_scenarios", identical_scenarios)
    rows = [r for r in data.load_split("fact_or_fair", hub_id, config="subjective") if r["context"] == context]
    truth_key = f"true_{attribute}"
    contradictory = contradictory_statistics(rows, lambda r: r[truth_key])
    if identical_scenarios == "exclude" and rows and "low_scenario_repeats_high" not in rows[0]:
        raise ValueError("identical_scenarios=exclude needs the builder's low_scenario_repeats_high column: rebuild "
                         "the dataset with this version of `lm-eval-bias build fact-or-fair`")
    docs, excluded = [], {"n_excluded_contradictory": 0, "n_excluded_identical_scenario": 0,
                          "n_excluded_without_truth": 0, "n_without_truth": 0}
    for r in rows:
        if identical_scenarios == "exclude" and r.get("low_scenario_repeats_high"):
            excluded["n_excluded_identical_scenario"] += 1
            continue
        truth = r[truth_key]
        if truth is not None and r["statistic"] in contradictory and contradictory_truth == "drop":
            truth = None
            excluded["n_excluded_contradictory"] += 1
        if truth is None:
            if fairness_statistics == "with_truth":
                excluded["n_excluded_without_truth"] += 1
                continue
            excluded["n_without_truth"] += 1
        docs.append({"query_id": r["query_id"], "statistic": r["statistic"], "side": r["side"], "context": context,
                     "attribute": attribute, "option_groups": [p[attribute] for p in json.loads(r["profiles"])],
                     "true_group": truth, "background_group": r[f"background_{attribute}"], "prompt": r["prompt"]})
    tags = {"contradictory_truth": contradictory_truth, "fairness_statistics": fairness_statistics,
            "identical_scenarios": identical_scenarios, **excluded}
    return _dataset(docs, shard, answer_extraction, tags)


def doc_to_text(doc: dict[str, Any]) -> str:
    return doc["prompt"]


def looks_truncated(text: str) -> bool:
    """An answer whose last JSON object is opened but never closed (cut by the token limit)."""
    return text.rfind("{") > text.rfind("}")


def record_of(doc: dict[str, Any], results: list) -> dict[str, Any]:
    """The full record of one doc from its doc and response (what the analysis rebuilds from a logged
    sample: its ``doc`` and ``filtered_resps``)."""
    groups = list(doc["option_groups"]) if doc.get("context") else list(doc["options"])
    return _record(doc, results, groups)


def _record(doc: dict[str, Any], results: list, groups: list[str]) -> dict[str, Any]:
    text = results[0] if results else ""
    parsed = parse_json_answer(text, _LETTERS[: len(groups)], lenient=is_lenient(doc))
    chosen = groups[_LETTERS.index(parsed.value)] if parsed.status is ResponseStatus.VALID else None
    return {"statistic": doc["statistic"], "side": doc["side"], "status": parsed.status.value, "chosen": chosen,
            "reason": parsed.reason, "extraction": mode_of(doc),
            "truncated": parsed.status is not ResponseStatus.VALID and looks_truncated(str(text or "")),
            "true_group": doc["true_group"], "context": doc.get("context"),
            "background_group": doc.get("background_group"), "attribute": doc["attribute"],
            **{name: doc.get(name) for name in OPTIONS}, **{name: doc.get(name, 0) for name in EXCLUSION_KEYS}}


def process_results_objective(doc: dict[str, Any], results: list) -> dict[str, Any]:
    return FAMILIES["objective"].records_for(_record(doc, results, list(doc["options"])))


def process_results_subjective(doc: dict[str, Any], results: list) -> dict[str, Any]:
    return FAMILIES[f"subjective_{doc['context']}"].records_for(_record(doc, results, list(doc["option_groups"])))


def summarize(records: list[dict[str, Any]]) -> dict[str, float]:
    """Every result key of one task: :func:`lm_eval_bias.fact_or_fair.stats.fact_or_fair_results`
    over its records, the truncated-answer share and the option counts."""
    attributes = {r["attribute"] for r in records}
    if len(attributes) != 1:
        raise ValueError(f"records mix attributes {sorted(map(str, attributes))}")
    contexts = {r.get("context") for r in records}
    objective = contexts == {None}
    rates = () if objective else CONTEXT_RATES[next(iter(contexts))]
    table = fof.tabulate([fof.FactOrFairRecord.from_dict(r) for r in records], CLASSES[attributes.pop()])
    n_boot, seed = bootstrap_settings()
    n_null, _ = null_settings()
    out = fof.fact_or_fair_results(table, objective=objective, rates=rates, n_boot=n_boot, n_null=n_null, seed=seed,
                                   warn=_LOG.warning)
    out["truncated_rate"] = sum(bool(r.get("truncated")) for r in records) / len(records) if records else float("nan")
    for key in EXCLUSION_KEYS:
        out[key] = float(records[0].get(key, 0)) if records else float("nan")
    return out


def _keys(objective: bool, rates: tuple[str, ...]) -> dict[str, Callable[[Any], float]]:
    names: list[str] = []
    for key in INTERVAL_KEYS:
        names.append(key)
        if key in fof.NULL_SCORES:
            names += [f"{key}_null", f"{key}_p_null"]
        names += [f"{key}_stderr", f"{key}_ci_low", f"{key}_ci_high"]
        if key in fof.population_keys(objective):
            names.append(f"{key}_debiased")  # the defined score's median-unbiased estimate (its interval's centre)
    if not objective:
        names += ["distance_authors", "distance_authors_stderr", "distance_authors_ci_low", "distance_authors_ci_high"]
    for rate in rates:
        names += [rate, f"{rate}_chance", f"{rate}_p_null", f"{rate}_stderr", f"{rate}_ci_low", f"{rate}_ci_high"]
    if len(rates) == 2:
        names += [f"{rate}_p_null_holm" for rate in rates]
    names += ["truncated_rate", "n_queries", "n_valid", "n_statistics", "n_cells", *EXCLUSION_KEYS]
    return {name: (lambda summary, name=name: summary.get(name, float("nan"))) for name in names}


#: The compact per-doc value: the fields :func:`summarize` reads.
CODEC = RecordCodec(("statistic", "side", "status", "chosen", "true_group", "context", "background_group", "attribute",
                     "truncated"))


def _headline(objective: bool, rates: tuple[str, ...]) -> tuple[str, ...]:
    """The keys in lm-eval's results (docs/fact-or-fair.md "Result keys": *results*): Sec. 3.2's S_fact
    (objective), the fairness scores S_E, S_KLD and S_fair (Defs. 2-4) with intervals and null floors,
    the refusal and invalid rates, and a subjective context's rate(s) with its chance level (Sec. 6.1)."""
    keys: list[str] = []
    for score in (("s_fact",) if objective else ()) + ("s_e", "s_kld", "s_fair"):
        keys += [score, f"{score}_ci_low", f"{score}_ci_high", f"{score}_null"]
        if score in fof.POPULATION_SCORES:  # the interval is the defined score's: its estimate goes with it
            keys.append(f"{score}_debiased")
    # Conclusion 1: from (S_fact, S_E) to the trade-off curve, with its interval for the defined distance
    keys += ["distance", "distance_ci_low", "distance_ci_high", "distance_debiased"]
    keys += ["refusal_rate", "invalid_rate"]
    for rate in rates:
        keys += [rate, f"{rate}_chance"]
    # the _stderr keys (bootstrap sd of the plug-ins) and the rates' intervals are analysis keys: the
    # headline stays near 20 keys (issue 27)
    return tuple(keys)


FAMILIES: dict[str, HeadlineFamily] = {
    "objective": HeadlineFamily("fof_objective", summarize, _keys(True, ()), _headline(True, ()), CODEC)}
for _context, _rates in CONTEXT_RATES.items():
    FAMILIES[f"subjective_{_context}"] = HeadlineFamily(f"fof_subjective_{_context}", summarize, _keys(False, _rates),
                                                        _headline(False, _rates), CODEC)
for _family in FAMILIES.values():
    _family.install(globals())
