"""Building blocks of the report: figures (PNG files + embedded copies), CSV tables and HTML.

Figures use matplotlib's Agg backend, the colour-blind-safe, grayscale-monotone ``cividis`` map for
heatmaps and hatching + markers (not colour alone) for series. Every figure and table is written to
disk (``figures/…png``, ``tables/…csv``) and embedded in ``index.html`` as a data URI, so the page
needs no network and no other file.
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


def fmt(value, digits: int = 3) -> str:
    if value is None:
        return ""
    if isinstance(value, (float, np.floating)):
        if math.isnan(value):
            return "n/a"
        if math.isinf(value):
            return "∞" if value > 0 else "−∞"
        return f"{value:.{digits}f}"
    return str(value)


@dataclass
class Block:
    """One figure or table of a section: caption + where it was written + HTML."""

    kind: str  # figure | table | note
    caption: str
    html: str
    path: str = ""


@dataclass
class Section:
    title: str
    blocks: list[Block] = field(default_factory=list)


class Writer:
    """Writes one model's figures and tables under the report folder."""

    def __init__(self, root: Path, model_slug: str) -> None:
        self.root = root
        self.model_slug = model_slug

    def figure(self, fig, name: str, caption: str) -> Block:
        import matplotlib.pyplot as plt

        rel = Path("figures") / self.model_slug / f"{slugify(name)}.png"
        (self.root / rel).parent.mkdir(parents=True, exist_ok=True)
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", dpi=110, bbox_inches="tight")
        plt.close(fig)
        data = buffer.getvalue()
        (self.root / rel).write_bytes(data)
        uri = "data:image/png;base64," + base64.b64encode(data).decode()
        body = (f'<figure><img src="{uri}" alt="{html.escape(caption)}">'
                f'<figcaption>{html.escape(caption)} <span class="file">[{rel}]</span></figcaption></figure>')
        return Block("figure", caption, body, str(rel))

    def table(self, frame, name: str, caption: str, index: bool = True) -> Block:
        rel = Path("tables") / self.model_slug / f"{slugify(name)}.csv"
        (self.root / rel).parent.mkdir(parents=True, exist_ok=True)
        frame.to_csv(self.root / rel, index=index)
        return Block("table", caption, table_html(frame, caption, index, str(rel)), str(rel))


def table_html(frame, caption: str, index: bool = True, rel: str = "") -> str:
    head = ([html.escape(str(frame.index.name or ""))] if index else []) + [html.escape(str(c)) for c in frame.columns]
    rows = []
    for idx, row in frame.iterrows():
        cells = ([f"<th>{html.escape(str(idx))}</th>"] if index else []) + [f"<td>{html.escape(fmt(v))}</td>" for v in row]
        rows.append("<tr>" + "".join(cells) + "</tr>")
    file = f' <span class="file">[{html.escape(rel)}]</span>' if rel else ""
    return (f"<table><caption>{html.escape(caption)}{file}</caption><thead><tr>"
            + "".join(f"<th>{h}</th>" for h in head) + "</tr></thead><tbody>" + "".join(rows) + "</tbody></table>")


def note(text: str) -> Block:
    return Block("note", text, f'<p class="note">{html.escape(text)}</p>')


def heatmap(matrix, row_labels, col_labels, title: str, vmin=None, vmax=None, center: float | None = None,
            label: str = "", annotate: bool = True):
    """A heatmap figure (cividis; NaN cells hatched grey) with values written in the cells."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    data = np.asarray(matrix, dtype=float)
    height = max(2.5, 0.35 * len(row_labels) + 1.2)
    width = max(3.5, 0.45 * len(col_labels) + 2.5)
    fig, ax = plt.subplots(figsize=(min(width, 14), min(height, 16)))
    if center is not None and vmin is None and vmax is None:
        finite = np.abs(data[np.isfinite(data)] - center)
        span = float(finite.max()) if finite.size else 1.0
        vmin, vmax = center - span, center + span
    ax.set_facecolor("#d9d9d9")
    image = ax.imshow(np.ma.masked_invalid(data), cmap=CMAP, vmin=vmin, vmax=vmax, aspect="auto")
    ax.set_xticks(range(len(col_labels)), [mpl_text(c) for c in col_labels], rotation=60, ha="right", fontsize=8)
    ax.set_yticks(range(len(row_labels)), [mpl_text(r) for r in row_labels], fontsize=8)
    if annotate and data.size <= 400:
        lo, hi = image.get_clim()
        for (i, j), value in np.ndenumerate(data):
            if np.isfinite(value):
                shade = (value - lo) / (hi - lo) if hi > lo else 0.5
                ax.text(j, i, f"{value:.2f}" if abs(value) < 10 else f"{value:.0f}", ha="center", va="center",
                        fontsize=6.5, color="black" if shade > 0.55 else "white")
    fig.colorbar(image, ax=ax, label=mpl_text(label))
    ax.set_title(mpl_text(title), fontsize=10)
    return fig


def bars(groups: dict[str, dict[str, float]], title: str, ylabel: str, errors: dict[str, dict[str, tuple[float, float]]] | None = None,
         reference: float | None = None):
    """Grouped bars: ``groups`` = {series: {category: value}}; hatches distinguish series, optional
    (low, high) error bars and a dashed reference line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    series = list(groups)
    categories = list(dict.fromkeys(c for s in series for c in groups[s]))
    fig, ax = plt.subplots(figsize=(max(4.0, 0.6 * len(categories) * max(1, len(series)) + 1.5), 3.2))
    width = 0.8 / max(1, len(series))
    colours = [matplotlib.colormaps[CMAP](x) for x in np.linspace(0.15, 0.85, max(1, len(series)))]
    for k, name in enumerate(series):
        xs = np.arange(len(categories)) + (k - (len(series) - 1) / 2) * width
        values = [groups[name].get(c, np.nan) for c in categories]
        yerr = None
        if errors and name in errors:
            lows = [values[i] - errors[name].get(c, (np.nan, np.nan))[0] for i, c in enumerate(categories)]
            highs = [errors[name].get(c, (np.nan, np.nan))[1] - values[i] for i, c in enumerate(categories)]
            yerr = np.nan_to_num(np.array([lows, highs], dtype=float))
        ax.bar(xs, values, width, label=mpl_text(name), color=colours[k], hatch=HATCHES[k % len(HATCHES)], edgecolor="black",
               yerr=yerr, capsize=2)
    if reference is not None:
        ax.axhline(reference, color="black", linestyle="--", linewidth=0.8)
    ax.set_xticks(range(len(categories)), [mpl_text(c) for c in categories], rotation=30, ha="right", fontsize=8)
    ax.set_ylabel(mpl_text(ylabel))
    ax.set_title(mpl_text(title), fontsize=10)
    if len(series) > 1:
        ax.legend(fontsize=7)
    return fig
