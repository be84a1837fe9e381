"""The bias card of one model: ``cards/<model>.html``.

Top to bottom: the model and its run (backend, lm-eval version, dates); a warning box when the run is
partial (``--limit``), lacks logged samples or has missing cells; then one section per benchmark
present — headline sentences (finding in words, the number with its 95 % interval, the sample it
rests on), the papers' figures, and the detailed tables and further figures folded in a
``<details>`` block, ending with every result key of each task — and the docs / answer-status
table. The glossary is appended by :mod:`.page`.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from lm_eval_bias.cf_vqa import report as cf_vqa
from lm_eval_bias.fact_or_fair import report as fact_or_fair
from lm_eval_bias.reflect import report as reflect
from lm_eval_bias.vignette import report as vignette
from lm_eval_bias.report.intervals import counts_table, holm_families, key_table
from lm_eval_bias.report.render import Part, Writer, details, esc, key_link, slugify, table_html, warning_box
from lm_eval_bias.report.runs import ModelRun

#: the benchmarks a card shows, in order; each module has NAME, TITLE, FAMILIES, HEADLINE and render()
SECTIONS = (reflect, fact_or_fair, cf_vqa, vignette)


def section_of(family: str):
    return next((s for s in SECTIONS if family in s.FAMILIES), None)


def model_slug(label: str) -> str:
    """File-system name of a model's folder and card: readable prefix + hash (long labels stay distinct)."""
    return f"{slugify(label)[:50]}-{hashlib.sha256(label.encode()).hexdigest()[:8]}"


@dataclass
class Card:
    model: ModelRun
    slug: str
    parts: dict[str, Part] = field(default_factory=dict)
    html: str = ""

    @property
    def href(self) -> str:
        return f"cards/{self.slug}.html"


def _run_warnings(model: ModelRun, parts: dict[str, Part]) -> list[str]:
    items = []
    partial = model.partial_tasks
    if partial:
        listed = "; ".join(f"{t}: {p}" for t, p in list(partial.items())[:4])
        more = f"; and {len(partial) - 4} more" if len(partial) > 4 else ""
        items.append(f"Partial run — {len(partial)} of {len(model.tasks)} tasks evaluated only part of their docs "
                     f"({listed}{more}). The numbers describe that subset only: do not report them as the model's "
                     "results. Figures from these tasks are stamped PARTIAL RUN.")
    no_samples = [t for t, r in model.tasks.items() if r.records is None]
    if no_samples:
        items.append(f"No --log_samples files for {', '.join(no_samples)}: figures and most intervals need them "
                     "(headline numbers come from the results JSON).")
    for section in SECTIONS:
        part = parts.get(section.NAME)
        if part and part.warnings:
            items.append(f"Missing data in {section.TITLE}: {len(part.warnings)} note(s) in that section.")
    return items


def multiplicity_statement(runs) -> str:
    """Which test families of ``runs`` are Holm-corrected (their ``_holm`` keys), and what is not."""
    families = {run.task: holm_families(run) for run in runs}
    families = {task: keys for task, keys in families.items() if keys}
    if families:
        listed = "; ".join(f"{task}: {', '.join(keys)}" for task, keys in families.items())
        corrected = (f"Holm-corrected within each task's test family (the tests the paper reports together; "
                     f"adjusted p-values are the <code>_holm</code> keys): {esc(listed)}.")
    else:
        corrected = "No test family of these tasks is Holm-corrected (none reports one)."
    return (f'<p class="multiplicity"><strong>Multiplicity.</strong> {corrected} A task\'s pooled headline test is '
            "its primary test and is not adjusted; nothing is corrected across tasks or benchmarks. Null floors "
            "(mean of a magnitude under the permutation null) and \u201cmore than chance\u201d p-values are shown "
            "beside the metrics they belong to.</p>")


#: answer-status rates every headline line shows (docs/parsing.md: the refusal rate is a headline
#: result of the papers), after the benchmark's own numbers
STATUS_RATES = ("refusal_rate", "invalid_rate")


def with_status_rates(part: Part, runs, benchmark: str) -> None:
    """Append the refusal and invalid rates (with their intervals) of each headline's task to the
    headline's numbers, where the task reports them and the headline does not show them yet."""
    from lm_eval_bias.report.intervals import metric

    by_task = {run.task: run for run in runs}
    for headline in part.headlines:
        run = by_task.get(headline.task)
        if run is None:
            continue
        shown = {headline.metric.key, *(m.key for m in headline.more)}
        headline.more.extend(metric(benchmark, run, key) for key in STATUS_RATES
                             if key not in shown and key in run.metrics)


def replication_table(model: ModelRun, runs, section, writer: Writer, part: Part) -> None:
    """The papers' printed values beside this model's (``lm-eval-bias replicate``): the same model's
    where the paper evaluated it, else every model's as context; in the paper's units, with the run's
    95 % interval."""
    from lm_eval_bias import replicate

    try:
        comparisons = replicate.compare(model.label, {run.task: run.metrics for run in runs})
    except ValueError as exc:  # a malformed reference file must not take the card down
        part.warnings.append(f"reference values could not be read ({exc})")
        return
    if not comparisons:
        return
    table = replicate.comparison_table(comparisons)
    same = bool(table["same model"].any())
    columns = ["task", "key", "table", "section", "row", "column", "paper model", "paper value", "yours",
               "yours 95 % CI low", "yours 95 % CI high", "note"]
    part.details.append(writer.table(
        table[columns].set_index(["task", "key"]), f"{section.NAME}_replication",
        ("Replication: the paper's printed values for this model beside this run's, in the paper's units "
         "(lm-eval-bias replicate)." if same else
         "Replication context: this model is not one of the paper's; every model's printed value beside this "
         "run's, in the paper's units (lm-eval-bias replicate --model-name NAME picks one).")
        + " The interval is the run's 95 % interval of the key."))


