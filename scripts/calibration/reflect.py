"""Calibration of the REFLECT statistics (issues 14, 31): seeded models with known truth at the paper's
designs, through the project's own default functions (``twoafc_summary``, ``mcq_summary``,
``portrait_permutation_tests`` / ``cluster_robust_tests``, the template bootstrap of ``salary_summary``).

Designs (REFLECT Sec. 4, App. C.3, C.6): 6 occupations x 8 source photos = 48 templates (the paper's),
6 x 2 = 12 and 3 occupations x 2 = 6 templates (the smallest design with two templates per occupation,
which the rescaled bootstrap needs), 10 groups (5 races x 2 genders). Every simulated model gives each
counterfactual image (template t, group g) a "portrait" effect on top of its group effect, and the
heterogeneous nulls add a TEMPLATE-specific gender slope (sd 0.3 / 0.6 logit, zero on average): the
average effect is 0 but some templates favour men and others women.

- 2AFC: 45 pairs x 2 orders per template; P(choose the image shown as A) = logistic(u_A - u_B + 0.3)
  (position bias), u = c x group effect + portrait effect ~ N(0, 0.5^2) (+ template gender slope);
  5 % refusals. The scale c is set (by bisection on the population truth) so that Pol takes the grid
  values 0, the detection limit (Pol .05 at 48 templates, .10-.15 at 12, .15 at 6) and a strong effect
  (the "strong" model: 13 of 45 cells beyond 0.9, several near it: Ext's truth 0.289). Truths from the
  expected retained wins of 20,000 simulated templates.
- MCQ (6 salary bins; and the 4 education levels of focus_mcq_education, :data:`MCQ_VARIANTS`): one call per
  image, answer ~ softmax(base + occupation shift + c x group shift x slope + portrait effect ~ N(0, 0.5^2) per
  option); 5 % refusals; c set so that jsd_male is 0, .03, .06 (the issue's range) or a strong 0.1 (salary), 0,
  .01, .03 or .06 (education). Truths from 20,000 simulated templates. The template slope shifts the men's
  option logits by +s/2 and the women's by -s/2 (s ~ N(0, sd^2)): a swap of a template's genders is then a draw
  of -s, so the JSD tests' null (template-level exchangeability) holds exactly and every population JSD and
  gap is 0. Until 30 Nov it shifted the men only: their answers were then a wider mixture than the women's
  (at sd 0.6 a true jsd_male of 0.0001, and 0.0002 with gap_male 0.014 for the education MCQ), a small real
  difference that the JSD tests rightly detected once each photo was answered five times (8.1 % at K = 5).
- Salary: 50 biographies per occupation; answer = base_o (1 + group + portrait + template gender slope +
  biography + noise), portrait effect sd 0 / 1 % / 3 % of salary, template gender slope sd 0 / 2 % / 5 %,
  biography sd 20 %, noise sd 10 %.
- K samples per doc (App. C.5: ``focus_2afc_<scenario>_k3``, ``focus_mcq_<variant>_k5``): the same models at 48
  templates with every call answered K times independently (doc records with ``samples``, expanded by the tasks'
  ``expand_samples``); the truths are those of one call per doc.
- Template-specific RACE effects (added 1 Dec 2026, :func:`run_race_effects`): the race tests' heterogeneous null,
  one N(0, sd^2) per template x race shared by both genders of the race (2AFC utilities and MCQ slope sd 0.3 / 0.6;
  salary 2 % / 5 % of salary), exchangeable across races within a template and zero on average. Also added then,
  each on a stream of its own: the MCQ's other JSDs (:func:`run_mcq_groups`), the salary gaps of the other races
  (:func:`run_salary_gaps`), App. C.8's men's and women's keys and JSD tests (:func:`run_presentation`'s ``keys``,
  ``test_seeds``), the salary tables' mean |Gap%| tests (:func:`run_mean_abs_tests`) and the 2AFC's per-group
  rates and retention (:func:`run_2afc_groups`).
- Added 1 Dec 2026, each on a stream of its own: ``letter_mass`` of ``focus_mcq_*_logprob`` under heterogeneous
  per-photo letter masses (:func:`run_mcq_letter_mass`), ``focus_mcq_education_k5``'s gaps, call rates and JSD tests
  (:func:`run_mcq_samples`), the compare tables' ``kept_y``, ``valid_l``, ``valid_e``, ``mean_value_diff``
  (:func:`run_compare`'s ``keys``) and the 2AFC per-group rates under the template slopes and at 12 templates
  (:func:`run_2afc_groups`' ``models`` and ``design``).
- Added 2 Dec 2026, each on a stream of its own (seed-sequence tags 30-33): ``lm-eval-bias reflect-compare``'s mirror
  table (:func:`run_mirror`: App. B.2, original vs mirrored photos of the salary MCQ; ``paired_valid``, ``agreement``,
  ``delta_gap_male`` and the paper's Wilson interval ``agreement_paper_ci_low``/``_ci_high``, role "paper"; a mirrored
  call repeats the original with a template-specific probability rho_t ~ Beta(3.5, 1.5), else is a fresh call, and
  templates differ by a scene effect and a skewed refusal propensity, :class:`MirrorModel`) and face-body table
  (:func:`run_face_body`: Table 4, ``gap_male_matched`` / ``gap_male_swapped`` with the source photo's gender g0 drawn
  per template, body and mismatch effects, :class:`FaceBodyModel`), both through ``compare.compare_tasks`` as the
  command calls it, no difference / no bias and a real difference / gender effect, 48 templates; and the
  per-occupation race gaps ``gap_<asian|latino|middle_eastern>_<occupation>`` (MCQ table) and
  ``gap_pct_<asian|latino|middle_eastern>_<occupation>`` (salary table) at :func:`run_tables`' models
  (:func:`run_tables_races`, six occupations pooled with the seed-clustered Monte Carlo SE).
- Added 2 Dec 2026 (fifth session), so that every JSD interval an MCQ task shows has rows: the paper's percentile
  interval of the salary MCQ's other JSDs (``mcq_groups_paper``), and :func:`run_mcq_groups` at
  ``focus_mcq_education`` (its five other JSDs, intervals and tests), ``focus_mcq_education_k5`` (all seven JSD
  intervals; its tests are :func:`run_mcq_samples`') and ``focus_mcq_salary_k5`` (its five other JSDs, intervals and
  tests), each on run_mcq_groups' stream tag 19 with the variant's and K's tags; then what
  tests/reflect/test_reflect_every_shown_interval_has_rows.py found shown without rows: the probability-scored
  tasks' other win rates, gaps, tests and paper intervals (:func:`run_2afc_logprob_groups`,
  :func:`run_mcq_logprob_groups`), ``invalid_rate`` of the education and K-sample tasks
  (:func:`run_invalid_rates_variants`), ``focus_mcq_salary_k5`` at 12 templates and the paper's JSD intervals at 6.

Test rows (the null models' tests) run ``TEST_SEED_FACTOR`` x the interval rows' seeds, the extra seeds
without the bootstrap (:func:`_test_seed_range`).

Row roles (``role``): "default" for what the tasks report by default, "paper" for the paper's procedures
kept by name (the percentile intervals of plug-in magnitudes ``<m>_ci_low_paper``, the unit-clustered
salary tests ``p_*_paper``), "diagnostic" for family-wise error rates without the Holm adjustment and for
tests whose null is false under the model (Pol's "more than chance" under a template-specific slope).

``python -m scripts.calibration.reflect [--quick]`` prints the table; ``--sweep-male-vs-female`` writes the
coverage sweep of ``male_vs_female:<race>`` (:func:`male_vs_female_truth_sweep`), ``--valid-rate-by-count`` prints
App. C.8's valid-rate coverage by refusal count (:func:`presentation_valid_rate_by_count`), ``--sweep-valid-rate``
writes its coverage against the refusal rate and the clustering of refusals (:func:`presentation_valid_rate_sweep`),
``--parts=<name>[,<name>...] [--seeds=N] [--seed=S] [--boot=B] [--append --label=TEXT]`` runs parts of
:data:`PARTS_2DEC` (``mirror``, ``face_body``, ``tables_races_mcq``, ``tables_races_salary``, ``mcq_groups_paper``,
``mcq_groups_education_<48|12>``, ``mcq_groups_education_k5_<48|12>``, ``mcq_groups_salary_k5_48``, ``mcq_salary_k5_12``,
``mcq_groups_paper_6``, ``twoafc_logprob_groups``, ``mcq_logprob_groups``, ``invalid_rates_variants``) and prints
their rows;
with ``--append`` it appends them to ``results/reflect.json`` (:func:`append_rows`: atomically, every earlier row
byte-identical, the wall time under ``parts_wall_s["<name> (<label>)"]``),
``--sweep-polarization``
(``--sweep-polarization-k3``: 3 samples per call) and ``--sweep-jsd`` write the coverage sweeps of Pol and the salary
MCQ's jsd_male at 48 templates (:func:`polarization_truth_sweep`, :func:`jsd_truth_sweep`).
"""

from __future__ import annotations

import math
import time
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from lm_eval_bias.reflect.schema import GROUPS, OCCUPATIONS, RACES
from scripts.calibration import covers, rate_row, softmax
from lm_eval_bias.reflect import mcq as mcq_stats
from lm_eval_bias.reflect import salary as salary_stats
from lm_eval_bias.reflect import twoafc as twoafc_stats

BENCHMARK = "reflect"
RACE_KEYS = [r.lower() for r in RACES]
IS_MAN = np.asarray([g.gender == "man" for g in GROUPS])
RACE_OF = np.asarray([RACES.index(g.race) for g in GROUPS])


def group_effects(man: float, race: dict[str, float]) -> np.ndarray:
    """Additive effect per group: ``man`` for men plus the race's effect."""
    return np.asarray([man * IS_MAN[k] + race.get(RACE_KEYS[RACE_OF[k]], 0.0) for k in range(len(GROUPS))])


def _templates(n_per_occupation: int, occupations=OCCUPATIONS):
    return [(o, f"{o}/{k}") for o in occupations for k in range(n_per_occupation)]


#: (label, occupations, photos per occupation) of the calibrated designs
DESIGNS = {48: (OCCUPATIONS, 8), 12: (OCCUPATIONS, 2), 6: (OCCUPATIONS[:3], 2)}


# --------------------------------------------------------------------------------------------------
# 2AFC
# --------------------------------------------------------------------------------------------------
POSITION_BIAS, REFUSAL = 0.3, 0.05


def _logistic(x):
    return 1.0 / (1.0 + np.exp(-x))


def simulate_2afc(rng, beta: np.ndarray, portrait_sd: float, n_per_occupation: int = 8, template_sd: float = 0.0,
                  occupations=OCCUPATIONS, n_samples: int = 1, race_sd: float = 0.0) -> list:
    """One 2AFC run: every pair of a template's ten photos in both orders. ``n_samples`` > 1 is a
    ``focus_2afc_<scenario>_k<K>`` task (App. C.5): each call answered K times independently, the doc records
    built as the task writes them (``samples``) and expanded by the tasks' own ``expand_samples``. ``race_sd`` > 0:
    template-specific race effects (:func:`_pair_probabilities`)."""
    if n_samples > 1:
        return _simulate_2afc_samples(rng, beta, portrait_sd, n_per_occupation, template_sd, occupations, n_samples,
                                      race_sd)
    calls = []
    for occupation, template, a_idx, b_idx, order, p_a in _pair_probabilities(rng, beta, portrait_sd, n_per_occupation,
                                                                              template_sd, occupations, race_sd):
        chose_a = rng.random(p_a.size) < p_a
        refused = rng.random(p_a.size) < REFUSAL
        for k in range(p_a.size):
            calls.append(twoafc_stats.TwoAFCCall(template, occupation, _pair_id(a_idx[k], b_idx[k]), order, int(a_idx[k]),
                                                 int(b_idx[k]), "refusal" if refused[k] else "valid",
                                                 None if refused[k] else ("A" if chose_a[k] else "B")))
    return calls


def _pair_id(a: int, b: int) -> str:
    """The simulated pair's id, the same for both orders: "<smaller group>-<larger group>"."""
    return f"{min(a, b)}-{max(a, b)}"


def _pair_probabilities(rng, beta, portrait_sd, n_per_occupation, template_sd, occupations, race_sd: float = 0.0):
    """Per template and order: (occupation, template, groups shown as A, as B, order, P(choose A)) of its 45 pairs,
    from its ten utilities u = group effect + portrait effect (+ the template's gender slope) (+ the template's race
    effects when ``race_sd`` > 0: one N(0, race_sd^2) per race, iid over templates and races, shared by both genders
    of the race, drawn after the others so that ``race_sd`` = 0 leaves every stream as it was). A generator: the
    caller's own draws for a template's calls follow that template's utilities on ``rng``."""
    iu, ju = np.triu_indices(10, k=1)
    for occupation, template in _templates(n_per_occupation, occupations):
        u = beta + rng.normal(0.0, portrait_sd, 10) + (rng.normal(0.0, template_sd) * IS_MAN if template_sd else 0.0)
        if race_sd:
            u = u + rng.normal(0.0, race_sd, len(RACES))[RACE_OF]
        for a_idx, b_idx, order in ((iu, ju, "AB"), (ju, iu, "BA")):
            yield occupation, template, a_idx, b_idx, order, _logistic(u[a_idx] - u[b_idx] + POSITION_BIAS)


def _simulate_2afc_samples(rng, beta, portrait_sd, n_per_occupation, template_sd, occupations, n_samples,
                           race_sd: float = 0.0) -> list:
    from lm_eval_bias.reflect.tasks import expand_samples

    docs = []
    for occupation, template, a_idx, b_idx, order, p_a in _pair_probabilities(rng, beta, portrait_sd, n_per_occupation,
                                                                              template_sd, occupations, race_sd):
        chose_a = rng.random((n_samples, p_a.size)) < p_a
        refused = rng.random((n_samples, p_a.size)) < REFUSAL
        for k in range(p_a.size):
            samples = [{"sample": j, "status": "refusal" if refused[j, k] else "valid",
                        "choice": None if refused[j, k] else ("A" if chose_a[j, k] else "B")} for j in range(n_samples)]
            docs.append({"template": template, "occupation": occupation,
                         "pair_id": _pair_id(a_idx[k], b_idx[k]), "order": order,
                         "group_a": int(a_idx[k]), "group_b": int(b_idx[k]), "samples": samples, "n_samples": n_samples})
    return [twoafc_stats.TwoAFCCall.from_dict(r) for r in expand_samples(docs)]


def truth_2afc(beta: np.ndarray, portrait_sd: float, n: int = 20_000, seed: int = 99, template_sd: float = 0.0) -> dict[str, float]:
    """Win rates, Pol and the call rates of the population: expected retained wins summed over many templates
    (retained: both orders valid and naming the same image; first position: a valid call naming image A)."""
    rng = np.random.default_rng(seed)
    u = beta[None, :] + rng.normal(0.0, portrait_sd, (n, 10))
    if template_sd:
        u = u + rng.normal(0.0, template_sd, (n, 1)) * IS_MAN[None, :]
    d = u[:, :, None] - u[:, None, :]                                     # d[t, i, j] = u_i - u_j
    # i wins a retained comparison: chosen as A in AB (i shown first) and as B in BA (j shown first)
    won = _logistic(d + POSITION_BIAS) * (1.0 - _logistic(-d + POSITION_BIAS))
    wins = won.sum(axis=0)
    np.fill_diagonal(wins, 0.0)
    out = {k: float(v[0]) for k, v in twoafc_stats.wins_metrics_batch(wins[None]).items()}
    if not np.any(beta):  # by symmetry (a zero-mean symmetric template slope too) every cell is exactly 0.5 (the
        # simulated population gives 0.498-0.5011)
        out.update({k: (0.5 if "win_rate" in k else 0.0) for k in out if "win_rate" in k or k in MAGNITUDES})
    iu, ju = np.triu_indices(10, k=1)
    valid = (1.0 - REFUSAL) ** 2
    retained = valid * (won[:, iu, ju] + won[:, ju, iu]).mean()
    out.update({"retained_rate": float(retained), "swap_inconsistent_rate": float(valid - retained),
                "refusal_rate": REFUSAL, "invalid_rate": 0.0,
                "first_position_rate": float(_logistic(d[:, iu, ju] + POSITION_BIAS).mean() / 2
                                             + _logistic(d[:, ju, iu] + POSITION_BIAS).mean() / 2)})
    return out


# --------------------------------------------------------------------------------------------------
# MCQ
# --------------------------------------------------------------------------------------------------
MCQ_BASE = np.asarray([-1.0, 0.0, 0.5, 0.5, 0.0, -1.0])
MCQ_SLOPE = np.linspace(-1.0, 1.0, 6)  # a group effect b shifts the logits by b * slope (higher bins)


@dataclass(frozen=True)
class MCQVariant:
    """One of REFLECT's MCQs as the calibration simulates it: the task's option letters and option values
    (``reflect.tasks.MCQ_OPTIONS`` / ``MCQ_OPTION_VALUES``), the base logits of the simulated model's answers and
    the slope along which a group effect moves them (towards the higher options)."""
    name: str
    options: str
    values: dict
    base: np.ndarray
    slope: np.ndarray
    label: str                                  # for the design text
    jsd_grid: tuple                             # the jsd_male truths of the biased models

    @property
    def n_options(self) -> int:
        return len(self.options)


#: salary (6 bins, Figure 9): every pre-existing MCQ row, jsd_male .03, .06 (issue 31: where the retired rule covered
#: .86-.90) and a strong .1 (a target the base effects cannot reach: they saturate at .081, the scale at the
#: bisection's bound 40, so the "jsd_male 0.10" rows' truth is .081, as their truth column says); education (4
#: levels: secondary school, bachelor, master, doctorate), most answers on a bachelor's degree, a doctorate the
#: rarest, jsd_male .01 (a small effect), .03 and .06 (.07 is this model's limit:
#: four options saturate)
MCQ_VARIANTS = {
    "salary": MCQVariant("salary", mcq_stats.SALARY_OPTIONS, mcq_stats.SALARY_BIN_MIDPOINTS_USD, MCQ_BASE, MCQ_SLOPE,
                         "6 salary bins", (0.03, 0.06, 0.1)),
    "education": MCQVariant("education", mcq_stats.EDUCATION_OPTIONS, mcq_stats.EDUCATION_CODES,
                            np.asarray([0.0, 0.5, 0.0, -1.0]), np.linspace(-1.0, 1.0, 4), "4 education levels",
                            (0.01, 0.03, 0.06)),
}


def _occupation_shift(occupation: str, n_options: int = 6) -> np.ndarray:
    """A fixed per-occupation shift of the option logits (seeded by the occupation's name)."""
    return np.random.default_rng(zlib.crc32(occupation.encode())).normal(0.0, 0.3, n_options)


def _mcq_probs(rng, beta: np.ndarray, portrait_sd: float, n_templates: int, occupation_shift: np.ndarray,
               template_sd: float = 0.0, variant: MCQVariant = MCQ_VARIANTS["salary"], race_sd: float = 0.0):
    effect = np.broadcast_to(beta[None, :], (n_templates, 10))
    if template_sd:  # the template's gender contrast s ~ N(0, template_sd^2), split +s/2 (men), -s/2 (women)
        effect = effect + rng.normal(0.0, template_sd, (n_templates, 1)) * (IS_MAN[None, :] - 0.5)
    if race_sd:  # template-specific race effects: one N(0, race_sd^2) per template x race, both genders of the race
        effect = effect + rng.normal(0.0, race_sd, (n_templates, len(RACES)))[:, RACE_OF]
    logits = (variant.base[None, None, :] + occupation_shift[:, None, :] + effect[:, :, None] * variant.slope[None, None, :]
              + rng.normal(0.0, portrait_sd, (n_templates, 10, variant.n_options)))
    z = np.exp(logits - logits.max(axis=2, keepdims=True))
    return z / z.sum(axis=2, keepdims=True)


def simulate_mcq(rng, beta: np.ndarray, portrait_sd: float, n_per_occupation: int = 8, template_sd: float = 0.0,
                 occupations=OCCUPATIONS, variant: str = "salary", n_samples: int = 1, race_sd: float = 0.0) -> list:
    """One run of the MCQ ``variant`` (:data:`MCQ_VARIANTS`): one call per counterfactual image, 5 % refusals.
    ``n_samples`` > 1 is a ``focus_mcq_<variant>_k<K>`` task (App. C.5): each photo answered K times
    independently, the doc records built as the task writes them and expanded by ``expand_samples``. ``race_sd``
    > 0: template-specific race effects on the slope (:func:`_mcq_probs`)."""
    v = MCQ_VARIANTS[variant]
    templates = _templates(n_per_occupation, occupations)
    shift = np.stack([_occupation_shift(o, v.n_options) for o, _ in templates])
    probs = _mcq_probs(rng, beta, portrait_sd, len(templates), shift, template_sd, v, race_sd)
    if n_samples > 1:
        from lm_eval_bias.reflect.tasks import expand_samples

        docs = []
        for t, (occupation, template) in enumerate(templates):
            for g in range(10):
                refused = rng.random(n_samples) < REFUSAL
                answers = rng.choice(v.n_options, size=n_samples, p=probs[t, g])
                docs.append({"template": template, "occupation": occupation, "group": g, "n_samples": n_samples,
                             "samples": [{"sample": j, "status": "refusal" if refused[j] else "valid",
                                          "choice": None if refused[j] else v.options[answers[j]]}
                                         for j in range(n_samples)]})
        return [mcq_stats.MCQRecord.from_dict(r) for r in expand_samples(docs)]
    records = []
    for t, (occupation, template) in enumerate(templates):
        for g in range(10):
            if rng.random() < REFUSAL:
                records.append(mcq_stats.MCQRecord(template, occupation, g, "refusal", None))
            else:
                records.append(mcq_stats.MCQRecord(template, occupation, g, "valid",
                                                   v.options[rng.choice(v.n_options, p=probs[t, g])]))
    return records


def truth_mcq(beta: np.ndarray, portrait_sd: float, n: int = 20_000, seed: int = 98, template_sd: float = 0.0,
              occupations=OCCUPATIONS, variant: str = "salary") -> dict[str, float]:
    """The population's MCQ metrics (expected answers of many templates). Without any group effect (``beta`` 0,
    with or without the split template slope) every JSD and gap is exactly 0; the simulated population would
    give ~1e-7."""
    v = MCQ_VARIANTS[variant]
    rng = np.random.default_rng(seed)
    occ = np.stack([_occupation_shift(o, v.n_options) for o in occupations])
    shift = occ[np.arange(n) % len(occupations)]
    expected = _mcq_probs(rng, beta, portrait_sd, n, shift, template_sd, v).sum(axis=0)     # expected answers per group
    out = mcq_stats.mcq_metrics({"answers": expected, "n_calls": 1.0, "n_valid": 1.0, "n_refusal": 0.0, "n_invalid": 0.0},
                                v.options, v.values)
    if not np.any(beta):  # by symmetry (the template slope too: s and -s equally likely, split evenly between the
        # genders, so men's and women's answer distributions are the same mixture) every JSD and gap is exactly 0
        out.update({k: 0.0 for k in out if k.startswith(("jsd_", "gap_"))})
    out.update({"valid_rate": 1.0 - REFUSAL, "refusal_rate": REFUSAL, "invalid_rate": 0.0})
    return out


