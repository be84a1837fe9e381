"""Run the calibration simulations of every benchmark and print (or write) one table.

::

    python scripts/calibrate_statistics.py                    # full mode: 250 seeds, 1000 bootstrap replicates
    python scripts/calibrate_statistics.py --quick            # small designs, a few seeds: a smoke test
    python scripts/calibrate_statistics.py --only reflect,paired --seeds 50 --boot 500
    python scripts/calibrate_statistics.py --only cf_vqa --json scripts/calibration/results/cf_vqa.json
    python scripts/calibrate_statistics.py --json scripts/calibration/results/   # one <module>.json each
    python scripts/calibrate_statistics.py --from-json scripts/calibration/results --write-docs
                                                              # assemble the table and figure from saved
                                                              # per-module JSON (modules run separately)
    python scripts/calibrate_statistics.py --write-docs       # also rewrite the table in docs/statistics.md
                                                              # and the figure docs/calibration.png

Every module ``scripts/calibration/<name>.py`` present among :data:`MODULES` (the four benchmarks and
the paired comparison of two models) defines ``run(n_seeds, n_boot, quick) -> list[dict]`` with one row
per quantity (keys :data:`scripts.calibration.ROW_FIELDS`): seeded models with known truth at the
papers' design sizes, run through the project's own statistics functions. The table has one line per
row: benchmark, quantity, kind, design, data-generating model, truth, mean estimate, coverage of the
95 % interval, rejection rate at 5 % under the null, the Monte Carlo standard error of that rate (at the
target rate, its own column) and whether the target is met: coverage inside 93–97 %,
rejection inside 4–6 % (family-wise "any … Holm" rows: at most 6 %), with NO Monte Carlo allowance
(:func:`scripts.calibration.band_met`; the runner recomputes it for every row). Default rows outside
their band are listed under the table. Each row has a ``role``: "default" rows are what the tool
reports by default and the target applies to them (the summary counts only these); "paper" rows are
the papers' own procedures kept by name (the column says "paper's, kept by name") and "diagnostic"
rows are shown for information (e.g. raw per-occupation p-values before Holm; the column says
"diagnostic"): neither is held to the target.

Seeds: the default 250 gives a Monte Carlo standard error sqrt(0.95 * 0.05 / 250) = 1.38 points at 95 %
coverage and at 5 % rejection (<= 1.5 points from 212 seeds on; Morris, White & Crowther 2019). Each row
outside its band is listed with its distance from the target in these errors (its seed-clustered error
for a row that pools several intervals a seed, :func:`scripts.calibration.seed_clustered_mc_error`): at 250 seeds an exact 5 % test lands outside 4-6 % about half of the time, so a listed
test row at |z| < 2 is not evidence of miscalibration; ``--seeds 1000`` halves the error.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import math
import sys
import time
import traceback
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from scripts.calibration import (COVERAGE_BAND, DEFAULT_ROLE, REJECTION_BAND, REQUIRED_FIELDS, ROLES,  # noqa: E402
                                 ROW_FIELDS, band_met, inside_band_probability, is_family_wise,
                                 mc_error, replace_between_markers)

CALIBRATION_DIR = ROOT / "scripts" / "calibration"
#: the calibration modules, in the table's order
MODULES = ("reflect", "fact_or_fair", "cf_vqa", "vignette", "paired")
DOCS = ROOT / "docs" / "statistics.md"
FIGURE = ROOT / "docs" / "calibration.png"
BEGIN, END = "<!-- BEGIN calibration-table -->", "<!-- END calibration-table -->"
RESULTS_DIR = CALIBRATION_DIR / "results"
#: default seeds per row: standard error <= 1.5 points at 95 % coverage (>= 212 seeds); see the docstring
DEFAULT_SEEDS = 250
COLUMNS = ("benchmark", "quantity", "kind", "role", "design", "dgp", "truth", "mean_estimate", "coverage",
           "rejection_rate", "mc_error", "target_met")
HEADERS = ("benchmark", "quantity", "kind", "role", "design", "data-generating model", "truth", "mean estimate",
           "coverage", "rejection", "MC SE", "target met")
#: what the "target met" column says for a row whose role is not held to the target
ROLE_LABELS = {"paper": "paper's, kept by name", "diagnostic": "diagnostic"}


def discover(only: list[str] | None = None, directory: Path = CALIBRATION_DIR) -> dict[str, ModuleType]:
    """{name: module} of the calibration modules present in ``directory`` (all of :data:`MODULES`
    that exist, then any other ``*.py`` there, or just ``only``). An unknown name in ``only`` is an
    error."""
    present = [p.stem for p in sorted(directory.glob("*.py")) if not p.stem.startswith("_")]
    names = [n for n in MODULES if n in present] + [n for n in present if n not in MODULES]
    if only:
        missing = [n for n in only if n not in present]
        if missing:
            raise SystemExit(f"no calibration module {', '.join(missing)} in {directory} (present: {', '.join(names)})")
        names = [n for n in names if n in only]
    modules = {}
    for name in names:
        if directory.resolve() == CALIBRATION_DIR.resolve():
            modules[name] = importlib.import_module(f"scripts.calibration.{name}")
        else:
            spec = importlib.util.spec_from_file_location(f"_calibration_{name}", directory / f"{name}.py")
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            modules[name] = module
    return modules


def _error_row(name: str, message: str, n_seeds: int, n_boot: int) -> dict:
    return {"benchmark": name, "quantity": "(module failed)", "kind": "error", "design": "", "dgp": "",
            "truth": math.nan, "mean_estimate": math.nan, "coverage": math.nan, "rejection_rate": math.nan,
            "n_seeds": n_seeds, "n_boot": n_boot, "seed": 0, "target_met": None, "note": message,
            "role": DEFAULT_ROLE, "mc_error": math.nan}


def normalise(row: dict, name: str = "") -> dict:
    """A module's row with every field of :data:`ROW_FIELDS`: ``role`` filled in (default), the Monte
    Carlo error of its seeds computed, and ``target_met`` recomputed from the bands
    (:func:`scripts.calibration.band_met`, no allowance), whatever the module said."""
    row = {"role": DEFAULT_ROLE, **row}
    missing = [k for k in REQUIRED_FIELDS if k not in row]
    if missing:
        raise ValueError(f"calibration module {name}: row {row.get('quantity')!r} lacks {missing}")
    if row["role"] not in ROLES:
        raise ValueError(f"calibration module {name}: row {row.get('quantity')!r} has role {row['role']!r}, "
                         f"not one of {ROLES}")
    if row["kind"] == "error":
        return {**{k: row.get(k) for k in ROW_FIELDS}, "mc_error": math.nan, "target_met": None}
    kind = row["kind"]
    n_seeds = int(row["n_seeds"]) if _finite(row.get("n_seeds")) else 0
    clustered = _float(row.get("mc_error_clustered"))
    error = mc_error(n_seeds, 0.95 if kind == "interval" else 0.05) if kind in ("interval", "test") and n_seeds else math.nan
    if kind in ("interval", "test") and n_seeds and math.isfinite(clustered):
        error = clustered  # a row pooling several intervals a seed: its own Monte Carlo error
    met = band_met(kind, _float(row.get("coverage")), _float(row.get("rejection_rate")), is_family_wise(row))
    return {**{k: row.get(k) for k in ROW_FIELDS}, "mc_error": error, "mc_error_clustered": clustered,
            "target_met": met}


def _float(value) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def run_all(modules: dict[str, ModuleType], n_seeds: int, n_boot: int, quick: bool,
            log=sys.stderr, wall_times: dict | None = None) -> list[dict]:
    """Every module's rows (a module that raises gives one ``error`` row and the others still run).
    ``wall_times`` (optional) receives {module: seconds}."""
    rows = []
    for name, module in modules.items():
        start = time.perf_counter()
        try:
            found = list(module.run(n_seeds=n_seeds, n_boot=n_boot, quick=quick))
        except Exception as exc:  # noqa: BLE001 - one failing module must not hide the others
            traceback.print_exc(file=log)
            rows.append(_error_row(name, f"{type(exc).__name__}: {exc}", n_seeds, n_boot))
            continue
        rows.extend(normalise(row, name) for row in found)
        elapsed = time.perf_counter() - start
        if wall_times is not None:
            wall_times[name] = elapsed
        print(f"{name}: {len(found)} rows in {elapsed:.1f} s", file=log)
    return rows


def family_wise_target(row: dict) -> dict:
    """``row`` with ``target_met`` from :func:`scripts.calibration.band_met`: a family-wise row ("any of
    a family significant after Holm") meets its target when it rejects at most 6 % (Holm controls the
    family-wise error rate at *at most* 5 %, conservatively with discrete p-values, so a lower rate is
    error control, not miscalibration); the per-test rows of the same family keep the 4-6 % band. No
    Monte Carlo allowance."""
    if not is_family_wise(row):
        return row
    return {**row, "target_met": band_met("test", math.nan, _float(row.get("rejection_rate")), True)}


def outside_band(rows: list[dict]) -> list[dict]:
    """The default rows with a target that lie outside their band (listed under the table)."""
    return [r for r in rows if held_to_target(r) and r["target_met"] is False]


def _band_text(row: dict) -> str:
    if row["kind"] == "interval":
        return f"coverage {_number(row['coverage'])} outside {COVERAGE_BAND[0]:.2f}–{COVERAGE_BAND[1]:.2f}"
    if is_family_wise(row):
        return f"family-wise rejection {_number(row['rejection_rate'])} above {REJECTION_BAND[1]:.2f}"
    return f"rejection {_number(row['rejection_rate'])} outside {REJECTION_BAND[0]:.2f}–{REJECTION_BAND[1]:.2f}"


def outside_band_list(rows: list[dict]) -> str:
    """The Markdown list of default rows outside their band ("none" when every row is inside)."""
    missed = outside_band(rows)
    if not missed:
        return "Rows outside the band: none.\n"
    lines = [f"Rows outside the band ({len(missed)} of {target_summary(rows)[1]} default rows with a target):", ""]
    for r in missed:
        lines.append(f"- {_cell(r['benchmark'])}: {_cell(r['quantity'])} — {_cell(r['design'])}; "
                     f"{_cell(r['dgp'])}; truth {_number(r['truth'])}: {_band_text(r)} "
                     f"(MC SE {_number(r.get('mc_error'))}; {_deviation_text(r)})")
    return "\n".join(lines) + "\n"


def _deviation_text(row: dict) -> str:
    """"z = …": the row's distance from its target rate in Monte Carlo standard errors (its own, with the
    seed as the cluster, for a row that pools several intervals a seed)."""
    kind = row["kind"]
    rate = _float(row.get("coverage") if kind == "interval" else row.get("rejection_rate"))
    seeds = int(row["n_seeds"]) if _finite(row.get("n_seeds")) else 0
    if not (math.isfinite(rate) and seeds):
        return "z —"
    target = 0.95 if kind == "interval" else 0.05
    error = _float(row.get("mc_error"))  # :func:`normalise` put the seed-clustered error there for a pooled row
    if not (math.isfinite(error) and error > 0):
        error = mc_error(seeds, target)
    pooled = ", seed-clustered" if math.isfinite(_float(row.get("mc_error_clustered"))) else ""
    return f"z = {(rate - target) / error:+.1f}{pooled}"


def _number(value, digits: int = 3) -> str:
    if value is None:
        return ""
    try:
        value = float(value)
    except (TypeError, ValueError):
        return str(value)
    if math.isnan(value):
        return "—"
    return f"{value:.{digits}f}"


def _met(value, role: str = DEFAULT_ROLE) -> str:
    """The "target met" cell: yes / **no** for a default row, the role's label otherwise."""
    if role in ROLE_LABELS:
        return ROLE_LABELS[role]
    return {True: "yes", False: "**no**"}.get(value, "—")


