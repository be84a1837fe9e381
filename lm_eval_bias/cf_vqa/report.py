"""Counterfactual VQA on a card: per prompt variant a headline (consistency across the two counterfactual
images, with its permutation null floor, CC-AUC, SR-AUC, the response-status rates and the least
consistent category), the consistency–coverage and symmetric-refusal curves (Fig. 4), consistency per
category against the null floor, the category table with intervals (Table 2 / 3), model vs human
consistency per category (Table 2's Human row), and the subcategory tables (Tables 6-10)."""

from __future__ import annotations

import math

import pandas as pd

from lm_eval_bias import samples
from lm_eval_bias.cf_vqa.schema import CATEGORIES, category_key
from lm_eval_bias.report.intervals import interval, metric
from lm_eval_bias.report.render import (CMAP, DOUBLE, LINESTYLES, MARKERS, Headline, Part, Writer, bars, mpl_text,
                                        new_figure, note)
from lm_eval_bias.report.runs import TaskRun
from lm_eval_bias.cf_vqa import stats

NAME = "cf_vqa"
TITLE = "Counterfactual VQA"
FAMILIES = ("cf_vqa",)
HEADLINE = {"cf_vqa": ("consistency", "cc_auc", "sr_auc", "refusal_rate")}
METRICS = ("consistency", "cc_auc", "sr_auc", "refusal_rate", "invalid_rate", "truncated_rate", "refusal_asymmetry_rate")
#: per-subcategory table from the logged pairs (each with its interval from 20 pairs on)
PAIR_METRICS = ("consistency", "cc_auc", "sr_auc", "empty_answer_rate", "refusal_asymmetry_rate")
VARIANTS = {"cf_vqa": "baseline prompt", "cf_vqa_baep": "bias-aware evidence prompt (BAEP)",
            "cf_vqa_hner": "HNER exemplars", "cf_vqa_hner_targeted": "HNER exemplars, same category"}


#: how every interval of this section is computed (docs/cf-vqa.md "Intervals")
INTERVAL_TEXT = (f"image pairs as clusters (all their images and option orders together), stratified delete-one-pair "
                 f"jackknife standard error, logit-t interval with pairs - strata degrees of freedom (response-status "
                 f"rates: Wilson's interval at the effective sample size); none below "
                 f"{stats.MIN_PAIRS_FOR_INTERVAL} pairs in the cell (rated pairs for the human column)")


def ci_text(values: dict, key: str, n_boot: int) -> str:
    """``[low, high]`` of ``key`` in a :func:`~lm_eval_bias.cf_vqa.stats.pair_summary` scope, or why there
    is none: too few (rated) pairs (:data:`~lm_eval_bias.cf_vqa.stats.MIN_PAIRS_FOR_INTERVAL`), intervals
    turned off, or no estimate."""
    low, high = values.get(f"{key}_ci_low", math.nan), values.get(f"{key}_ci_high", math.nan)
    if math.isfinite(low) and math.isfinite(high):
        return f"[{low:.3f}, {high:.3f}]"
    if not math.isfinite(values.get(key, math.nan)):
        return "no data"
    if not n_boot:
        return "no interval: bootstrap off"
    rated = key in stats.HUMAN_KEYS
    count = values.get("n_rated_pairs" if rated else "n_pairs", math.nan)
    if math.isfinite(count) and count < stats.MIN_PAIRS_FOR_INTERVAL:
        return f"{stats.FEW_PAIRS_REASON} ({int(count)} {'rated ' if rated else ''}< {stats.MIN_PAIRS_FOR_INTERVAL})"
    return "no interval: undefined"


def _human(run: TaskRun) -> dict[str, float]:
    """Pair id -> the manifest's human consistency, from the logged records."""
    return {r["pair_id"]: float(r["human_consistency"]) for r in run.records or []
            if r.get("human_consistency") is not None}


def _pairs(run: TaskRun):
    if "pairs" not in run.cache:
        run.cache["pairs"] = samples.cf_vqa_pairs(run.records) if run.records else []
    return run.cache["pairs"]