# --------------------------------------------------------------------------------------------------
# Salary
# --------------------------------------------------------------------------------------------------
SALARY_BASE = {o: 50_000 + 20_000 * k for k, o in enumerate(OCCUPATIONS)}


def simulate_salary(rng, beta: np.ndarray, portrait_sd: float, n_per_occupation: int = 8, n_bios: int = 50,
                    template_sd: float = 0.0, race_sd: float = 0.0) -> list:
    """One salary run; ``race_sd`` > 0 adds template-specific race effects (one N(0, race_sd^2) share of salary per
    template x race, both genders of the race), drawn after the template's other effects (``race_sd`` = 0 leaves
    the stream as it was)."""
    records = []
    bio_effect = {o: rng.normal(0.0, 0.2, n_bios) for o in OCCUPATIONS}
    for occupation, template in _templates(n_per_occupation):
        portrait = rng.normal(0.0, portrait_sd, 10) + (rng.normal(0.0, template_sd) * IS_MAN if template_sd else 0.0)
        if race_sd:
            portrait = portrait + rng.normal(0.0, race_sd, len(RACES))[RACE_OF]
        noise = rng.normal(0.0, 0.1, (n_bios, 10))
        values = SALARY_BASE[occupation] * (1.0 + beta[None, :] + portrait[None, :] + bio_effect[occupation][:, None] + noise)
        for b in range(n_bios):
            for g in range(10):
                records.append(salary_stats.SalaryRecord(template, occupation, f"b{b}", g, "valid", float(values[b, g])))
    return records


def truth_salary(beta: np.ndarray) -> dict[str, float]:
    mu = 1.0 + beta
    white = mu[RACE_OF == RACES.index("White")].mean()
    out = {f"gap_pct_{r}": (mu[RACE_OF == k].mean() / white - 1.0) * 100 for k, r in enumerate(RACE_KEYS) if r != "white"}
    out["gap_pct_male"] = (mu[IS_MAN].mean() / mu[~IS_MAN].mean() - 1.0) * 100
    return out


# --------------------------------------------------------------------------------------------------
# Rows
# --------------------------------------------------------------------------------------------------
def _row(quantity, kind, design, dgp, truth, estimates, hits, n_seeds, n_boot, seed, note="", role="default") -> dict[str, Any]:
    return rate_row(BENCHMARK, quantity, kind, design, dgp, truth, estimates, hits, n_seeds, n_boot, seed, note=note, role=role)


def _collect(summary, keys, truth: dict, est: dict, cover: dict) -> None:
    """Append one run's estimate of each of ``keys`` to ``est[key]`` and whether its interval covers ``truth[key]``
    to ``cover[key]``."""
    for k in keys:
        est[k].append(summary.estimates[k])
        cover[k].append(covers(summary.ci_low[k], summary.ci_high[k], truth[k]))


def _collect_with_paper(summary, keys, paper_keys, truth: dict, est: dict, cover: dict) -> None:
    """:func:`_collect` of ``keys``, and for each of ``paper_keys`` its estimate (``est[m]``) and whether the paper's
    percentile interval ``<m>_ci_low_paper``/``_ci_high_paper`` covers its truth (``cover["<m>_paper"]``)."""
    _collect(summary, keys, truth, est, cover)
    d = summary.derived
    for m in paper_keys:
        est[m].append(summary.estimates[m])
        cover[f"{m}_paper"].append(covers(d[f"{m}_ci_low_paper"], d[f"{m}_ci_high_paper"], truth[m]))


def _paper_rows(keys, design: str, dgp: str, truth: dict, est: dict, cover: dict, n_seeds: int, n_boot: int, seed: int,
                note: str) -> list[dict]:
    """The "paper" rows of the paper's percentile interval ``<m>_ci_low_paper/_ci_high_paper`` of each of ``keys``
    (its coverage in ``cover["<m>_paper"]``, as :func:`_collect_with_paper` records it)."""
    return [_row(f"{m}_ci_low_paper/_ci_high_paper", "interval", design, dgp, truth[m], est[m], cover[f"{m}_paper"],
                 n_seeds, n_boot, seed, role="paper", note=note) for m in keys]


def _scale_for(truth_of, target: float, hi: float = 6.0) -> float:
    """The scale c in [0, hi] with truth_of(c) = target (bisection; truth_of increasing in c)."""
    lo = 0.0
    for _ in range(30):
        mid = (lo + hi) / 2.0
        lo, hi = (mid, hi) if truth_of(mid) < target else (lo, mid)
    return (lo + hi) / 2.0


#: the magnitudes of the 2AFC tasks: default interval = ``<m>_ci_low``/``_ci_high`` (Pol: profiled test inversion,
#: Ext: simultaneous band of the cells), the paper's percentile interval of the plug-in = ``<m>_ci_low_paper`` ("paper")
MAGNITUDES = ("polarization", "extreme_cell_rate")
BASE_2AFC = group_effects(0.3, {"white": 0.3, "black": -0.2, "latino": 0.1, "middle_eastern": -0.2})
STRONG_2AFC = group_effects(0.5, {"white": 1.0, "black": -1.0, "latino": 0.5, "middle_eastern": -0.5})
#: Pol truths at the detection limit of each design (issue 31)
POL_GRID = {48: (0.05, 0.10), 12: (0.10, 0.15), 6: (0.15,)}
#: template-specific gender slopes (sd, logit) of the heterogeneous nulls
TEMPLATE_SLOPES = (0.3, 0.6)


#: the test rows' seeds as a multiple of the interval rows' (as FACT-OR-FAIR's): 4 x 250 = 1,000 seeds put a test's
#: Monte Carlo SE at 0.69 points, so that an exact 5 % test lands in the 4-6 % band with probability 0.85 (0.53 at
#: 250 seeds, SE 1.38). The extra seeds cost little: the tests' permutations need no bootstrap.
TEST_SEED_FACTOR = 4


def _test_seed_range(seed: int, n_seeds: int, test_seeds: int):
    """(s, full) over the seeds ``seed`` .. ``seed + max(n_seeds, test_seeds) - 1``: ``full`` for the first
    ``n_seeds`` (intervals, estimates and tests), the rest for the tests only. A test's p-value does not depend
    on the bootstrap (its own permutation stream), so seed s gives the same test result either way."""
    for s in range(seed, seed + max(n_seeds, test_seeds)):
        yield s, s < seed + n_seeds


def _twoafc_scenarios(design: int) -> list[tuple[str, np.ndarray, float]]:
    zero = group_effects(0.0, {})
    out = [("no bias", zero, 0.0)]
    for target in POL_GRID[design]:
        c = _scale_for(lambda c: truth_2afc(c * BASE_2AFC, 0.5, n=4000)["polarization"], target)
        out.append((f"Pol {target:.2f}: {c:.2f} x (man +0.3, White +0.3, Black -0.2, Latino +0.1, Middle Eastern -0.2 logits)",
                    c * BASE_2AFC, 0.0))
    out.append(("strong bias (man +0.5, White +1, Black -1, Latino +0.5, Middle Eastern -0.5 logits; Ext 13/45 cells, "
                "several near 0.9)", STRONG_2AFC, 0.0))
    if design != 6:
        out += [(f"no average bias; template-specific gender slope sd {sd} logit", zero, sd) for sd in TEMPLATE_SLOPES]
    return out


#: the 2AFC keys with a design-t interval whose coverage is checked (the six win rates and the call rates)
TWOAFC_RATE_KEYS = ("retained_rate", "refusal_rate", "swap_inconsistent_rate", "first_position_rate")
WIN_RATE_KEYS = twoafc_stats.WIN_RATE_KEYS


def run_2afc(n_seeds: int, n_boot: int, designs=(48, 12, 6), seed: int = 0, test_seeds: int | None = None,
             n_samples: int = 1) -> list[dict]:
    """2AFC rows at ``designs``: interval rows over ``n_seeds`` seeds, the test rows of the null models over
    ``test_seeds`` (default :data:`TEST_SEED_FACTOR` x ``n_seeds``, the extra seeds without the bootstrap,
    which the tests do not use: :func:`_test_seed_range`). ``n_samples`` > 1: the K-sample tasks
    (``focus_2afc_<scenario>_k3``) on their own streams."""
    rows = []
    args = (n_seeds, n_boot, seed)
    test_seeds = n_seeds * TEST_SEED_FACTOR if test_seeds is None else test_seeds
    stream = () if n_samples == 1 else (n_samples,)
    for design in designs:
        occupations, per = DESIGNS[design]
        design_text = f"{design} templates ({len(occupations)} occupations x {per} photos) x 45 pairs x 2 orders"
        if n_samples > 1:
            design_text += f" x {n_samples} samples per call"
        for dgp, beta, template_sd in _twoafc_scenarios(design):
            dgp_text = f"{dgp}; portrait effect sd 0.5 logit, position bias 0.3, 5 % refusals"
            truth = truth_2afc(beta, 0.5, template_sd=template_sd)
            null = not np.any(beta)
            keys = [*WIN_RATE_KEYS, "polarization", *(TWOAFC_RATE_KEYS if null and not template_sd else ())]
            est = {k: [] for k in keys + ["polarization_null", "extreme_cell_rate", "extreme_cell_rate_null"]}
            cover = {k: [] for k in keys + [f"{m}_paper" for m in MAGNITUDES]}
            tests = {k: [] for k in (*(f"p_{k}" for k in WIN_RATE_KEYS), "polarization_p_null", "any raw", "any holm")}
            for s, full in _test_seed_range(seed, n_seeds, test_seeds if null else 0):
                rng = np.random.default_rng([s, 1, design, zlib.crc32(dgp.encode()) % 1000, *stream])
                summary = twoafc_stats.twoafc_summary(simulate_2afc(rng, beta, 0.5, per, template_sd, occupations, n_samples),
                                                      n_boot=n_boot if full else 0, seed=s, n_null=n_boot)
                d = summary.derived
                for k in keys if full else ():
                    est[k].append(summary.estimates[k])
                    cover[k].append(covers(summary.ci_low[k], summary.ci_high[k], truth[k]))
                if full:
                    est["extreme_cell_rate"].append(summary.estimates["extreme_cell_rate"])
                for m in MAGNITUDES if full else ():
                    est[f"{m}_null"].append(d[f"{m}_null"])
                    cover[f"{m}_paper"].append(covers(d[f"{m}_ci_low_paper"], d[f"{m}_ci_high_paper"], truth[m]))
                for k in tests:
                    if k.startswith("p_") or k == "polarization_p_null":
                        tests[k].append(float(d[k] < 0.05) if np.isfinite(d[k]) else np.nan)
                tests["any raw"].append(min(d[f"p_{k}"] for k in WIN_RATE_KEYS) < 0.05)
                tests["any holm"].append(min(d[f"p_{k}_holm"] for k in WIN_RATE_KEYS) < 0.05)
            for k in keys:
                note = ("profiled test inversion (mean_abs_deviation_interval)" if k == "polarization" else
                        "design-t interval: estimate ± t_df x template-bootstrap SE, df = templates - occupations")
                rows.append(_row(k, "interval", design_text, dgp_text, truth[k], est[k], cover[k], *args, note=note))
            for m in MAGNITUDES:
                rows.append(_row(f"{m}_ci_low_paper/_ci_high_paper", "interval", design_text, dgp_text, truth[m],
                                 est[m] if m in est else [], cover[f"{m}_paper"], *args, role="paper",
                                 note="the paper's percentile interval of the plug-in (targets its expectation, biased upward)"))
            if not null:
                continue
            if not template_sd:
                rows.append(_row("polarization", "null_floor", design_text, dgp_text, 0.0, est["polarization"], [], *args,
                                 note=f"plug-in Pol without bias; mean polarization_null = {np.nanmean(est['polarization_null']):.4f}"))
                rows.append(_row("extreme_cell_rate", "null_floor", design_text, dgp_text, 0.0, est["extreme_cell_rate"], [],
                                 *args, note="Ext has no interval and no test (a step function of the cells; docs/reflect.md); "
                                             f"mean extreme_cell_rate_null = {np.nanmean(est['extreme_cell_rate_null']):.4f}"))
            targs = (len(tests["any holm"]), n_boot, seed)
            for k in WIN_RATE_KEYS:
                rows.append(_row(f"p_{k}", "test", design_text, dgp_text, float("nan"), [], tests[f"p_{k}"], *targs,
                                 note="template-level relabelling (the test of the average effect)"))
            if template_sd:
                rows.append(_row("polarization_p_null", "test", design_text, dgp_text, float("nan"), [],
                                 tests["polarization_p_null"], *targs, role="diagnostic",
                                 note="null 'labels exchangeable within each template' is FALSE here (templates "
                                      "favour one gender): a power figure, not a level"))
            else:
                rows.append(_row("polarization_p_null", "test", design_text, dgp_text, float("nan"), [],
                                 tests["polarization_p_null"], *targs, note="within-template permutation of all ten labels"))
            rows.append(_row("any of 6 win-rate tests, raw p < 0.05", "test", design_text, dgp_text, float("nan"), [],
                             tests["any raw"], *targs, role="diagnostic",
                             note="family-wise error without adjustment (not a target)"))
            rows.append(_row("any of 6 win-rate tests, Holm p < 0.05", "test", design_text, dgp_text, float("nan"), [],
                             tests["any holm"], *targs, note="family-wise error with p_<key>_holm (target <= 5 %)"))
    return rows


def run_2afc_occupations(n_seeds: int, n_boot: int, seed: int = 0) -> list[dict]:
    """``male_win_rate_<occupation>`` of the analysis tables (:func:`lm_eval_bias.reflect.tables.
    twoafc_occupation_summary`): a win rate within one occupation of 8 templates, whose design-t interval
    has that occupation's 7 degrees of freedom. The simulated occupations share the model, so each seed
    gives six independent coverage checks (one per occupation); the row pools them."""
    from lm_eval_bias.reflect import tables

    occupations, per = DESIGNS[48]
    design = "one occupation of the 48-template design: 8 templates x 45 pairs x 2 orders (6 occupations pooled)"
    rows = []
    for dgp, beta in (("no bias", group_effects(0.0, {})),
                      ("gender effect man +0.5 logit, White +0.3, Black -0.2", group_effects(0.5, {"white": 0.3, "black": -0.2}))):
        truth = truth_2afc(beta, 0.5)["male_win_rate"]
        est, cover = [], []
        for s in range(seed, seed + n_seeds):
            calls = simulate_2afc(np.random.default_rng([s, 6, zlib.crc32(dgp.encode()) % 1000]), beta, 0.5, per, 0.0,
                                  occupations)
            summary = tables.twoafc_occupation_summary(calls, occupations, n_boot, s)
            for o in occupations:
                key = f"male_win_rate_{o}"
                est.append(summary.estimates[key])
                cover.append(covers(summary.ci_low[key], summary.ci_high[key], truth))
        rows.append(_row("male_win_rate_<occupation>", "interval", design,
                         f"{dgp}; portrait effect sd 0.5 logit, position bias 0.3, 5 % refusals", truth, est, cover,
                         n_seeds, n_boot, seed, note="design-t interval with the occupation's own df (7); "
                                                     f"{len(occupations)} occupations x {n_seeds} seeds pooled"))
    return rows


MCQ_BASE_EFFECT = group_effects(0.3, {"black": -0.3, "white": 0.2})


def _mcq_design_text(design: int, v: MCQVariant, n_samples: int = 1) -> str:
    occupations, per = DESIGNS[design]
    return (f"{design} templates ({len(occupations)} occupations x {per} photos) x 10 photos x "
            f"{'1 call' if n_samples == 1 else f'{n_samples} samples'}, {v.label}")


def _mcq_scenarios(design: int, variant: str = "salary") -> list[tuple[str, np.ndarray, float]]:
    """(dgp, group effects, template gender slope sd) of :func:`run_mcq`'s models at ``design``: no bias, the
    variant's jsd_male grid (scale c by bisection on the population truth) and the split template slopes."""
    occupations, _ = DESIGNS[design]
    zero = group_effects(0.0, {})
    scenarios = [("no bias", zero, 0.0)]
    for target in MCQ_VARIANTS[variant].jsd_grid:
        c = _scale_for(lambda c: truth_mcq(c * MCQ_BASE_EFFECT, 0.5, n=4000, occupations=occupations,
                                            variant=variant)["jsd_male"], target,
                       hi=40.0)
        scenarios.append((f"jsd_male {target:.2f}: {c:.2f} x (man +0.3, Black -0.3, White +0.2 on the slope towards "
                          f"higher {'bins' if variant == 'salary' else 'levels'})", c * MCQ_BASE_EFFECT, 0.0))
    scenarios += [(f"no average bias; template-specific gender slope sd {sd}, split +/- half (men/women)", zero, sd)
                  for sd in TEMPLATE_SLOPES]
    return scenarios


def run_mcq(n_seeds: int, n_boot: int, designs=(48, 12, 6), seed: int = 0, test_seeds: int | None = None,
            variant: str = "salary", n_samples: int = 1) -> list[dict]:
    """Rows of the MCQ ``variant`` (:data:`MCQ_VARIANTS`: focus_mcq_salary or focus_mcq_education) at ``designs``:
    interval rows over ``n_seeds`` seeds, the JSD tests of the null models over ``test_seeds`` (default
    :data:`TEST_SEED_FACTOR` x ``n_seeds``; :func:`_test_seed_range`). The salary variant's random streams are
    the ones its rows were always run on; the education variant's are its own, as are those of ``n_samples`` > 1
    (the K-sample tasks ``focus_mcq_<variant>_k5``: each photo answered K times)."""
    rows = []
    args = (n_seeds, n_boot, seed)
    test_seeds = n_seeds * TEST_SEED_FACTOR if test_seeds is None else test_seeds
    v = MCQ_VARIANTS[variant]
    options, values = v.options, v.values
    stream = (() if variant == "salary" else (zlib.crc32(variant.encode()) % 1000,)) + (() if n_samples == 1 else (n_samples,))
    jsd = ("jsd_male", "jsd_black")
    gaps = ("gap_male", *(f"gap_{r}" for r in RACE_KEYS if r != "white"))
    for design in designs:
        occupations, per = DESIGNS[design]
        design_text = _mcq_design_text(design, v, n_samples)
        for dgp, beta, template_sd in _mcq_scenarios(design, variant):
            dgp_text = f"{dgp}; portrait effect sd 0.5 per option logit, 5 % refusals"
            truth = truth_mcq(beta, 0.5, template_sd=template_sd, occupations=occupations, variant=variant)
            plain_null = not np.any(beta) and not template_sd
            keys = [*gaps, *jsd, *(("valid_rate", "refusal_rate") if plain_null else ())]
            est = {k: [] for k in keys + [f"{k}_null" for k in jsd]}
            cover = {k: [] for k in keys + [f"{k}_paper" for k in jsd]}
            tests = {f"{k}_p_null": [] for k in jsd}
            for s, full in _test_seed_range(seed, n_seeds, 0 if np.any(beta) else test_seeds):
                rng = np.random.default_rng([s, 2, design, zlib.crc32(dgp.encode()) % 1000, *stream])
                records = simulate_mcq(rng, beta, 0.5, per, template_sd, occupations, variant, n_samples)
                summary = mcq_stats.mcq_summary(records, options, values, n_boot=n_boot if full else 0, seed=s,
                                                n_null=n_boot, jsd_interval_keys=jsd)
                d = summary.derived
                for k in keys if full else ():
                    est[k].append(summary.estimates[k])
                    cover[k].append(covers(summary.ci_low[k], summary.ci_high[k], truth[k]))
                for k in jsd:
                    if full:
                        est[f"{k}_null"].append(d[f"{k}_null"])
                        cover[f"{k}_paper"].append(covers(d[f"{k}_ci_low_paper"], d[f"{k}_ci_high_paper"], truth[k]))
                    tests[f"{k}_p_null"].append(d[f"{k}_p_null"] < 0.05)
            for k in keys:
                note = ("parametric test inversion of the design's cells at their effective sample sizes (jsd_inversion_interval)"
                        if k.startswith("jsd") else
                        "design-t interval: estimate ± t_df x template-bootstrap SE, df = templates - occupations")
                rows.append(_row(k, "interval", design_text, dgp_text, truth[k], est[k], cover[k], *args, note=note))
            for k in jsd:
                rows.append(_row(f"{k}_ci_low_paper/_ci_high_paper", "interval", design_text, dgp_text, truth[k], est[k],
                                 cover[f"{k}_paper"], *args, role="paper", note="percentile interval of the plug-in JSD"))
            if np.any(beta):
                continue
            for k in jsd:
                if not template_sd:
                    rows.append(_row(k, "null_floor", design_text, dgp_text, 0.0, est[k], [], *args,
                                     note=f"plug-in JSD without bias; mean {k}_null = {np.nanmean(est[f'{k}_null']):.4f}"))
                rows.append(_row(f"{k}_p_null", "test", design_text, dgp_text, float("nan"), [], tests[f"{k}_p_null"],
                                 len(tests[f"{k}_p_null"]), n_boot, seed,
                                 note="template-level relabelling of the photos' gender / race labels"))
    return rows


#: invalid-answer shares of calls for the ``invalid_rate`` rows (:func:`run_invalid_rates`): rare, where a handful of
#: events decide the interval (about 2.6 / 10 invalid calls at 6 templates, 540 2AFC calls), and a common one
INVALID_GRID = (0.005, 0.02)


def with_unanswered_calls(rng, records: list, share: float, status: str = "invalid") -> list:
    """``records`` (2AFC calls, MCQ or salary records) with each valid one turned invalid (``status``, no answer:
    ``choice`` or the salary ``value`` None) with its template's propensity ``share`` x Gamma(2, 1/2) (mean
    ``share``, templates differ: an overdispersed count, as real invalid answers cluster by image). The share of
    invalid calls is then (1 - REFUSAL) x ``share`` in expectation when REFUSAL of the calls were refusals."""
    from dataclasses import replace

    templates = sorted({r.template for r in records})
    propensity = dict(zip(templates, np.clip(share * rng.gamma(2.0, 0.5, len(templates)), 0.0, 1.0)))
    draws = rng.random(len(records))
    answer = "value" if records and hasattr(records[0], "value") else "choice"
    return [replace(r, status=status, **{answer: None}) if r.status == "valid" and u < propensity[r.template] else r
            for r, u in zip(records, draws)]


def _invalid_answers_summary(rng, task: str, design: int, share: float, n_boot: int, seed: int,
                             variant: str = "salary", n_samples: int = 1):
    """The task's summary of one run of the 2AFC (``task`` "2afc") or the MCQ ``variant`` at ``design`` without bias,
    ``n_samples`` answers a call, each valid answer then turned invalid with its template's propensity around
    ``share`` (:func:`with_unanswered_calls`), drawn from ``rng``."""
    occupations, per = DESIGNS[design]
    zero = group_effects(0.0, {})
    if task == "2afc":
        calls = with_unanswered_calls(rng, simulate_2afc(rng, zero, 0.5, per, 0.0, occupations, n_samples), share)
        return twoafc_stats.twoafc_summary(calls, n_boot=n_boot, seed=seed, n_null=0)
    v = MCQ_VARIANTS[variant]
    records = with_unanswered_calls(rng, simulate_mcq(rng, zero, 0.5, per, 0.0, occupations, variant, n_samples), share)
    return mcq_stats.mcq_summary(records, v.options, v.values, n_boot=n_boot, seed=seed, n_null=0, jsd_interval_keys=())


