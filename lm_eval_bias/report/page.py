"""The two kinds of page and what they share: the HTML document around a body (style sheet, glossary
of the keys the body shows, footer), and the index page's body — title and warnings, the model table
(aliases M1, M2, … and links to the cards), the comparison and the leaderboard.

Layout rules: the content is at most 1180 px wide; every table sits in its own horizontally scrolling
box and long labels wrap, so nothing overflows a 1280 px window; figures are shown at their natural
size in a grid (two single-column figures side by side, double-column ones across).
"""

from __future__ import annotations

from pathlib import Path

from lm_eval_bias.report import glossary
from lm_eval_bias.report.card import SECTIONS
from lm_eval_bias.report.render import esc, warning_box

CSS = """*{box-sizing:border-box}
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;margin:0;color:#111;
line-height:1.45;background:#fff;font-size:15px}
main{max-width:1180px;margin:0 auto;padding:1.2em 1.5em 3em}
h1{font-size:1.55em;margin:.3em 0;overflow-wrap:anywhere}
h2{font-size:1.3em;border-bottom:2px solid #222;padding-bottom:.15em;margin:1.8em 0 .6em}
h3{font-size:1.05em;margin:1.2em 0 .4em}
a{color:#0b4f9c}
code{font-size:.92em;overflow-wrap:anywhere}
p,li,dd,td,th,figcaption,caption,summary{overflow-wrap:anywhere}
.meta,.file,.howto,.crumbs{color:#444;font-size:.9em}
nav a{margin-right:1em;white-space:nowrap}
ul.headlines{list-style:none;padding:0;margin:.6em 0}
.headline{padding:.45em .7em;border-left:4px solid #222;background:#f3f3f3;margin:.35em 0}
div.headline{border-left-width:3px;margin:0;background:none;padding:.1em .2em}
.claim{font-weight:600}
.num{font-weight:700;font-variant-numeric:tabular-nums}
.ci{font-variant-numeric:tabular-nums}
.no-ci{color:#555;font-style:italic}a.no-ci{text-decoration:none}
.n,.more{color:#333}
.companions{color:#333;font-size:.92em}.variant{font-style:italic}
.multiplicity{font-size:.88em;color:#333;margin:.4em 0}
.rank{font-weight:600;white-space:nowrap}.rank.tie{color:#555}
a.key{text-decoration:none;border-bottom:1px dotted #0b4f9c}
.badge{background:#8b0000;color:#fff;border-radius:3px;padding:0 .35em;font-size:.8em;margin-left:.4em;white-space:nowrap}
.warning{border:2px solid #8b0000;background:#fff4f4;padding:.5em .9em;margin:1em 0}
.warning ul{margin:.3em 0;padding-left:1.2em}
ul.warning{padding-left:2em}
.nodata,.note{background:#f2f2f2;border:1px dashed #777;padding:.6em .8em;color:#222;margin:.5em 0}
.absent{color:#555}
.figures{display:grid;grid-template-columns:repeat(auto-fill,minmax(420px,1fr));gap:1.2em 1.5em;align-items:start;
margin:1em 0}
figure{margin:0;min-width:0}
figure.wide{grid-column:1/-1}
figure img{max-width:100%;height:auto;display:block;border:1px solid #eee}
figcaption,.caption{font-size:.85em;color:#333;text-align:left;margin:.3em 0}
.table{margin:1em 0}.table .scroll{margin-top:.2em}
.scroll{overflow-x:auto;max-width:100%;margin:.8em 0}
table{border-collapse:collapse;font-size:.82em}
td,th{border:1px solid #aaa;padding:2px 6px;text-align:right;vertical-align:top}
th{background:#eee;font-weight:600}thead th{text-align:center}
thead th{max-width:16em}
td.text{text-align:left;max-width:36em}
table.cmp td{min-width:18em;max-width:30em}table.cmp tbody th,table.board tbody th{min-width:9em}
details{margin:1em 0;border:1px solid #bbb;border-radius:4px;padding:.4em .9em}
details[open]>summary{margin-bottom:.5em}
summary{cursor:pointer;font-weight:600}
details .figures{grid-template-columns:repeat(auto-fill,minmax(380px,1fr))}
dl{margin:.3em 0}dt{font-weight:600;margin-top:.5em}dd{margin-left:1.5em}
dl.gloss{display:grid;grid-template-columns:minmax(8em,19em) 1fr;gap:.25em 1.2em;font-size:.92em}
dl.gloss dt,dl.gloss dd{margin:0}dl.gloss dt{font-weight:600}
.doc{font-size:.85em;color:#555;margin-left:.3em}
footer{color:#555;font-size:.85em;border-top:1px solid #ccc;margin-top:3em;padding-top:.6em}
@media print{body{font-size:11px}main{max-width:none;padding:0}.scroll{overflow:visible}a{color:inherit}
details{border:none;padding:0}.figures{display:block}figure{break-inside:avoid;margin:1em 0}}"""


