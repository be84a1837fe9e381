"""Rendering helpers of the report, in one place: text escaping, number formatting, HTML pieces, figure
and table files, and the matplotlib primitives every benchmark's figures are drawn with.

Numbers: 3 decimals in tables, 2 in headlines; an exact zero prints ``0``, a magnitude below 0.001
in scientific notation, so ``0.000`` never appears; p-values below 0.001 print ``< 0.001``.

Figures are drawn at paper size — :data:`SINGLE` (3.3 in, one column) or :data:`DOUBLE` (6.8 in, two
columns) wide, 8 pt text — and written as ``figures/<model>/<name>.png`` (300 dpi) and ``.svg``; the
page embeds a screen-resolution PNG as a data URI, so ``index.html`` and the cards need no other file
and no network. They are grayscale-safe: heatmaps use ``cividis`` (lightness rises monotonically)
with the values printed in the cells and undefined cells hatched; series differ by hatch, marker and
line style as well as colour. A figure of a ``--limit`` run is stamped "PARTIAL RUN" in the image.
"""

from __future__ import annotations

import base64
import html
import io
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

CMAP = "cividis"
HATCHES = ("", "//", "..", "xx", "\\\\", "++", "oo", "--")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
LINESTYLES = ("-", "--", ":", "-.")
#: paper widths in inches (single column, double column) and the exported PNG resolution
SINGLE, DOUBLE = 3.3, 6.8
PNG_DPI = 300
#: resolution of the copy embedded in the page (3.3 in: 528 px, two side by side; 6.8 in: 1088 px)
SCREEN_DPI = 160
FONT_PT = 8


# -- text escaping ------------------------------------------------------------------------------------
def esc(text) -> str:
    """HTML-escaped text (quotes too: safe in attributes)."""
    return html.escape(str(text), quote=True)


def esc_id(text) -> str:
    """An identifier (task or key name) escaped, with line-break opportunities after underscores."""
    return esc(text).replace("_", "_<wbr>")


def plural(n, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def slugify(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_")[:80] or "x"


#: first characters that make a spreadsheet read a cell as a formula (OWASP CSV injection)
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value):
    """``value`` safe for a spreadsheet: text starting with ``=``, ``+``, ``-``, ``@``, tab or CR gets a
    leading ``'`` (OWASP's CSV-injection rule); numbers, and text that is just a number (``-0.12``),
    are kept."""
    if not isinstance(value, str) or not value.startswith(_FORMULA_START):
        return value
    try:
        float(value)
        return value
    except ValueError:
        return "'" + value


def csv_safe(frame):
    """A copy of ``frame`` with :func:`csv_cell` applied to its text cells, index and column names."""
    import pandas as pd

    out = frame.copy()
    for column in out.columns:
        if out[column].dtype == object:
            out[column] = out[column].map(csv_cell)
    if isinstance(out.index, pd.MultiIndex):
        out.index = pd.MultiIndex.from_tuples([tuple(csv_cell(v) for v in t) for t in out.index], names=out.index.names)
    else:
        out.index = pd.Index([csv_cell(v) for v in out.index], name=csv_cell(out.index.name))
    out.columns = [csv_cell(c) for c in out.columns]
    return out


_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]|])")


def md_escape(text) -> str:
    """Text for one Markdown table cell: ``&``, ``<``, ``>`` as HTML entities (no raw HTML), a backslash
    before ``\\ ` * _ [ ] |``, line breaks as spaces."""
    text = html.escape(str(text), quote=False)
    text = _MARKDOWN_SPECIAL.sub(r"\\\1", text)
    return re.sub(r"\r\n|\r|\n", " ", text)


def mpl_text(text) -> str:
    """Text for a matplotlib label: ``$`` escaped (else ``$...$`` is read as mathtext, which can fail)."""
    return str(text).replace("$", r"\$")


def short(label: str, width: int = 32) -> str:
    return label if len(label) <= width else label[: width - 1] + "…"


# -- numbers ------------------------------------------------------------------------------------------
def finite(value) -> bool:
    try:
        return math.isfinite(float(value))
    except (TypeError, ValueError):
        return False