def run_invalid_rates(n_seeds: int, n_boot: int, designs=(48, 12, 6), seed: int = 0) -> list[dict]:
    """``invalid_rate`` of the 2AFC and MCQ tasks at ``designs``, and of ``focus_salary`` at its own design (48
    templates x 10 portraits x 50 biographies, when 48 is among ``designs``; with ``valid_rate`` and
    ``refusal_rate``, which no other row checks there): the effective-size Wilson interval of every REFLECT call
    rate, at the shares :data:`INVALID_GRID` of invalid answers, no bias, 5 % refusals (the salary simulator has
    none: they are drawn here, template propensities as the invalid ones'); invalid answers drawn on their own
    stream (:func:`with_unanswered_calls`), so no other row's data change."""
    rows = []
    zero = group_effects(0.0, {})
    for design in designs:
        occupations, per = DESIGNS[design]
        for task in ("2afc", "mcq", "salary") if design == 48 else ("2afc", "mcq"):
            design_text = (f"{design} templates ({len(occupations)} occupations x {per} photos) x 45 pairs x 2 orders"
                           if task == "2afc" else
                           f"{design} templates ({len(occupations)} occupations x {per} photos) x 10 photos x 1 call, 6 salary bins"
                           if task == "mcq" else "48 templates x 10 portraits x 50 biographies (24000 answers)")
            keys = ("invalid_rate", "valid_rate", "refusal_rate") if task == "salary" else ("invalid_rate",)
            for g_index, share in enumerate(INVALID_GRID):
                dgp = (f"no bias; invalid answers {share:.1%} of valid calls (template propensity share x Gamma(2, 1/2)), "
                       "5 % refusals")
                truth = {"invalid_rate": (1.0 - REFUSAL) * share, "refusal_rate": REFUSAL,
                         "valid_rate": (1.0 - REFUSAL) * (1.0 - share)}
                est, cover = {k: [] for k in keys}, {k: [] for k in keys}
                for s in range(seed, seed + n_seeds):
                    rng = np.random.default_rng([s, 13, design, g_index, ("2afc", "mcq", "salary").index(task) + 1])
                    if task in ("2afc", "mcq"):
                        summary = _invalid_answers_summary(rng, task, design, share, n_boot, s)
                    else:
                        records = with_unanswered_calls(rng, simulate_salary(rng, zero, 0.03, per), REFUSAL, "refusal")
                        records = with_unanswered_calls(rng, records, share)
                        summary = salary_stats.salary_summary(records, n_boot=n_boot, seed=s, n_null=0)
                    _collect(summary, keys, truth, est, cover)
                for k in keys:
                    rows.append(_row(k, "interval", design_text, dgp, truth[k], est[k], cover[k], n_seeds, n_boot, seed,
                                     note="Wilson interval at the template bootstrap's effective sample size (as refusal_rate)"))
    return rows


#: the task variants whose ``invalid_rate`` :func:`run_invalid_rates` does not check: (task, variant, K, designs)
INVALID_RATE_VARIANTS = (("mcq", "education", 1, (48, 12, 6)), ("mcq", "salary", 5, (48, 12)),
                         ("mcq", "education", 5, (48, 12)), ("2afc", "", 3, (48,)))


def run_invalid_rates_variants(n_seeds: int, n_boot: int, seed: int = 0,
                               variants=INVALID_RATE_VARIANTS) -> list[dict]:
    """``invalid_rate`` of ``focus_mcq_education``, the K-sample MCQ tasks (``focus_mcq_<variant>_k5``: every answer
    of a photo a call of its own, the K answers of a photo correlated through its answer distribution) and
    ``focus_2afc_<scenario>_k3`` (added 2 Dec 2026, fifth session), as :func:`run_invalid_rates` checks the
    one-call salary MCQ and 2AFC: each valid answer turned invalid with its template's propensity (:data:`INVALID_GRID`
    x Gamma(2, 1/2)), no bias, 5 % refusals, the effective-size Wilson interval of the task. A stream of its own
    (tag 36, with the variant's and K's tags)."""
    rows = []
    for task, variant, n_samples, designs in variants:
        tags = (zlib.crc32(f"{task}/{variant}".encode()) % 1000, n_samples)
        for design in designs:
            occupations, per = DESIGNS[design]
            if task == "2afc":
                design_text = (f"{design} templates ({len(occupations)} occupations x {per} photos) x 45 pairs x 2 orders"
                               f" x {n_samples} samples per call")
            else:
                design_text = _mcq_design_text(design, MCQ_VARIANTS[variant], n_samples)
            for g_index, share in enumerate(INVALID_GRID):
                dgp = (f"no bias; invalid answers {share:.1%} of valid calls (template propensity share x Gamma(2, 1/2)), "
                       "5 % refusals")
                truth = {"invalid_rate": (1.0 - REFUSAL) * share}
                est, cover = {"invalid_rate": []}, {"invalid_rate": []}
                for s in range(seed, seed + n_seeds):
                    rng = np.random.default_rng([s, 36, design, g_index, *tags])
                    summary = _invalid_answers_summary(rng, task, design, share, n_boot, s, variant or "salary", n_samples)
                    _collect(summary, ("invalid_rate",), truth, est, cover)
                rows.append(_row("invalid_rate", "interval", design_text, dgp, truth["invalid_rate"], est["invalid_rate"],
                                 cover["invalid_rate"], n_seeds, n_boot, seed,
                                 note="Wilson interval at the template bootstrap's effective sample size (as refusal_rate)"))
    return rows


def run_salary(n_seeds: int, n_boot: int, n_per_occupation: int, n_bios: int, seed: int = 0,
               nulls: tuple[tuple[float, float], ...] = ((0.0, 0.0), (0.01, 0.0), (0.03, 0.0), (0.01, 0.02), (0.01, 0.05)),
               coverage: bool = True, coverage_seeds: int | None = None, paper_seeds: int | None = None,
               gap_keys: tuple[str, ...] = ("gap_pct_male", "gap_pct_black"), stream: tuple[int, ...] = ()) -> list[dict]:
    """Salary rows; ``nulls`` = (portrait sd, template gender slope sd) pairs, both as shares of salary, or
    (portrait sd, template gender slope sd, template race effect sd) triples (template-specific race effects,
    :func:`simulate_salary`, on streams of their own). The interval rows of ``gap_keys`` (cheap: one template
    bootstrap a seed) run ``coverage_seeds`` seeds (default ``n_seeds``); the test rows (permutation tests,
    per-occupation tests and the paper's regressions) run ``n_seeds``. ``stream``: extra entries of the interval
    rows' seed sequences (a stream of their own; () is the one the pre-existing rows were run on)."""
    from lm_eval_bias.core.bootstrap import holm, template_bootstrap

    design = (f"{6 * n_per_occupation} templates x 10 portraits x {n_bios} biographies "
              f"({6 * n_per_occupation * 10 * n_bios} answers)")
    rows = []
    args = (n_seeds, n_boot, seed)
    for null in nulls:
        sd, template_sd, race_sd = (*null, 0.0)[:3]
        dgp = (f"no average bias; per-portrait effect sd {sd:.0%} of salary, template-specific gender effect sd "
               f"{template_sd:.0%}, " + (f"template-specific race effect sd {race_sd:.0%} (iid per template x race, both "
                                         "genders), " if race_sd else "") + "biography sd 20 %, noise sd 10 %")
        hits: dict[str, list] = {}
        for s in range(seed, seed + n_seeds):
            key = [s, 3, int(sd * 1000), int(template_sd * 1000), *((int(round(race_sd * 1000)),) if race_sd else ())]
            records = simulate_salary(np.random.default_rng(key), np.zeros(10), sd, n_per_occupation, n_bios, template_sd,
                                      race_sd)
            p = dict(salary_stats.portrait_permutation_tests(records, n_boot, s))
            if s < seed + (n_seeds if paper_seeds is None else paper_seeds):  # the paper's regressions: ~1.3 s a seed
                p.update(salary_stats.cluster_robust_tests(records))
            for k, v in p.items():
                hits.setdefault(k, []).append(v < 0.05)
            per_occ = {}
            for o in OCCUPATIONS:
                sub = [r for r in records if r.occupation == o]
                for k, v in salary_stats.portrait_permutation_tests(sub, n_boot, s).items():
                    per_occ[f"{o}|{k}"] = v
            hits.setdefault("any raw", []).append(min(per_occ.values()) < 0.05)
            hits.setdefault("any holm", []).append(min(holm(per_occ).values()) < 0.05)
        for k in (*salary_stats.TEST_KEYS, *(k for k in salary_stats.PAPER_TEST_KEYS if k in hits)):
            note = "paper's unit-clustered test (App. C.6)" if k.endswith("_paper") else \
                "template-level relabelling of portrait labels (interaction: each template's own Freedman-Lane residuals, rescaled)"
            paper = k.endswith("_paper")
            rows.append(_row(k, "test", design, dgp, float("nan"), [], hits[k],
                             len(hits[k]), n_boot, seed, note=note, role="paper" if paper else "default"))
        rows.append(_row("any of 18 per-occupation tests, raw p < 0.05", "test", design, dgp, float("nan"), [],
                         hits["any raw"], *args, role="diagnostic",
                         note="family-wise error without adjustment (not a target; the policy is Holm)"))
        rows.append(_row("any of 18 per-occupation tests, Holm p < 0.05", "test", design, dgp, float("nan"), [],
                         hits["any holm"], *args, note="family-wise error with the _holm columns (target <= 5 %)"))
    if not coverage:
        return rows
    for label, beta in (("no bias", np.zeros(10)), ("bias (man +2 %, Black -3 %, Asian +1 %)",
                                                     group_effects(0.02, {"black": -0.03, "asian": 0.01}))):
        truth = truth_salary(beta)
        dgp = f"{label}; per-portrait effect sd 3 %, biography sd 20 %, noise sd 10 %"
        est, cover = {k: [] for k in gap_keys}, {k: [] for k in gap_keys}
        for s in range(seed, seed + (coverage_seeds or n_seeds)):
            records = simulate_salary(np.random.default_rng([s, 4, int(np.any(beta)), *stream]), beta, 0.03, n_per_occupation,
                                      n_bios)
            templates, strata, _, counts = salary_stats.salary_count_table(records)
            estimates = salary_stats.salary_metrics({k: v.sum(axis=0) for k, v in counts.items()})
            _, low, high = template_bootstrap(counts, strata, salary_stats.salary_metrics, list(est), n_boot, s)
            for k in est:
                est[k].append(estimates[k])
                cover[k].append(covers(low[k], high[k], truth[k]))
        for k in est:
            rows.append(_row(k, "interval", design, dgp, truth[k], est[k], cover[k], coverage_seeds or n_seeds, n_boot, seed,
                             note="design-t interval (salary_summary's): estimate ± t_df x template-bootstrap SE, df = templates - occupations"))
    return rows


def simulate_2afc_logprob(rng, beta: np.ndarray, portrait_sd: float, n_per_occupation: int = 8, template_sd: float = 0.0,
                          occupations=OCCUPATIONS) -> list:
    """The 2AFC model scored by probability (``focus_2afc_*_logprob``): each call's p_A itself (no sampled
    choice, no refusal)."""
    scores = []
    for occupation, template, a_idx, b_idx, order, p_a in _pair_probabilities(rng, beta, portrait_sd, n_per_occupation,
                                                                              template_sd, occupations):
        for k in range(p_a.size):
            pair = _pair_id(a_idx[k], b_idx[k])
            scores.append(twoafc_stats.TwoAFCScore(template, occupation, pair, order, int(a_idx[k]), int(b_idx[k]),
                                                   float(p_a[k])))
    return scores


def truth_2afc_logprob(beta: np.ndarray, portrait_sd: float, n: int = 20_000, seed: int = 99,
                       template_sd: float = 0.0) -> dict[str, float]:
    """Win rates and Pol of the population scored by probability: expected swap-averaged preferences
    (P(i | AB) + P(i | BA)) / 2 summed over many templates; exactly parity without any group effect."""
    rng = np.random.default_rng(seed)
    u = beta[None, :] + rng.normal(0.0, portrait_sd, (n, 10))
    if template_sd:
        u = u + rng.normal(0.0, template_sd, (n, 1)) * IS_MAN[None, :]
    d = u[:, :, None] - u[:, None, :]
    pref = ((_logistic(d + POSITION_BIAS) + 1.0 - _logistic(-d + POSITION_BIAS)) / 2.0).sum(axis=0)
    np.fill_diagonal(pref, 0.0)
    out = {k: float(v[0]) for k, v in twoafc_stats.wins_metrics_batch(pref[None]).items()}
    if not np.any(beta):
        out.update({k: (0.5 if "win_rate" in k else 0.0) for k in out if "win_rate" in k or k in MAGNITUDES})
    return out


def _twoafc_logprob_scenarios() -> list[tuple[str, np.ndarray, float]]:
    """(dgp, group effects, template gender slope sd) of the probability-scored 2AFC's models
    (:func:`run_2afc_logprob`, :func:`run_2afc_logprob_groups`)."""
    return [("no bias", group_effects(0.0, {}), 0.0),
            ("0.40 x (man +0.3, White +0.3, Black -0.2, Latino +0.1, Middle Eastern -0.2 logits)", 0.40 * BASE_2AFC, 0.0),
            ("strong bias (man +0.5, White +1, Black -1, Latino +0.5, Middle Eastern -0.5 logits)", STRONG_2AFC, 0.0),
            ("no average bias; template-specific gender slope sd 0.6 logit", group_effects(0.0, {}), 0.6)]


def run_2afc_logprob(n_seeds: int, n_boot: int, seed: int = 0, test_seeds: int | None = None) -> list[dict]:
    """``focus_2afc_*_logprob`` at the paper's design: the win rates' design-t intervals and tests, and Pol's
    inversion, on expected wins (swap-averaged letter probabilities); the tests of the null models over
    ``test_seeds`` (default :data:`TEST_SEED_FACTOR` x ``n_seeds``; :func:`_test_seed_range`)."""
    rows = []
    test_seeds = n_seeds * TEST_SEED_FACTOR if test_seeds is None else test_seeds
    occupations, per = DESIGNS[48]
    design_text = "48 templates (6 occupations x 8 photos) x 45 pairs x 2 orders scored by letter probability"
    keys = ("male_win_rate", "win_rate_white", "polarization")
    for dgp, beta, template_sd in _twoafc_logprob_scenarios():
        dgp_text = f"{dgp}; portrait effect sd 0.5 logit, position bias 0.3"
        truth = truth_2afc_logprob(beta, 0.5, template_sd=template_sd)
        est, cover = {k: [] for k in keys}, {k: [] for k in keys}
        tests = {"p_male_win_rate": [], "p_win_rate_white": []}
        for s, full in _test_seed_range(seed, n_seeds, 0 if np.any(beta) else test_seeds):
            scores = simulate_2afc_logprob(np.random.default_rng([s, 12, zlib.crc32(dgp.encode()) % 1000]), beta, 0.5, per,
                                           template_sd)
            summary = twoafc_stats.twoafc_logprob_summary(scores, n_boot=n_boot if full else 0, seed=s, n_null=n_boot)
            for k in keys if full else ():
                est[k].append(summary.estimates[k])
                cover[k].append(covers(summary.ci_low[k], summary.ci_high[k], truth[k]))
            for k in tests:
                tests[k].append(float(summary.derived[k] < 0.05))
        for k in keys:
            note = ("profiled test inversion (mean_abs_deviation_interval)" if k == "polarization" else
                    "design-t interval: estimate ± t_df x template-bootstrap SE, df = templates - occupations")
            rows.append(_row(k, "interval", design_text, dgp_text, truth[k], est[k], cover[k], n_seeds, n_boot, seed,
                             note=note))
        if not np.any(beta):
            for k in tests:
                rows.append(_row(k, "test", design_text, dgp_text, float("nan"), [], tests[k], len(tests[k]), n_boot, seed,
                                 note="template-level relabelling (the test of the average effect)"))
    return rows


#: the call rates of the probability-scored 2AFC (``focus_2afc_*_logprob``) with an interval in its results
TWOAFC_LOGPROB_RATE_KEYS = ("retained_rate", "first_position_rate")


def truth_2afc_logprob_rates(beta: np.ndarray, portrait_sd: float, n: int = 20_000, seed: int = 99,
                             template_sd: float = 0.0) -> dict[str, float]:
    """The population's ``retained_rate`` (mean over pairs of the probability that one answer sampled from each
    order picks the same image, p_A^AB (1 - p_A^BA) + (1 - p_A^AB) p_A^BA) and ``first_position_rate`` (mean p_A
    over all calls) of the model scored by probability, over many templates (no refusals)."""
    rng = np.random.default_rng(seed)
    u = beta[None, :] + rng.normal(0.0, portrait_sd, (n, 10))
    if template_sd:
        u = u + rng.normal(0.0, template_sd, (n, 1)) * IS_MAN[None, :]
    d = u[:, :, None] - u[:, None, :]
    iu, ju = np.triu_indices(10, k=1)
    first_ab, first_ba = _logistic(d[:, iu, ju] + POSITION_BIAS), _logistic(d[:, ju, iu] + POSITION_BIAS)
    return {"retained_rate": float((first_ab * (1.0 - first_ba) + (1.0 - first_ab) * first_ba).mean()),
            "first_position_rate": float((first_ab.mean() + first_ba.mean()) / 2.0)}


def run_2afc_logprob_rates(n_seeds: int, n_boot: int, seed: int = 0) -> list[dict]:
    """The intervals of ``retained_rate`` and ``first_position_rate`` of ``focus_2afc_*_logprob`` (design-t, as the
    task computes them: means of per-pair / per-call probabilities, no counted trials) at three of
    :func:`run_2afc_logprob`'s models (no bias, the strong model, the template gender slope), 48 and 12 templates, on a stream of their own (added 1 Dec 2026: the last REFLECT interval
    without a row)."""
    rows = []
    scenarios = [("no bias", group_effects(0.0, {}), 0.0),
                 ("strong bias (man +0.5, White +1, Black -1, Latino +0.5, Middle Eastern -0.5 logits)", STRONG_2AFC, 0.0),
                 ("no average bias; template-specific gender slope sd 0.6 logit", group_effects(0.0, {}), 0.6)]
    for design in (48, 12):
        occupations, per = DESIGNS[design]
        design_text = (f"{design} templates ({len(occupations)} occupations x {per} photos) x 45 pairs x 2 orders scored by "
                       "letter probability")
        for dgp, beta, template_sd in scenarios:
            dgp_text = f"{dgp}; portrait effect sd 0.5 logit, position bias 0.3"
            truth = truth_2afc_logprob_rates(beta, 0.5, template_sd=template_sd)
            est, cover = {k: [] for k in TWOAFC_LOGPROB_RATE_KEYS}, {k: [] for k in TWOAFC_LOGPROB_RATE_KEYS}
            for s in range(seed, seed + n_seeds):
                scores = simulate_2afc_logprob(np.random.default_rng([s, 27, design, zlib.crc32(dgp.encode()) % 1000]),
                                               beta, 0.5, per, template_sd, occupations)
                _collect(twoafc_stats.twoafc_logprob_summary(scores, n_boot=n_boot, seed=s, n_null=0),
                         TWOAFC_LOGPROB_RATE_KEYS, truth, est, cover)
            for k in TWOAFC_LOGPROB_RATE_KEYS:
                rows.append(_row(k, "interval", design_text, dgp_text, truth[k], est[k], cover[k], n_seeds, n_boot, seed,
                                 note="design-t interval: estimate ± t_df x template-bootstrap SE, df = templates - occupations"))
    return rows


def simulate_mcq_logprob(rng, beta: np.ndarray, portrait_sd: float, n_per_occupation: int = 8, template_sd: float = 0.0,
                         occupations=OCCUPATIONS) -> list:
    """The MCQ model scored by probability (``focus_mcq_*_logprob``): each photo's option distribution itself,
    no sampled answer and no refusal."""
    templates = _templates(n_per_occupation, occupations)
    probs = _mcq_probs(rng, beta, portrait_sd, len(templates), np.stack([_occupation_shift(o) for o, _ in templates]), template_sd)
    return [mcq_stats.MCQScore(template, occupation, g, tuple(probs[t, g] / probs[t, g].sum()))
            for t, (occupation, template) in enumerate(templates) for g in range(10)]


#: the win rates of ``focus_2afc_*_logprob`` that :func:`run_2afc_logprob` does not check
TWOAFC_LOGPROB_OTHER_WIN_RATES = ("win_rate_asian", "win_rate_black", "win_rate_latino", "win_rate_middle_eastern")


def run_2afc_logprob_groups(n_seeds: int, n_boot: int, seed: int = 0, test_seeds: int | None = None) -> list[dict]:
    """The rest of what ``focus_2afc_*_logprob`` shows with an interval or a test (added 2 Dec 2026, fifth session):
    the other four win rates' design-t intervals and their tests ``p_win_rate_<race>`` (and Pol's
    ``polarization_p_null``) under the null models, ``swap_inconsistent_rate`` (1 - ``retained_rate``, whose
    interval is the complement of retained_rate's), and the paper's percentile interval of Pol and Ext (role
    "paper"), at :func:`run_2afc_logprob`'s models; tests over ``test_seeds`` (default :data:`TEST_SEED_FACTOR` x
    ``n_seeds``). A stream of its own (tag 34)."""
    rows = []
    test_seeds = n_seeds * TEST_SEED_FACTOR if test_seeds is None else test_seeds
    occupations, per = DESIGNS[48]
    design_text = "48 templates (6 occupations x 8 photos) x 45 pairs x 2 orders scored by letter probability"
    keys = (*TWOAFC_LOGPROB_OTHER_WIN_RATES, "swap_inconsistent_rate")
    test_keys = (*(f"p_{k}" for k in TWOAFC_LOGPROB_OTHER_WIN_RATES), "polarization_p_null")
    for dgp, beta, template_sd in _twoafc_logprob_scenarios():
        dgp_text = f"{dgp}; portrait effect sd 0.5 logit, position bias 0.3"
        truth = dict(truth_2afc_logprob(beta, 0.5, template_sd=template_sd))
        truth["swap_inconsistent_rate"] = 1.0 - truth_2afc_logprob_rates(beta, 0.5, template_sd=template_sd)["retained_rate"]
        null = not np.any(beta)
        est = {k: [] for k in (*keys, *MAGNITUDES)}
        cover = {k: [] for k in (*keys, *(f"{m}_paper" for m in MAGNITUDES))}
        tests = {k: [] for k in test_keys}
        for s, full in _test_seed_range(seed, n_seeds, test_seeds if null else 0):
            scores = simulate_2afc_logprob(np.random.default_rng([s, 34, zlib.crc32(dgp.encode()) % 1000]), beta, 0.5,
                                           per, template_sd)
            summary = twoafc_stats.twoafc_logprob_summary(scores, n_boot=n_boot if full else 0, seed=s, n_null=n_boot)
            d = summary.derived
            if full:
                _collect_with_paper(summary, keys, MAGNITUDES, truth, est, cover)
            for k in tests if null else ():
                tests[k].append(float(d[k] < 0.05) if np.isfinite(d[k]) else np.nan)
        for k in keys:
            note = ("Wilson interval at the template bootstrap's effective sample size (the complement of retained_rate's)"
                    if k == "swap_inconsistent_rate" else
                    "design-t interval: estimate ± t_df x template-bootstrap SE, df = templates - occupations")
            rows.append(_row(k, "interval", design_text, dgp_text, truth[k], est[k], cover[k], n_seeds, n_boot, seed,
                             note=note))
        rows += _paper_rows(MAGNITUDES, design_text, dgp_text, truth, est, cover, n_seeds, n_boot, seed,
                            "the paper's percentile interval of the plug-in (targets its expectation, biased upward)")
        if not null:
            continue
        targs = (len(tests[test_keys[0]]), n_boot, seed)
        for k in test_keys[:-1]:
            rows.append(_row(k, "test", design_text, dgp_text, float("nan"), [], tests[k], *targs,
                             note="template-level relabelling (the test of the average effect)"))
        rows.append(_row("polarization_p_null", "test", design_text, dgp_text, float("nan"), [],
                         tests["polarization_p_null"], *targs, role="diagnostic" if template_sd else "default",
                         note="null 'labels exchangeable within each template' is FALSE here (templates favour one "
                              "gender): a power figure, not a level" if template_sd else
                              "within-template permutation of all ten labels"))
    return rows


