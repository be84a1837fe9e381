"""Which rows of the calibration table sit above 93-97 % because their data are discrete.

For the interval rows of discrete statistics listed above the band (a count of rare events, a share of a few
answers) this computes, at the row's own truth and design, the coverages that any non-randomised
interval whose ends are non-decreasing in the statistic can have there
(:func:`scripts.calibration.attainable_coverages`): the sums of P(X = x) over runs of consecutive values.
When no run's probability lies in 93-97 % the band cannot be met at that truth by such an interval, and
a valid one covers at least the smallest attainable coverage above 97 %; the table's row is then at
(or near) the best a valid interval can do. When some run does lie in the band, the row is conservative
by the interval's choice, not by the data.

The distributions are exact where the statistic is binomial (FACT-OR-FAIR's invalid answers: a fixed
probability per query, :data:`scripts.calibration.fact_or_fair.REFUSAL_MODELS`) and simulated with the
calibration module's own data-generating model elsewhere (Counterfactual VQA's smallest scope and Table
3's per-category Cons: :func:`scripts.calibration.cf_vqa.simulate_scenario`; REFLECT's invalid-answer rates:
:func:`scripts.calibration.reflect.with_unanswered_calls`; ``--draws`` runs from a seed stream of its own). REFLECT
App. C.8's valid rates are exact too (36 calls per presentation, each refused with probability 0.05). Table 3's row pools five cells over the same seeds, so its attainable coverages are
the means of one run per cell (:func:`scripts.calibration.pooled_attainable_coverages`).
The table's coverage is read from ``scripts/calibration/results/*.json``.

``python scripts/attainable_coverage.py [--draws N] [--write-docs]`` prints the table (and writes it
into docs/statistics.md between ``<!-- BEGIN attainable-coverage -->`` and ``<!-- END
attainable-coverage -->``).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np
from scipy.stats import binom

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from scripts.calibration import (attainable_coverages, empirical_distribution, pooled_attainable_coverages,  # noqa: E402
                                 replace_between_markers)

RESULTS = ROOT / "scripts" / "calibration" / "results"
DOCS = ROOT / "docs" / "statistics.md"
BEGIN, END = "<!-- BEGIN attainable-coverage -->", "<!-- END attainable-coverage -->"
#: the Counterfactual VQA keys of the smallest scope that are counts of rare events
CF_VQA_KEYS = ("refusal_rate", "invalid_rate", "truncated_rate", "empty_answer_rate", "refusal_asymmetry_rate")
#: seed stream of the simulated distributions (independent of the calibration's own seeds)
SEED = 71_000_000


def _table_coverage(module: str, match) -> float:
    rows = json.loads((RESULTS / f"{module}.json").read_text())["rows"]
    found = [r["coverage"] for r in rows if match(r)]
    return float(found[0]) if found else math.nan


def fact_or_fair_rows() -> list[dict]:
    """``invalid_rate`` of the objective race design (18 statistics x 2 sides x 3 rounds = 108 queries),
    invalid with probability 0.005 each: X ~ Binomial(108, 0.005), exactly."""
    from scripts.calibration.fact_or_fair import REFUSAL_MODELS

    label, _, invalid = REFUSAL_MODELS[1]
    n = 18 * 2 * 3
    att = attainable_coverages(binom.pmf(np.arange(n + 1), n, invalid))
    table = _table_coverage("fact_or_fair", lambda r: r["quantity"] == "invalid_rate"
                            and r["design"].startswith("objective race") and r["dgp"].startswith(label))
    return [{"benchmark": "fact_or_fair", "quantity": "invalid_rate", "model": "refusals rare, invalid 0.5 %",
             "design": f"{n} queries (objective race)", "truth": invalid, "distribution": "exact binomial",
             "table": table, **att}]


def cf_vqa_rows(draws: int) -> list[dict]:
    """The smallest scope with an interval (20 pairs of one subcategory, 3 option orders x 2 images)
    under each model of the truth grid: the key's value over ``draws`` simulated runs; and Table 3's Cons
    per category on the HNER query pairs, a row that pools five cells
    (:func:`scripts.calibration.pooled_attainable_coverages`)."""
    from lm_eval_bias.cf_vqa import stats
    from scripts.calibration import cf_vqa as cal

    design = cal.real_design(False)
    idx = design.smallest
    query_cells = cal.scope_cells(design)["query_category"]
    rows = []
    for k, scenario in enumerate(cal.SCENARIOS):
        values: dict[str, list[float]] = {key: [] for key in CF_VQA_KEYS}
        cons: dict[str, list[float]] = {cell: [] for cell in query_cells}
        for s in range(draws):
            g, counts = cal.simulate_scenario(np.random.default_rng([SEED, k, s]), scenario, design)
            total = counts["responses"][idx].sum()
            for name in ("refusal", "invalid", "truncated"):
                values[f"{name}_rate"].append(counts[name][idx].sum() / total)
            scoped = stats._scoped(stats._subgrid(g, idx), None)
            for key in ("empty_answer_rate", "refusal_asymmetry_rate"):
                values[key].append(float(scoped[key][0]))
            for cell, cell_idx in query_cells.items():
                cons[cell].append(float(stats._scoped(stats._subgrid(g, cell_idx), None)["consistency"][0]))
        for key in CF_VQA_KEYS:
            att = attainable_coverages(empirical_distribution(values[key]))
            table = _table_coverage("cf_vqa", lambda r, key=key, name=scenario.name: r["quantity"] == f"{key} [smallest]"
                                    and r["kind"] == "interval" and r["dgp"].startswith(f"{name}:"))
            rows.append({"benchmark": "cf_vqa", "quantity": f"{key} [smallest]", "model": scenario.name,
                         "design": f"{len(idx)} pairs x {2 * cal.RUNS} responses", "truth": float(np.mean(values[key])),
                         "distribution": f"{draws} simulated runs", "table": table, **att})
        sizes = sorted(len(cell_idx) for cell_idx in query_cells.values())
        att = pooled_attainable_coverages([empirical_distribution(v) for v in cons.values()])
        table = _table_coverage("cf_vqa", lambda r, name=scenario.name: r["quantity"] == "consistency [query_category]"
                                and r["kind"] == "interval" and r["dgp"].startswith(f"{name}:"))
        rows.append({"benchmark": "cf_vqa", "quantity": "consistency [query_category]", "model": scenario.name,
                     "design": f"{len(query_cells)} categories x {sizes[0]}-{sizes[-1]} HNER pairs x {2 * cal.RUNS} "
                               "responses (pooled)", "truth": float(np.mean([np.mean(v) for v in cons.values()])),
                     "distribution": f"{draws} simulated runs", "table": table, **att})
    return rows


def reflect_rows(draws: int) -> list[dict]:
    """``invalid_rate`` of the 2AFC and MCQ tasks (:func:`scripts.calibration.reflect.run_invalid_rates`) for the
    rows whose table coverage is above the band: the share of invalid calls over ``draws`` simulated runs of the
    calibration's own model (:func:`~scripts.calibration.reflect.with_unanswered_calls`, template propensities
    overdispersed)."""
    from scripts.calibration import reflect as cal

    rows = []
    zero = cal.group_effects(0.0, {})
    for design in (48, 12, 6):
        occupations, per = cal.DESIGNS[design]
        for task, tail in (("2afc", "2 orders"), ("mcq", "6 salary bins")):
            for g_index, share in enumerate(cal.INVALID_GRID):
                table = _table_coverage("reflect", lambda r: r["quantity"] == "invalid_rate" and r["design"].startswith(
                    f"{design} templates") and r["design"].endswith(tail) and f"invalid answers {share:.1%}" in r["dgp"])
                if not table > 0.97:
                    continue
                values = []
                for s in range(draws):
                    rng = np.random.default_rng([SEED, 13, design, g_index, 1 if task == "2afc" else 2, s])
                    records = (cal.simulate_2afc(rng, zero, 0.5, per, 0.0, occupations) if task == "2afc" else
                               cal.simulate_mcq(rng, zero, 0.5, per, 0.0, occupations))
                    records = cal.with_unanswered_calls(rng, records, share)
                    values.append(sum(r.status == "invalid" for r in records) / len(records))
                calls = len(records)
                rows.append({"benchmark": "reflect", "quantity": f"invalid_rate [{task}]",
                             "model": f"no bias, invalid {share:.1%} of valid calls",
                             "design": f"{design} templates, {calls} calls", "truth": float(np.mean(values)),
                             "distribution": f"{draws} simulated runs", "table": table,
                             **attainable_coverages(empirical_distribution(values))})
    return rows


def reflect_presentation_rows() -> list[dict]:
    """App. C.8's ``valid_rate_<presentation>`` (:func:`scripts.calibration.reflect.run_presentation`): each
    presentation's 36 calls (12 templates x 3 races, one call per image) are refused independently with probability
    0.05, so its refusals are Binomial(36, 0.05) exactly and the valid rate is 1 - X / 36. One row per table row
    above the band."""
    from scripts.calibration import reflect as cal

    n = 12 * len(cal.PILOT_RACES)
    att = attainable_coverages(binom.pmf(np.arange(n + 1), n, cal.REFUSAL))
    rows = json.loads((RESULTS / "reflect.json").read_text())["rows"]
    return [{"benchmark": "reflect", "quantity": r["quantity"],
             "model": r["dgp"].split(";")[0].replace("man +0.5, androgynous -0.5 on the slope toward higher bins",
                                                     "presentation effect (man +0.5, androgynous -0.5)"),
             "design": f"App. C.8 pilot, {n} calls per presentation", "truth": 1.0 - cal.REFUSAL,
             "distribution": "exact binomial", "table": float(r["coverage"]), **att}
            for r in rows if r["quantity"].startswith("valid_rate_") and r["design"].startswith("App. C.8")
            and r["kind"] == "interval"]


def _pct(x: float) -> str:
    return "—" if not math.isfinite(x) else f"{100 * x:.2f} %"


def markdown(rows: list[dict]) -> str:
    lines = ["| benchmark | quantity | model | design | mean value | distinct values | 93-97 % attainable by an "
             "interval of the value | nearest below 93 % | nearest above 97 % | table's coverage |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['benchmark']} | `{r['quantity']}` | {r['model']} | {r['design']} | {r['truth']:.4f} | "
                     f"{r['values']} | {'yes' if r['inside'] else '**no**'} | {_pct(r['below'])} | {_pct(r['above'])} | "
                     f"{_pct(r['table'])} |")
    return "\n".join(lines)


def write_docs(text: str, docs: Path = DOCS) -> None:
    page = replace_between_markers(docs.read_text(encoding="utf-8"), BEGIN, END, "\n" + text + "\n")
    if page is None:
        raise SystemExit(f"error: {docs} has no {BEGIN} … {END} markers")
    tmp = docs.with_suffix(".md.tmp")
    tmp.write_text(page, encoding="utf-8")
    tmp.replace(docs)


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=4000, help="simulated runs per Counterfactual VQA model")
    parser.add_argument("--write-docs", action="store_true", help="write the table into docs/statistics.md")
    args = parser.parse_args(argv)
    if args.draws < 1:
        parser.error(f"--draws must be at least 1, got {args.draws}")
    rows = [r for r in fact_or_fair_rows() + cf_vqa_rows(args.draws) + reflect_rows(args.draws)
            + reflect_presentation_rows() if r["table"] > 0.97]  # the rows above the band
    text = markdown(rows)
    print(text)
    if args.write_docs:
        write_docs(text)
    return rows


if __name__ == "__main__":
    main()
