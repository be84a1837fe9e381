"""MCQ answers by gender presentation, beyond the binary (REFLECT App. C.8, exploratory androgynous pilot).

App. C.8 adds a third facial presentation (androgynous) to a stratified FOCUS subset (6 occupations x 2
templates x 3 races, man / woman / androgynous for each template and race) and keeps the MCQ protocol
unchanged; it reports valid counts per presentation, the JSD between the androgynous and the woman
answer distributions, and man-androgynous mean gaps Delta with template-cluster bootstrap 95 % intervals.

Let a cell be one (template, race) of the source; an image is the cell's photo edited into presentation
a. With n_a(o) the valid answers choosing option o over the images of presentation a, and v(o) the
option encodings of Sec. 4.2 (salary-bin midpoints, education 1-4):

    valid_rate_a   = valid calls / calls over the images of presentation a (every cell that has one)
    mean_answer_a  = mu_a = sum_o v(o) n_a(o) / sum_o n_a(o)
    gap_a_vs_b     = (mu_a^{ab} - mu_b^{ab}) / mu_b^{ab}           (Sec. 4.2's relative gap, b the reference)
    jsd_a_vs_b     = JSD(p_a^{ab} || p_b^{ab}),  p(o) = n(o) / sum_o' n(o')   (log base 2, Sec. 4.2)

where the ``^{ab}`` quantities count only the *matched* cells, those with an image of both a and b, so a
pair is compared on the same templates and races (a source whose androgynous images cover three races
is compared with the man and woman images of those three races only). Pairs: man vs androgynous, woman
vs androgynous, man vs woman.

Uncertainty: the template-cluster bootstrap of :mod:`lm_eval_bias.core.bootstrap` (templates resampled
within occupation, Rao-Wu rescaled; App. C.3): every statistic above is a function of per-template counts;
design-t intervals for the means and gaps, the Wilson interval with the design's effective sample size for the
valid rates (``core.bootstrap.effective_size_wilson_interval``); none for the JSDs (:data:`JSD_NO_INTERVAL`).
Null floor of the JSD (positive without any effect): within each matched cell the two images' presentation
labels are swapped with probability 1/2 (every call about an image moves with it), the exact null of
"presentation does not matter" with template and race effects allowed; ``_null`` is the mean JSD under
it and ``_p_null`` the one-sided p-value (1 + #{null >= observed}) / (1 + B)
(:func:`~lm_eval_bias.core.bootstrap.permutation_null`).

Pure numpy/scipy; no harness imports.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Mapping, Sequence

import numpy as np
from lm_eval_bias.core.lazy_imports import jensenshannon  # scipy.spatial imported on first use, not at task load

from lm_eval_bias.reflect.schema import ANDROGYNOUS, PRESENTATIONS, RACES
from lm_eval_bias.core.bootstrap import bootstrap_replicates, metric_with_batch, permutation_null, template_bootstrap
from lm_eval_bias.reflect.twoafc import STATUSES, VALID

#: The presentation pairs compared (a, b): b is the reference of ``gap_a_vs_b``.
PRESENTATION_PAIRS: tuple[tuple[str, str], ...] = (("man", ANDROGYNOUS), ("woman", ANDROGYNOUS), ("man", "woman"))


def pair_name(a: str, b: str) -> str:
    """``man_vs_androgynous``."""
    return f"{a}_vs_{b}"


PAIR_NAMES: tuple[str, ...] = tuple(pair_name(a, b) for a, b in PRESENTATION_PAIRS)
#: Keys with a template-cluster bootstrap interval.
INTERVAL_KEYS: tuple[str, ...] = (
    *(f"valid_rate_{p}" for p in PRESENTATIONS),
    *(f"mean_answer_{p}" for p in PRESENTATIONS),
    *(f"gap_{n}" for n in PAIR_NAMES),
    *(f"jsd_{n}" for n in PAIR_NAMES),
)
#: Keys that also carry a permutation null floor (``_null``, ``_p_null``).
NULL_KEYS: tuple[str, ...] = tuple(f"jsd_{n}" for n in PAIR_NAMES)
#: Why the JSDs between presentations get no interval (issue 31): the plug-in JSD is positive without any
#: effect, so a bootstrap interval of it (percentile or estimate +- t SE) targets the plug-in's expectation, not
#: the parameter, and the pilot's design (6 occupations x 2 templates: 6 between-template degrees of freedom) is
#: below the 20 that REFLECT's JSD interval needs (``lm_eval_bias.core.bootstrap.MIN_INVERSION_DF``). Their
#: null floor and permutation p-value are reported; ``_stderr`` is the bootstrap SD of the plug-in.
JSD_NO_INTERVAL = "no interval: plug-in JSD (positive without any effect) at the pilot's few templates"
#: Counts (no interval): calls and valid calls per presentation, matched images per pair.
COUNT_KEYS: tuple[str, ...] = (
    *(f"n_calls_{p}" for p in PRESENTATIONS),
    *(f"n_valid_{p}" for p in PRESENTATIONS),
    *(f"n_matched_{n}" for n in PAIR_NAMES),
)


@dataclass(frozen=True)
class PresentationRecord:
    """One MCQ call about one image: its template, race, gender presentation and parsed answer."""

    template: str
    occupation: str
    race: str
    presentation: str
    status: str
    choice: str | None

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"status must be one of {STATUSES}, got {self.status!r}")
        if self.presentation not in PRESENTATIONS:
            raise ValueError(f"presentation must be one of {PRESENTATIONS}, got {self.presentation!r}")
        if self.race not in RACES:
            raise ValueError(f"race must be one of {RACES}, got {self.race!r}")

    @classmethod
    def from_dict(cls, record: Mapping[str, Any]) -> "PresentationRecord":
        return cls(**{f.name: record[f.name] for f in fields(cls)})


def presentation_count_table(records: Sequence[PresentationRecord], options: str
                             ) -> tuple[list[str], list[str], dict[str, np.ndarray]]:
    """(templates, strata, counts): ``answers[t, r, p, k]`` valid answers choosing option k about the image
    of race r and presentation p in template t; ``n_calls[t, r, p]`` and ``n_valid[t, r, p]`` its calls
    (an image is present when it has a call). Races in :data:`RACES`, presentations in :data:`PRESENTATIONS`."""
    templates = sorted({r.template for r in records})
    index = {t: k for k, t in enumerate(templates)}
    occupation_of: dict[str, str] = {}
    T, R, P, K = len(templates), len(RACES), len(PRESENTATIONS), len(options)
    counts = {"answers": np.zeros((T, R, P, K)), "n_calls": np.zeros((T, R, P)), "n_valid": np.zeros((T, R, P))}
    for r in records:
        t, race, p = index[r.template], RACES.index(r.race), PRESENTATIONS.index(r.presentation)
        occupation_of.setdefault(r.template, r.occupation)
        counts["n_calls"][t, race, p] += 1
        if r.status == VALID:
            if r.choice not in options:
                raise ValueError(f"{r.template}: valid choice {r.choice!r} not among options {options!r}")
            counts["n_valid"][t, race, p] += 1
            counts["answers"][t, race, p, options.index(r.choice)] += 1
    return templates, [occupation_of[t] for t in templates], counts


def matched_cells(n_calls: np.ndarray, a: str, b: str) -> np.ndarray:
    """``(T, R)`` booleans: the cells (template, race) with an image of both presentations a and b."""
    calls = np.asarray(n_calls)
    return (calls[..., PRESENTATIONS.index(a)] > 0) & (calls[..., PRESENTATIONS.index(b)] > 0)


def per_template_counts(counts: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The per-template arrays every statistic of the module docstring is a function of (summed over
    templates, then :func:`presentation_metrics`): ``p_answers[t, p, k]``, ``p_calls[t, p]``,
    ``p_valid[t, p]`` over all images, and per pair ``pair_<a>_vs_<b>[t, 2, k]`` (answers about a, then b,
    in the matched cells only) and ``matched_<a>_vs_<b>[t]`` (matched cells)."""
    answers, n_calls = np.asarray(counts["answers"]), np.asarray(counts["n_calls"])
    out = {"p_answers": answers.sum(axis=1), "p_calls": n_calls.sum(axis=1),
           "p_valid": np.asarray(counts["n_valid"]).sum(axis=1)}
    for a, b in PRESENTATION_PAIRS:
        both = matched_cells(n_calls, a, b)[..., None]
        ia, ib = PRESENTATIONS.index(a), PRESENTATIONS.index(b)
        out[f"pair_{pair_name(a, b)}"] = np.stack([(answers[:, :, ia] * both).sum(axis=1),
                                                   (answers[:, :, ib] * both).sum(axis=1)], axis=1)
        out[f"matched_{pair_name(a, b)}"] = both[..., 0].sum(axis=1).astype(np.float64)
    return out