def _mcq_logprob_scenarios() -> list[tuple[str, np.ndarray, float]]:
    """(dgp, group effects, template gender slope sd) of the probability-scored MCQ's models (:func:`run_mcq_logprob`,
    :func:`run_mcq_logprob_groups`)."""
    zero = group_effects(0.0, {})
    scenarios = [("no bias", zero, 0.0)]
    for target in (0.03, 0.1):
        c = _scale_for(lambda c: truth_mcq(c * MCQ_BASE_EFFECT, 0.5, n=4000)["jsd_male"], target, hi=40.0)
        scenarios.append((f"jsd_male {target:.2f}: {c:.2f} x (man +0.3, Black -0.3, White +0.2 on the slope)",
                          c * MCQ_BASE_EFFECT, 0.0))
    scenarios.append(("no average bias; template-specific gender slope sd 0.6, split +/- half (men/women)", zero, 0.6))
    return scenarios


#: the gaps of ``focus_mcq_*_logprob`` that :func:`run_mcq_logprob` does not check
MCQ_LOGPROB_OTHER_GAPS = ("gap_asian", "gap_latino", "gap_middle_eastern")


def run_mcq_logprob_groups(n_seeds: int, n_boot: int, seed: int = 0, test_seeds: int | None = None) -> list[dict]:
    """The rest of what ``focus_mcq_*_logprob`` shows with an interval or a test (added 2 Dec 2026, fifth session):
    the other three race gaps' design-t intervals, the paper's percentile interval of all seven JSDs (role "paper";
    the task shows no other JSD interval, :data:`lm_eval_bias.reflect.mcq.LOGPROB_JSD_NO_INTERVAL`) and the JSD
    tests ``jsd_<group>_p_null`` under the null models over ``test_seeds`` (default :data:`TEST_SEED_FACTOR` x
    ``n_seeds``), at :func:`run_mcq_logprob`'s models. A stream of its own (tag 35)."""
    rows = []
    test_seeds = n_seeds * TEST_SEED_FACTOR if test_seeds is None else test_seeds
    options, values = mcq_stats.SALARY_OPTIONS, mcq_stats.SALARY_BIN_MIDPOINTS_USD
    occupations, per = DESIGNS[48]
    design_text = "48 templates (6 occupations x 8 photos) x 10 photos scored by letter probability, 6 salary bins"
    jsd = mcq_stats.JSD_KEYS
    for dgp, beta, template_sd in _mcq_logprob_scenarios():
        dgp_text = f"{dgp}; portrait effect sd 0.5 per option logit"
        truth = truth_mcq(beta, 0.5, template_sd=template_sd)
        null = not np.any(beta)
        est = {k: [] for k in (*MCQ_LOGPROB_OTHER_GAPS, *jsd)}
        cover = {k: [] for k in (*MCQ_LOGPROB_OTHER_GAPS, *(f"{k}_paper" for k in jsd))}
        tests = {f"{k}_p_null": [] for k in jsd}
        for s, full in _test_seed_range(seed, n_seeds, test_seeds if null else 0):
            scores = simulate_mcq_logprob(np.random.default_rng([s, 35, zlib.crc32(dgp.encode()) % 1000]), beta, 0.5,
                                          per, template_sd)
            summary = mcq_stats.mcq_logprob_summary(scores, options, values, n_boot=n_boot if full else 0, seed=s,
                                                    n_null=n_boot if null else 0)
            if full:
                _collect_with_paper(summary, MCQ_LOGPROB_OTHER_GAPS, jsd, truth, est, cover)
            for k in tests if null else ():
                tests[k].append(summary.derived[k] < 0.05)
        for k in MCQ_LOGPROB_OTHER_GAPS:
            rows.append(_row(k, "interval", design_text, dgp_text, truth[k], est[k], cover[k], n_seeds, n_boot, seed,
                             note="design-t interval: estimate ± t_df x template-bootstrap SE, df = templates - occupations"))
        rows += _paper_rows(jsd, design_text, dgp_text, truth, est, cover, n_seeds, n_boot, seed,
                            "percentile interval of the plug-in JSD")
        if not null:
            continue
        for k in tests:
            rows.append(_row(k, "test", design_text, dgp_text, float("nan"), [], tests[k], len(tests[k]), n_boot, seed,
                             note="template-level relabelling of the photos' gender / race labels"))
    return rows


def run_mcq_logprob(n_seeds: int, n_boot: int, seed: int = 0) -> list[dict]:
    """``focus_mcq_*_logprob`` at the paper's design: gaps (design-t) and JSDs (parametric inversion: the
    "counts" are sums of probability vectors, so the design effect is what carries the between-photo
    variance) without bias, at jsd_male .03 and .10, and under a template-specific gender slope."""
    rows = []
    options, values = mcq_stats.SALARY_OPTIONS, mcq_stats.SALARY_BIN_MIDPOINTS_USD
    jsd = ("jsd_male", "jsd_black")
    keys = ("gap_male", "gap_black", *jsd)
    occupations, per = DESIGNS[48]
    design_text = "48 templates (6 occupations x 8 photos) x 10 photos scored by letter probability, 6 salary bins"
    for dgp, beta, template_sd in _mcq_logprob_scenarios():
        dgp_text = f"{dgp}; portrait effect sd 0.5 per option logit"
        truth = truth_mcq(beta, 0.5, template_sd=template_sd)
        est, cover = {k: [] for k in keys}, {k: [] for k in keys}
        for s in range(seed, seed + n_seeds):
            scores = simulate_mcq_logprob(np.random.default_rng([s, 10, zlib.crc32(dgp.encode()) % 1000]), beta, 0.5, per,
                                          template_sd)
            summary = mcq_stats.mcq_logprob_summary(scores, options, values, n_boot=n_boot, seed=s, n_null=0,
                                                    jsd_interval_keys=jsd)
            for k in keys:
                est[k].append(summary.estimates[k])
                cover[k].append(covers(summary.ci_low[k], summary.ci_high[k], truth[k]))
        for k in keys:
            note = ("parametric test inversion on summed probabilities, NOT shown by the task "
                    "(mcq.LOGPROB_JSD_NO_INTERVAL): this row is why" if k.startswith("jsd") else
                    "design-t interval: estimate ± t_df x template-bootstrap SE, df = templates - occupations")
            rows.append(_row(k, "interval", design_text, dgp_text, truth[k], est[k], cover[k], n_seeds, n_boot, seed,
                             note=note, role="diagnostic" if k.startswith("jsd") else "default"))
    return rows


#: App. C.8's pilot design: 6 occupations x 2 templates x 3 races x 3 presentations
PILOT_RACES = ("Asian", "Black", "White")


def _presentation_probs(rng, effects: dict[str, float], n_templates: int, shift: np.ndarray) -> np.ndarray:
    """(templates, race, presentation, option) answer distributions of the pilot model: the MCQ base + the
    occupation's shift + a presentation effect on the slope + a portrait effect (sd 0.5 per option logit)."""
    from lm_eval_bias.reflect.schema import PRESENTATIONS

    effect = np.asarray([effects.get(p, 0.0) for p in PRESENTATIONS])
    logits = (MCQ_BASE[None, None, None, :] + shift[:, None, None, :] + effect[None, None, :, None] * MCQ_SLOPE
              + rng.normal(0.0, 0.5, (n_templates, len(PILOT_RACES), len(PRESENTATIONS), 6)))
    z = np.exp(logits - logits.max(axis=3, keepdims=True))
    return z / z.sum(axis=3, keepdims=True)


def _pilot_records(rng, effects: dict[str, float], refusal_shape: float | None = None, refusal: float = REFUSAL) -> list:
    """One simulated run of App. C.8's pilot (:data:`PILOT_RACES`, 12 templates, one call per image): a
    ``PresentationRecord`` per image, refused with probability ``refusal`` independently of everything else,
    else answered from :func:`_presentation_probs`. With ``refusal_shape`` k, each template has its own refusal
    probability ``refusal`` x Gamma(k, 1/k) (mean ``refusal``, variance ``refusal``^2 / k; capped at 1), shared by
    its 9 images (refusals cluster by photo), drawn after the answer probabilities so that the
    independent runs (k None) keep their stream."""
    from lm_eval_bias.reflect import presentation as pres
    from lm_eval_bias.reflect.schema import PRESENTATIONS

    occupations, per = DESIGNS[12]
    options = mcq_stats.SALARY_OPTIONS
    templates = _templates(per, occupations)
    probs = _presentation_probs(rng, effects, len(templates),
                                np.stack([_occupation_shift(o) for o, _ in templates]))
    propensity = (np.full(len(templates), refusal) if refusal_shape is None else
                  np.minimum(1.0, refusal * rng.gamma(refusal_shape, 1.0 / refusal_shape, len(templates))))
    records = []
    for t, (occupation, template) in enumerate(templates):
        for r, race in enumerate(PILOT_RACES):
            for k, p in enumerate(PRESENTATIONS):
                refused = rng.random() < propensity[t]
                records.append(pres.PresentationRecord(template, occupation, race, p, "refusal" if refused else "valid",
                                                       None if refused else options[rng.choice(6, p=probs[t, r, k])]))
    return records


#: App. C.8's interval keys of :func:`run_presentation`: the androgynous ones (its rows until 1 Dec) and those of the
#: men's and women's images (added 1 Dec 2026, on a stream of their own)
PRESENTATION_KEYS = ("valid_rate_androgynous", "mean_answer_androgynous", "gap_man_vs_androgynous",
                     "gap_woman_vs_androgynous")
PRESENTATION_KEYS_MAN_WOMAN = ("valid_rate_man", "valid_rate_woman", "mean_answer_man", "mean_answer_woman",
                               "gap_man_vs_woman")


def run_presentation(n_seeds: int, n_boot: int, seed: int = 0, keys: tuple[str, ...] = PRESENTATION_KEYS,
                     stream: tuple[int, ...] = (), test_seeds: int = 0) -> list[dict]:
    """App. C.8 (androgynous pilot, :mod:`lm_eval_bias.reflect.presentation`): the design-t intervals of the
    valid rate, mean answer and relative gaps between presentations (``keys``) at the pilot's 12 templates (6 df).
    The JSDs between presentations have no interval (``presentation.JSD_NO_INTERVAL``); with ``test_seeds`` > 0
    their tests ``jsd_<a>_vs_<b>_p_null`` (within-cell swap of the two presentations) are checked under "no
    presentation effect" over ``test_seeds`` seeds (those past ``n_seeds`` without the bootstrap).
    ``stream``: extra entries of the seed sequences (() is the stream of the androgynous rows)."""
    from lm_eval_bias.reflect import presentation as pres
    from lm_eval_bias.reflect.schema import PRESENTATIONS

    occupations, per = DESIGNS[12]
    options, values = mcq_stats.SALARY_OPTIONS, mcq_stats.SALARY_BIN_MIDPOINTS_USD
    v = np.asarray([values[o] for o in options])
    occ = {o: _occupation_shift(o) for o in OCCUPATIONS}
    design = "App. C.8 pilot: 12 templates (6 occupations x 2) x 3 races x 3 presentations, 1 call per image"
    rows = []
    for dgp, effects in (("no presentation effect", {}),
                         ("man +0.5, androgynous -0.5 on the slope toward higher bins", {"man": 0.5, "androgynous": -0.5})):
        pop = _presentation_probs(np.random.default_rng(97), effects, 20_000,
                                  np.stack([occ[occupations[t % len(occupations)]] for t in range(20_000)]))
        mean = {p: float((pop[:, :, k] @ v).mean()) for k, p in enumerate(PRESENTATIONS)}
        truth = {"valid_rate_androgynous": 1.0 - REFUSAL, "mean_answer_androgynous": mean["androgynous"],
                 "gap_man_vs_androgynous": mean["man"] / mean["androgynous"] - 1.0,
                 "gap_woman_vs_androgynous": mean["woman"] / mean["androgynous"] - 1.0,
                 "valid_rate_man": 1.0 - REFUSAL, "valid_rate_woman": 1.0 - REFUSAL, "mean_answer_man": mean["man"],
                 "mean_answer_woman": mean["woman"], "gap_man_vs_woman": mean["man"] / mean["woman"] - 1.0}
        if not effects:
            truth.update({k: 0.0 for k in truth if k.startswith("gap_")})
        est, cover = {k: [] for k in keys}, {k: [] for k in keys}
        tests = {f"{k}_p_null": [] for k in pres.NULL_KEYS}
        for s, full in _test_seed_range(seed, n_seeds, 0 if effects else test_seeds):
            rng = np.random.default_rng([s, 13, zlib.crc32(dgp.encode()) % 1000, *stream])
            records = _pilot_records(rng, effects)
            summary = pres.presentation_summary(records, options, values, n_boot=n_boot if full else 0, seed=s,
                                                n_null=n_boot if test_seeds and not effects else 0)
            for k in keys if full else ():
                est[k].append(summary.estimates[k])
                cover[k].append(covers(summary.ci_low[k], summary.ci_high[k], truth[k]))
            if test_seeds and not effects:
                for k in pres.NULL_KEYS:
                    tests[f"{k}_p_null"].append(float(summary.p_null[k] < 0.05) if np.isfinite(summary.p_null[k]) else np.nan)
        dgp_text = f"{dgp}; portrait effect sd 0.5 per option logit, 5 % refusals"
        for k in keys:
            rows.append(_row(k, "interval", design, dgp_text, truth[k],
                             est[k], cover[k], n_seeds, n_boot, seed,
                             note="design-t interval: estimate ± t_df x template-bootstrap SE, df = 12 - 6"))
        for k in tests if test_seeds and not effects else ():
            rows.append(_row(k, "test", design, dgp_text, float("nan"), [], tests[k], len(tests[k]), n_boot, seed,
                             note="within-cell swap of the two presentations' answers (presentation.jsd_swap_null)"))
    return rows


def presentation_valid_rate_by_count(n_seeds: int, n_boot: int = 1000, seed: int = 72_000) -> dict:
    """App. C.8's ``valid_rate_<presentation>`` intervals by their number of refusals: ``n_seeds`` runs of the pilot
    without a presentation effect (:func:`_pilot_records`, a stream of its own) through ``presentation_summary``; every
    presentation's 36 calls are refused independently with probability :data:`REFUSAL`, so its refusals X are
    Binomial(36, 0.05) exactly. Returns ``{"coverage", "n_intervals", "by_count": {X: (runs, coverage,
    median n*)}}``: the coverage of the truth 0.95 among the runs with X refusals, and the median effective size
    n* = p (1 - p) / SE^2 of their template-bootstrap SE (the interval is Wilson's at n* times Korn & Graubard's
    factor, :func:`lm_eval_bias.core.bootstrap.effective_size_wilson_interval`)."""
    from lm_eval_bias.reflect import presentation as pres
    from lm_eval_bias.reflect.schema import PRESENTATIONS

    truth = 1.0 - REFUSAL
    runs: dict[int, list[tuple[bool, float]]] = {}
    for s in range(seed, seed + n_seeds):
        records = _pilot_records(np.random.default_rng([s, 13, 31]), {})
        summary = pres.presentation_summary(records, mcq_stats.SALARY_OPTIONS, mcq_stats.SALARY_BIN_MIDPOINTS_USD,
                                            n_boot=n_boot, seed=s, n_null=0)
        for p in PRESENTATIONS:
            key = f"valid_rate_{p}"
            refusals = sum(r.presentation == p and r.status != "valid" for r in records)
            share, se = summary.estimates[key], summary.stderr[key]
            n_star = share * (1.0 - share) / se ** 2 if se > 0 and 0.0 < share < 1.0 else math.nan
            runs.setdefault(refusals, []).append((covers(summary.ci_low[key], summary.ci_high[key], truth), n_star))
    every = [c for v in runs.values() for c, _ in v]
    return {"coverage": float(np.mean(every)), "n_intervals": len(every),
            "by_count": {x: (len(v), float(np.mean([c for c, _ in v])),
                             float(np.nanmedian([n for _, n in v])) if any(np.isfinite(n) for _, n in v) else math.nan)
                         for x, v in sorted(runs.items())}}


#: the valid-rate sweep's mean refusal rates (:func:`presentation_valid_rate_sweep`; the table's model refuses 5 %)
VALID_RATE_REFUSALS = (0.01, 0.02, 0.03, 0.05, 0.08, 0.12, 0.2)
#: its template refusal heterogeneity: None (independent refusals, the table's model) and Gamma shapes k, a
#: moderate, a strong and an extreme clustering of refusals by photo (at k = 0.02 a few templates are refused
#: nearly always, the rest never: a presentation's 3 calls a template cap its design effect at 3)
VALID_RATE_SHAPES = (None, 0.5, 0.1, 0.02)


def pilot_refusal_truth(shape: float | None, refusal: float = REFUSAL) -> float:
    """The expected refusal rate of :func:`_pilot_records` at ``shape``: E[min(1, r G)] with r = ``refusal`` and
    G ~ Gamma(k, 1/k) (:func:`scripts.calibration.capped_gamma_mean`)."""
    from scripts.calibration import capped_gamma_mean

    return capped_gamma_mean(refusal, shape)


def _valid_rate_sweep_points(refusal: float, shapes, n_seeds: int, n_boot: int, seed: int) -> list[dict]:
    """The points of :func:`presentation_valid_rate_sweep` at one mean refusal rate, one a shape."""
    from lm_eval_bias.core.bootstrap import effective_size_wilson_interval
    from lm_eval_bias.reflect import presentation as pres
    from lm_eval_bias.reflect.schema import PRESENTATIONS
    from scripts.calibration import seed_clustered_mc_error

    points = []
    for index, shape in enumerate(shapes):
        truth = 1.0 - pilot_refusal_truth(shape, refusal)
        hits = {"coverage": [], "coverage_no_factor": [], "coverage_count": []}
        counts = []
        for s in range(seed, seed + n_seeds):
            records = _pilot_records(np.random.default_rng([s, 13, 47, index, round(1000 * refusal)]), {},
                                     refusal_shape=shape, refusal=refusal)
            summary = pres.presentation_summary(records, mcq_stats.SALARY_OPTIONS, mcq_stats.SALARY_BIN_MIDPOINTS_USD,
                                                n_boot=n_boot, seed=s, n_null=0)
            run = {name: [] for name in hits}
            for p in PRESENTATIONS:
                key = f"valid_rate_{p}"
                trials = sum(r.presentation == p for r in records)
                counts.append(sum(r.presentation == p and r.status != "valid" for r in records))
                share, se = summary.estimates[key], summary.stderr[key]
                run["coverage"].append(covers(summary.ci_low[key], summary.ci_high[key], truth))
                run["coverage_no_factor"].append(covers(*effective_size_wilson_interval(share, se, trials, trials - 1),
                                                        truth))
                run["coverage_count"].append(covers(*effective_size_wilson_interval(share, 0.0, trials, trials - 1),
                                                    truth))
            for name in hits:
                hits[name].append(run[name])
        rate = 1.0 - truth
        points.append({"refusal": refusal, "refusal_shape": shape,
                       "clustering": "independent" if shape is None else f"by template, k = {shape:g}",
                       "truth": truth, "design_effect": float(np.var(counts, ddof=1) / (36 * rate * (1.0 - rate))),
                       **{name: float(np.mean(v)) for name, v in hits.items()},
                       "mc_error": seed_clustered_mc_error(hits["coverage"]),
                       "intervals": sum(len(v) for v in hits["coverage"]), "n_seeds": n_seeds, "seed": seed})
    return points


def presentation_valid_rate_sweep(n_seeds: int, refusals=VALID_RATE_REFUSALS, shapes=VALID_RATE_SHAPES,
                                  n_boot: int = 1000, seed: int = 73_000, processes: int = 1) -> list[dict]:
    """App. C.8's ``valid_rate_<presentation>`` (36 calls: 12 templates x 3 races, 6 df) against its truth and
    with refusals clustered by photo: ``n_seeds`` runs of the pilot without a presentation effect at each mean
    refusal rate of ``refusals`` and template refusal heterogeneity of ``shapes`` (:func:`_pilot_records`'
    ``refusal`` and ``refusal_shape``; a stream of its own), the three presentations' intervals pooled. Per point:
    ``coverage`` of the task's interval (Wilson at the template bootstrap's effective size with Korn & Graubard's
    factor (t_35 / t_6)^2 = 0.688, :func:`lm_eval_bias.core.bootstrap.effective_size_wilson_interval`),
    ``coverage_no_factor`` (the same n* without the factor) and ``coverage_count`` (Wilson's interval of the count,
    n = 36, clustering ignored), each of the truth 1 - :func:`pilot_refusal_truth`; ``design_effect``, the variance
    of a presentation's refusal count over the runs against the binomial's 36 r (1 - r) (1 at independence);
    ``mc_error`` the seed-clustered Monte Carlo SE of ``coverage`` (a run's three presentations share their
    templates). Made to say what the factor buys: at the table's 5 % without clustering it is conservative
    (97.8 % by :func:`presentation_valid_rate_by_count`), where Wilson's interval of the count itself covers 97 %."""
    per_rate = _in_parallel(_valid_rate_sweep_points, refusals, processes, shapes=shapes, n_seeds=n_seeds,
                            n_boot=n_boot, seed=seed)
    return [point for points in per_rate for point in points]


#: the compare keys of :func:`run_compare`'s rows until 1 Dec (stream ()), and the others of its two tables that have an
#: interval (added 1 Dec 2026, on a stream of their own): ``spearman`` and ``jsd_shift`` have none
#: (``tables.MAGNITUDE_NO_INTERVAL``)
COMPARE_KEYS = ("kept_x", "flip_rate", "agreement", "mean_option_diff")
COMPARE_OTHER_KEYS = ("kept_y", "valid_l", "valid_e", "mean_value_diff")


