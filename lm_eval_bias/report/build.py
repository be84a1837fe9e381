"""``build_report``: read the runs, render every model's card, the comparison and the leaderboard, and
write the report folder.

::

    REPORT_DIR/index.html                 overview: models, comparison, leaderboard, glossary
    REPORT_DIR/cards/<model>.html         one bias card per model
    REPORT_DIR/figures/<model>/*.png|svg  every figure at paper size (PNG 300 dpi, SVG)
    REPORT_DIR/tables/<model>/*.csv       every table
    REPORT_DIR/tables/cross_model_spearman_<task>.csv, figures/_comparison/
    REPORT_DIR/leaderboard.csv|md|json, leaderboard_comparisons.csv
    REPORT_DIR/docs/*.md                  the metric documentation the glossaries link to (from a checkout)
"""

from __future__ import annotations

from pathlib import Path

from lm_eval_bias.report import card, comparison, glossary, leaderboard, page
from lm_eval_bias.core.multiplicity import skip_explicit_gc
from lm_eval_bias.report.render import style
from lm_eval_bias.report.runs import load_runs


def build_report(run_dirs: list[str | Path], output: str | Path) -> Path:
    """Write the report for every model under ``run_dirs`` into ``output``; returns index.html.

    Atomic: the report is written into a temporary sibling folder whose files move into ``output`` only
    when all are written (each file replaced by one rename; other files in ``output`` are kept); on any
    error ``output`` is left as it was.
    What was usable but suspicious (duplicated or truncated samples files, a fallback to the results
    JSON, runs under several lm-eval versions) is printed as ``warning:`` lines on stderr and stated in
    the cards."""
    import sys

    from lm_eval_bias.core.safe_io import check_output_folder, staged_folder

    check_output_folder(output)
    with skip_explicit_gc():  # statsmodels' Holm adjustment collects garbage on every call: slow here
        models = load_runs(run_dirs)
        if not models:
            raise FileNotFoundError(f"no lm-eval-bias task results under {', '.join(map(str, run_dirs))}")
        for model in models:
            for text in model.warnings:
                print(f"warning: {model.label}: {text}", file=sys.stderr)
        with staged_folder(output) as stage:
            _build(models, run_dirs, stage)
    return Path(output) / "index.html"


def _build(models, run_dirs: list[str | Path], root: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    glossary.copy_docs(root)
    aliases = {m.label: f"M{k}" for k, m in enumerate(models, 1)}
    with style():
        cards = [card.build(model, root) for model in models]
        comparison_html = comparison.section(models, cards, aliases, root)
    (root / "cards").mkdir(exist_ok=True)
    for c in cards:
        title = f"Bias card: {c.model.label}"
        (root / c.href).write_text(page.document(title, c.html, root, root / "cards"), encoding="utf-8")
    ranks = leaderboard.rankings(models)  # paired comparisons of adjacent models: computed once
    leaderboard.write(models, root, ranks)
    body = page.index_body(models, cards, aliases, run_dirs, comparison_html,
                           leaderboard.section(models, aliases, ranks))
    index = root / "index.html"
    index.write_text(page.document("Bias report", body, root, root), encoding="utf-8")
    return index