def document(title: str, body: str, root: Path, page_dir: Path) -> str:
    """A complete, self-contained HTML page: ``body``, then the glossary of the keys it links to."""
    from lm_eval_bias import __version__

    gloss = glossary.section(glossary.used_keys(body), root, page_dir)
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" '
            f'content="width=device-width, initial-scale=1"><title>{esc(title)}</title><style>{CSS}</style></head>'
            f"<body><main>{body}{gloss}<footer>Written by lm-eval-bias {esc(__version__)} "
            "(<code>lm-eval-bias report</code>; how to read it: <code>docs/report.md</code>; the statistics: "
            "<code>docs/statistics.md</code>). Intervals are 95 %, from each task's own cluster bootstrap. "
            "Figures are also in <code>figures/</code> as PNG (300 dpi) and SVG, tables in <code>tables/</code> as "
            "CSV.</footer></main></body></html>")


def index_body(models, cards, aliases: dict[str, str], run_dirs, comparison_html: str, leaderboard_html: str) -> str:
    warnings = []
    for card in cards:
        partial = card.model.partial_tasks
        if partial:
            warnings.append(f"{aliases[card.model.label]} ({card.model.label}): partial run — {len(partial)} of "
                            f"{len(card.model.tasks)} tasks evaluated only part of their docs (--limit); its numbers "
                            "describe that subset only.")
        no_samples = [t for t, r in card.model.tasks.items() if r.records is None]
        if no_samples:
            warnings.append(f"{aliases[card.model.label]}: no --log_samples files for {len(no_samples)} task(s); "
                            "figures and most intervals are missing.")
    rows = []
    for card in cards:
        model = card.model
        benchmarks = ", ".join(s.TITLE for s in SECTIONS if s.NAME in card.parts)
        docs = sum(r.n_samples or 0 for r in model.tasks.values())
        status = '<span class="badge">partial run</span>' if model.partial_tasks else "complete"
        rows.append(f'<tr><th>{esc(aliases[model.label])}</th><td class="text"><a href="{esc(card.href)}">'
                    f"{esc(model.label)}</a></td><td class=\"text\">{esc(benchmarks)}</td><td>{len(model.tasks)}</td>"
                    f"<td>{docs}</td><td class=\"text\">{status}</td></tr>")
    table = ('<p class="caption">One bias card per model (follow the link). The aliases name the models in the '
             'tables below.</p><div class="scroll"><table class="models"><thead><tr><th>alias</th><th>model</th>'
             "<th>benchmarks</th><th>tasks</th><th>docs</th><th>run</th></tr></thead><tbody>" + "".join(rows)
             + "</tbody></table></div>")
    return ("<header><h1>Bias report</h1>"
            f'<p class="meta">{len(models)} model(s) from {esc(", ".join(map(str, run_dirs)))}. Intervals are 95 %.</p>'
            '<nav><a href="#models">Models</a> <a href="#comparison">Comparison</a> <a href="#leaderboard">Leaderboard</a> '
            '<a href="#glossary">Glossary</a></nav></header>'
            + warning_box("Read with care", warnings)
            + f'<section id="models"><h2>Models</h2>{table}</section>' + comparison_html + leaderboard_html)