def fmt(value, digits: int = 3) -> str:
    """A number for the page: ``digits`` decimals, ``0`` for an exact zero, scientific notation below
    10^-digits (never ``0.000`` for a non-zero value), ``n/a`` for NaN; text as it is."""
    if value is None:
        return ""
    if type(value).__name__ == "NAType":  # pandas' missing value of nullable columns
        return "n/a"
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        value = float(value)
        if math.isnan(value):
            return "n/a"
        if math.isinf(value):
            return "∞" if value > 0 else "−∞"
        if value == 0:
            return "0"
        if abs(value) < 10 ** -digits:  # never "0.000" for a value that is not 0
            text = f"{value:.2g}" if abs(value) >= 1e-4 else f"{value:.1e}"
            return text.replace("-", "−")
        return f"{value:.{digits}f}".replace("-", "−")
    return str(value)


def fmt_p(value) -> str:
    """A p-value: ``< 0.001`` below 0.001, else 3 decimals."""
    if not finite(value):
        return fmt(value)
    value = float(value)
    return "< 0.001" if value < 0.001 else f"{value:.3f}"


def fmt_interval_end(value, digits: int = 3) -> str:
    """An interval's end: :func:`fmt`, except that an end below 1 that would print as 1 (``1.000``) prints
    as ``1 − δ`` (``1 − 1.0e−10``), so an interval that excludes a score's ideal 1 never reads as reaching
    it -- FACT-OR-FAIR's S_fair is flat to fourth order there, and its interval excludes a fair model
    by 10⁻¹¹ to 10⁻⁷ when the exact test at the ideal rejects (docs/fact-or-fair.md)."""
    if finite(value) and 0.0 < 1.0 - float(value) < 0.5 * 10.0 ** -digits:
        return f"1 − {fmt(1.0 - float(value), digits)}"
    return fmt(value, digits)


def fmt_ci(low, high, digits: int = 3) -> str:
    """``[low, high]`` with :func:`fmt_interval_end` for each end."""
    return f"[{fmt_interval_end(low, digits)}, {fmt_interval_end(high, digits)}]"


def is_p_column(name) -> bool:
    """Columns (and result keys) that hold p-values: ``p``, ``p_*``, ``*_p``, ``p_value``, ``p_corrected``."""
    name = str(name)
    return name == "p" or name.startswith("p_") or name.endswith(("_p", "p_value", "pvalue", "_p_null", "_holm"))


# -- HTML pieces --------------------------------------------------------------------------------------
@dataclass
class Block:
    """One figure, table or note of a section: caption + where it was written + HTML."""

    kind: str  # figure | table | note
    caption: str
    html: str
    path: str = ""
    wide: bool = False


def note(text: str, kind: str = "note") -> Block:
    """A visible remark (``kind`` note, warning or nodata) standing in for, or next to, a figure."""
    return Block("note", text, f'<p class="{kind}">{esc(text)}</p>')


def warning_box(title: str, items: list[str]) -> str:
    if not items:
        return ""
    lis = "".join(f"<li>{esc(i)}</li>" for i in items)
    return f'<div class="warning" role="alert"><strong>{esc(title)}</strong><ul>{lis}</ul></div>'


def details(summary: str, body: str, cls: str = "") -> str:
    attr = f' class="{cls}"' if cls else ""
    return f"<details{attr}><summary>{esc(summary)}</summary>{body}</details>"


def key_link(benchmark: str, key: str) -> str:
    """A metric key linked to its entry in the page's glossary (:mod:`.glossary`)."""
    return f'<a class="key" href="#key-{esc(benchmark)}-{esc(key)}"><code>{esc_id(key)}</code></a>'