def held_to_target(row: dict) -> bool:
    """Whether the target applies to ``row``: a default row (what the tool reports) with a target."""
    return row.get("role", DEFAULT_ROLE) == DEFAULT_ROLE and row["target_met"] is not None


def target_summary(rows: list[dict]) -> tuple[int, int]:
    """(met, with a target) over the default rows only (paper's procedures and diagnostics are shown, not
    counted)."""
    held = [r for r in rows if held_to_target(r)]
    return sum(r["target_met"] is True for r in held), len(held)


def expected_inside(rows: list[dict]) -> float:
    """How many of the default rows with a target an exactly calibrated set of procedures would put inside
    their bands at these rows' seed counts (sum of :func:`scripts.calibration.inside_band_probability`): the
    reference for :func:`target_summary`'s count, since a narrow band misses exact procedures by Monte
    Carlo error alone."""
    total = 0.0
    for r in rows:
        if held_to_target(r):
            p = inside_band_probability(r["kind"], int(r["n_seeds"]), is_family_wise(r),
                                        _float(r.get("mc_error_clustered")))
            total += p if p is not None else 0.0
    return total


def _met_line(rows: list[dict]) -> str:
    met, held = target_summary(rows)
    return (f"{met} of {held} default rows with a target inside their band (an exactly calibrated set of procedures "
            f"would put {expected_inside(rows):.0f} of {held} inside at these seed counts)")