def run_compare(n_seeds: int, n_boot: int, seed: int = 0, keys: tuple[str, ...] = COMPARE_KEYS,
                stream: tuple[int, ...] = ()) -> list[dict]:
    """``lm-eval-bias reflect-compare`` (:mod:`lm_eval_bias.reflect.tables`), the paired template bootstrap's
    design-t intervals of the keys that are not plug-in magnitudes, at the paper's 48 templates. Framing
    (Table 7): two framings of the same pairs and portraits, X with position bias 0.3, Y with 0.3 (same) or
    0.8 and the gender effect halved (different): ``kept_x``, ``flip_rate`` (and ``kept_y``). Format (Table 10):
    the same photos answered letter-only (L) and with an explanation (E: the same model, or its logits shifted by
    0.3 x slope toward higher bins): ``agreement``, ``mean_option_diff`` (and ``valid_l``, ``valid_e``: 95 % of
    the photos, and ``mean_value_diff`` in USD of the bins' midpoints). Answers are independent given the
    portrait; truths from 20,000 simulated templates (ratios of expectations, as the estimators). ``keys``: the
    rows made (:data:`COMPARE_KEYS` by default, :data:`COMPARE_OTHER_KEYS`; a table none of whose keys is asked
    for is not simulated); ``stream``: extra entries of the seed sequences (() is the stream of the rows until
    1 Dec)."""
    from dataclasses import asdict

    from lm_eval_bias.reflect import tables

    occupations, per = DESIGNS[48]
    rows = []
    iu, ju = np.triu_indices(10, k=1)
    base = 0.4 * BASE_2AFC
    framing = () if not set(keys) & {"kept_x", "kept_y", "flip_rate"} else (
        ("framings alike (position bias 0.3 both)", POSITION_BIAS, 1.0),
        ("framing Y: position bias 0.8, group effects halved", 0.8, 0.5))
    for dgp, pos_y, scale_y in framing:
        pop = np.random.default_rng(95)
        u = base[None] + pop.normal(0.0, 0.5, (20_000, 10))
        uy = scale_y * base[None] + (u - base[None])
        def won(v, pos):        # P(i retained as the winner of pair (i, j)), both calls valid
            d = v[:, :, None] - v[:, None, :]
            return (1 - REFUSAL) ** 2 * _logistic(d + pos) * (1.0 - _logistic(-d + pos))
        wx, wy = won(u, POSITION_BIAS), won(uy, pos_y)
        kept = (wx[:, iu, ju] + wx[:, ju, iu]).mean()
        both = (wx[:, iu, ju] + wx[:, ju, iu]) * (wy[:, iu, ju] + wy[:, ju, iu])
        flips = wx[:, iu, ju] * wy[:, ju, iu] + wx[:, ju, iu] * wy[:, iu, ju]
        truth = {"kept_x": float(kept), "flip_rate": float(flips.sum() / both.sum()),
                 "kept_y": float((wy[:, iu, ju] + wy[:, ju, iu]).mean())}
        truth = {k: v for k, v in truth.items() if k in keys}
        est, cover = {k: [] for k in truth}, {k: [] for k in truth}
        for s in range(seed, seed + n_seeds):
            rng = np.random.default_rng([s, 14, zlib.crc32(dgp.encode()) % 1000, *stream])
            calls_x, calls_y = [], []
            for occupation, template in _templates(per, occupations):
                ux = base + rng.normal(0.0, 0.5, 10)
                for calls, v, pos in ((calls_x, ux, POSITION_BIAS), (calls_y, scale_y * base + (ux - base), pos_y)):
                    for a_idx, b_idx, order in ((iu, ju, "AB"), (ju, iu, "BA")):
                        p_a = _logistic(v[a_idx] - v[b_idx] + pos)
                        chose_a, refused = rng.random(p_a.size) < p_a, rng.random(p_a.size) < REFUSAL
                        for k in range(p_a.size):
                            pair = _pair_id(a_idx[k], b_idx[k])
                            calls.append(twoafc_stats.TwoAFCCall(template, occupation, pair, order, int(a_idx[k]),
                                                                 int(b_idx[k]), "refusal" if refused[k] else "valid",
                                                                 None if refused[k] else ("A" if chose_a[k] else "B")))
            summary = tables.framing_summary(calls_x, calls_y, n_boot, s)
            for k in truth:
                est[k].append(summary.estimates[k])
                cover[k].append(covers(summary.ci_low[k], summary.ci_high[k], truth[k]))
        for k in truth:
            rows.append(_row(k, "interval", "reflect-compare framing: 48 templates x 45 pairs x 2 orders, two framings",
                             f"{dgp}; portrait effect sd 0.5 logit (shared), 5 % refusals", truth[k], est[k], cover[k],
                             n_seeds, n_boot, seed, note="paired template bootstrap, design-t (df = 42)"))
    options, values = mcq_stats.SALARY_OPTIONS, mcq_stats.SALARY_BIN_MIDPOINTS_USD
    occ = {o: _occupation_shift(o) for o in OCCUPATIONS}
    beta = 6.43 * MCQ_BASE_EFFECT
    value = np.asarray([values[o] for o in options])
    formats = () if not set(keys) & {"agreement", "mean_option_diff", "valid_l", "valid_e", "mean_value_diff"} else (
        ("E answers like L", 0.0), ("E shifted by 0.3 x slope toward higher bins", 0.3))
    for dgp, shift_e in formats:
        pop = np.random.default_rng(94)
        probs_l = _mcq_probs(pop, beta, 0.5, 20_000, np.stack([occ[occupations[t % 6]] for t in range(20_000)]))
        logits_e = np.log(probs_l) + shift_e * MCQ_SLOPE
        probs_e = np.exp(logits_e) / np.exp(logits_e).sum(axis=2, keepdims=True)
        index = np.arange(6)
        truth = {"agreement": float((probs_l * probs_e).sum(axis=2).mean()),
                 "mean_option_diff": float((probs_e @ index).mean() - (probs_l @ index).mean()),
                 "valid_l": 1.0 - REFUSAL, "valid_e": 1.0 - REFUSAL,
                 "mean_value_diff": float((probs_e @ value).mean() - (probs_l @ value).mean())}
        truth = {k: v for k, v in truth.items() if k in keys}
        est, cover = {k: [] for k in truth}, {k: [] for k in truth}
        for s in range(seed, seed + n_seeds):
            rng = np.random.default_rng([s, 15, zlib.crc32(dgp.encode()) % 1000, *stream])
            templates = _templates(per, occupations)
            pl = _mcq_probs(rng, beta, 0.5, len(templates), np.stack([occ[o] for o, _ in templates]))
            le = np.log(pl) + shift_e * MCQ_SLOPE
            pe = np.exp(le) / np.exp(le).sum(axis=2, keepdims=True)
            records = {"l": [], "e": []}
            for t, (occupation, template) in enumerate(templates):
                for g in range(10):
                    for name, p in (("l", pl), ("e", pe)):
                        refused = rng.random() < REFUSAL
                        records[name].append(asdict(mcq_stats.MCQRecord(
                            template, occupation, g, "refusal" if refused else "valid",
                            None if refused else options[rng.choice(6, p=p[t, g])])))
            summary = tables.format_summary(records["l"], records["e"], options, values, n_boot, s)
            for k in truth:
                est[k].append(summary.estimates[k])
                cover[k].append(covers(summary.ci_low[k], summary.ci_high[k], truth[k]))
        for k in truth:
            rows.append(_row(k, "interval", "reflect-compare format: 48 templates x 10 photos, letter-only vs explained MCQ",
                             f"{dgp}; MCQ model jsd_male .03, portrait effect sd 0.5 per option logit, 5 % refusals",
                             truth[k], est[k], cover[k], n_seeds, n_boot, seed,
                             note="paired template bootstrap, design-t (df = 42)"))
    return rows


def run_tables(n_seeds: int, n_boot: int, seed: int = 0, n_bios: int = 50) -> list[dict]:
    """The analysis tables' per-occupation intervals and the salary magnitudes (:mod:`lm_eval_bias.reflect.tables`):
    ``gap_male_<occupation>`` / ``gap_black_<occupation>`` (MCQ, design-t with the occupation's 7 df),
    ``jsd_male_<occupation>`` (the parametric JSD inversion within one occupation),
    ``gap_pct_male_<occupation>`` / ``gap_pct_black_<occupation>`` (salary, likewise) -- the six occupations of a
    seed pooled into one row, as in :func:`run_2afc_occupations` -- and the plug-in ``mean_abs_gap_pct_male`` /
    ``mean_abs_gap_pct_black`` without any gap (no interval: ``tables.MEAN_ABS_NO_INTERVAL``)."""
    from dataclasses import asdict

    from lm_eval_bias.reflect import tables

    occupations, per = DESIGNS[48]
    options, values = mcq_stats.SALARY_OPTIONS, mcq_stats.SALARY_BIN_MIDPOINTS_USD
    rows = []
    design = "one occupation of the 48-template design (8 templates), 6 occupations pooled"
    for dgp, beta in (("no bias", group_effects(0.0, {})),
                      ("MCQ effect 6.43 x (man +0.3, Black -0.3, White +0.2 on the slope)", 6.43 * MCQ_BASE_EFFECT)):
        truths = {o: truth_mcq(beta, 0.5, occupations=[o]) for o in occupations}
        est, cover = {k: [] for k in ("gap_male", "gap_black", "jsd_male")}, {k: [] for k in ("gap_male", "gap_black", "jsd_male")}
        for s in range(seed, seed + n_seeds):
            records = simulate_mcq(np.random.default_rng([s, 8, zlib.crc32(dgp.encode()) % 1000]), beta, 0.5, per)
            summary = tables.mcq_occupation_summary([asdict(r) for r in records], options, values, occupations, n_boot, s)
            for o in occupations:
                for k in est:
                    est[k].append(summary.estimates[f"{k}_{o}"])
                    cover[k].append(covers(summary.ci_low[f"{k}_{o}"], summary.ci_high[f"{k}_{o}"], truths[o][k]))
        for k in est:
            method = ("parametric test inversion (jsd_inversion_interval) within the occupation (7 df)" if k == "jsd_male"
                      else "design-t interval with the occupation's own df (7)")
            rows.append(_row(f"{k}_<occupation>", "interval", design + " x 10 photos x 1 call (MCQ)",
                             f"{dgp}; portrait effect sd 0.5 per option logit, 5 % refusals",
                             float(np.mean([truths[o][k] for o in occupations])), est[k], cover[k], n_seeds, n_boot, seed,
                             note=f"{method}; truth per occupation; {len(occupations)} occupations x {n_seeds} seeds pooled"))
    for label, beta in (("no bias", np.zeros(10)), ("bias (man +2 %, Black -3 %, Asian +1 %)",
                                                     group_effects(0.02, {"black": -0.03, "asian": 0.01}))):
        truth = truth_salary(beta)
        dgp = f"{label}; per-portrait effect sd 3 %, biography sd 20 %, noise sd 10 %"
        keys = ("gap_pct_male", "gap_pct_black")
        est = {k: [] for k in (*keys, *(f"mean_abs_{k}" for k in keys))}
        cover = {k: [] for k in est}
        for s in range(seed, seed + n_seeds):
            records = simulate_salary(np.random.default_rng([s, 9, int(np.any(beta))]), beta, 0.03, per, n_bios)
            summary = tables.salary_table_summary([asdict(r) for r in records], n_boot, s, 0)
            for k in keys:
                for o in occupations:
                    est[k].append(summary.estimates[f"{k}_{o}"])
                    cover[k].append(covers(summary.ci_low[f"{k}_{o}"], summary.ci_high[f"{k}_{o}"], truth[k]))
                m = f"mean_abs_{k}"
                est[m].append(summary.estimates[m])
                cover[m].append(covers(summary.ci_low[m], summary.ci_high[m], abs(truth[k])))
        salary_design = f"48 templates x 10 portraits x {n_bios} biographies"
        for k in keys:
            rows.append(_row(f"{k}_<occupation>", "interval", f"{design} x 10 portraits x {n_bios} biographies (salary)", dgp,
                             truth[k], est[k], cover[k], n_seeds, n_boot, seed,
                             note=f"design-t interval with the occupation's own df (7); {len(occupations)} occupations x "
                                  f"{n_seeds} seeds pooled"))
            if not np.any(beta):  # no interval (tables.MEAN_ABS_NO_INTERVAL): what it shows without any gap
                rows.append(_row(f"mean_abs_{k}", "null_floor", salary_design, dgp, 0.0, est[f"mean_abs_{k}"], [], n_seeds,
                                 n_boot, seed, note="mean over the 6 occupations of |Gap%| without any gap; no interval "
                                                    "(the profiled inversion covered 89-93 %)"))
    return rows


# --------------------------------------------------------------------------------------------------
# Added 1 Dec 2026: template-specific race effects, the other JSD groups and salary gaps, the salary tables'
# mean |Gap%| tests, and the 2AFC's per-group rates (Fig. 4d-f, retention), each on a stream of its own
# --------------------------------------------------------------------------------------------------
#: template-specific race effects (sd, logit; salary: share of salary) of the race tests' heterogeneous nulls: one
#: N(0, sd^2) per template x race, shared by both genders of the race (exchangeable across races within a template)
RACE_EFFECT_SDS = (0.3, 0.6)
SALARY_RACE_EFFECT_SDS = (0.02, 0.05)


def run_race_effects(n_seeds: int, n_boot: int, designs=(48, 12), seed: int = 0, test_seeds: int | None = None,
                     salary: bool = True) -> list[dict]:
    """The race tests under their heterogeneous null: every template has its own race effects (iid N(0, sd^2)
    per template x race, sd :data:`RACE_EFFECT_SDS`, the same for both genders of a race), zero on average, so that
    each template's race effects are exchangeable across races -- the null of the 2AFC's ``p_win_rate_<race>`` (and,
    with no gender effect, of ``p_male_win_rate``; the Holm family of six), of the MCQ's ``jsd_<group>_p_null``
    and of salary ``p_race``, ``p_gender``, ``p_race_x_gender`` (race effects :data:`SALARY_RACE_EFFECT_SDS` of
    salary, portrait sd 1 %; 48 templates). Test rows only, over ``test_seeds`` seeds (default
    :data:`TEST_SEED_FACTOR` x ``n_seeds``), without the bootstrap (the tests do not use it); their own streams.
    ``polarization_p_null`` (all ten labels exchangeable within a template) is false here: a diagnostic row."""
    rows = []
    test_seeds = n_seeds * TEST_SEED_FACTOR if test_seeds is None else test_seeds
    zero = group_effects(0.0, {})
    v = MCQ_VARIANTS["salary"]
    for design in designs:
        occupations, per = DESIGNS[design]
        design_text = f"{design} templates ({len(occupations)} occupations x {per} photos) x 45 pairs x 2 orders"
        for sd in RACE_EFFECT_SDS:
            dgp = f"no average bias; template-specific race effects sd {sd} logit (iid per template x race, both genders)"
            dgp_text = f"{dgp}; portrait effect sd 0.5 logit, position bias 0.3, 5 % refusals"
            tests = {k: [] for k in (*(f"p_{k}" for k in WIN_RATE_KEYS), "polarization_p_null", "any raw", "any holm")}
            for s in range(seed, seed + test_seeds):
                rng = np.random.default_rng([s, 16, design, zlib.crc32(dgp.encode()) % 1000])
                d = twoafc_stats.twoafc_summary(simulate_2afc(rng, zero, 0.5, per, 0.0, occupations, race_sd=sd),
                                                n_boot=0, seed=s, n_null=n_boot).derived
                for k in tests:
                    if k.startswith("p_") or k == "polarization_p_null":
                        tests[k].append(float(d[k] < 0.05) if np.isfinite(d[k]) else np.nan)
                tests["any raw"].append(min(d[f"p_{k}"] for k in WIN_RATE_KEYS) < 0.05)
                tests["any holm"].append(min(d[f"p_{k}_holm"] for k in WIN_RATE_KEYS) < 0.05)
            targs = (test_seeds, n_boot, seed)
            for k in WIN_RATE_KEYS:
                rows.append(_row(f"p_{k}", "test", design_text, dgp_text, float("nan"), [], tests[f"p_{k}"], *targs,
                                 note="template-level relabelling (the test of the average effect)"))
            rows.append(_row("polarization_p_null", "test", design_text, dgp_text, float("nan"), [],
                             tests["polarization_p_null"], *targs, role="diagnostic",
                             note="null 'labels exchangeable within each template' is FALSE here (templates favour "
                                  "some races): a power figure, not a level"))
            rows.append(_row("any of 6 win-rate tests, raw p < 0.05", "test", design_text, dgp_text, float("nan"), [],
                             tests["any raw"], *targs, role="diagnostic",
                             note="family-wise error without adjustment (not a target)"))
            rows.append(_row("any of 6 win-rate tests, Holm p < 0.05", "test", design_text, dgp_text, float("nan"), [],
                             tests["any holm"], *targs, note="family-wise error with p_<key>_holm (target <= 5 %)"))
        design_text = _mcq_design_text(design, v)
        for sd in RACE_EFFECT_SDS:
            dgp = (f"no average bias; template-specific race effects sd {sd} on the slope (iid per template x race, "
                   "both genders)")
            dgp_text = f"{dgp}; portrait effect sd 0.5 per option logit, 5 % refusals"
            tests = {f"{k}_p_null": [] for k in mcq_stats.JSD_KEYS}
            for s in range(seed, seed + test_seeds):
                rng = np.random.default_rng([s, 17, design, zlib.crc32(dgp.encode()) % 1000])
                records = simulate_mcq(rng, zero, 0.5, per, 0.0, occupations, race_sd=sd)
                d = mcq_stats.mcq_summary(records, v.options, v.values, n_boot=0, seed=s, n_null=n_boot,
                                          jsd_interval_keys=()).derived
                for k in tests:
                    tests[k].append(d[k] < 0.05)
            for k in tests:
                rows.append(_row(k, "test", design_text, dgp_text, float("nan"), [], tests[k], test_seeds, n_boot, seed,
                                 note="template-level relabelling of the photos' gender / race labels"))
    if salary and 48 in designs:
        rows += run_salary(test_seeds, n_boot, 8, 50, seed=seed, nulls=tuple((0.01, 0.0, sd) for sd in SALARY_RACE_EFFECT_SDS),
                           coverage=False, paper_seeds=0)
    return rows


#: the JSDs whose intervals and tests :func:`run_mcq` does not check (it checks jsd_male and jsd_black)
MCQ_OTHER_JSD_KEYS = ("jsd_female", "jsd_asian", "jsd_latino", "jsd_middle_eastern", "jsd_white")


def run_mcq_groups(n_seeds: int, n_boot: int, designs=(48, 12), seed: int = 0, test_seeds: int | None = None,
                   keys: tuple[str, ...] = MCQ_OTHER_JSD_KEYS, models: tuple[str, ...] | None = None,
                   only_paper: bool = False, variant: str = "salary", n_samples: int = 1,
                   with_tests: bool = True) -> list[dict]:
    """The MCQ's other JSDs (``keys``) of ``variant`` (:data:`MCQ_VARIANTS`) with ``n_samples`` answers a photo
    (``focus_mcq_<variant>_k<K>`` when K > 1): their intervals (parametric inversion, as :func:`run_mcq`'s) at
    :func:`run_mcq`'s models of the variant (no bias, its jsd_male grid, the split gender slopes) over ``n_seeds``
    seeds, their tests ``jsd_<group>_p_null`` under the null models over ``test_seeds`` (default
    :data:`TEST_SEED_FACTOR` x ``n_seeds``; none without ``with_tests``: :func:`run_mcq_samples` has the K-sample
    education task's), and the paper's percentile interval of the plug-in (``jsd_<group>_ci_low_paper``/
    ``_ci_high_paper``, role "paper", as :func:`run_mcq`'s for jsd_male and jsd_black); a stream of their own (tag
    19; the salary variant with one call on the stream its rows were first run on, the others with the variant's
    and K's tags as :func:`run_mcq`). ``models``: only the models whose dgp starts with one of these (all by
    default; a model's rows do not depend on the others). ``only_paper``: the "paper" rows alone, without the
    inversion and the relabelling tests (the part ``mcq_groups_paper``, 2 Dec 2026: the same seeds, records and
    bootstrap replicates, so the same rows as a full run's, at a 30th of its cost)."""
    rows = []
    with_tests = with_tests and not only_paper
    test_seeds = 0 if not with_tests else n_seeds * TEST_SEED_FACTOR if test_seeds is None else test_seeds
    v = MCQ_VARIANTS[variant]
    stream = (() if variant == "salary" else (zlib.crc32(variant.encode()) % 1000,)) + (() if n_samples == 1 else (n_samples,))
    for design in designs:
        occupations, per = DESIGNS[design]
        design_text = _mcq_design_text(design, v, n_samples)
        for dgp, beta, template_sd in _mcq_scenarios(design, variant):
            if models is not None and not dgp.startswith(tuple(models)):
                continue
            dgp_text = f"{dgp}; portrait effect sd 0.5 per option logit, 5 % refusals"
            truth = truth_mcq(beta, 0.5, template_sd=template_sd, occupations=occupations, variant=variant)
            est, cover = {k: [] for k in keys}, {k: [] for k in keys + tuple(f"{k}_paper" for k in keys)}
            tests = {f"{k}_p_null": [] for k in keys}
            for s, full in _test_seed_range(seed, n_seeds, 0 if np.any(beta) else test_seeds):
                rng = np.random.default_rng([s, 19, design, zlib.crc32(dgp.encode()) % 1000, *stream])
                records = simulate_mcq(rng, beta, 0.5, per, template_sd, occupations, variant, n_samples)
                # the bootstrap replicates (hence the paper's interval) depend on seed s and n_boot alone, not on
                # n_null or the inversion: only_paper reproduces a full run's paper rows
                summary = mcq_stats.mcq_summary(records, v.options, v.values, n_boot=n_boot if full else 0, seed=s,
                                                n_null=0 if only_paper else n_boot,  # the inversion's boundary p
                                                jsd_interval_keys=keys if full and not only_paper else ())
                d = summary.derived
                for k in keys:
                    if full:
                        est[k].append(summary.estimates[k])
                        cover[k].append(covers(summary.ci_low[k], summary.ci_high[k], truth[k]))
                        cover[f"{k}_paper"].append(covers(d[f"{k}_ci_low_paper"], d[f"{k}_ci_high_paper"], truth[k]))
                    if with_tests:
                        tests[f"{k}_p_null"].append(d[f"{k}_p_null"] < 0.05)
            rows += _paper_rows(keys, design_text, dgp_text, truth, est, cover, n_seeds, n_boot, seed,
                                "percentile interval of the plug-in JSD")
            if only_paper:
                continue
            for k in keys:
                rows.append(_row(k, "interval", design_text, dgp_text, truth[k], est[k], cover[k], n_seeds, n_boot, seed,
                                 note="parametric test inversion of the design's cells at their effective sample sizes "
                                      "(jsd_inversion_interval)"))
            if np.any(beta) or not with_tests:
                continue
            for k in tests:
                rows.append(_row(k, "test", design_text, dgp_text, float("nan"), [], tests[k], len(tests[k]), n_boot, seed,
                                 note="template-level relabelling of the photos' gender / race labels"))
    return rows


#: the salary gaps whose intervals :func:`run_salary` does not check by default
SALARY_OTHER_GAP_KEYS = ("gap_pct_asian", "gap_pct_latino", "gap_pct_middle_eastern")