def _headline(run: TaskRun, part: Part) -> None:
    pairs = _pairs(run)
    n_pairs = len({p.pair_id for p in pairs})
    runs = len({p.run for p in pairs})
    categories = [category_key(c) for c in CATEGORIES if math.isfinite(run.metrics.get(f"consistency_{category_key(c)}", math.nan))]
    more = [metric(NAME, run, "cc_auc"), metric(NAME, run, "sr_auc"),  # each with its null floor (companions)
            metric(NAME, run, "refusal_rate"), metric(NAME, run, "invalid_rate"), metric(NAME, run, "truncated_rate"),
            metric(NAME, run, "refusal_asymmetry_rate")]
    if categories:
        more.append(metric(NAME, run, "consistency_" + min(categories, key=lambda c: run.metrics[f"consistency_{c}"])))
    size = f"{n_pairs} image pairs × {runs} option orders" if pairs else f"{run.n_samples} docs"
    part.headlines.append(Headline(run.task, f"{VARIANTS.get(run.task, run.task)}: same answer on both counterfactual "
                                             "images", metric(NAME, run, "consistency"), size, more, bool(run.partial)))
    left_out = run.metrics.get("n_pair_runs_left_out", math.nan)
    if math.isfinite(left_out) and left_out > 0:
        part.warnings.append(f"{run.task}: {int(left_out)} pair-runs with a truncated (or, by option, invalid) answer "
                             "are left out of the pair metrics (truncated_rate / invalid_rate count them).")


def _settings(runs: list[TaskRun], w: Writer, part: Part) -> None:
    """The run settings recorded in the samples (never merged across values): one row per task."""
    from lm_eval_bias.cf_vqa import tasks as task

    rows = {}
    for run in runs:
        if not run.records:
            continue
        try:
            rows[run.task] = {k: str(v) for k, v in task.settings_of(run.records).items()}
        except ValueError as exc:
            part.warnings.append(f"{run.task}: {exc}")
    if rows:
        table = pd.DataFrame(rows).T.reindex(columns=list(task.SETTINGS))
        table.index.name = "task"
        part.details.append(w.table(table, "cf_vqa_settings", "Settings recorded in the samples: prompt, how truncated "
                                                              "and invalid answers enter the pair metrics, exemplar "
                                                              "embedder (HNER), seed.",
                                    no_interval="Settings, not estimates."))


def _curves(with_pairs, w: Writer, part: Part) -> None:
    import matplotlib

    fig, (left, right) = new_figure(DOUBLE, 2.7, ncols=2)
    for n, (run, pairs) in enumerate(with_pairs):
        colour = matplotlib.colormaps[CMAP](0.1 + 0.75 * n / max(1, len(with_pairs) - 1))
        style = {"color": colour, "marker": MARKERS[n % len(MARKERS)], "markersize": 3,
                 "linestyle": LINESTYLES[n % len(LINESTYLES)], "linewidth": 1}
        _, kappa, cons = stats.consistency_coverage_curve(pairs)
        left.step(kappa, cons, where="post", label=mpl_text(f"{run.task} (CC-AUC {run.metrics.get('cc_auc', math.nan):.2f})"),
                  **style)
        _, rr, ra = stats.symmetric_refusal_curve(pairs)
        right.plot(rr, 1 - ra, label=mpl_text(f"{run.task} (SR-AUC {run.metrics.get('sr_auc', math.nan):.2f})"), **style)
    left.set(xlabel="coverage κ(τ)", ylabel="consistency Cons_τ", xlim=(0, 1.02), ylim=(0, 1.05),
             title="Consistency–coverage")
    right.set(xlabel="refusal rate RR(τ)", ylabel="1 − refusal asymmetry RA(τ)", xlim=(0, 1.02), ylim=(0, 1.05),
              title="Symmetric refusal")
    left.legend(frameon=False, loc="lower left")
    right.legend(frameon=False, loc="lower left")
    part.figures.append(w.figure(fig, "cf_vqa_curves",
                                 "Fig. 4: consistency of pair answers among pairs whose lower confidence is at least τ "
                                 "against the share of pairs kept (left), and refusal asymmetry against refusal rate as τ "
                                 "sweeps (right); one line (marker, line style) per prompt variant. No interval on the "
                                 "curves; their areas (CC-AUC, SR-AUC) carry intervals in the headline.",
                                 tasks=[run.task for run, _ in with_pairs], wide=True))


