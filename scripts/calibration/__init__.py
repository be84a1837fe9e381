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