def _jsd_rows(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """JSD (log base 2) between the rows of two count arrays ``(..., K)``; NaN where either has no mass."""
    p, q = np.asarray(p, dtype=np.float64), np.asarray(q, dtype=np.float64)
    mp, mq = p.sum(axis=-1), q.sum(axis=-1)
    out = np.full(mp.shape, np.nan)
    ok = (mp > 0) & (mq > 0)
    if np.any(ok):
        out[ok] = jensenshannon(p[ok] / mp[ok][:, None], q[ok] / mq[ok][:, None], axis=-1, base=2.0) ** 2
    return out


def _metrics_batch(c: Mapping[str, np.ndarray], options: str, option_values: Mapping[str, float]) -> dict[str, np.ndarray]:
    """:func:`presentation_metrics` vectorised over a leading axis of B summed tables."""
    values = np.asarray([option_values[o] for o in options], dtype=np.float64)

    def mean(dist: np.ndarray) -> np.ndarray:
        mass = dist.sum(axis=-1)
        return np.where(mass > 0, dist @ values / np.where(mass > 0, mass, 1.0), np.nan)

    out: dict[str, np.ndarray] = {}
    calls, valid, answers = (np.asarray(c[k], dtype=np.float64) for k in ("p_calls", "p_valid", "p_answers"))
    for k, p in enumerate(PRESENTATIONS):
        n = calls[:, k]
        out[f"valid_rate_{p}"] = np.where(n > 0, valid[:, k] / np.where(n > 0, n, 1.0), np.nan)
        out[f"mean_answer_{p}"] = mean(answers[:, k])
        out[f"n_calls_{p}"], out[f"n_valid_{p}"] = n, valid[:, k]
    for name in PAIR_NAMES:
        pair = np.asarray(c[f"pair_{name}"], dtype=np.float64)          # (B, 2, K)
        mu_a, mu_b = mean(pair[:, 0]), mean(pair[:, 1])
        with np.errstate(invalid="ignore", divide="ignore"):
            out[f"gap_{name}"] = np.where(np.isfinite(mu_a) & np.isfinite(mu_b) & (mu_b != 0),
                                          (mu_a - mu_b) / np.where(mu_b != 0, mu_b, 1.0), np.nan)
        out[f"jsd_{name}"] = _jsd_rows(pair[:, 0], pair[:, 1])
        out[f"n_matched_{name}"] = np.asarray(c[f"matched_{name}"], dtype=np.float64)
    return out


def presentation_metrics(summed: Mapping[str, np.ndarray], options: str, option_values: Mapping[str, float]) -> dict[str, float]:
    """Every key of the module docstring from the arrays of :func:`per_template_counts` summed over
    templates. ``n_matched_<pair>`` counts matched cells (one image of each presentation per cell)."""
    batch = _metrics_batch({k: np.asarray(v, dtype=np.float64)[None] for k, v in summed.items()}, options, option_values)
    return {k: float(v[0]) for k, v in batch.items()}


def jsd_swap_null(cells: np.ndarray, n_null: int, seed: int) -> np.ndarray:
    """JSD between the two presentations under the within-cell label swap: ``cells[c, 2, k]`` holds the
    answers about presentation a then b in matched cell c; each replicate swaps every cell's two rows with
    probability 1/2 and returns the JSD of the summed rows (``n_null`` values)."""
    cells = np.asarray(cells, dtype=np.float64)
    if not n_null or cells.shape[0] == 0:
        return np.array([])
    rng = np.random.default_rng(seed)
    flips = rng.integers(0, 2, size=(n_null, cells.shape[0])).astype(np.float64)
    base_a, total = cells[:, 0].sum(axis=0), cells.sum(axis=(0, 1))
    a = base_a[None, :] + flips @ (cells[:, 1] - cells[:, 0])
    return _jsd_rows(a, total[None, :] - a)


@dataclass
class PresentationSummary:
    """Estimates, template-cluster bootstrap errors and 95 % intervals, JSD null floors, and the
    presentations present (``reason`` says why keys are NaN when the source has no third presentation)."""

    estimates: dict[str, float]
    stderr: dict[str, float] = field(default_factory=dict)
    ci_low: dict[str, float] = field(default_factory=dict)
    ci_high: dict[str, float] = field(default_factory=dict)
    null: dict[str, float] = field(default_factory=dict)
    p_null: dict[str, float] = field(default_factory=dict)
    presentations: tuple[str, ...] = ()
    reason: str = ""


def presentation_summary(records: Sequence[PresentationRecord], options: str, option_values: Mapping[str, float],
                         n_boot: int = 1000, seed: int = 1234, n_null: int = 1000,
                         null_seed: int | None = None) -> PresentationSummary:
    """Every key of the module docstring with its bootstrap interval, and the JSD null floors."""
    templates, strata, counts = presentation_count_table(records, options)
    per_template = per_template_counts(counts)
    metric = metric_with_batch(presentation_metrics, _metrics_batch, options, option_values)
    present = tuple(p for k, p in enumerate(PRESENTATIONS) if counts["n_calls"][..., k].sum() > 0)
    if not templates:
        nan = {k: float("nan") for k in (*INTERVAL_KEYS, *COUNT_KEYS)}
        return PresentationSummary(nan, dict(nan), dict(nan), dict(nan), {k: float("nan") for k in NULL_KEYS},
                                   {k: float("nan") for k in NULL_KEYS}, (), "no MCQ record")
    estimates = metric({k: v.sum(axis=0) for k, v in per_template.items()})
    replicates = bootstrap_replicates(per_template, strata, metric, n_boot, seed)
    calls = {f"valid_rate_{p}": float(counts["n_calls"][..., k].sum()) for k, p in enumerate(PRESENTATIONS)}
    stderr, low, high = template_bootstrap(per_template, strata, metric, INTERVAL_KEYS, n_boot, seed, replicates=replicates,
                                           bounds={k: (0.0, 1.0) for k in INTERVAL_KEYS if k.startswith(("valid_rate_", "jsd_"))},
                                           trials={k: n for k, n in calls.items() if n > 0})
    for key in NULL_KEYS:  # JSD_NO_INTERVAL: the plug-in JSD's bootstrap interval targets its expectation
        low[key] = high[key] = float("nan")
    null, p_null = {}, {}
    for k, (a, b) in enumerate(PRESENTATION_PAIRS):
        both = matched_cells(counts["n_calls"], a, b)
        ia, ib = PRESENTATIONS.index(a), PRESENTATIONS.index(b)
        cells = np.stack([counts["answers"][both][:, ia], counts["answers"][both][:, ib]], axis=1)
        name = f"jsd_{pair_name(a, b)}"
        res = permutation_null(estimates[name], jsd_swap_null(cells, n_null, (seed if null_seed is None else null_seed) + k))
        null[name], p_null[name] = res.null_mean, res.p_value
    reason = "" if ANDROGYNOUS in present else (f"no {ANDROGYNOUS} image in the source: the keys comparing it are "
                                                "NaN (App. C.8 needs <Race>_androgynous images)")
    return PresentationSummary(estimates, stderr, low, high, null, p_null, present, reason)