def render(runs: list[TaskRun], w: Writer) -> Part:
    part = Part()
    for run in runs:
        _headline(run, part)
    with_pairs = [(run, _pairs(run)) for run in runs]
    with_pairs = [(run, pairs) for run, pairs in with_pairs if pairs]
    if not with_pairs:
        part.figures.append(note("Counterfactual VQA curves need --log_samples output with both images of at least one "
                                 "pair.", "nodata"))
    else:
        try:
            _curves(with_pairs, w, part)
        except Exception as exc:  # noqa: BLE001 - a partial run must not stop the report
            part.figures.append(note(f"Counterfactual VQA curves could not be drawn ({type(exc).__name__}: {exc}).",
                                     "warning"))
    groups, errors = {}, {}
    for run in runs:
        for c in CATEGORIES:
            key = f"consistency_{category_key(c)}"
            ci = interval(run, key)
            groups.setdefault(run.task, {})[c] = run.metrics.get(key, math.nan)
            errors.setdefault(run.task, {})[c] = (ci.low, ci.high)
    if any(math.isfinite(v) for g in groups.values() for v in g.values()):
        floors = [r.metrics.get("consistency_null", math.nan) for r in runs]
        floor = next((f for f in floors if math.isfinite(f)), None)
        part.figures.append(w.figure(bars(groups, "Consistency per category", "consistency", errors, reference=floor,
                                          ylim=(0, 1.05)),
                                     "cf_vqa_categories", "Consistency per category and prompt variant; error bars: 95 % "
                                                          "intervals (" + INTERVAL_TEXT + "); dashed "
                                                          "line: the null floor (consistency_null) of the first run, the "
                                                          "consistency of a model whose two answers of a pair are "
                                                          "unrelated.",
                                     tasks=[r.task for r in runs]))
    category = pd.DataFrame({run.task: {f"{m} · {c}": run.metrics.get(f"{m}_{category_key(c)}", math.nan)
                                        for c in CATEGORIES for m in METRICS} for run in runs})
    category.index.name = "metric · category"
    part.details.append(w.table(category, "cf_vqa_categories", "Metrics per category, one column per prompt variant, "
                                                                "each over the pairs its task asked: baseline and BAEP "
                                                                "over all pairs, HNER over its query subset (so not the "
                                                                "paper's Table 3 comparison: see the next table).",
                                no_interval="Intervals: the per-task key tables below (…_<category>_ci_low/_ci_high)."))
    _same_pairs(with_pairs, w, part)
    _category_power(runs, part)
    human_rows = {}
    from lm_eval_bias.core.aggregation import bootstrap_settings as boot_settings

    n_boot_human = boot_settings()[0]
    for run in runs:
        for c in [None, *CATEGORIES]:
            suffix = "" if c is None else "_" + category_key(c)
            row = {}
            for key in ("consistency", "human_consistency", "consistency_minus_human"):
                values = {f"{key}{d}": run.metrics.get(f"{key}{suffix}{d}", math.nan) for d in ("", "_ci_low", "_ci_high")}
                values.update({"n_pairs": run.metrics.get(f"n_pairs{suffix}", math.nan),
                               "n_rated_pairs": run.metrics.get(f"n_rated_pairs{suffix}", math.nan)})
                row[key] = values[key]
                row[f"{key} 95 % CI"] = ci_text(values, key, n_boot_human)
            human_rows[(run.task, c or "all")] = row
    human = pd.DataFrame(human_rows).T
    if "human_consistency" in human and human["human_consistency"].notna().any():
        human.index.names = ["task", "category"]
        part.details.append(w.table(human, "cf_vqa_human", "Model vs human consistency per category (Table 2, Human "
                                                            "row): model Cons over all pairs of the category, the "
                                                            "humans' mean over the pairs with a human rating, and model "
                                                            "Cons minus it over those same pairs; 95 % intervals: "
                                                            + INTERVAL_TEXT + "."))
    _settings(runs, w, part)
    from lm_eval_bias.core.aggregation import bootstrap_settings

    n_boot, seed = bootstrap_settings()
    for run, pairs in with_pairs:
        human = _human(run)
        cells = stats.metrics_by_cell(pairs, ("subcategory",), n_boot, seed, human=human)
        rows = {}
        for (sub,), values in sorted(cells.items()):
            row = {"n_pairs": values["n_pairs"], "n_rated_pairs": values["n_rated_pairs"]}
            for key in PAIR_METRICS + ("human_consistency",):
                row[key] = values.get(key, math.nan)
                row[f"{key} 95 % CI"] = ci_text(values, key, n_boot)
            rows[sub] = row
        table = pd.DataFrame(rows).T
        table.index.name = "subcategory"
        part.details.append(w.table(table, f"{run.task}_subcategories", f"{run.task}: metrics per subcategory (17 of the "
                                                                        "paper; Tables 6-10 with their Human row: mean "
                                                                        "human consistency of the rated pairs). 95 % "
                                                                        "intervals: " + INTERVAL_TEXT + "."))
        _by_source(run, pairs, w, part)
    return part