def _counts(run) -> str:
    """The run's counts (``n_templates``, ``n_pairs``, ``n_clusters``, …) for a caption."""
    counts = [f"{k} = {int(v)}" for k, v in run.metrics.items()
              if k.startswith("n_") and isinstance(v, (int, float)) and v == v and float(v).is_integer()]
    return "; ".join(counts)


def _section_html(section, part: Part, runs, anchor: str) -> str:
    html = [f'<section class="benchmark" id="{esc(anchor)}"><h2>{esc(section.TITLE)}</h2>']
    html.append('<ul class="headlines">' + "".join(h.html() for h in part.headlines) + "</ul>")
    html.append(multiplicity_statement(runs))
    if part.warnings:
        html.append('<ul class="warning">' + "".join(f"<li>{esc(w)}</li>" for w in part.warnings) + "</ul>")
    if part.figures:
        html.append('<div class="figures">' + "".join(b.html for b in part.figures) + "</div>")
    n_tables = sum(b.kind == "table" for b in part.details)
    n_figures = sum(b.kind == "figure" for b in part.details)
    label = f"Detailed tables and figures ({n_tables} tables" + (f", {n_figures} figures)" if n_figures else ")")
    html.append(details(label, "".join(b.html for b in part.details), "tables"))
    html.append("</section>")
    return "".join(html)


def build(model: ModelRun, root: Path) -> Card:
    """Render ``model``'s card (figures and tables written under ``root``)."""
    card = Card(model, model_slug(model.label))
    writer = Writer(root, card.slug, model.partial_tasks, root / "cards")
    sections_html = []
    absent = []
    for section in SECTIONS:
        runs = [r for r in model.tasks.values() if r.family in section.FAMILIES]
        if not runs:
            absent.append(section.TITLE)
            continue
        try:
            part = section.render(runs, writer)
        except Exception as exc:  # noqa: BLE001 - one benchmark must not take the card down
            part = Part(warnings=[f"{section.TITLE} could not be rendered ({type(exc).__name__}: {exc})."])
        with_status_rates(part, runs, section.NAME)
        replication_table(model, runs, section, writer, part)
        for run in runs:
            part.details.append(writer.table(
                key_table(run), f"{run.task}_keys",
                f"{run.task}: every result key with its 95 % interval and how it was computed, and where the task "
                "reports them its null floor, \u201cmore than chance\u201d p-value, chance level and Holm-adjusted "
                "p-value (derived keys are columns, not rows; _paper / _authors variants are labelled) "
                f"({run.n_samples if run.n_samples is not None else '?'} docs"
                + (f"; {_counts(run)}" if _counts(run) else "")
                + (f"; partial run: {run.partial}" if run.partial else "") + ").",
                index_html=lambda key, name=section.NAME: key_link(name, key)))
        card.parts[section.NAME] = part
        sections_html.append(_section_html(section, part, runs, section.NAME))
    meta = model.meta
    facts = [f"backend {meta['backend']}" if meta.get("backend") else "",
             f"lm-eval {meta['lm_eval']}" if meta.get("lm_eval") else "", f"run {meta['dates']}" if meta.get("dates") else "",
             f"{len(model.tasks)} tasks"]
    toc = " ".join(f'<a href="#{s.NAME}">{esc(s.TITLE)}</a>' for s in SECTIONS if s.NAME in card.parts)
    body = [f'<article class="card"><p class="crumbs"><a href="../index.html">← all models and the leaderboard</a></p>',
            f"<h1>Bias card: {esc(model.label)}</h1>",
            f'<p class="meta">{esc(" · ".join(f for f in facts if f))}</p>',
            warning_box("Read with care", _run_warnings(model, card.parts)),
            '<p class="howto">Each line states a finding in words, then the number it rests on, its 95 % interval in '
            "brackets (or why it has none) and the sample behind it. A magnitude that is positive without any bias "
            "(polarization, JSD, FACT-OR-FAIR's scores) shows the paper's plug-in value, then its debiased value with "
            "the 95 % interval for the parameter, then its null floor and p-value. Metric keys link to the glossary at the end. "
            "Figures follow; the detailed tables are folded below each benchmark. Every figure is also in "
            f"<code>figures/{esc(card.slug)}/</code> (PNG 300 dpi, SVG; linked under it), every table in "
            f"<code>tables/{esc(card.slug)}/</code> (CSV).</p>",
            f'<nav class="toc">{toc} <a href="#glossary">Glossary</a></nav>']
    body += sections_html
    if absent:
        body.append(f'<p class="absent">Not in this run: {esc(", ".join(absent))}.</p>')
    body.append(details("Docs and answer status per task", table_html(
        counts_table(list(model.tasks.values())), "Docs evaluated (of the task's docs), valid / refused / invalid "
        "answers, and notes on partial runs.", no_interval="Counts have no interval."), "counts"))
    body.append("</article>")
    card.html = "".join(body)
    return card