def _cell(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def markdown(rows: list[dict]) -> str:
    """The table in Markdown (one line per row)."""
    lines = ["| " + " | ".join(HEADERS) + " |", "|" + "---|" * len(HEADERS)]
    for r in rows:
        role = r.get("role", DEFAULT_ROLE)
        cells = [r["benchmark"], r["quantity"], r["kind"], role, r["design"], r["dgp"], _number(r["truth"]),
                 _number(r["mean_estimate"]), _number(r["coverage"]), _number(r["rejection_rate"]),
                 _number(r.get("mc_error")), _met(r["target_met"], role)]
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return "\n".join(lines) + "\n"


def text_table(rows: list[dict]) -> str:
    """A plain-text table for the terminal (long text cut)."""
    widths = (12, 48, 10, 10, 8, 8, 8, 9, 8, 21)
    head = ("benchmark", "quantity", "kind", "role", "truth", "mean", "coverage", "rejection", "MC err", "target met")
    out = ["  ".join(h.ljust(w) for h, w in zip(head, widths))]
    for r in rows:
        role = r.get("role", DEFAULT_ROLE)
        cells = (r["benchmark"], r["quantity"], r["kind"], role, _number(r["truth"]), _number(r["mean_estimate"]),
                 _number(r["coverage"]), _number(r["rejection_rate"]), _number(r.get("mc_error")),
                 _met(r["target_met"], role).strip("*"))
        out.append("  ".join(str(c)[:w].ljust(w) for c, w in zip(cells, widths)))
    out.append(f"target met: {_met_line(rows)} (paper's / diagnostic rows not counted; no Monte Carlo allowance)")
    out.append(outside_band_list(rows).rstrip("\n"))
    return "\n".join(out) + "\n"


def figure(rows: list[dict], path: Path) -> None:
    """Coverage (intervals) and rejection rate (tests) per quantity, with the target bands."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [("interval", "coverage", "coverage of the 95 % interval", COVERAGE_BAND, 0.95),
              ("test", "rejection_rate", "rejection rate at 5 % under H0", REJECTION_BAND, 0.05)]
    sizes = [sum(1 for r in rows if r["kind"] == kind and _finite(r[field])) for kind, field, *_ in panels]
    fig, axes = plt.subplots(1, 2, figsize=(11, max(2.0, 0.22 * max(sizes + [1]) + 1.2)), layout="constrained")
    for ax, (kind, field, label, band, target) in zip(axes, panels):
        chosen = [r for r in rows if r["kind"] == kind and _finite(r[field])]
        names = [f"{r['benchmark']}: {r['quantity']}"[:75] for r in chosen]
        values = [float(r[field]) for r in chosen]
        ax.axvspan(*band, color="#cccccc", zorder=0, label="target")
        ax.axvline(target, color="black", linestyle="--", linewidth=0.8)
        # o: default row meeting the target, x: default row missing it, s (grey): paper's procedure kept
        # by name, d (grey): diagnostic -- shown, not held to the target
        markers = [{"paper": "s", "diagnostic": "d"}.get(r.get("role", DEFAULT_ROLE), "o" if r["target_met"] else "x")
                   for r in chosen]
        colours = {"o": "black", "x": "#8b0000", "s": "#777777", "d": "#777777"}
        for y, (value, marker, row) in enumerate(zip(values, markers, chosen)):
            error = _float(row.get("mc_error"))
            if math.isfinite(error):  # ± 1.96 Monte Carlo SE of the seeds, drawn; not part of the band
                ax.errorbar(value, y, xerr=1.96 * error, color=colours[marker], linewidth=0.6, capsize=1.5)
            ax.plot(value, y, marker=marker, color=colours[marker], markersize=5, fillstyle="none" if marker in "sd" else "full")
        ax.set_yticks(range(len(names)), names, fontsize=6)
        low, high = (0.85, 1.0) if kind == "interval" else (0.0, 0.15)
        ax.set_xlim(min([low] + [v - 0.01 for v in values]), max([high] + [v + 0.01 for v in values]))
        ax.set_ylim(len(names) - 0.5, -0.5)
        ax.set_xlabel(label, fontsize=8)
        ax.tick_params(axis="x", labelsize=7)
        ax.set_title(f"{kind}s ({len(chosen)})", fontsize=7)
    seeds = sorted({r["n_seeds"] for r in rows})
    boots = sorted({r["n_boot"] for r in rows if r["n_boot"]})  # rows of tests without a bootstrap carry 0
    fig.suptitle(f"Calibration: {', '.join(map(str, seeds))} seeds, {', '.join(map(str, boots))} bootstrap replicates\n"
                 "grey band = target; x = outside the band; grey square = paper's (kept by name); grey diamond = "
                 "diagnostic; bars = ± 1.96 Monte Carlo SE", fontsize=8)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)  # ~1,000 rows: 150 dpi made a 3 MB file
    plt.close(fig)


def _finite(value) -> bool:
    try:
        return math.isfinite(float(value))
    except (TypeError, ValueError):
        return False


def write_docs(rows: list[dict], docs: Path = DOCS, figure_path: Path | None = FIGURE, command: str = "") -> None:
    """Replace the table between the markers of ``docs`` (and draw ``figure_path``)."""
    text = docs.read_text(encoding="utf-8")
    if replace_between_markers(text, BEGIN, END, "") is None:
        raise SystemExit(f"{docs} has no {BEGIN} … {END} markers")
    stamp = time.strftime("%Y-%m-%d", time.gmtime())
    seeds = sorted({r["n_seeds"] for r in rows})
    boots = sorted({r["n_boot"] for r in rows if r["n_boot"]})  # rows of tests without a bootstrap carry 0
    note = (f"\nWritten by `{command or 'python scripts/calibrate_statistics.py --write-docs'}` on {stamp}: "
            f"{', '.join(map(str, seeds))} seeds, {', '.join(map(str, boots))} bootstrap replicates. "
            f"Target met: {_met_line(rows)}, "
            f"each counted only inside its band (coverage 93–97 %, rejection 4–6 %, family-wise rows ≤ 6 %; "
            f"no Monte Carlo allowance; the MC SE column is the Monte Carlo standard error sqrt(p (1 − p) / seeds) "
            f"at the target rate p, or, for a row that pools several intervals a seed, its standard error with the "
            f"seed as the cluster). Rows whose role is \"paper\" — the paper's procedure, kept by name — or \"diagnostic\" "
            f"are shown and not held to the target.\n\n")
    docs.write_text(replace_between_markers(text, BEGIN, END, note + markdown(rows) + "\n" + outside_band_list(rows) + "\n"),
                    encoding="utf-8")
    if figure_path is not None:
        figure(rows, figure_path)


#: benchmark pages that carry their own calibration table between ``<!-- BEGIN <benchmark>-calibration -->`` and
#: ``<!-- END <benchmark>-calibration -->`` (rewritten by ``--write-docs`` from the same rows)
PAGES = {"reflect": ROOT / "docs" / "reflect.md", "fact_or_fair": ROOT / "docs" / "fact-or-fair.md",
         "vignette": ROOT / "docs" / "vignette.md"}


def _short_design(design: str) -> str:
    return design.split(" x 45 pairs")[0].split(" x 10 photos")[0]


def _split_dgp(dgp: str) -> str:
    return dgp.split("; portrait effect")[0]


def page_table(rows: list[dict], benchmark: str) -> str:
    """One benchmark's rows as its page shows them (design, model, quantity, kind, role, truth, mean estimate,
    coverage / rejection, MC SE, seeds, in band) and the list of its default rows outside their band with
    their z."""
    chosen = [r for r in rows if r["benchmark"] == benchmark and r["kind"] != "error"]
    lines = ["| design | model | quantity | kind | role | truth | mean estimate | coverage / rejection | MC SE | seeds | "
             "in band |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in chosen:
        role = r.get("role", DEFAULT_ROLE)
        rate = r["coverage"] if r["kind"] == "interval" else r["rejection_rate"] if r["kind"] == "test" else math.nan
        cells = [_short_design(r["design"]), _split_dgp(r["dgp"]), f"`{r['quantity']}`", r["kind"], role,
                 _number(r["truth"], 4), _number(r["mean_estimate"], 4),
                 f"{100 * float(rate):.1f} %" if _finite(rate) else "—",
                 f"{100 * float(r['mc_error']):.1f} %" if _finite(r.get("mc_error")) else "—", r["n_seeds"],
                 _met(r["target_met"], role)]
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    missed = outside_band(chosen)
    held = sum(1 for r in chosen if held_to_target(r))
    lines += ["", f"**Default rows outside their band ({len(missed)} of {held}; z = distance from the target in Monte "
                  "Carlo SEs):**", ""]
    for r in missed:
        rate = r["coverage"] if r["kind"] == "interval" else r["rejection_rate"]
        lines.append(f"- {_short_design(r['design'])}, {_split_dgp(r['dgp'])}: `{r['quantity']}` {r['kind']} "
                     f"{100 * float(rate):.1f} % ({_deviation_text(r)})")
    if not missed:
        lines.append("- none")
    return "\n".join(lines) + "\n"


def write_pages(rows: list[dict], pages: dict[str, Path] = PAGES) -> list[Path]:
    """Rewrite each benchmark page's table between its markers (pages without the markers are left alone)."""
    written = []
    for benchmark, page in pages.items():
        begin, end = f"<!-- BEGIN {benchmark}-calibration -->", f"<!-- END {benchmark}-calibration -->"
        text = page.read_text(encoding="utf-8")
        if replace_between_markers(text, begin, end, "") is None or not any(r["benchmark"] == benchmark for r in rows):
            continue
        page.write_text(replace_between_markers(text, begin, end, "\n" + page_table(rows, benchmark)), encoding="utf-8")
        written.append(page)
    return written


