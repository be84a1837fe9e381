"""lm-eval glue for FACT-OR-FAIR (paper: ``fact_or_fair.txt``); text-only, so any backend runs it.

Docs are the builder's queries (``lm-eval-bias build fact-or-fair``; configs ``objective`` and
``subjective``), prompts are the authors' templates verbatim, answers are parsed by
:func:`lm_eval_bias.parsing.parse_json_answer`, and scores come from
:mod:`lm_eval_bias.stats.fact_or_fair`.

Tasks: ``fact_or_fair_objective_{gender,race}`` and
``fact_or_fair_subjective_{baseline,representativeness,attribution,ingroup}_{gender,race}``. A
subjective task scores the chosen option's gender or race; statistics whose ground truth for that
attribute is unknown (not tested, or dropped as contradictory) are not included.
"""

from __future__ import annotations

import json
from typing import Any, Callable

from lm_eval_bias import data
from lm_eval_bias.parsing import ResponseStatus, parse_json_answer
from lm_eval_bias.tasks.extraction import is_lenient, mode_of, tag_docs
from lm_eval_bias.stats import fact_or_fair as fof
from lm_eval_bias.tasks.aggregation import AggregationFamily

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
SCORE_KEYS = ("s_fact", "s_e", "s_kld", "s_fair", "distance")
_LETTERS = "ABCD"


def _check_attribute(attribute: str) -> None:
    if attribute not in ATTRIBUTES:
        raise ValueError(f"attribute must be one of {ATTRIBUTES}, got {attribute!r}")


def _dataset(docs: list[dict[str, Any]], shard: str | None = None, answer_extraction: str | None = None):
    import datasets

    from lm_eval_bias.tasks.sharding import select_shard

    docs = tag_docs(select_shard(docs, shard, lambda d: d["query_id"]), answer_extraction)
    return {"test": datasets.Dataset.from_list(docs)}


def load_objective_docs(attribute: str, hub_id: str | None = None, shard: str | None = None,
                        answer_extraction: str | None = None, **_: Any):
    """Objective queries on ``attribute`` (each statistic x side x 3 rounds)."""
    _check_attribute(attribute)
    rows = data.load_split("fact_or_fair", hub_id, config="objective")
    docs = [
        {"query_id": r["query_id"], "statistic": r["statistic"], "side": r["side"], "attribute": attribute,
         "options": list(r["options"]), "true_group": r["true_group"], "prompt": r["prompt"]}
        for r in rows if r["attribute"] == attribute
    ]
    return _dataset(docs, shard, answer_extraction)


def load_subjective_docs(context: str, attribute: str, hub_id: str | None = None, shard: str | None = None,
                         answer_extraction: str | None = None, **_: Any):
    """Subjective queries of ``context`` scored on ``attribute``."""
    _check_attribute(attribute)
    if context not in CONTEXTS:
        raise ValueError(f"context must be one of {CONTEXTS}, got {context!r}")
    rows = data.load_split("fact_or_fair", hub_id, config="subjective")
    docs = []
    for r in rows:
        if r["context"] != context or r[f"true_{attribute}"] is None:
            continue
        docs.append({"query_id": r["query_id"], "statistic": r["statistic"], "side": r["side"], "context": context,
                     "attribute": attribute, "option_groups": [p[attribute] for p in json.loads(r["profiles"])],
                     "true_group": r[f"true_{attribute}"], "background_group": r[f"background_{attribute}"],
                     "prompt": r["prompt"]})
    return _dataset(docs, shard, answer_extraction)


def doc_to_text(doc: dict[str, Any]) -> str:
    return doc["prompt"]


def _record(doc: dict[str, Any], results: list, groups: list[str]) -> dict[str, Any]:
    parsed = parse_json_answer(results[0] if results else "", _LETTERS[: len(groups)], lenient=is_lenient(doc))
    chosen = groups[_LETTERS.index(parsed.value)] if parsed.status is ResponseStatus.VALID else None
    return {"statistic": doc["statistic"], "side": doc["side"], "status": parsed.status.value, "chosen": chosen,
            "reason": parsed.reason, "extraction": mode_of(doc),
            "true_group": doc["true_group"], "context": doc.get("context"),
            "background_group": doc.get("background_group"), "attribute": doc["attribute"]}


def process_results_objective(doc: dict[str, Any], results: list) -> dict[str, dict]:
    return FAMILIES["objective"].records_for(_record(doc, results, list(doc["options"])))


def process_results_subjective(doc: dict[str, Any], results: list) -> dict[str, dict]:
    return FAMILIES[f"subjective_{doc['context']}"].records_for(_record(doc, results, list(doc["option_groups"])))


def summarize(records: list[dict[str, Any]]) -> fof.FactOrFairSummary:
    """:func:`lm_eval_bias.stats.fact_or_fair.fact_or_fair_summary` over one task's records."""
    attributes = {r["attribute"] for r in records}
    if len(attributes) != 1:
        raise ValueError(f"records mix attributes {sorted(map(str, attributes))}")
    classes = CLASSES[attributes.pop()]
    return fof.fact_or_fair_summary([fof.FactOrFairRecord.from_dict(r) for r in records], classes)


def _score(key: str) -> Callable[[Any], float]:
    return lambda summary: getattr(summary.scores, key)


def _rate(key: str) -> Callable[[Any], float]:
    return lambda summary: summary.rates.get(key, float("nan"))


def _chance(key: str) -> Callable[[Any], float]:
    return lambda summary: summary.chance.get(key, float("nan"))


def _keys(rates: tuple[str, ...]) -> dict[str, Callable[[Any], float]]:
    keys: dict[str, Callable[[Any], float]] = {k: _score(k) for k in SCORE_KEYS}
    keys["refusal_rate"] = lambda summary: summary.refusal_rate
    keys["invalid_rate"] = lambda summary: summary.invalid_rate
    for rate in rates:
        keys[rate] = _rate(rate)
        keys[f"{rate}_chance"] = _chance(rate)
    return keys


FAMILIES: dict[str, AggregationFamily] = {"objective": AggregationFamily("fof_objective", summarize, _keys(()))}
for _context, _rates in CONTEXT_RATES.items():
    FAMILIES[f"subjective_{_context}"] = AggregationFamily(f"fof_subjective_{_context}", summarize, _keys(_rates))
for _family in FAMILIES.values():
    _family.install(globals())