def run_salary_gaps(n_seeds: int, n_boot: int, designs=(48, 12), seed: int = 0, n_bios: int = 50) -> list[dict]:
    """``gap_pct_asian``, ``gap_pct_latino``, ``gap_pct_middle_eastern`` (:data:`SALARY_OTHER_GAP_KEYS`) at
    :func:`run_salary`'s two models (no bias; man +2 %, Black -3 %, Asian +1 %) and designs of 8 and 2 templates per
    occupation, on streams of their own (:func:`run_salary`'s ``stream``)."""
    rows = []
    for design in designs:
        rows += run_salary(n_seeds, n_boot, DESIGNS[design][1], n_bios, seed=seed, nulls=(), coverage=True,
                           gap_keys=SALARY_OTHER_GAP_KEYS, stream=(20, design))
    return rows


def run_mean_abs_tests(n_seeds: int, n_boot: int, seed: int = 0, portrait_sds=(0.0, 0.03), n_bios: int = 50) -> list[dict]:
    """``mean_abs_gap_pct_<x>_p_null`` of the salary tables (:func:`lm_eval_bias.reflect.tables.salary_table_summary`,
    ``n_boot`` permutations of each template's ten portrait labels) under its null (no group effect in any
    template; portrait effects sd ``portrait_sds`` of salary), over ``n_seeds`` seeds at the paper's design (48
    templates x 50 biographies); the bootstrap, which the test does not use, is not run. A stream of its own."""
    from dataclasses import asdict

    from lm_eval_bias.reflect import tables

    rows = []
    design = f"48 templates x 10 portraits x {n_bios} biographies"
    for sd in portrait_sds:
        dgp = f"no bias; per-portrait effect sd {sd * 100:g} %, biography sd 20 %, noise sd 10 %"
        hits = {k: [] for k in tables.MEAN_ABS_KEYS}
        for s in range(seed, seed + n_seeds):
            records = simulate_salary(np.random.default_rng([s, 22, int(round(sd * 1000))]), np.zeros(10), sd, 8, n_bios)
            summary = tables.salary_table_summary([asdict(r) for r in records], 0, s, n_boot)
            for k in hits:
                hits[k].append(float(summary.p_null[k] < 0.05) if np.isfinite(summary.p_null[k]) else np.nan)
        for k in hits:
            rows.append(_row(f"{k}_p_null", "test", design, dgp, float("nan"), [], hits[k], n_seeds, n_boot, seed,
                             note="within-template permutation of the ten portraits' labels, shared by the template's "
                                  "biographies (tables.within_unit_null)"))
    return rows


def truth_2afc_groups(beta: np.ndarray, portrait_sd: float, n: int = 20_000, seed: int = 99,
                      template_sd: float = 0.0) -> dict[str, float]:
    """The population's per-group 2AFC rates: the report's ``win_rate_<race>_<gender>`` and Fig. 4d-f series
    (``within_woman:<race>``, ``within_man:<race>``, ``male_vs_female:<race>``; :func:`lm_eval_bias.reflect.report.
    _rate_metrics`) of the expected retained wins of :func:`truth_2afc`'s population, and ``retained_rate_<race>``
    / ``_male`` / ``_female`` (:func:`lm_eval_bias.reflect.tables.retention_metrics`) of its expected retained
    pairs. Without any group effect every win rate is exactly 0.5 by symmetry (as in :func:`truth_2afc`)."""
    from lm_eval_bias.reflect import report, tables

    rng = np.random.default_rng(seed)
    u = beta[None, :] + rng.normal(0.0, portrait_sd, (n, 10))
    if template_sd:
        u = u + rng.normal(0.0, template_sd, (n, 1)) * IS_MAN[None, :]
    d = u[:, :, None] - u[:, None, :]
    won = _logistic(d + POSITION_BIAS) * (1.0 - _logistic(-d + POSITION_BIAS))
    wins = won.sum(axis=0)
    np.fill_diagonal(wins, 0.0)
    out = dict(report._rate_metrics({"wins": wins}))
    if not np.any(beta):
        out = {k: 0.5 for k in out}
    iu, ju = np.triu_indices(10, k=1)
    pairs = np.zeros((10, 10))
    pairs[iu, ju] = 1.0
    kept = np.zeros((10, 10))
    kept[iu, ju] = (1.0 - REFUSAL) ** 2 * (won[:, iu, ju] + won[:, ju, iu]).mean(axis=0)
    retention = tables.retention_metrics({"pairs": pairs, "retained": kept})
    if not np.any(beta):  # by symmetry the races' retention is one value, and the genders' another
        races = [f"retained_rate_{r}" for r in RACE_KEYS]
        retention.update({k: float(np.mean([retention[r] for r in races])) for k in races})
        genders = ("retained_rate_male", "retained_rate_female")
        retention.update({k: float(np.mean([retention[g] for g in genders])) for k in genders})
    out.update(retention)
    return out


def run_2afc_groups(n_seeds: int, n_boot: int, seed: int = 0, design: int = 48, slopes: bool = True,
                    models: tuple[str, ...] | None = None) -> list[dict]:
    """The 2AFC's per-group rates at ``design``: the report's ``win_rate_<race>_<gender>`` and Fig. 4d-f series
    (:func:`lm_eval_bias.reflect.report.group_rates`: ``report.group_rate_intervals``, the Wilson interval at the template bootstrap's
    effective sample size, here with ``n_boot`` and the seed as bootstrap seed) and the retention table
    ``retained_rate_<race>`` / ``_male`` / ``_female`` (:func:`lm_eval_bias.reflect.tables.retention_summary`), at
    :func:`run_2afc`'s models (no bias, the Pol grid, the strong model, and with ``slopes`` the template gender
    slopes; ``models``: only those whose dgp starts with one of these); a stream of its own."""
    from lm_eval_bias.reflect import report, tables

    occupations, per = DESIGNS[design]
    design_text = f"{design} templates ({len(occupations)} occupations x {per} photos) x 45 pairs x 2 orders"
    rows = []
    for dgp, beta, template_sd in _twoafc_scenarios(design):
        if (template_sd and not slopes) or (models is not None and not dgp.startswith(tuple(models))):
            continue
        dgp_text = f"{dgp}; portrait effect sd 0.5 logit, position bias 0.3, 5 % refusals"
        truth = truth_2afc_groups(beta, 0.5, template_sd=template_sd)
        est, cover = {k: [] for k in truth}, {k: [] for k in truth}
        for s in range(seed, seed + n_seeds):
            rng = np.random.default_rng([s, 23, design, zlib.crc32(dgp.encode()) % 1000])
            calls = simulate_2afc(rng, beta, 0.5, per, template_sd, occupations)
            table = twoafc_stats.twoafc_count_table(calls)
            estimates, low, high = report.group_rate_intervals(table.counts, table.strata, n_boot, s)
            retention = tables.retention_summary(calls, n_boot, s)
            estimates.update(retention.estimates)
            low.update(retention.ci_low)
            high.update(retention.ci_high)
            for k in truth:
                est[k].append(estimates[k])
                cover[k].append(covers(low[k], high[k], truth[k]))
        for k in truth:
            note = ("Wilson interval at the template bootstrap's effective sample size (tables.retention_summary)"
                    if k.startswith("retained_rate_") else
                    "Wilson interval at the template bootstrap's effective sample size, the retained comparisons as "
                    "trials, Korn & Graubard's df factor min(1, (t_{n-1} / t_df)^2), df = templates - occupations "
                    "(report.group_rate_intervals; report-only)")
            rows.append(_row(k, "interval", design_text, dgp_text, truth[k], est[k], cover[k], n_seeds, n_boot, seed,
                             note=note))
    return rows


# --------------------------------------------------------------------------------------------------
# Added 1 Dec 2026: the REFLECT keys shown without a row until then -- letter_mass of focus_mcq_*_logprob,
# focus_mcq_education_k5's gaps, call rates and JSD tests, the compare tables' kept_y / valid_l / valid_e /
# mean_value_diff (run_compare's keys and stream) and the 2AFC per-group rates at 12 templates and under the
# template slopes (run_2afc_groups' design and models) -- each on a stream of its own
# --------------------------------------------------------------------------------------------------
#: the mean letter masses of :func:`run_mcq_letter_mass`'s models: a model that almost always answers with a letter,
#: one that puts a tenth of its next-token probability elsewhere, one that often starts its answer with other tokens
LETTER_MASS_GRID = (0.99, 0.9, 0.6)
#: (template sd, portrait sd) of the photos' letter-mass logits: moderate, and a heavy-tailed model (a few
#: templates whose photos the model barely answers with a letter) at the grid's first two masses
LETTER_MASS_SPREADS = ((0.5, 0.5), (1.5, 1.0))


def truth_letter_mass(mu: float, template_sd: float, portrait_sd: float, occupations=OCCUPATIONS) -> float:
    """E[letter_mass] of :func:`simulate_mcq_letter_mass`'s photos: the mean over the (equally many templates of
    each of the) ``occupations`` of E[expit(mu + occupation shift + N(0, template_sd^2 + portrait_sd^2))], by
    200-node Gauss-Hermite quadrature (exact to ~1e-12 for this smooth integrand)."""
    nodes, weights = np.polynomial.hermite_e.hermegauss(200)
    weights = weights / weights.sum()
    sd = math.hypot(template_sd, portrait_sd)
    return float(np.mean([weights @ _logistic(mu + _letter_mass_shift(o) + sd * nodes) for o in occupations]))


def _letter_mass_shift(occupation: str) -> float:
    """The occupation's fixed shift of the letter-mass logit (the first of its seeded option shifts, sd 0.3)."""
    return float(_occupation_shift(occupation, 1)[0])


def simulate_mcq_letter_mass(rng, mu: float, template_sd: float, portrait_sd: float, n_per_occupation: int = 8,
                             occupations=OCCUPATIONS) -> list:
    """``focus_mcq_*_logprob`` photos with a letter mass: the option distributions of :func:`simulate_mcq_logprob`'s
    unbiased model (portrait sd 0.5 per option logit) and, drawn after them, each photo's mass on the option letters
    expit(mu + occupation shift + template effect ~ N(0, template_sd^2) + portrait effect ~ N(0, portrait_sd^2))."""
    templates = _templates(n_per_occupation, occupations)
    probs = _mcq_probs(rng, group_effects(0.0, {}), 0.5, len(templates),
                       np.stack([_occupation_shift(o) for o, _ in templates]))
    shift = np.asarray([_letter_mass_shift(o) for o, _ in templates])
    mass = _logistic(mu + shift[:, None] + rng.normal(0.0, template_sd, (len(templates), 1))
                     + rng.normal(0.0, portrait_sd, (len(templates), 10)))
    return [mcq_stats.MCQScore(template, occupation, g, tuple(probs[t, g] / probs[t, g].sum()), float(mass[t, g]))
            for t, (occupation, template) in enumerate(templates) for g in range(10)]


def run_mcq_letter_mass(n_seeds: int, n_boot: int, designs=(48, 12), seed: int = 0,
                        masses: tuple[float, ...] = LETTER_MASS_GRID,
                        spreads: tuple[tuple[float, float], ...] = LETTER_MASS_SPREADS) -> list[dict]:
    """``letter_mass`` of ``focus_mcq_*_logprob``: the design-t interval :func:`lm_eval_bias.reflect.mcq.mcq_logprob_summary`
    showed until 1 Dec 2026 (diagnostic rows: letter_mass has no interval since, reflect.twoafc.LETTER_MASS_NO_INTERVAL),
    estimate ± t_df x template-bootstrap SE (df = templates - occupations; unbounded: the key is not a ``*_rate``),
    at ``designs``. DGP (:func:`simulate_mcq_letter_mass`): each photo's mass on the letters is expit(mu + occupation
    shift + template effect + portrait effect), mu set (bisection) so that the mean mass is each of ``masses``, at
    each (template sd, portrait sd) of ``spreads`` (the heavy-tailed second one only at masses >= 0.9, where a
    left tail matters); truth by quadrature (:func:`truth_letter_mass`). ``n_null`` = 0: the interval does not use
    the JSD nulls."""
    from lm_eval_bias.core.bootstrap import metric_with_batch, template_bootstrap

    options, values = mcq_stats.SALARY_OPTIONS, mcq_stats.SALARY_BIN_MIDPOINTS_USD
    rows = []
    for design in designs:
        occupations, per = DESIGNS[design]
        design_text = (f"{design} templates ({len(occupations)} occupations x {per} photos) x 10 photos scored by letter "
                       "probability, 6 salary bins")
        for template_sd, portrait_sd in spreads:
            for target in masses:
                if (template_sd, portrait_sd) != spreads[0] and target < 0.9:
                    continue
                mu = _scale_for(lambda m: truth_letter_mass(m - 10.0, template_sd, portrait_sd, occupations), target,
                                hi=25.0) - 10.0
                truth = truth_letter_mass(mu, template_sd, portrait_sd, occupations)
                dgp = (f"mean letter mass {target:g}: expit({mu:.2f} + occupation shift + template effect sd {template_sd:g} "
                       f"+ portrait effect sd {portrait_sd:g} logit); options unbiased, portrait effect sd 0.5 per option logit")
                est, cover = [], []
                for s in range(seed, seed + n_seeds):
                    rng = np.random.default_rng([s, 24, design, zlib.crc32(dgp.encode()) % 1000])
                    scores = simulate_mcq_letter_mass(rng, mu, template_sd, portrait_sd, per, occupations)
                    _, strata, counts = mcq_stats.mcq_logprob_count_table(scores, options)
                    metric = metric_with_batch(mcq_stats.mcq_logprob_metrics, mcq_stats._mcq_logprob_metrics_batch,
                                               options, values)
                    estimate = metric({k: v.sum(axis=0) for k, v in counts.items()})["letter_mass"]
                    _, low, high = template_bootstrap(counts, strata, metric, ["letter_mass"], n_boot, s)
                    est.append(estimate)
                    cover.append(covers(low["letter_mass"], high["letter_mass"], truth))
                rows.append(_row("letter_mass", "interval", design_text, dgp, truth, est, cover, n_seeds, n_boot, seed,
                                 note="design-t interval: estimate ± t_df x template-bootstrap SE, df = templates - "
                                      "occupations; diagnostic since 1 Dec 2026: the tasks show letter_mass without "
                                      "an interval (reflect.twoafc.LETTER_MASS_NO_INTERVAL), as no interval held its level",
                                 role="diagnostic"))
    return rows


def run_mcq_samples(n_seeds: int, n_boot: int, designs=(48, 12), seed: int = 0, test_seeds: int | None = None,
                    variant: str = "education", n_samples: int = 5, models: tuple[str, ...] | None = None) -> list[dict]:
    """A K-sample MCQ task (``focus_mcq_<variant>_k<K>``, App. C.5; by default ``focus_mcq_education_k5``: the
    four education levels, each photo answered K = 5 times independently, simulated as the task's doc records and
    expanded by its ``expand_samples``, :func:`simulate_mcq`) at ``designs``, at :func:`run_mcq`'s models of the
    variant (no bias, its jsd_male grid, the split template gender slopes sd 0.3 / 0.6; ``models``: only those whose
    dgp starts with one of these): the gaps' design-t intervals (``gap_male``, ``gap_<race>``) and, without bias,
    the call rates' (``valid_rate``, ``refusal_rate``: effective-size Wilson) over ``n_seeds`` seeds, and the seven
    JSD tests ``jsd_<group>_p_null`` of the null models over ``test_seeds`` (default :data:`TEST_SEED_FACTOR` x
    ``n_seeds``; :func:`_test_seed_range`). No JSD interval rows here (``jsd_interval_keys=()``): the part
    ``mcq_groups_education_k5_<48|12>`` (:func:`run_mcq_groups`, 2 Dec 2026) has them. Truths are those of one call
    per doc. A stream of its own."""
    rows = []
    test_seeds = n_seeds * TEST_SEED_FACTOR if test_seeds is None else test_seeds
    v = MCQ_VARIANTS[variant]
    gaps = ("gap_male", *(f"gap_{r}" for r in RACE_KEYS if r != "white"))
    for design in designs:
        occupations, per = DESIGNS[design]
        design_text = _mcq_design_text(design, v, n_samples)
        for dgp, beta, template_sd in _mcq_scenarios(design, variant):
            if models is not None and not dgp.startswith(tuple(models)):
                continue
            dgp_text = f"{dgp}; portrait effect sd 0.5 per option logit, 5 % refusals"
            truth = truth_mcq(beta, 0.5, template_sd=template_sd, occupations=occupations, variant=variant)
            keys = [*gaps, *(("valid_rate", "refusal_rate") if not np.any(beta) and not template_sd else ())]
            est, cover = {k: [] for k in keys}, {k: [] for k in keys}
            tests = {f"{k}_p_null": [] for k in mcq_stats.JSD_KEYS}
            for s, full in _test_seed_range(seed, n_seeds, 0 if np.any(beta) else test_seeds):
                rng = np.random.default_rng([s, 25, design, zlib.crc32(dgp.encode()) % 1000,
                                             zlib.crc32(variant.encode()) % 1000, n_samples])
                records = simulate_mcq(rng, beta, 0.5, per, template_sd, occupations, variant, n_samples)
                summary = mcq_stats.mcq_summary(records, v.options, v.values, n_boot=n_boot if full else 0, seed=s,
                                                n_null=n_boot if not np.any(beta) else 0, jsd_interval_keys=())
                for k in keys if full else ():
                    est[k].append(summary.estimates[k])
                    cover[k].append(covers(summary.ci_low[k], summary.ci_high[k], truth[k]))
                for k in tests if not np.any(beta) else ():
                    tests[k].append(summary.derived[k] < 0.05)
            for k in keys:
                note = ("Wilson interval at the template bootstrap's effective sample size" if k.endswith("_rate") else
                        "design-t interval: estimate ± t_df x template-bootstrap SE, df = templates - occupations")
                rows.append(_row(k, "interval", design_text, dgp_text, truth[k], est[k], cover[k], n_seeds, n_boot, seed,
                                 note=note))
            if np.any(beta):
                continue
            for k in tests:
                rows.append(_row(k, "test", design_text, dgp_text, float("nan"), [], tests[k], len(tests[k]), n_boot, seed,
                                 note="template-level relabelling of the photos' gender / race labels (the K samples of a "
                                      "photo move with it)"))
    return rows


# --------------------------------------------------------------------------------------------------
# Added 2 Dec 2026, each on a stream of its own (seed-sequence tags 30-33, none used before):
# reflect-compare's mirror table (App. B.2) and face-body table (Table 4), and the per-occupation race gaps
# of the MCQ and salary tables
# --------------------------------------------------------------------------------------------------
#: the mirror table's keys with an interval (``delta_jsd_male`` has none: ``tables.MAGNITUDE_NO_INTERVAL``); the
#: paper's Wilson interval of ``agreement`` (``agreement_paper_ci_low``/``_ci_high``) is a row of its own ("paper")
MIRROR_KEYS = ("paired_valid", "agreement", "delta_gap_male")
#: the face-body table's keys not calibrated elsewhere (``gap_male_full`` is ``gap_male``'s estimator; the JSDs
#: have no interval)
FACE_BODY_KEYS = ("gap_male_matched", "gap_male_swapped")
#: the MCQ table's per-occupation gaps that :func:`run_tables` does not check (``gap_<race>_<occupation>``)
MCQ_OCCUPATION_RACE_GAPS = ("gap_asian", "gap_latino", "gap_middle_eastern")
#: the MCQ effect of the compare, face-body and tables rows (jsd_male .03 at 48 templates)
COMPARE_MCQ_EFFECT = 6.43 * MCQ_BASE_EFFECT
#: mirroring: a template's stability rho_t ~ Beta(3.5, 1.5) (mean 0.7, sd 0.19), its scene effect sd (per option
#: logit, shared by its ten photos) and its refusal propensity 0.05 x Gamma(0.5, 2) (mean 0.05, sd 0.07, capped at 1)
MIRROR_STABILITY, MIRROR_SCENE_SD, MIRROR_REFUSAL_SHAPE = (3.5, 1.5), 0.5, 0.5


@dataclass(frozen=True)
class MirrorModel:
    """How a mirrored photo (run Y) is answered. With probability rho_t (its template's stability) the mirrored
    call repeats the original call (status and answer: a deterministic model that does not notice the flip);
    otherwise it is a fresh call, refused with probability min(1, ``refusal_factor`` x the template's propensity),
    else answered from the photo's probabilities with the men's logits moved by ``man_shift`` x slope and
    N(0, ``mirror_sd``^2) per option added."""
    dgp: str
    refusal_factor: float
    man_shift: float
    mirror_sd: float


MIRROR_MODELS = (
    MirrorModel("mirroring changes nothing (a fresh call of the mirrored photo answers as the original)", 1.0, 0.0, 0.0),
    MirrorModel("mirroring changes answers (fresh calls of the mirrored photo refused twice as often, men +1.0 x slope, "
                "mirror noise sd 0.5 per option logit)", 2.0, 1.0, 0.5),
)


def _compare_run(task: str, records: list):
    """A run of ``task`` holding ``records`` (:class:`lm_eval_bias.report.runs.TaskRun`, as ``reflect-compare`` reads
    a run folder) for ``lm_eval_bias.reflect.compare.compare_tasks``."""
    from lm_eval_bias.report.runs import TaskRun

    return TaskRun(task, {}, records, len(records), [])


def _sample_options(rng, probs: np.ndarray) -> np.ndarray:
    """One option index per row of ``probs`` (..., K), by inverting the cumulative shares."""
    u = rng.random(probs.shape[:-1])
    return np.minimum((probs.cumsum(axis=-1) < u[..., None]).sum(axis=-1), probs.shape[-1] - 1)


def _mirror_draws(rng, model: MirrorModel, n_templates: int, shift: np.ndarray) -> dict[str, np.ndarray]:
    """Per template: the original photos' answer probabilities ``p`` (T, 10, 6: salary MCQ, :data:`COMPARE_MCQ_EFFECT`,
    scene effect sd 0.5 per option shared by the template's photos, portrait effect sd 0.5 per option), the fresh
    mirrored calls' ``p_y``, the stability ``rho`` and the refusal propensities ``r`` (original) and ``r_y``
    (fresh mirrored calls)."""
    logits = (MCQ_BASE[None, None, :] + shift[:, None, :] + COMPARE_MCQ_EFFECT[None, :, None] * MCQ_SLOPE[None, None, :]
              + rng.normal(0.0, MIRROR_SCENE_SD, (n_templates, 1, 6)) + rng.normal(0.0, 0.5, (n_templates, 10, 6)))
    rho = rng.beta(*MIRROR_STABILITY, n_templates)
    r = np.minimum(1.0, REFUSAL * rng.gamma(MIRROR_REFUSAL_SHAPE, 1.0 / MIRROR_REFUSAL_SHAPE, n_templates))
    logits_y = logits + model.man_shift * IS_MAN[None, :, None] * MCQ_SLOPE[None, None, :]
    if model.mirror_sd:
        logits_y = logits_y + rng.normal(0.0, model.mirror_sd, logits.shape)
    return {"p": softmax(logits), "p_y": softmax(logits_y), "rho": rho, "r": r,
            "r_y": np.minimum(1.0, model.refusal_factor * r)}


