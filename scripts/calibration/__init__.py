"""Calibration simulations of the project's statistics, one module per benchmark.

Each module ``scripts/calibration/<benchmark>.py`` defines

    def run(n_seeds: int, n_boot: int, quick: bool) -> list[dict]

returning one row per quantity checked, with the keys of :data:`ROW_FIELDS` (``role`` may be left out:
it defaults to "default"). ``quick`` shrinks the
designs so that a smoke test finishes in seconds; the documented figures use ``quick=False``.
``scripts/calibrate_statistics.py`` runs every module and prints / writes the table.
"""

ROW_FIELDS = (
    "benchmark",      # "reflect" | "fact_or_fair" | "cf_vqa" | "vignette"
    "quantity",       # result key or test name, e.g. "polarization", "p_race (template-clustered)"
    "kind",           # "interval" (coverage), "test" (rejection rate under its null), "null_floor"
    "design",         # sizes, e.g. "48 templates x 45 pairs x 2 orders"
    "dgp",            # data-generating model, e.g. "no bias; per-portrait effect 1 % of salary"
    "truth",          # true value of the quantity (NaN for tests)
    "mean_estimate",  # mean estimate over seeds (for null floors: mean under no bias)
    "coverage",       # share of seeds whose 95 % interval covers the truth (NaN unless kind == interval)
    "rejection_rate", # share of seeds with p < 0.05 under the null (NaN unless kind == test)
    "n_seeds",
    "n_boot",
    "seed",           # first seed; seeds are seed .. seed + n_seeds - 1
    "target_met",     # bool: coverage in [0.93, 0.97] / rejection in [0.04, 0.06] (allowing MC error), or None
    "note",           # e.g. "paper's procedure, kept by name as p_race_unit"
    "role",           # "default": what the tool reports by default (the target applies);
                      # "paper": the paper's procedure kept by name (shown, target not applied);
                      # "diagnostic": e.g. raw per-occupation p before Holm (shown, target not applied).
                      # Optional in a module's rows: the runner fills in "default" (DEFAULT_ROLE).
)
#: the roles a row may have (:data:`ROW_FIELDS`), and the one a row without ``role`` gets
ROLES = ("default", "paper", "diagnostic")
DEFAULT_ROLE = "default"


def mc_allowance(n_seeds: int) -> float:
    """Monte Carlo error (1.96 standard errors) of a 5 % rate estimated from ``n_seeds`` seeds."""
    import math

    return 1.96 * math.sqrt(0.05 * 0.95 / max(n_seeds, 1))


def rate_row(benchmark, quantity, kind, design, dgp, truth, estimates, hits, n_seeds, n_boot, seed, note="",
             role=DEFAULT_ROLE) -> dict:
    """One row of :data:`ROW_FIELDS` from per-seed ``hits`` (covered / rejected, NaN left out) and
    ``estimates``: coverage for ``kind == "interval"``, rejection rate for ``kind == "test"``, and
    whether it lies in 93-97 % / 4-6 % allowing :func:`mc_allowance`."""
    import math

    import numpy as np

    hits = np.asarray(hits, dtype=float)
    hits = hits[np.isfinite(hits)]
    rate = float(hits.mean()) if hits.size else math.nan
    mc = mc_allowance(n_seeds)
    coverage = rate if kind == "interval" else math.nan
    rejection = rate if kind == "test" else math.nan
    if kind == "interval" and math.isfinite(coverage):
        met = bool(0.93 - mc <= coverage <= 0.97 + mc)
    elif kind == "test" and math.isfinite(rejection):
        met = bool(0.04 - mc <= rejection <= 0.06 + mc)
    else:
        met = None
    row = {"benchmark": benchmark, "quantity": quantity, "kind": kind, "design": design, "dgp": dgp,
           "truth": float(truth), "mean_estimate": float(np.nanmean(estimates)) if len(estimates) else math.nan,
           "coverage": coverage, "rejection_rate": rejection, "n_seeds": n_seeds, "n_boot": n_boot, "seed": seed,
           "target_met": met, "note": note, "role": role}
    return {k: row[k] for k in ROW_FIELDS}