def _category_power(runs: list[TaskRun], part: Part) -> None:
    """Beside the per-category tests (their Holm-adjusted p-values in the key tables): whether each
    family can reject at the run's design and its MDE (:func:`lm_eval_bias.cf_vqa.analysis.category_power_statements`)."""
    from lm_eval_bias.cf_vqa.analysis import category_power_statements

    for run in runs:
        statements = category_power_statements(run.metrics)
        if statements:
            text = "; ".join(f"{m}: {st.statement}" for m, st in statements.items())
            part.details.append(note(f"{run.task}: power of the per-category tests (Holm over the categories, "
                                     f"`<metric>_<category>_p_holm`) — {text}.", "note"))


def _same_pairs(with_pairs, w: Writer, part: Part) -> None:
    """Table 3 as the paper compares it ("using the same counterfactual subset"): every prompt variant
    on the HNER query pairs only (the pair ids the HNER runs asked), Cons per category and over all with
    its interval (:data:`INTERVAL_TEXT`), or the reason for none."""
    from lm_eval_bias.core.aggregation import bootstrap_settings

    query_ids = {p.pair_id for run, pairs in with_pairs if run.task.startswith("cf_vqa_hner") for p in pairs}
    if not query_ids or len(with_pairs) < 2:
        return
    n_boot, seed = bootstrap_settings()
    rows: dict[str, dict[str, str]] = {}
    for run, pairs in with_pairs:
        subset = [p for p in pairs if p.pair_id in query_ids]
        if not subset:
            continue
        cells = stats.metrics_by_cell(subset, ("category",), n_boot, seed)
        overall = _all_query_pairs(subset, n_boot, seed)
        for (name,), values in [*overall.items(), *cells.items()]:
            rows.setdefault(name, {})[run.task] = (f"{values['consistency']:.3f} {ci_text(values, 'consistency', n_boot)} "
                                                   f"(n={int(values['n_pairs'])})")
    table = pd.DataFrame(rows).T.fillna("n/a")
    table.index.name = "category"
    part.details.append(w.table(table, "cf_vqa_same_pairs",
                                "Table 3 on the same pairs: Cons of every prompt variant on the HNER query subset "
                                "(the pairs the HNER tasks asked), per category and over all (categories as strata); "
                                "95 % intervals: " + INTERVAL_TEXT + "; n = pairs."))


def _all_query_pairs(subset, n_boot: int, seed: int) -> dict[tuple[str], dict[str, float]]:
    """Cons over all query pairs with the categories as strata (the headline's design on the subset)."""
    summary = stats.pair_summary(stats.pair_grid(subset), n_boot, 0, seed, categories=[])
    return {("all",): summary[None]}


def _by_source(run: TaskRun, pairs, w: Writer, part: Part) -> None:
    """Table 11: metrics per category x question source, when the manifest named the sources."""
    from lm_eval_bias.core.aggregation import bootstrap_settings

    n_boot, seed = bootstrap_settings()
    cells = stats.metrics_by_source(pairs, n_boot, seed)
    if not cells:
        return
    rows = {}
    for (category, source), values in sorted(cells.items()):
        row = {"n_pairs": values["n_pairs"]}
        for key in ("consistency", "cc_auc", "sr_auc"):
            row[key] = values.get(key, math.nan)
            row[f"{key} 95 % CI"] = ci_text(values, key, n_boot)
        rows[(category, source)] = row
    table = pd.DataFrame(rows).T
    table.index.names = ["category", "question source"]
    part.details.append(w.table(table, f"{run.task}_by_source",
                                f"{run.task}: Cons, CC-AUC and SR-AUC per category and question source (Table 11: "
                                "does a model score higher on questions its own family wrote?); 95 % intervals: "
                                + INTERVAL_TEXT + "."))