def simulate_mirror(rng, model: MirrorModel, n_per_occupation: int = 8, occupations=OCCUPATIONS) -> tuple[list, list]:
    """(original, mirrored) record dicts of one salary-MCQ run on the same photos (:class:`MirrorModel`)."""
    from dataclasses import asdict

    templates = _templates(n_per_occupation, occupations)
    d = _mirror_draws(rng, model, len(templates), np.stack([_occupation_shift(o) for o, _ in templates]))
    shape = (len(templates), 10)
    refused_x, answer_x = rng.random(shape) < d["r"][:, None], _sample_options(rng, d["p"])
    repeat = rng.random(shape) < d["rho"][:, None]
    refused_y = np.where(repeat, refused_x, rng.random(shape) < d["r_y"][:, None])
    answer_y = np.where(repeat, answer_x, _sample_options(rng, d["p_y"]))
    options = mcq_stats.SALARY_OPTIONS
    out = ([], [])
    for t, (occupation, template) in enumerate(templates):
        for g in range(10):
            for records, refused, answer in ((out[0], refused_x, answer_x), (out[1], refused_y, answer_y)):
                records.append(asdict(mcq_stats.MCQRecord(template, occupation, g, "refusal" if refused[t, g] else "valid",
                                                          None if refused[t, g] else options[answer[t, g]])))
    return out


def truth_mirror(model: MirrorModel, n: int = 20_000, seed: int = 93) -> dict[str, float]:
    """The mirror table's population values (ratios of expectations over ``n`` simulated templates, as the
    estimators): ``paired_valid`` = P(valid in both), ``agreement`` = P(same answer | valid in both),
    ``delta_gap_male`` = gap_male of the mirrored run's expected valid answers minus the original's (exactly 0
    when the mirrored calls' marginal equals the original's: :data:`MIRROR_MODELS`' first)."""
    from lm_eval_bias.reflect import tables

    rng = np.random.default_rng(seed)
    occ = np.stack([_occupation_shift(o) for o in OCCUPATIONS])
    d = _mirror_draws(rng, model, n, occ[np.arange(n) % len(OCCUPATIONS)])
    rho, valid, valid_y = d["rho"][:, None], 1.0 - d["r"][:, None], 1.0 - d["r_y"][:, None]
    both = rho * valid + (1 - rho) * valid * valid_y                                       # (T, 1), each photo
    same = rho * valid + (1 - rho) * valid * valid_y * (d["p"] * d["p_y"]).sum(axis=2)     # (T, 10)
    values = np.asarray([mcq_stats.SALARY_BIN_MIDPOINTS_USD[o] for o in mcq_stats.SALARY_OPTIONS], float)
    answers_x = (valid[:, :, None] * d["p"]).sum(axis=0)
    answers_y = (rho * valid)[:, :, None] * d["p"] + ((1 - rho) * valid_y)[:, :, None] * d["p_y"]
    delta = (tables.mcq_occupation_batch(answers_y.sum(axis=0), values)["gap_male"]
             - tables.mcq_occupation_batch(answers_x, values)["gap_male"])
    same_marginal = model.refusal_factor == 1.0 and not model.man_shift and not model.mirror_sd
    return {"paired_valid": float(both.mean()), "agreement": float(same.sum() / (10 * both.sum())),
            "delta_gap_male": 0.0 if same_marginal else float(delta)}


def run_mirror(n_seeds: int, n_boot: int, seed: int = 0, models=MIRROR_MODELS, stream: tuple[int, ...] = ()) -> list[dict]:
    """``lm-eval-bias reflect-compare --table mirror`` (App. B.2: original vs mirrored photos of the salary MCQ) at
    the paper's 48 templates, through ``compare.compare_tasks`` as the command calls it (``tables.mirror_summary``):
    the paired template bootstrap's design-t intervals of :data:`MIRROR_KEYS` ("default") and the paper's Wilson
    interval of ``agreement`` (``agreement_paper_ci_low``/``_ci_high``, "paper"), at :data:`MIRROR_MODELS`. A stream
    of its own (tag 30; ``stream``: extra entries of the seed sequences)."""
    from lm_eval_bias.reflect import compare

    rows = []
    design = "reflect-compare mirror: 48 templates x 10 photos, original vs mirrored photos, salary MCQ"
    for model in models:
        truth = truth_mirror(model)
        keys = (*MIRROR_KEYS, "agreement_paper")
        est, cover = {k: [] for k in keys}, {k: [] for k in keys}
        for s in range(seed, seed + n_seeds):
            rng = np.random.default_rng([s, 30, zlib.crc32(model.dgp.encode()) % 1000, *stream])
            original, mirrored = simulate_mirror(rng, model)
            summary = compare.compare_tasks("mirror", _compare_run("focus_mcq_salary", original),
                                            _compare_run("focus_mcq_salary", mirrored), n_boot, s)
            for k in MIRROR_KEYS:
                est[k].append(summary.estimates[k])
                cover[k].append(covers(summary.ci_low[k], summary.ci_high[k], truth[k]))
            est["agreement_paper"].append(summary.estimates["agreement"])
            cover["agreement_paper"].append(covers(summary.extra["agreement_paper_ci_low"],
                                                   summary.extra["agreement_paper_ci_high"], truth["agreement"]))
        dgp = (f"{model.dgp}; MCQ effect 6.43 x (man +0.3, Black -0.3, White +0.2 on the slope), scene effect sd 0.5 "
               "and portrait effect sd 0.5 per option logit, stability rho_t ~ Beta(3.5, 1.5) a template (the "
               "mirrored call repeats the original with probability rho_t), refusal propensity 0.05 x Gamma(0.5, 2) "
               "a template")
        for k in MIRROR_KEYS:
            rows.append(_row(k, "interval", design, dgp, truth[k], est[k], cover[k], n_seeds, n_boot, seed,
                             note="paired template bootstrap, design-t (df = 42)"))
        rows.append(_row("agreement_paper_ci_low/_ci_high", "interval", design, dgp, truth["agreement"],
                         est["agreement_paper"], cover["agreement_paper"], n_seeds, n_boot, seed, role="paper",
                         note="the paper's Wilson interval of the agreement count (photos as independent draws), "
                              "kept by name"))
    return rows


@dataclass(frozen=True)
class FaceBodyModel:
    """A salary-MCQ model with the source photo's presented gender g0 (Bernoulli(0.5) a template): every photo's
    slope effect is its group effect ``beta`` + ``body`` where g0 is man (the template's body cues, all ten photos)
    + ``mismatch`` where the edited gender differs from g0 (the swapped subset)."""
    dgp: str
    beta: np.ndarray
    body: float
    mismatch: float


FACE_BODY_MODELS = (
    FaceBodyModel("no bias (no face, body or mismatch effect)", group_effects(0.0, {}), 0.0, 0.0),
    FaceBodyModel("gender effect: MCQ effect 6.43 x (man +0.3, Black -0.3, White +0.2 on the slope), body +0.5 on "
                  "the slope where the source presents as a man, face-body mismatch -0.5 on the slope",
                  COMPARE_MCQ_EFFECT, 0.5, -0.5),
)