def save_json(rows_by_module: dict[str, list[dict]], path: Path, wall_times: dict[str, float], n_seeds: int,
              n_boot: int, quick: bool) -> list[Path]:
    """Save rows as JSON. ``path`` ending in ``.json``: one file with every row run; otherwise a folder
    that receives one ``<module>.json`` per module (:data:`RESULTS_DIR` by convention), so that modules
    run separately can be assembled with ``--from-json``. Each file: ``{"modules", "n_seeds", "n_boot",
    "quick", "wall_s", "written", "rows"}``."""
    import json

    def payload(names: list[str], chosen: list[dict]) -> str:
        return json.dumps({"modules": names, "n_seeds": n_seeds, "n_boot": n_boot, "quick": quick,
                           "wall_s": {n: round(wall_times.get(n, math.nan), 1) for n in names},
                           "written": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "rows": chosen},
                          indent=1, default=float, allow_nan=True)

    if path.suffix == ".json":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(payload(list(rows_by_module), [r for rows in rows_by_module.values() for r in rows]),
                        encoding="utf-8")
        return [path]
    path.mkdir(parents=True, exist_ok=True)
    written = []
    for name, rows in rows_by_module.items():
        target = path / f"{name}.json"
        target.write_text(payload([name], rows), encoding="utf-8")
        written.append(target)
    return written