def table_html(frame, caption: str, index: bool | None = None, file_html: str = "", index_html=None,
               no_interval: str = "", digits: int = 3) -> str:
    """A table in its own horizontally scrolling box (never wider than the page). ``file_html`` links
    its CSV file; ``index_html`` renders index cells (e.g. linked metric keys); p-value columns print
    ``< 0.001``; ``no_interval`` says why the table's numbers carry no interval."""
    import pandas as pd

    if index is None:
        index = not isinstance(frame.index, pd.RangeIndex)
    head = ([esc(frame.index.name or "")] if index else []) + [esc(c) for c in frame.columns]
    p_cols = [is_p_column(c) for c in frame.columns]
    rows = []
    for idx, row in frame.iterrows():
        cells = [f"<th>{index_html(idx) if index_html else esc_id(idx)}</th>"] if index else []
        for value, is_p in zip(row, p_cols):
            text = fmt_p(value) if is_p else fmt(value, digits)
            cls = ' class="text"' if isinstance(value, str) else ""
            cells.append(f"<td{cls}>{esc(text)}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    file = f' <span class="file">[{file_html}]</span>' if file_html else ""
    why = f' <span class="no-ci">{esc(no_interval)}</span>' if no_interval else ""
    return (f'<div class="table"><p class="caption">{esc(caption)}{why}{file}</p><div class="scroll"><table><thead><tr>'
            + "".join(f"<th>{h}</th>" for h in head) + "</tr></thead><tbody>" + "".join(rows)
            + "</tbody></table></div></div>")


# -- files --------------------------------------------------------------------------------------------
class Writer:
    """Writes one model's (or the comparison's) figures and tables under the report folder; every figure
    as PNG (300 dpi) + SVG at its paper size, every table as CSV."""

    def __init__(self, root: Path, slug: str, partial: dict[str, str] | None = None, page_dir: Path | None = None) -> None:
        self.root = root
        self.slug = slug
        #: task -> "8 of 360 docs (--limit 8)" for the tasks of a partial run
        self.partial = partial or {}
        #: folder of the page the blocks go on (file links are relative to it)
        self.page_dir = page_dir or root

    def link(self, rel: Path, label: str = "") -> str:
        """A link from the page to a written file, labelled with its name."""
        import os

        href = Path(os.path.relpath(self.root / rel, self.page_dir)).as_posix()
        return f'<a class="file" href="{esc(href)}">{esc(label or rel.name)}</a>'

    def _partial_text(self, tasks) -> str:
        found = [f"{t}: {self.partial[t]}" for t in (tasks or ()) if t in self.partial]
        if not found:
            return ""
        return "PARTIAL RUN — " + ("; ".join(found) if len(found) <= 2 else f"{len(found)} tasks cut by --limit")

    def figure(self, fig, name: str, caption: str, tasks=(), wide: bool = False) -> Block:
        """Write ``fig`` (PNG 300 dpi + SVG) and return its embedded block. ``tasks`` are the tasks
        whose data it shows: one from a partial run stamps the image and the caption."""
        import matplotlib.pyplot as plt

        from PIL import Image

        stamp = self._partial_text(tasks)
        if stamp:
            import textwrap

            fig.suptitle(textwrap.fill(stamp, int(fig.get_figwidth() * 13)), fontsize=FONT_PT, fontweight="bold",
                         color="#8b0000")
            caption = f"{stamp}. {caption}"
        base = Path("figures") / self.slug / slugify(name)
        (self.root / base).parent.mkdir(parents=True, exist_ok=True)
        png = self.root / base.with_suffix(".png")
        fig.savefig(png, format="png", dpi=PNG_DPI)
        fig.set_layout_engine("none")  # keep the layout of the first drawing; the SVG needs no second pass
        fig.savefig(self.root / base.with_suffix(".svg"), format="svg", metadata={"Date": None})
        plt.close(fig)
        buffer = io.BytesIO()
        with Image.open(png) as image:  # the page's copy: the 300 dpi PNG scaled down, not drawn again
            size = (round(image.width * SCREEN_DPI / PNG_DPI), round(image.height * SCREEN_DPI / PNG_DPI))
            image.convert("RGB").resize(size, Image.Resampling.LANCZOS).save(buffer, format="PNG", optimize=True)
        uri = "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()
        rel = base.with_suffix(".png")
        cls = ' class="wide"' if wide else ""
        files = f'<span class="file">[{self.link(rel)} · {self.link(base.with_suffix(".svg"), "SVG")}]</span>'
        body = f'<figure{cls}><img src="{uri}" alt="{esc(caption)}"><figcaption>{esc(caption)} {files}</figcaption></figure>'
        return Block("figure", caption, body, str(rel), wide)

    def table(self, frame, name: str, caption: str, index: bool | None = None, index_html=None,
              no_interval: str = "", digits: int = 3) -> Block:
        import pandas as pd

        if index is None:
            index = not isinstance(frame.index, pd.RangeIndex)
        rel = Path("tables") / self.slug / f"{slugify(name)}.csv"
        (self.root / rel).parent.mkdir(parents=True, exist_ok=True)
        csv_safe(frame).to_csv(self.root / rel, index=index)
        return Block("table", caption, table_html(frame, caption, index, self.link(rel), index_html, no_interval, digits),
                     str(rel))


# -- section contract ---------------------------------------------------------------------------------
@dataclass
class Metric:
    """One number with its 95 % interval, or the reason it has none (see :mod:`.intervals`)."""

    benchmark: str
    key: str
    value: float
    low: float = math.nan
    high: float = math.nan
    method: str = ""
    reason: str = ""
    digits: int = 2
    unit: str = ""
    #: beside the number when the results carry them: null floor (mean under the permutation null) and
    #: one-sided "more than chance" p-value, analytic chance level, Holm-adjusted p-value (of a p-value
    #: key in a test family), and the variant a ``_paper`` / ``_authors`` key is
    null: float = math.nan
    p_null: float = math.nan
    chance: float = math.nan
    holm: float = math.nan
    variant: str = ""
    #: the bias-corrected value of a magnitude (``<key>_debiased``): when set, ``low``/``high`` are its
    #: interval (for the parameter) and are shown after it, not after the plug-in ``value``
    corrected: float = math.nan

    def companions_html(self) -> str:
        """Null floor, p_null, chance level, Holm p-value and variant label, where present."""
        items = []
        if finite(self.null):
            items.append('<span class="null" title="mean of the metric under the permutation null of the same '
                         f'design">null floor {esc(fmt(self.null, self.digits) + self.unit)}</span>')
        if finite(self.p_null):
            items.append('<span class="pnull" title="one-sided permutation p-value: more than chance">'
                         f"p(more than chance) {esc(fmt_p(self.p_null))}</span>")
        if finite(self.chance):
            items.append(f'<span class="chance">chance {esc(fmt(self.chance, self.digits) + self.unit)}</span>')
        if finite(self.holm):
            items.append(f'<span class="holm" title="Holm-adjusted within the test family">Holm {esc(fmt_p(self.holm))}</span>')
        if self.variant:
            items.append(f'<span class="variant">{esc(self.variant)}</span>')
        return f' <span class="companions">({"; ".join(items)})</span>' if items else ""

    def html(self, with_key: bool = True) -> str:
        key = key_link(self.benchmark, self.key) + " " if with_key else ""
        number = fmt_p(self.value) if is_p_column(self.key) else fmt(self.value, self.digits) + self.unit
        if finite(self.low) and finite(self.high):
            ci = (f' <span class="ci" title="95 % interval: {esc(self.method)}">'
                  f"{esc(fmt_ci(self.low, self.high, self.digits))}</span>")
        else:
            ci = f' <a class="no-ci" href="#no-interval">({esc(self.reason or "no interval")})</a>'
        if finite(self.corrected):
            ci = (' · <span class="corrected" title="estimate of the parameter the interval is for (REFLECT: '
                  'bootstrap bias-corrected; FACT-OR-FAIR: median-unbiased)">debiased '
                  f'{esc(fmt(self.corrected, self.digits) + self.unit)}</span>{ci}')
        return f'{key}<span class="num">{esc(number)}</span>{ci}{self.companions_html()}'


@dataclass
class Headline:
    """One sentence of a benchmark's summary: words, the number it rests on (with its interval), the
    sample it comes from, and further numbers."""

    task: str
    text: str
    metric: Metric
    n: str = ""
    more: list[Metric] = field(default_factory=list)
    partial: bool = False

    def html(self, tag: str = "li") -> str:
        parts = [f'<span class="claim">{esc(self.text)}</span>: {self.metric.html()}']
        if self.n:
            parts.append(f' <span class="n">· {esc(self.n)}</span>')
        if self.more:
            parts.append('<span class="more"> · ' + "; ".join(m.html() for m in self.more) + "</span>")
        flag = ' <span class="badge">partial run</span>' if self.partial else ""
        return f'<{tag} class="headline" data-task="{esc(self.task)}">{"".join(parts)}{flag}</{tag}>'


@dataclass
class Part:
    """What one benchmark module renders for one model: headline sentences, the papers' figures
    (shown), detailed tables and further figures (folded), and warnings about missing data."""

    headlines: list[Headline] = field(default_factory=list)
    figures: list[Block] = field(default_factory=list)
    details: list[Block] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


# -- figures ------------------------------------------------------------------------------------------
#: matplotlib settings of every report figure (paper text sizes); :func:`style` applies them
STYLE = {"font.size": FONT_PT, "axes.titlesize": FONT_PT + 1, "axes.labelsize": FONT_PT, "xtick.labelsize": FONT_PT - 1,
         "ytick.labelsize": FONT_PT - 1, "legend.fontsize": FONT_PT - 1, "hatch.linewidth": 0.6, "axes.linewidth": 0.7,
         "xtick.major.width": 0.7, "ytick.major.width": 0.7, "svg.fonttype": "none", "figure.dpi": 100}


def style():
    """Context in which the report draws its figures (the caller's matplotlib settings are untouched)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt.rc_context(STYLE)


def new_figure(width: float = SINGLE, height: float = 2.4, ncols: int = 1):
    """A figure of exactly ``width`` x ``height`` inches (constrained layout; text sizes from :data:`STYLE`)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt.subplots(1, ncols, figsize=(width, height), layout="constrained")


def title(ax, text: str, width: float) -> None:
    """An axes title wrapped to the figure's width (never cut at the edge)."""
    import textwrap

    ax.set_title(textwrap.fill(mpl_text(text), max(20, int(width * 12))))


def legend_columns(labels, width: float) -> int:
    """How many legend entries fit side by side in ``width`` inches (7 pt text, 0.45 in per handle)."""
    sizes = [0.45 + 0.055 * len(str(label)) for label in labels]
    for ncols in range(len(sizes), 0, -1):
        rows = [sizes[i:i + ncols] for i in range(0, len(sizes), ncols)]
        if max(sum(r) for r in rows) <= width - 0.2:
            return ncols
    return 1


def all_nan(matrix) -> bool:
    data = np.asarray(matrix, dtype=float)
    return data.size == 0 or not np.isfinite(data).any()


def heatmap(matrix, row_labels, col_labels, heading: str, vmin=None, vmax=None, center: float | None = None,
            label: str = "", width: float = SINGLE, percent: bool = False):
    """A heatmap (cividis) with the values written in the cells and undefined cells hatched. Callers
    check :func:`all_nan` first: a matrix without any value is a "no data" note, not a grey figure."""
    data = np.asarray(matrix, dtype=float)
    n_rows, n_cols = data.shape
    height = min(9.0, max(1.8, 0.17 * n_rows + 1.1 + 0.045 * max((len(str(c)) for c in col_labels), default=0)))
    fig, ax = new_figure(width, height)
    if center is not None and vmin is None and vmax is None:
        finite_cells = np.abs(data[np.isfinite(data)] - center)
        span = float(finite_cells.max()) if finite_cells.size and finite_cells.max() > 0 else 1.0
        vmin, vmax = center - span, center + span
    ax.patch.set_facecolor("white")
    ax.patch.set_hatch("////")
    ax.patch.set_edgecolor("#9a9a9a")
    image = ax.imshow(np.ma.masked_invalid(data), cmap=CMAP, vmin=vmin, vmax=vmax, aspect="auto", interpolation="nearest")
    room = width * 0.62 / max(1, n_cols)  # inches per column; 7 pt capitals are ~0.075 in wide
    rotate = max((len(str(c)) for c in col_labels), default=0) * 0.075 > room
    ax.set_xticks(range(n_cols), [mpl_text(c) for c in col_labels], rotation=50 if rotate else 0,
                  ha="right" if rotate else "center", rotation_mode="anchor" if rotate else "default")
    ax.set_yticks(range(n_rows), [mpl_text(r) for r in row_labels])
    if data.size <= 150:
        lo, hi = image.get_clim()
        size = 5.5 if n_cols > 6 else 6.5
        for (i, j), value in np.ndenumerate(data):
            if np.isfinite(value):
                shade = (value - lo) / (hi - lo) if hi > lo else 0.5
                text = f"{value:.0f}" if percent or abs(value) >= 10 else f"{value:.2f}"
                ax.text(j, i, text.replace("-", "−"), ha="center", va="center", fontsize=size,
                        color="black" if shade > 0.55 else "white")
    fig.colorbar(image, ax=ax, label=mpl_text(label), shrink=0.9)
    title(ax, heading, width)
    return fig


def bars(groups: dict[str, dict[str, float]], heading: str, ylabel: str,
         errors: dict[str, dict[str, tuple[float, float]]] | None = None, reference: float | None = None,
         width: float = SINGLE, height: float = 2.4, ylim: tuple[float, float] | None = None):
    """Grouped bars: ``groups`` = {series: {category: value}}; series differ by hatch and shade, with
    optional (low, high) error bars and a dashed reference line. Undefined values are marked "n/a"."""
    import matplotlib

    series = list(groups)
    categories = list(dict.fromkeys(c for s in series for c in groups[s]))
    fig, ax = new_figure(width, height)
    step = 0.8 / max(1, len(series))
    colours = [matplotlib.colormaps[CMAP](x) for x in np.linspace(0.25, 0.95, max(1, len(series)))]
    for k, name in enumerate(series):
        xs = np.arange(len(categories)) + (k - (len(series) - 1) / 2) * step
        values = np.array([groups[name].get(c, np.nan) for c in categories], dtype=float)
        yerr = None
        if errors and name in errors:
            lows = np.array([errors[name].get(c, (np.nan, np.nan))[0] for c in categories], dtype=float)
            highs = np.array([errors[name].get(c, (np.nan, np.nan))[1] for c in categories], dtype=float)
            ok = np.isfinite(lows) & np.isfinite(highs) & np.isfinite(values)
            yerr = np.vstack([np.where(ok, np.clip(values - lows, 0, None), 0), np.where(ok, np.clip(highs - values, 0, None), 0)])
        ax.bar(xs, np.nan_to_num(values), step, label=mpl_text(name), color=colours[k], hatch=HATCHES[k % len(HATCHES)],
               edgecolor="black", linewidth=0.5, yerr=yerr, capsize=1.5, error_kw={"elinewidth": 0.7})
        for x, v in zip(xs, values):  # a missing value and a zero are both flat: say which
            if not np.isfinite(v) or v == 0:
                ax.text(x, 0, "n/a" if not np.isfinite(v) else "0", rotation=90, ha="center", va="bottom",
                        fontsize=FONT_PT - 2)
    if reference is not None:
        ax.axhline(reference, color="black", linestyle="--", linewidth=0.8)
    rotate = len(categories) * max(1, len(series)) > 8 or max((len(str(c)) for c in categories), default=0) > 8
    ax.set_xticks(range(len(categories)), [mpl_text(c) for c in categories], rotation=35 if rotate else 0,
                  ha="right" if rotate else "center")
    ax.set_ylabel(mpl_text(ylabel))
    if ylim:
        ax.set_ylim(*ylim)
    title(ax, heading, width)
    if len(series) > 1:
        fig.legend(frameon=False, ncols=legend_columns(series, width), loc="outside lower center")
    return fig