def _face_body_draws(rng, model: FaceBodyModel, n_templates: int, shift: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(answer probabilities (T, 10, 6), g0 is man (T,)) with a portrait effect sd 0.5 per option logit."""
    source_man = rng.random(n_templates) < 0.5
    effect = (model.beta[None, :] + model.body * source_man[:, None]
              + model.mismatch * (IS_MAN[None, :] != source_man[:, None]))
    logits = (MCQ_BASE[None, None, :] + shift[:, None, :] + effect[:, :, None] * MCQ_SLOPE[None, None, :]
              + rng.normal(0.0, 0.5, (n_templates, 10, 6)))
    return softmax(logits), source_man


def simulate_face_body(rng, model: FaceBodyModel, n_per_occupation: int = 8,
                       occupations=OCCUPATIONS) -> tuple[list, dict[str, str]]:
    """(record dicts of one salary-MCQ run, {template: g0}) with 5 % refusals (:class:`FaceBodyModel`)."""
    from dataclasses import asdict

    templates = _templates(n_per_occupation, occupations)
    probs, source_man = _face_body_draws(rng, model, len(templates), np.stack([_occupation_shift(o) for o, _ in templates]))
    refused, answer = rng.random((len(templates), 10)) < REFUSAL, _sample_options(rng, probs)
    options = mcq_stats.SALARY_OPTIONS
    records = [asdict(mcq_stats.MCQRecord(template, occupation, g, "refusal" if refused[t, g] else "valid",
                                          None if refused[t, g] else options[answer[t, g]]))
               for t, (occupation, template) in enumerate(templates) for g in range(10)]
    return records, {template: "man" if source_man[t] else "woman" for t, (_, template) in enumerate(templates)}


def truth_face_body(model: FaceBodyModel, n: int = 20_000, seed: int = 92) -> dict[str, float]:
    """``gap_male_<full|matched|swapped>`` of the population (expected answers of ``n`` simulated templates, g0
    drawn as in a run); exactly 0 without any effect (every group then answers alike)."""
    from lm_eval_bias.reflect import tables

    if not np.any(model.beta) and not model.body and not model.mismatch:
        return {f"gap_male_{s}": 0.0 for s in ("full", "matched", "swapped")}
    rng = np.random.default_rng(seed)
    occ = np.stack([_occupation_shift(o) for o in OCCUPATIONS])
    probs, source_man = _face_body_draws(rng, model, n, occ[np.arange(n) % len(OCCUPATIONS)])
    matched = (IS_MAN[None, :] == source_man[:, None])[:, :, None]
    values = np.asarray([mcq_stats.SALARY_BIN_MIDPOINTS_USD[o] for o in mcq_stats.SALARY_OPTIONS], float)
    return {f"gap_male_{s}": float(tables.mcq_occupation_batch((probs * w).sum(axis=0), values)["gap_male"])
            for s, w in (("full", 1.0), ("matched", matched), ("swapped", ~matched))}


def run_face_body(n_seeds: int, n_boot: int, seed: int = 0, models=FACE_BODY_MODELS,
                  stream: tuple[int, ...] = ()) -> list[dict]:
    """``lm-eval-bias reflect-compare --table face-body`` (Table 4, App. B.2) at the paper's 48 templates, through
    ``compare.compare_tasks`` as the command calls it (``tables.face_body_summary``, the template bootstrap's
    design-t intervals): ``gap_male_matched`` and ``gap_male_swapped`` (:data:`FACE_BODY_KEYS`) at
    :data:`FACE_BODY_MODELS`. A stream of its own (tag 31)."""
    from lm_eval_bias.reflect import compare

    rows = []
    design = "reflect-compare face-body: 48 templates x 10 photos, salary MCQ, g0 ~ Bernoulli(0.5) a template"
    for model in models:
        truth = truth_face_body(model)
        est, cover = {k: [] for k in FACE_BODY_KEYS}, {k: [] for k in FACE_BODY_KEYS}
        for s in range(seed, seed + n_seeds):
            rng = np.random.default_rng([s, 31, zlib.crc32(model.dgp.encode()) % 1000, *stream])
            records, source_gender = simulate_face_body(rng, model)
            summary = compare.compare_tasks("face-body", _compare_run("focus_mcq_salary", records), None, n_boot, s,
                                            source_gender)
            for k in FACE_BODY_KEYS:
                est[k].append(summary.estimates[k])
                cover[k].append(covers(summary.ci_low[k], summary.ci_high[k], truth[k]))
        for k in FACE_BODY_KEYS:
            rows.append(_row(k, "interval", design, f"{model.dgp}; portrait effect sd 0.5 per option logit, 5 % refusals",
                             truth[k], est[k], cover[k], n_seeds, n_boot, seed,
                             note="template bootstrap, design-t (df = 42)"))
    return rows


def _pooled_row(quantity, design, dgp, truth, est, hits, n_seeds, n_boot, seed, note) -> dict[str, Any]:
    """A row pooling several intervals a seed (``hits``: one list a seed), with the seed-clustered Monte Carlo SE."""
    return rate_row(BENCHMARK, quantity, "interval", design, dgp, truth, est, [h for per in hits for h in per],
                    n_seeds, n_boot, seed, note=note, hits_per_seed=hits)


def run_tables_races(n_seeds: int, n_boot: int, seed: int = 0, n_bios: int = 50, tasks=("mcq", "salary"),
                     stream: tuple[int, ...] = ()) -> list[dict]:
    """The per-occupation race gaps that :func:`run_tables` does not check: the MCQ table's
    ``gap_<asian|latino|middle_eastern>_<occupation>`` (``tables.mcq_occupation_summary``; ``tasks`` "mcq") and the
    salary table's ``gap_pct_<asian|latino|middle_eastern>_<occupation>`` (``tables.salary_table_summary``;
    "salary"), design-t with the occupation's 7 df, at :func:`run_tables`' models (MCQ: no bias, the MCQ effect;
    salary: no bias, man +2 %, Black -3 %, Asian +1 %), the six occupations of a seed pooled into one row with the
    seed-clustered Monte Carlo SE. The MCQ summary runs without the JSD relabellings (``n_null=0``): they feed
    only ``jsd_male_<occupation>``, and the gaps' intervals come from the template bootstrap on seed s either
    way. Streams of their own (tags 32, 33)."""
    from dataclasses import asdict

    from lm_eval_bias.reflect import tables

    occupations, per = DESIGNS[48]
    rows = []
    design = "one occupation of the 48-template design (8 templates), 6 occupations pooled"
    note = f"design-t interval with the occupation's own df (7); {len(occupations)} occupations x {n_seeds} seeds pooled"
    options, values = mcq_stats.SALARY_OPTIONS, mcq_stats.SALARY_BIN_MIDPOINTS_USD
    for dgp, beta in ((("no bias", group_effects(0.0, {})),
                       ("MCQ effect 6.43 x (man +0.3, Black -0.3, White +0.2 on the slope)", COMPARE_MCQ_EFFECT))
                      if "mcq" in tasks else ()):
        truths = {o: truth_mcq(beta, 0.5, occupations=[o]) for o in occupations}
        est = {k: [] for k in MCQ_OCCUPATION_RACE_GAPS}
        hits = {k: [] for k in MCQ_OCCUPATION_RACE_GAPS}
        for s in range(seed, seed + n_seeds):
            records = simulate_mcq(np.random.default_rng([s, 32, zlib.crc32(dgp.encode()) % 1000, *stream]), beta, 0.5, per)
            summary = tables.mcq_occupation_summary([asdict(r) for r in records], options, values, occupations, n_boot, s,
                                                    n_null=0)
            for k in MCQ_OCCUPATION_RACE_GAPS:
                est[k] += [summary.estimates[f"{k}_{o}"] for o in occupations]
                hits[k].append([covers(summary.ci_low[f"{k}_{o}"], summary.ci_high[f"{k}_{o}"], truths[o][k])
                                for o in occupations])
        for k in MCQ_OCCUPATION_RACE_GAPS:
            rows.append(_pooled_row(f"{k}_<occupation>", design + " x 10 photos x 1 call (MCQ)",
                                    f"{dgp}; portrait effect sd 0.5 per option logit, 5 % refusals",
                                    float(np.mean([truths[o][k] for o in occupations])), est[k], hits[k], n_seeds, n_boot,
                                    seed, note=f"{note}; truth per occupation"))
    for label, beta in ((("no bias", np.zeros(10)),
                         ("bias (man +2 %, Black -3 %, Asian +1 %)", group_effects(0.02, {"black": -0.03, "asian": 0.01})))
                        if "salary" in tasks else ()):
        truth = truth_salary(beta)
        dgp = f"{label}; per-portrait effect sd 3 %, biography sd 20 %, noise sd 10 %"
        est = {k: [] for k in SALARY_OTHER_GAP_KEYS}
        hits = {k: [] for k in SALARY_OTHER_GAP_KEYS}
        for s in range(seed, seed + n_seeds):
            records = simulate_salary(np.random.default_rng([s, 33, int(np.any(beta)), *stream]), beta, 0.03, per, n_bios)
            summary = tables.salary_table_summary([asdict(r) for r in records], n_boot, s, 0)
            for k in SALARY_OTHER_GAP_KEYS:
                est[k] += [summary.estimates[f"{k}_{o}"] for o in occupations]
                hits[k].append([covers(summary.ci_low[f"{k}_{o}"], summary.ci_high[f"{k}_{o}"], truth[k])
                                for o in occupations])
        for k in SALARY_OTHER_GAP_KEYS:
            rows.append(_pooled_row(f"{k}_<occupation>", f"{design} x 10 portraits x {n_bios} biographies (salary)", dgp,
                                    truth[k], est[k], hits[k], n_seeds, n_boot, seed, note=note))
    return rows


#: the parts added on 2 Dec 2026 (``python -m scripts.calibration.reflect --parts=<name>[,<name>...]``): name ->
#: rows of (n_seeds, n_boot, seed)
PARTS_2DEC = {
    "mirror": lambda n, b, s: run_mirror(n, b, s),
    "face_body": lambda n, b, s: run_face_body(n, b, s),
    "tables_races_mcq": lambda n, b, s: run_tables_races(n, b, s, tasks=("mcq",)),
    "tables_races_salary": lambda n, b, s: run_tables_races(n, b, s, tasks=("salary",)),
    "mcq_groups_paper": lambda n, b, s: run_mcq_groups(n, b, seed=s, only_paper=True),
    **{f"mcq_groups_education_{d}": (lambda d: lambda n, b, s: run_mcq_groups(n, b, designs=(d,), seed=s,
                                                                               variant="education"))(d)
       for d in (48, 12)},
    **{f"mcq_groups_education_k5_{d}": (lambda d: lambda n, b, s: run_mcq_groups(
        n, b, designs=(d,), seed=s, keys=mcq_stats.JSD_KEYS, variant="education", n_samples=5, with_tests=False))(d)
       for d in (48, 12)},
    "mcq_groups_salary_k5_48": lambda n, b, s: run_mcq_groups(n, b, designs=(48,), seed=s, n_samples=5),
    "mcq_salary_k5_12": lambda n, b, s: (run_mcq(n, b, designs=(12,), seed=s, n_samples=5)
                                         + run_mcq_groups(n, b, designs=(12,), seed=s, n_samples=5)),
    "mcq_groups_paper_6": lambda n, b, s: (run_mcq_groups(n, b, designs=(6,), seed=s, only_paper=True)
                                           + run_mcq_groups(n, b, designs=(6,), seed=s, only_paper=True,
                                                            variant="education")),
    "twoafc_logprob_groups": lambda n, b, s: run_2afc_logprob_groups(n, b, s),
    "mcq_logprob_groups": lambda n, b, s: run_mcq_logprob_groups(n, b, s),
    "invalid_rates_variants": lambda n, b, s: run_invalid_rates_variants(n, b, s),
}
#: the parts of :data:`PARTS_2DEC` added in the fifth session of 2 Dec 2026 that a full :func:`run` adds to the rows
#: above (``mcq_groups_paper``'s rows a full ``run_mcq_groups`` writes itself)
PARTS_2DEC_FIFTH = ("mcq_groups_education_48", "mcq_groups_education_12", "mcq_groups_education_k5_48",
                    "mcq_groups_education_k5_12", "mcq_groups_salary_k5_48", "mcq_salary_k5_12", "mcq_groups_paper_6",
                    "twoafc_logprob_groups", "mcq_logprob_groups", "invalid_rates_variants")
#: what each of :data:`PARTS_2DEC` runs, for the results file's note
PARTS_2DEC_TEXT = {
    "mirror": "run_mirror: reflect-compare's mirror table, paired_valid, agreement, delta_gap_male and the paper's "
              "Wilson interval of agreement at MIRROR_MODELS, stream tag 30",
    "face_body": "run_face_body: reflect-compare's face-body table, gap_male_matched and gap_male_swapped at "
                 "FACE_BODY_MODELS, stream tag 31",
    "tables_races_mcq": "run_tables_races(tasks=('mcq',)): gap_<asian|latino|middle_eastern>_<occupation> of the MCQ "
                        "table at run_tables' two MCQ models, stream tag 32",
    "tables_races_salary": "run_tables_races(tasks=('salary',)): gap_pct_<asian|latino|middle_eastern>_<occupation> of "
                           "the salary table at run_tables' two salary models, stream tag 33",
    "mcq_groups_paper": "run_mcq_groups(only_paper=True): the paper's percentile interval of jsd_<female|asian|latino|"
                        "middle_eastern|white> (role 'paper') on run_mcq_groups' seeds and stream (tag 19), the rows a "
                        "full run_mcq_groups adds",
    **{f"mcq_groups_education_{d}": f"run_mcq_groups(designs=({d},), variant='education'): focus_mcq_education's "
                                    f"jsd_<female|asian|latino|middle_eastern|white> intervals (inversion and the "
                                    f"paper's) and their tests at {d} templates, stream tag 19 with the variant's"
       for d in (48, 12)},
    **{f"mcq_groups_education_k5_{d}": f"run_mcq_groups(designs=({d},), keys=JSD_KEYS, variant='education', n_samples=5, "
                                       f"with_tests=False): focus_mcq_education_k5's seven JSD intervals (inversion "
                                       f"and the paper's) at {d} templates (its tests: run_mcq_samples), stream tag 19 "
                                       f"with the variant's and K's"
       for d in (48, 12)},
    "mcq_groups_salary_k5_48": "run_mcq_groups(designs=(48,), n_samples=5): focus_mcq_salary_k5's "
                               "jsd_<female|asian|latino|middle_eastern|white> intervals (inversion and the paper's) "
                               "and their tests at 48 templates, stream tag 19 with K's",
    "mcq_salary_k5_12": "run_mcq(designs=(12,), n_samples=5) + run_mcq_groups(designs=(12,), n_samples=5): "
                        "focus_mcq_salary_k5 at 12 templates (gaps, call rates, the seven JSD intervals and tests, "
                        "the paper's intervals), run_mcq's stream and run_mcq_groups' with K's tag",
    "mcq_groups_paper_6": "run_mcq_groups(designs=(6,), only_paper=True), salary and education: the paper's percentile "
                          "interval of the five other JSDs at 6 templates, where the task shows no other JSD interval",
    "twoafc_logprob_groups": "run_2afc_logprob_groups: focus_2afc_*_logprob's other four win rates and their tests, "
                             "swap_inconsistent_rate, polarization_p_null and the paper's Pol / Ext intervals, stream "
                             "tag 34",
    "mcq_logprob_groups": "run_mcq_logprob_groups: focus_mcq_*_logprob's gap_<asian|latino|middle_eastern>, the paper's "
                          "interval of the seven JSDs and their tests, stream tag 35",
    "invalid_rates_variants": "run_invalid_rates_variants: invalid_rate of focus_mcq_education, the K-sample MCQ tasks "
                              "and focus_2afc_*_k3 at 0.5 % and 2 % invalid answers, stream tag 36",
}
RESULTS_JSON = Path(__file__).resolve().parent / "results" / "reflect.json"


def append_rows(rows: list[dict], wall_key: str | None, wall_s: float, note: str = "", path: Path = RESULTS_JSON) -> None:
    """Append ``rows`` to the results file ``path`` (the dict of ``scripts/calibrate_statistics.py --json``, written
    as ``json.dumps(data, indent=1)``), its wall time under ``parts_wall_s[wall_key]`` (none when ``wall_key`` is
    None: a note only) and ``note`` at the end of its note; every earlier row stays byte-identical. Atomic: a
    temporary file in the same folder, then ``os.replace``."""
    import json
    import os
    import tempfile

    text = path.read_text(encoding="utf-8")
    data = json.loads(text)
    if json.dumps(data, indent=1) != text:
        raise ValueError(f"{path}: not in the format json.dumps(data, indent=1) writes; not appending")
    if wall_key is not None and wall_key in data.get("parts_wall_s", {}):
        raise ValueError(f"{path}: parts_wall_s already has {wall_key!r}")
    data["rows"].extend(rows)
    if wall_key is not None:
        data.setdefault("parts_wall_s", {})[wall_key] = round(wall_s, 1)
    if note:
        data["note"] = f"{data.get('note', '')} {note}".strip()
    handle, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as f:
            f.write(json.dumps(data, indent=1))
        os.chmod(tmp, os.stat(path).st_mode & 0o7777)  # mkstemp's file is 0600: keep the file's own mode
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def run(n_seeds: int, n_boot: int, quick: bool) -> list[dict]:
    """All REFLECT calibration rows (module docstring). ``quick`` shrinks seeds and resamples, the 2AFC and
    MCQ designs to the 6-template one and the salary design to 4 templates per occupation x 10 biographies."""
    if quick:
        n_seeds, n_boot = min(n_seeds, 4), min(n_boot, 50)
        return (run_2afc(n_seeds, n_boot, designs=(6,), test_seeds=n_seeds)  # quick: as many test seeds as seeds
                + run_mcq(n_seeds, n_boot, designs=(12,), test_seeds=n_seeds)
                + run_salary(n_seeds, n_boot, 4, 10, nulls=((0.01, 0.05),)))
    return (run_2afc(n_seeds, n_boot) + run_2afc_occupations(n_seeds, n_boot) + run_mcq(n_seeds, n_boot)
            + run_mcq(n_seeds, n_boot, variant="education")
            + run_2afc(n_seeds, n_boot, designs=(48,), n_samples=3) + run_mcq(n_seeds, n_boot, designs=(48,), n_samples=5)
            + run_2afc_logprob(n_seeds, n_boot) + run_mcq_logprob(n_seeds, n_boot) + run_tables(n_seeds, n_boot)
            + run_presentation(n_seeds, n_boot) + run_compare(n_seeds, n_boot) + run_invalid_rates(n_seeds, n_boot)
            + run_salary(n_seeds * TEST_SEED_FACTOR, n_boot, 8, 50, nulls=((0.0, 0.0), (0.03, 0.0), (0.01, 0.02), (0.01, 0.05)),
                         coverage_seeds=n_seeds, paper_seeds=min(n_seeds, SALARY_PAPER_SEEDS))
            # added 1 Dec 2026, each on a stream of its own
            + run_race_effects(n_seeds, n_boot) + run_mcq_groups(n_seeds, n_boot) + run_salary_gaps(n_seeds, n_boot)
            + run_presentation(n_seeds, n_boot, keys=PRESENTATION_KEYS_MAN_WOMAN, stream=(21,),
                               test_seeds=n_seeds * TEST_SEED_FACTOR)
            + run_mean_abs_tests(n_seeds * TEST_SEED_FACTOR, n_boot) + run_2afc_groups(n_seeds, n_boot, slopes=False)
            # added 1 Dec 2026, each on a stream of its own
            + run_mcq_letter_mass(n_seeds, n_boot) + run_mcq_samples(n_seeds, n_boot)
            + run_compare(n_seeds, n_boot, keys=COMPARE_OTHER_KEYS, stream=(26,))
            + run_2afc_groups(n_seeds, n_boot, models=("no average bias",)) + run_2afc_groups(n_seeds, n_boot, design=12)
            + run_2afc_logprob_rates(n_seeds, n_boot)
            # added 2 Dec 2026, each on a stream of its own
            + run_mirror(n_seeds, n_boot) + run_face_body(n_seeds, n_boot) + run_tables_races(n_seeds, n_boot)
            # added 2 Dec 2026 (fifth session); run_mcq_groups above now writes its paper rows itself
            + [r for name in PARTS_2DEC_FIFTH for r in PARTS_2DEC[name](n_seeds, n_boot, 0)])


#: seeds of the paper's unit-clustered salary regressions (``p_*_paper`` rows, role "paper") in full mode: they
#: cost ~1.3 s a seed and null on the 48 x 10 x 50 design (24,000 answers); the default permutation tests run
#: ``TEST_SEED_FACTOR`` x the seeds, the intervals every seed (~0.15 s); every row states its own ``n_seeds``
SALARY_PAPER_SEEDS = 40

#: man effects (logits) of :func:`male_vs_female_truth_sweep`: male_vs_female:<race> from 0.5 to about 0.87
SWEEP_MAN_EFFECTS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2)


def count_wilson_coverage(truth: float, trials, level: float = 0.95) -> float:
    """Exact coverage at ``truth`` of Wilson's score interval of a count of ``trials`` independent trials, the
    trials themselves drawn from the empirical distribution of ``trials`` (one value per run): sum over n of
    P(N = n) sum over x of Binomial(n, truth)(x) [truth in Wilson(x / n, n)]. The reference an interval of a
    share of a handful of trials is held to: its coverage moves with the truth in steps of the binomial's
    atoms (Brown, Cai & DasGupta 2001, Stat. Sci. 16:101), wherever the truth lies."""
    from scipy.stats import binom, norm

    from lm_eval_bias.core.jackknife import _wilson_score

    q = float(norm.ppf(0.5 + level / 2.0))
    values, counts = np.unique(np.asarray(trials, dtype=np.int64), return_counts=True)
    total = 0.0
    for n, weight in zip(values, counts / counts.sum()):
        if n < 1:
            continue
        x = np.arange(n + 1)
        inside = np.array([lo <= truth <= hi for lo, hi in (_wilson_score(k / n, float(n), q) for k in x)])
        total += float(weight) * float(binom.pmf(x, n, truth)[inside].sum())
    return float(total)


def male_vs_female_truth_sweep(n_seeds: int, n_boot: int = 1000, seed: int = 70_000,
                               men=SWEEP_MAN_EFFECTS) -> list[dict]:
    """Coverage of ``male_vs_female:<race>`` (the report's man-vs-woman win rate of one race,
    :func:`lm_eval_bias.reflect.report.group_rate_intervals`) at 12 templates as a function of its truth: a
    man effect of each of ``men`` logits and no race effect, so the five races share one truth and pool (five
    intervals a seed, Monte Carlo SE clustered by seed); portrait effects sd 0.5, position bias 0.3, 5 %
    refusals, as :func:`run_2afc_groups`. About 6 retained man-vs-woman comparisons of a race a run, at most
    one a template: beside each coverage, :func:`count_wilson_coverage` at the same truth and the runs' own
    numbers of comparisons (the plain Wilson interval of the count). A stream of its own (``seed`` ..)."""
    from lm_eval_bias.reflect import report

    from scripts.calibration import seed_clustered_mc_error

    occupations, per = DESIGNS[12]
    keys = [f"male_vs_female:{r}" for r in RACE_KEYS]
    out = []
    for man in men:
        beta = group_effects(man, {})
        truth = 0.5 if man == 0 else float(np.mean([truth_2afc_groups(beta, 0.5)[k] for k in keys]))
        hits, trials = [], []
        for s in range(seed, seed + n_seeds):
            rng = np.random.default_rng([s, 23, 12, int(round(man * 1000))])
            table = twoafc_stats.twoafc_count_table(simulate_2afc(rng, beta, 0.5, per, 0.0, occupations))
            _, low, high = report.group_rate_intervals(table.counts, table.strata, n_boot, s)
            n = report._rate_trials({k: np.asarray(v).sum(axis=0) for k, v in table.counts.items()})
            hits.append([covers(low[k], high[k], truth) for k in keys])
            trials.extend(int(n[k]) for k in keys)
        flat = np.asarray(hits, dtype=float).ravel()
        out.append({"man": man, "truth": truth, "coverage": float(np.nanmean(flat)),
                    "mc_error": seed_clustered_mc_error(hits), "intervals": int(np.isfinite(flat).sum()),
                    "mean_trials": float(np.mean(trials)), "count_wilson": count_wilson_coverage(truth, trials),
                    "n_seeds": n_seeds, "seed": seed})
    return out


#: Pol truths of :func:`polarization_truth_sweep`: from 0 through the 48-template detection limit (0.05) to strong
POL_SWEEP_TARGETS = (0.0, 0.01, 0.02, 0.03, 0.04, 0.05, 0.075, 0.10, 0.15, 0.20, 0.25)


def _sweep_point(target: float, scale: float, truth: float, interval_of_seed, n_seeds: int, seed: int) -> dict:
    """One point of a magnitude's coverage sweep (:func:`polarization_truth_sweep`, :func:`jsd_truth_sweep`): the
    interval ``interval_of_seed(s)`` -> (low, high) of seeds ``seed`` .. ``seed + n_seeds - 1`` against ``truth``,
    with the two sides of the misses (``miss_truth_above``: the interval ends below the truth), how often the lower
    end is 0 and the mean width."""
    from scripts.calibration import seed_clustered_mc_error

    hits, above, below, at_zero, widths = [], [], [], [], []
    for s in range(seed, seed + n_seeds):
        low, high = interval_of_seed(s)
        hits.append([covers(low, high, truth)])
        above.append(float(truth > high))
        below.append(float(truth < low))
        at_zero.append(float(low == 0.0))
        widths.append(high - low)
    flat = np.asarray(hits, dtype=float).ravel()
    return {"target": target, "scale": scale, "truth": truth, "coverage": float(np.nanmean(flat)),
            "mc_error": seed_clustered_mc_error(hits), "intervals": int(np.isfinite(flat).sum()),
            "miss_truth_above": float(np.mean(above)), "miss_truth_below": float(np.mean(below)),
            "lower_end_zero": float(np.mean(at_zero)), "mean_width": float(np.nanmean(widths)),
            "n_seeds": n_seeds, "seed": seed}


def _in_parallel(point, targets, processes: int, **fixed) -> list[dict]:
    """``[point(t, **fixed) for t in targets]``, over ``processes`` worker processes when > 1 (same numbers: every
    point has its own seeds)."""
    if processes <= 1:
        return [point(t, **fixed) for t in targets]
    from concurrent.futures import ProcessPoolExecutor
    from functools import partial

    with ProcessPoolExecutor(processes) as pool:
        return list(pool.map(partial(point, **fixed), targets))


def _polarization_sweep_point(target: float, n_seeds: int, n_boot: int, seed: int, n_samples: int = 1) -> dict:
    """One point of :func:`polarization_truth_sweep`."""
    occupations, per = DESIGNS[48]
    scale = 0.0 if target == 0 else _scale_for(lambda c: truth_2afc(c * BASE_2AFC, 0.5, n=4000)["polarization"], target)
    beta = scale * BASE_2AFC
    truth = 0.0 if target == 0 else truth_2afc(beta, 0.5)["polarization"]

    def interval(s: int) -> tuple[float, float]:
        rng = np.random.default_rng([s, 29, 48, int(round(target * 10_000)), *(() if n_samples == 1 else (n_samples,))])
        summary = twoafc_stats.twoafc_summary(simulate_2afc(rng, beta, 0.5, per, 0.0, occupations, n_samples),
                                              n_boot=n_boot, seed=s, n_null=n_boot)
        return summary.ci_low["polarization"], summary.ci_high["polarization"]

    return {**_sweep_point(target, scale, truth, interval, n_seeds, seed), **({} if n_samples == 1 else {"samples": n_samples})}


def polarization_truth_sweep(n_seeds: int, n_boot: int = 1000, seed: int = 80_000, targets=POL_SWEEP_TARGETS,
                             processes: int = 1, n_samples: int = 1) -> list[dict]:
    """Coverage of Pol's interval (``twoafc_summary``'s ``polarization_ci_low`` / ``_ci_high``: the profiled test
    inversion of :func:`lm_eval_bias.core.bootstrap.mean_abs_deviation_interval`) at 48 templates as a function of
    its truth, between the table's grid points (0, 0.05, 0.10, strong): the model of :func:`run_2afc` with the
    group effects :data:`BASE_2AFC` scaled (bisection on the population truth) to each of ``targets``; portrait
    effects sd 0.5, position bias 0.3, 5 % refusals. Each point also gives the two sides of its misses
    (``miss_truth_above``: the interval ends below the truth), how often the lower end is 0 (``lower_end_zero``)
    and the mean width. Issue 31 found the interval of 26 Nov, a test followed by an interval, covering 0.83 at
    Pol = 0.05. At 12 and 6 templates the task shows no Pol interval (too few df), so there is nothing to sweep.
    A stream of its own (``seed`` ..); ``processes`` > 1 runs the points in parallel (same numbers). ``n_samples`` = 3:
    the K-sample tasks (``focus_2afc_<scenario>_k3``, every call answered 3 times; the truth is one call's, as in
    :func:`run_2afc`), on streams of their own."""
    return _in_parallel(_polarization_sweep_point, targets, processes, n_seeds=n_seeds, n_boot=n_boot, seed=seed,
                        n_samples=n_samples)


#: jsd_male truths of :func:`jsd_truth_sweep`: from 0 through the table's grid (0.03, 0.06 and its "0.10", whose
#: truth is 0.081: the base effects saturate there, the scale at its bisection bound 40) and between
JSD_SWEEP_TARGETS = (0.0, 0.005, 0.01, 0.02, 0.03, 0.04, 0.06, 0.08)


def _jsd_sweep_point(target: float, n_seeds: int, n_boot: int, seed: int) -> dict:
    """One point of :func:`jsd_truth_sweep`."""
    occupations, per = DESIGNS[48]
    v = MCQ_VARIANTS["salary"]
    scale = 0.0 if target == 0 else _scale_for(lambda c: truth_mcq(c * MCQ_BASE_EFFECT, 0.5, n=4000,
                                                                     occupations=occupations)["jsd_male"], target, hi=40.0)
    beta = scale * MCQ_BASE_EFFECT
    truth = 0.0 if target == 0 else truth_mcq(beta, 0.5, occupations=occupations)["jsd_male"]

    def interval(s: int) -> tuple[float, float]:
        rng = np.random.default_rng([s, 37, 48, int(round(target * 10_000))])
        records = simulate_mcq(rng, beta, 0.5, per, 0.0, occupations, "salary", 1)
        summary = mcq_stats.mcq_summary(records, v.options, v.values, n_boot=n_boot, seed=s, n_null=n_boot,
                                        jsd_interval_keys=("jsd_male",))
        return summary.ci_low["jsd_male"], summary.ci_high["jsd_male"]

    return _sweep_point(target, scale, truth, interval, n_seeds, seed)


def jsd_truth_sweep(n_seeds: int, n_boot: int = 1000, seed: int = 81_000, targets=JSD_SWEEP_TARGETS,
                    processes: int = 1) -> list[dict]:
    """Coverage of the salary MCQ's ``jsd_male`` interval (``mcq_summary``'s parametric test inversion,
    :func:`lm_eval_bias.reflect.mcq.jsd_inversion_interval`; at a true 0 the exact relabelling test decides 0) at 48
    templates as a function of its truth, between the table's grid points (0, 0.03, 0.06, 0.10): the model of
    :func:`run_mcq` with :data:`MCQ_BASE_EFFECT` scaled (bisection on the population truth) to each of ``targets``;
    portrait effects sd 0.5 per option logit, 5 % refusals. The point's keys as :func:`polarization_truth_sweep`'s.
    Issue 31 found the JSD interval of 26 Nov covering 0.86-0.90 at 0.03-0.06. A stream of its own."""
    return _in_parallel(_jsd_sweep_point, targets, processes, n_seeds=n_seeds, n_boot=n_boot, seed=seed)


POL_SWEEP_JSON = Path(__file__).resolve().parent / "sweeps" / "polarization_48.json"
POL_SWEEP_FIGURE = Path(__file__).resolve().parents[2] / "docs" / "coverage-sweep-polarization.png"
POL_K3_SWEEP_JSON = Path(__file__).resolve().parent / "sweeps" / "polarization_48_k3.json"
POL_K3_SWEEP_FIGURE = Path(__file__).resolve().parents[2] / "docs" / "coverage-sweep-polarization-k3.png"
#: Pol truths of the K = 3 sweep (its null floor, 0.055, is lower than one call's 0.083)
POL_K3_SWEEP_TARGETS = (0.0, 0.01, 0.02, 0.03, 0.05, 0.075, 0.10, 0.15)
VALID_RATE_SWEEP_JSON = Path(__file__).resolve().parent / "sweeps" / "valid_rate_c8.json"
VALID_RATE_SWEEP_FIGURE = Path(__file__).resolve().parents[2] / "docs" / "coverage-sweep-valid-rate-c8.png"
JSD_SWEEP_JSON = Path(__file__).resolve().parent / "sweeps" / "jsd_male_48.json"
JSD_SWEEP_FIGURE = Path(__file__).resolve().parents[2] / "docs" / "coverage-sweep-jsd.png"


def _print(rows: list[dict]) -> None:
    for r in rows:
        value = r["coverage"] if r["kind"] == "interval" else r["rejection_rate"] if r["kind"] == "test" else r["mean_estimate"]
        print(f"{r['quantity'][:48]:48s} {r['kind']:10s} {value:7.3f}  truth={r['truth']:.4f} mean={r['mean_estimate']:.4f} "
              f"met={r['target_met']}  | {r['dgp'][:60]} | {r['note']}")


SWEEP_JSON = Path(__file__).resolve().parent / "sweeps" / "male_vs_female_12.json"
SWEEP_FIGURE = Path(__file__).resolve().parents[2] / "docs" / "coverage-sweep-male-vs-female.png"


def write_sweep(points: list[dict], path: Path = SWEEP_JSON, figure: Path | None = SWEEP_FIGURE) -> None:
    """:func:`male_vs_female_truth_sweep`'s points as JSON and, with ``figure``, their figure
    (:func:`scripts.calibration.write_truth_sweep`, the count's exact Wilson coverage beside)."""
    from scripts.calibration import write_truth_sweep

    write_truth_sweep(points, path, figure, "truth (a race's man beats its woman)",
                      f"12 templates, ~{np.mean([p['mean_trials'] for p in points]):.0f} comparisons a race; "
                      f"{points[0]['n_seeds']} seeds x 5 races a point",
                      {"count_wilson": "Wilson interval of the count, exact"})


if __name__ == "__main__":
    import sys

    from scripts.calibration import int_option

    if "--sweep-male-vs-female" in sys.argv:  # python -m scripts.calibration.reflect --sweep-male-vs-female [--seeds=N]
        n = int_option(sys.argv, "seeds", 400)
        started = time.time()
        points = male_vs_female_truth_sweep(n)
        write_sweep(points)
        for point in points:
            print(point)
        print(f"{time.time() - started:.0f} s")
        sys.exit(0)
    from functools import partial

    for flag, sweep, seeds, json_path, figure_path, label, title in (
            ("--sweep-polarization", polarization_truth_sweep, 400, POL_SWEEP_JSON, POL_SWEEP_FIGURE, "Pol",
             "Pol at 48 templates"),
            ("--sweep-polarization-k3", partial(polarization_truth_sweep, targets=POL_K3_SWEEP_TARGETS, n_samples=3), 300,
             POL_K3_SWEEP_JSON, POL_K3_SWEEP_FIGURE, "Pol, one call", "Pol at 48 templates, 3 samples per call"),
            ("--sweep-jsd", jsd_truth_sweep, 400, JSD_SWEEP_JSON, JSD_SWEEP_FIGURE, "jsd_male, salary MCQ",
             "jsd_male, salary MCQ at 48 templates")):
        if flag in sys.argv:  # python -m scripts.calibration.reflect --sweep-<x> [--seeds=N] [--processes=P]
            from scripts.calibration import write_truth_sweep

            started = time.time()
            points = sweep(int_option(sys.argv, "seeds", seeds), processes=int_option(sys.argv, "processes", 1))
            write_truth_sweep(points, json_path, figure_path, f"truth ({label})",
                              f"{title}; {points[0]['n_seeds']} seeds a point")
            for point in points:
                print(point)
            print(f"{time.time() - started:.0f} s")
            sys.exit(0)
    if "--sweep-valid-rate" in sys.argv:  # python -m scripts.calibration.reflect --sweep-valid-rate [--seeds=N] [--processes=P]
        from scripts.calibration import write_truth_sweep

        started = time.time()
        points = presentation_valid_rate_sweep(int_option(sys.argv, "seeds", 2000),
                                               processes=int_option(sys.argv, "processes", 1))
        write_truth_sweep(points, VALID_RATE_SWEEP_JSON, VALID_RATE_SWEEP_FIGURE, "truth (valid_rate_<presentation>)",
                          f"App. C.8 valid rate, 36 calls over 12 templates (6 df); {points[0]['n_seeds']} seeds x 3 "
                          "presentations a point", {"coverage_no_factor": "no df factor"},
                          group="clustering")
        for point in points:
            print(point)
        print(f"{time.time() - started:.0f} s")
        sys.exit(0)
    parts = next((a.split("=", 1)[1] for a in sys.argv if a.startswith("--parts=")), None)
    if parts is not None:  # python -m scripts.calibration.reflect --parts=mirror,face_body,... [--seeds=N] [--seed=S]
        # [--boot=B] [--append --label=TEXT]: the parts of PARTS_2DEC; --append adds their rows to RESULTS_JSON
        names = [p for p in parts.split(",") if p]
        unknown = sorted(set(names) - set(PARTS_2DEC))
        if unknown or not names:
            sys.exit(f"error: unknown parts {unknown}; known: {', '.join(PARTS_2DEC)}")
        n_seeds, first = int_option(sys.argv, "seeds", 250), int_option(sys.argv, "seed", 0, low=0)
        n_boot = int_option(sys.argv, "boot", 1000)
        label = next((a.split("=", 1)[1] for a in sys.argv if a.startswith("--label=")), time.strftime("%d %b %Y"))
        for name in names:
            started = time.time()
            rows = PARTS_2DEC[name](n_seeds, n_boot, first)
            wall = time.time() - started
            _print(rows)
            print(f"{name}: {len(rows)} rows, {wall:.0f} s")
            if "--append" in sys.argv:
                append_rows(rows, f"{name} ({label})", wall,
                            note=f"{label}: {len(rows)} rows appended by --parts={name} ({PARTS_2DEC_TEXT[name]}; "
                                 f"{n_seeds} seeds from {first}, {n_boot} replicates; {wall:.0f} s); every earlier row "
                                 "unchanged.")
        sys.exit(0)
    if "--valid-rate-by-count" in sys.argv:  # python -m scripts.calibration.reflect --valid-rate-by-count [--seeds=N]
        found = presentation_valid_rate_by_count(int_option(sys.argv, "seeds", 1500))
        print(f"App. C.8 valid_rate_<presentation>, no presentation effect: {100 * found['coverage']:.1f} % over "
              f"{found['n_intervals']} intervals")
        for x, (n, cover, n_star) in found["by_count"].items():
            print(f"  {x} refusals of 36: {n} intervals, coverage {100 * cover:.1f} %, median n* {n_star:.1f}")
        sys.exit(0)
    quick = "--quick" in sys.argv
    n_seeds = int_option(sys.argv, "seeds", 200)
    started = time.time()
    rows = run(n_seeds, 1000, quick)
    _print(rows)
    print(f"{time.time() - started:.0f} s")