def load_json(directory: Path) -> list[dict]:
    """Every row of the ``*.json`` files of ``directory`` (files written by :func:`save_json`, or a plain
    list of rows), modules in :data:`MODULES` order then the others by name; ``target_met`` and the MC
    error are recomputed (:func:`normalise`)."""
    import json

    files = sorted(directory.glob("*.json"))
    if not files:
        raise SystemExit(f"no *.json calibration results in {directory}")
    order = {name: i for i, name in enumerate(MODULES)}
    files.sort(key=lambda p: (order.get(p.stem, len(order)), p.stem))
    rows = []
    for file in files:
        data = json.loads(file.read_text(encoding="utf-8"))
        found = data["rows"] if isinstance(data, dict) else data
        rows.extend(normalise(row, file.stem) for row in found)
    return rows


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=DEFAULT_SEEDS,
                        help=f"seeds per quantity (default {DEFAULT_SEEDS}: standard error <= 1.5 points at 95 %%)")
    parser.add_argument("--boot", type=int, default=1000, help="bootstrap replicates (default 1000)")
    parser.add_argument("--quick", action="store_true", help="small designs: a smoke test in seconds")
    parser.add_argument("--only", default="", help="comma-separated modules, e.g. reflect,paired")
    parser.add_argument("--json", type=Path, default=None,
                        help="save rows as JSON: a FILE.json (all rows run) or a folder (one <module>.json each, "
                             f"e.g. {RESULTS_DIR.relative_to(ROOT)})")
    parser.add_argument("--from-json", type=Path, default=None, metavar="DIR",
                        help="run nothing: assemble the table (and with --write-docs the docs table and figure) from "
                             "the saved per-module JSON files in DIR")
    parser.add_argument("--write-docs", action="store_true",
                        help=f"rewrite the table in {DOCS.relative_to(ROOT)} and {FIGURE.relative_to(ROOT)}")
    parser.add_argument("--modules-dir", type=Path, default=CALIBRATION_DIR, help=argparse.SUPPRESS)
    parser.add_argument("--docs", type=Path, default=DOCS, help=argparse.SUPPRESS)
    parser.add_argument("--figure", type=Path, default=FIGURE, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.from_json is not None:
        rows = load_json(args.from_json)
    else:
        only = [n.strip() for n in args.only.split(",") if n.strip()] or None
        modules = discover(only, args.modules_dir)
        if not modules:
            raise SystemExit(f"no calibration modules in {args.modules_dir}")
        wall_times: dict[str, float] = {}
        rows_by_module = {name: run_all({name: module}, args.seeds, args.boot, args.quick, wall_times=wall_times)
                          for name, module in modules.items()}
        rows = [r for found in rows_by_module.values() for r in found]
        if args.json is not None:
            for written in save_json(rows_by_module, args.json, wall_times, args.seeds, args.boot, args.quick):
                print(f"wrote {written}", file=sys.stderr)
    sys.stdout.write(text_table(rows))
    if args.write_docs:
        command = "python scripts/calibrate_statistics.py " + " ".join(argv if argv is not None else sys.argv[1:])
        write_docs(rows, args.docs, args.figure, command.strip())
        if args.docs == DOCS:  # the benchmark pages' own tables (docs/reflect.md), from the same rows
            write_pages(rows)
    return rows


if __name__ == "__main__":
    main()
